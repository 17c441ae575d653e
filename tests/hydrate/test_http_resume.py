"""HTTP downloads against careless, changing and broken servers (loopback).

The rule under test: a cache is Ready only with exactly the source's bytes. A
partial file resumes only with If-Range and a 206 that continues exactly it;
anything else restarts from byte zero; a body shorter than announced, or one
nobody can vouch for (no length, no sha256, no HEAD length), is Failed with
the cause — never a traceback, never a result stuck at Hydrating.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydration import files, run
from loopback import FileServer

from modelplane.api.model_cache import HydrateEnv
from modelplane.hydrate import sources
from modelplane.hydrate.sources import Version
from modelplane.hydrate.staging import HydrationError, workspace

HALF = 524_290  # half of the fixture's 1,048,580-byte payload


def _url(server: FileServer, name: str = "model.bin") -> str:
    return f"{server.url}/files/{name}"


def _cut_first_run(server: FileServer, dest: Path, sha256: str | None = None) -> None:
    """A first run that the server cuts at HALF bytes: Failed, the partial file kept."""
    server.cut_after = HALF
    first = run(sources.http(_url(server), sha256), dest)
    assert first.final.phase == "Failed" and first.staged is None
    assert (workspace(dest, "k1").work / sources.PART).stat().st_size == HALF
    server.cut_after = None


def _assert_ready_with(dest: Path, outcome_payload: bytes, server: FileServer) -> None:
    assert files(dest) == {"model.bin": outcome_payload}
    assert server.payload == outcome_payload


# ── Resume only when the server continues exactly the same version ───────────


def test_a_server_that_ignores_range_restarts_the_file_from_zero(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    file_server.honour_range = False  # answers the range request with 200 and the whole file

    second = run(sources.http(_url(file_server)), dest)

    assert second.final.phase == "Ready", second.final
    assert file_server.gets()[-1]["range"] == f"bytes={HALF}-"
    assert second.final.bytes_staged == str(len(file_server.payload))  # not 1,572,870
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_file_changed_between_runs_is_fetched_whole_through_if_range(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    old_etag = file_server.etag
    file_server.payload = os.urandom(900_001)  # a new version, with a new ETag

    second = run(sources.http(_url(file_server)), dest)

    assert file_server.gets()[-1]["if-range"] == old_etag  # the server answered 200
    assert second.final.phase == "Ready"
    assert second.final.resolved_digest == f"sha256:{file_server.sha256}"
    _assert_ready_with(dest, file_server.payload, file_server)


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
def test_a_changed_file_served_by_range_despite_if_range_restarts_from_zero(
    tmp_path: Path, file_server: FileServer, validator: str
) -> None:
    dest = tmp_path / "model"
    if validator == "last-modified":
        file_server.send_etag = False
        file_server.last_modified = "Mon, 05 Jan 2026 10:00:00 GMT"
    _cut_first_run(file_server, dest)
    file_server.honour_if_range = False  # serves the range of whatever it has now
    file_server.payload = bytes(reversed(file_server.payload))  # same size, other bytes
    if validator == "last-modified":
        file_server.last_modified = "Tue, 06 Jan 2026 10:00:00 GMT"

    second = run(sources.http(_url(file_server)), dest)

    ranged, fresh = file_server.gets()[-2:]
    assert ranged["range"] == f"bytes={HALF}-" and "range" not in fresh
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_content_range_that_starts_elsewhere_restarts_from_zero(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    file_server.range_shift = 4  # "bytes 524294-…": not where the partial file ends

    second = run(sources.http(_url(file_server)), dest)

    assert [("range" in r) for r in file_server.gets()] == [False, True, False]
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_partial_file_without_a_validator_is_never_resumed(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    file_server.send_etag = False  # and no Last-Modified: nothing to send in If-Range
    _cut_first_run(file_server, dest)

    second = run(sources.http(_url(file_server)), dest)

    assert "range" not in file_server.gets()[-1]
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_weak_etag_is_not_an_if_range_validator_but_last_modified_is(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    file_server.weak_etag = True
    file_server.last_modified = "Mon, 05 Jan 2026 10:00:00 GMT"
    _cut_first_run(file_server, dest)

    second = run(sources.http(_url(file_server)), dest)

    assert file_server.gets()[-1]["if-range"] == "Mon, 05 Jan 2026 10:00:00 GMT"
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_download_killed_before_publishing_is_confirmed_by_a_416(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    space = workspace(dest, "k1")
    space.tree.mkdir(parents=True)
    space.work.mkdir()
    sources.http(_url(file_server))(space)  # downloaded into the tree, never published

    done = run(sources.http(_url(file_server)), dest)

    assert file_server.gets()[-1]["range"] == f"bytes={len(file_server.payload)}-"
    assert done.final.phase == "Ready"
    assert len(file_server.gets()) == 2  # the 416 confirmed it: no second body
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_416_for_another_version_restarts_from_zero(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    space = workspace(dest, "k1")
    space.tree.mkdir(parents=True)
    space.work.mkdir()
    sources.http(_url(file_server))(space)
    file_server.payload = file_server.payload[:1000]  # shorter now: the range is past its end
    file_server.honour_if_range = False

    done = run(sources.http(_url(file_server)), dest)

    assert "range" not in file_server.gets()[-1]
    assert done.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


# ── A body shorter than announced, or unverifiable, is never Ready ───────────


def test_a_body_cut_short_of_its_content_length_fails_and_then_resumes(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    file_server.cut_after = HALF
    first = run(sources.http(_url(file_server)), dest)  # no sha256 to catch it
    assert first.final.phase == "Failed"
    assert first.final.message == (
        f"{_url(file_server)}: the server announced 1048580 bytes but sent {HALF}"
    )
    assert not dest.exists()

    file_server.cut_after = None
    second = run(sources.http(_url(file_server)), dest)
    assert file_server.gets()[-1]["range"] == f"bytes={HALF}-"
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_a_resumed_body_cut_short_of_its_content_range_total_fails(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    file_server.cut_after = 1000  # the 206 breaks off too

    second = run(sources.http(_url(file_server)), dest)

    assert second.final.phase == "Failed"
    assert f"announced 1048580 bytes but sent {HALF + 1000}" in str(second.final.message)
    assert not dest.exists()


def test_a_body_cut_with_no_length_fails_when_head_reports_more(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    file_server.send_length = False  # the GET's body ends when the connection does
    file_server.cut_after = HALF

    first = run(sources.http(_url(file_server)), dest)

    assert first.final.phase == "Failed"
    assert first.final.message == (
        f"{_url(file_server)}: received {HALF} bytes, but HEAD reports 1048580"
    )
    assert [r["method"] for r in file_server.requests] == ["GET", "HEAD"]
    assert not dest.exists()
    # The next run resumes the kept part; the 206's Content-Range says the total.
    file_server.cut_after = None
    second = run(sources.http(_url(file_server)), dest)
    assert second.final.phase == "Ready"
    _assert_ready_with(dest, file_server.payload, file_server)


def test_no_length_and_no_sha256_anywhere_fails_and_says_why(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    file_server.send_length = False
    file_server.head_length = False

    first = run(sources.http(_url(file_server)), dest)

    assert first.final.phase == "Failed"
    assert "cannot tell whether the 1048580 bytes received are the whole file" in str(
        first.final.message
    )
    assert not dest.exists()


def test_no_length_is_fine_when_head_confirms_it_or_the_sha256_does(
    tmp_path: Path, file_server: FileServer
) -> None:
    file_server.send_length = False
    by_head = run(sources.http(_url(file_server)), tmp_path / "a")
    assert by_head.final.phase == "Ready"
    _assert_ready_with(tmp_path / "a", file_server.payload, file_server)

    file_server.head_length = False
    by_digest = run(sources.http(_url(file_server), file_server.sha256), tmp_path / "b")
    assert by_digest.final.phase == "Ready"
    assert file_server.requests[-1]["method"] == "GET"  # no HEAD needed
    _assert_ready_with(tmp_path / "b", file_server.payload, file_server)


@pytest.mark.parametrize(
    "cut",
    [100_000, 3 * (1 << 16)],  # mid-chunk; exactly between two chunks
    ids=["mid-chunk", "between-chunks"],
)
def test_a_truncated_chunked_body_fails_naming_the_cause(
    tmp_path: Path, file_server: FileServer, cut: int
) -> None:
    file_server.chunked = True
    file_server.cut_after = cut

    cut_run = run(sources.http(_url(file_server)), tmp_path / "model")

    assert isinstance(cut_run.error, HydrationError)
    assert cut_run.final.phase == "Failed"
    assert "the body broke off after" in str(cut_run.final.message)
    assert not (tmp_path / "model").exists()


def test_a_whole_chunked_body_is_ready_once_head_confirms_its_length(
    tmp_path: Path, file_server: FileServer
) -> None:
    file_server.chunked = True
    done = run(sources.http(_url(file_server)), tmp_path / "model")
    assert done.final.phase == "Ready"
    _assert_ready_with(tmp_path / "model", file_server.payload, file_server)


# ── Odd URLs end in a Failed result that names the cause ─────────────────────


@pytest.mark.parametrize(
    ("path_or_url", "cause"),
    [
        ("/files/a%00b.bin", "contains a control character"),
        ("/files/a%0Ab.bin", "contains a control character"),
        ("/files/" + "x" * 300, "longer than 255 bytes"),
        ("/files/a b.bin", "whitespace or a control character"),
        ("/files/caf\u00e9.bin", "UnicodeEncodeError"),
        ("/missing", "HTTP 404"),
        ("ftp://127.0.0.1/model.bin", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http:///files/model.bin", "names no host"),
        ("http://127.0.0.1:port/files/model.bin", "not a valid URL"),
        ("http://[::1/files/model.bin", "not a valid URL"),
        ("", "only http and https"),
    ],
)
def test_odd_urls_fail_with_a_result_naming_the_cause(
    tmp_path: Path, file_server: FileServer, path_or_url: str, cause: str
) -> None:
    url = file_server.url + path_or_url if path_or_url.startswith("/") else path_or_url
    outcome = run(sources.http(url), tmp_path / "model")
    assert isinstance(outcome.error, HydrationError), outcome.error
    assert [r.phase for r in outcome.results] == ["Hydrating", "Failed"]
    assert cause in str(outcome.final.message)


def test_odd_urls_and_truncated_bodies_exit_without_a_traceback_through_the_cli(
    tmp_path: Path, file_server: FileServer
) -> None:
    file_server.chunked = True
    file_server.cut_after = 100_000
    for url in (f"{file_server.url}/files/a%00b", _url(file_server)):
        env = {
            **os.environ,
            HydrateEnv.HTTP_URL: url,
            HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
            HydrateEnv.SOURCE_HASH: "k1",
        }
        proc = subprocess.run(
            [str(Path(sys.executable).parent / "modelplane"), "hydrate", "http"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert json.loads(proc.stdout.splitlines()[-1])["phase"] == "Failed"


# ── The rules themselves ─────────────────────────────────────────────────────


def test_content_range_reads_only_a_consistent_byte_range() -> None:
    assert sources.content_range("bytes 10-99/100") == (10, 99, 100)
    assert sources.content_range(" bytes 0-0/1 ") == (0, 0, 1)
    for bad in (None, "", "bytes */100", "bytes 10-9/100", "bytes 10-100/100", "items 1-2/3"):
        assert sources.content_range(bad) is None, bad


def test_a_206_continues_only_the_same_version_from_the_same_byte() -> None:
    saved = Version(etag='"v1"', last_modified="Mon", total=100)
    same = {"Content-Range": "bytes 40-99/100", "ETag": '"v1"', "Last-Modified": "Mon"}
    assert sources.continues(206, same, 40, saved)
    assert not sources.continues(200, same, 40, saved)
    assert not sources.continues(206, same, 41, saved)
    assert not sources.continues(206, {**same, "Content-Range": "bytes 40-98/100"}, 40, saved)
    assert not sources.continues(206, {**same, "Content-Range": "bytes 40-109/110"}, 40, saved)
    assert not sources.continues(206, {**same, "ETag": '"v2"'}, 40, saved)
    assert not sources.continues(206, {k: v for k, v in same.items() if k != "ETag"}, 40, saved)
    assert not sources.continues(206, {**same, "Last-Modified": "Tue"}, 40, saved)
    by_date = Version(last_modified="Mon", total=None)
    assert sources.continues(206, {"Content-Range": "bytes 40-109/110"}, 40, by_date)


def test_a_416_says_whole_only_for_the_saved_length_and_version() -> None:
    saved = Version(etag='"v1"', total=100)
    assert sources.already_whole({"Content-Range": "bytes */100", "ETag": '"v1"'}, 100, saved)
    assert not sources.already_whole({"Content-Range": "bytes */100"}, 100, saved)
    assert not sources.already_whole({"Content-Range": "bytes */120", "ETag": '"v1"'}, 100, saved)
    assert not sources.already_whole({"Content-Range": "bytes */100", "ETag": '"v1"'}, 90, saved)
    assert not sources.already_whole({"ETag": '"v1"'}, 100, saved)
    unknown_total = Version(etag='"v1"')
    assert sources.already_whole({"Content-Range": "bytes */90", "ETag": '"v1"'}, 90, unknown_total)
    assert not sources.already_whole(
        {"Content-Range": "bytes */100", "ETag": '"v1"'}, 100, Version(etag='"v1"', total=90)
    )


def test_if_range_prefers_a_strong_etag_and_never_sends_a_weak_one() -> None:
    assert Version(etag='"a"', last_modified="Mon").if_range() == '"a"'
    assert Version(etag='W/"a"', last_modified="Mon").if_range() == "Mon"
    assert Version(etag='W/"a"').if_range() is None
    assert Version().if_range() is None


def test_sha256_of_reads_the_whole_file(tmp_path: Path) -> None:
    big = os.urandom(sources.CHUNK + 17)
    (tmp_path / "f").write_bytes(big)
    assert sources._sha256_of(tmp_path / "f") == hashlib.sha256(big).hexdigest()


# ── Messages name the URL; redirects within http(s) are followed ──────────────


def test_a_resume_refused_by_the_server_fails_naming_the_url_and_status(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    file_server.status = 503

    second = run(sources.http(_url(file_server)), dest)

    assert file_server.gets()[-1]["range"] == f"bytes={HALF}-"
    assert second.final.message == f"{_url(file_server)}: HTTP 503 Service Unavailable"


def test_a_resumed_chunked_body_that_breaks_off_names_the_url(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    _cut_first_run(file_server, dest)
    file_server.chunked = True
    file_server.cut_after = 100_000

    second = run(sources.http(_url(file_server)), dest)

    assert file_server.gets()[-1]["range"] == f"bytes={HALF}-"
    assert str(second.final.message).startswith(
        f"{_url(file_server)}: the body broke off after 65536 bytes (IncompleteRead"
    )


def test_a_redirect_to_http_is_followed(tmp_path: Path, file_server: FileServer) -> None:
    done = run(sources.http(f"{file_server.url}/moved/model.bin"), tmp_path / "model")
    assert done.final.phase == "Ready", done.final.message
    assert [r["method"] for r in file_server.requests] == ["GET", "GET"]
    assert files(tmp_path / "model") == {"model.bin": file_server.payload}


def test_a_ready_result_says_staged_then_already_staged(
    tmp_path: Path, file_server: FileServer
) -> None:
    fetch = sources.http(_url(file_server))
    assert run(fetch, tmp_path / "model").final.message == "staged"
    assert run(fetch, tmp_path / "model").final.message == "already staged (no-op)"


def test_file_names_are_decoded_and_refused_at_the_length_a_file_system_allows() -> None:
    assert sources.file_name("https://h/%2E") == "download"
    assert sources.file_name("https://h/a%2Fb") == "download"
    assert sources.file_name("https://h/" + "é" * 127 + "x") == "é" * 127 + "x"  # 255 bytes
    with pytest.raises(HydrationError, match="longer than 255 bytes"):
        sources.file_name("https://h/" + "é" * 128)  # 256 bytes


def test_request_headers_skip_the_secret_volumes_hidden_entries(tmp_path: Path) -> None:
    (tmp_path / "Authorization").write_text("Bearer abc\n")
    (tmp_path / ".hidden").write_text("not a header")
    assert sources.read_headers(str(tmp_path)) == {"Authorization": "Bearer abc"}
    assert sources.read_headers(None) == {}
