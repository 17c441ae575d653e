"""One fetcher per source kind: each downloads into a staging workspace and returns its digest.

Each fetcher writes the source's files, and nothing else, into the workspace's
`tree`; its own bookkeeping (partial downloads, progress, validators,
huggingface_hub's cache) goes to the workspace's `work` folder. Each resumes
what an earlier, interrupted run of the same source left there, and each
measures a digest that names exactly what was staged:

- Hugging Face: the commit the revision resolved to (`huggingface_hub`
  `snapshot_download`, whose blob downloads resume);
- S3 (AWS or an S3-compatible endpoint, `boto3`): `s3-etags:sha256:<hex>`, a
  sha256 over the sorted (relative key, ETag, size) manifest; each object
  staged is checked against its listed size and ETag; objects already staged
  with the same ETag and size are not fetched again;
- HTTP(S): `sha256:<hex>` of the file, checked against the expected sha256
  when one is given, else its size against the length the server announced
  (Content-Length, Content-Range or a HEAD); a partial file resumes only with
  `If-Range` and a 206 that continues exactly it, and restarts otherwise;
- inline: `sha256:<hex>` of the content.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from http.client import HTTPException
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from modelplane.hydrate.staging import Fetch, HydrationError, Workspace

CHUNK = 1 << 20
# Bookkeeping, all in the workspace's `work` folder (never published).
PROGRESS = "s3-progress.json"
S3_PART = "s3.part"
HF_CACHE = "hf"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def safe_relative(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the staging folder, or raise."""
    rel = PurePosixPath(name.lstrip("/"))
    if not rel.parts or any(p in ("..", ".") for p in rel.parts):
        raise HydrationError(f"refusing to write {name!r}: not a path inside the cache")
    return rel


# ── Hugging Face ─────────────────────────────────────────────────────────────


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link (else copy) every file of a snapshot, resolving its symlinks to blobs.

    A file already there (linked by a run killed midway) is replaced: linking
    over it fails, and copying a blob onto a link to itself is a SameFileError.
    """
    for dirpath, _, filenames in os.walk(src):
        for f in filenames:
            source = Path(dirpath) / f
            target = dst / source.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            real = source.resolve()
            try:
                os.link(real, target)
            except OSError:
                shutil.copyfile(real, target)


def huggingface(repo: str, revision: str, token: str | None = None) -> Fetch:
    """Fetch a Hub repository at `revision`; the digest is the commit it resolved to.

    The download goes through huggingface_hub's own cache in the workspace's
    work folder (resumable blobs; `HF_HUB_OFFLINE` and `HF_ENDPOINT` are honoured
    by the library), then the snapshot's files are linked into place.
    """

    def fetch(space: Workspace) -> str:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

        # In the workspace (on the PVC in a Job) so blob downloads resume
        # across pods; HF_HUB_CACHE points elsewhere when set. Not HF_HOME's
        # default: the Job sets HF_HOME to a scratch folder lost with the pod.
        cache = Path(os.environ.get("HF_HUB_CACHE") or space.work / HF_CACHE)
        try:
            snapshot = Path(
                snapshot_download(
                    repo_id=repo, revision=revision, cache_dir=cache, token=token or None
                )
            )
        except (HfHubHTTPError, LocalEntryNotFoundError, ValueError) as err:
            raise HydrationError(f"huggingFace {repo}@{revision}: {err}") from err
        commit = snapshot.name
        if not _COMMIT.match(commit):
            raise HydrationError(f"huggingFace {repo}@{revision}: no commit resolved ({commit})")
        _link_tree(snapshot, space.tree)
        return commit

    return fetch


# ── S3 and S3-compatible stores ──────────────────────────────────────────────


def _progress(work: Path) -> dict[str, str]:
    """What an earlier run of this key staged: relative path → ETag."""
    try:
        data = json.loads((work / PROGRESS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _list_objects(client: Any, bucket: str, prefix: str) -> list[tuple[str, str, int]]:
    """Every object under `prefix` as (key, ETag as listed, size), sorted by key.

    A "folder" key (ending in `/`, what consoles create for an empty folder)
    holds no file and is skipped; one that holds bytes cannot be staged as a
    file, and is refused rather than dropped.
    """
    entries = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            key, size = str(obj["Key"]), int(obj["Size"])
            if key.endswith("/") and size:
                raise HydrationError(f"s3://{bucket}/{key}: a folder key holding {size} bytes")
            if not key.endswith("/"):
                entries.append((key, str(obj["ETag"]), size))
    return sorted(entries)


def etag_manifest_digest(entries: list[tuple[str, str, int]]) -> str:
    """The digest of a set of objects: sha256 over sorted `relative-key TAB etag TAB size` lines.

    ETags are taken without their quotes.
    """
    lines = "".join(f"{k}\t{e.strip(chr(34))}\t{s}\n" for k, e, s in sorted(entries))
    return "s3-etags:sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def s3(
    bucket: str,
    prefix: str,
    region: str | None = None,
    endpoint: str | None = None,
    client_factory: Callable[..., Any] | None = None,
) -> Fetch:
    """Fetch every object under `prefix`; the digest hashes their ETag manifest.

    Credentials come from boto3's usual chain (the Job's AWS_* environment).
    """

    def fetch(space: Workspace) -> str:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        factory = client_factory or boto3.client
        client = factory("s3", region_name=region or None, endpoint_url=endpoint or None)
        try:
            return _fetch_objects(client, bucket, prefix, space)
        except (BotoCoreError, ClientError) as err:
            raise HydrationError(f"s3://{bucket}/{prefix}: {err}") from err

    return fetch


def _fetch_object(client: Any, bucket: str, entry: tuple[str, str, int], part: Path) -> None:
    """Download one object into `part` exactly as it was listed, or raise.

    The digest names the listed ETags, so an object replaced since the listing
    (its ETag now another) fails the run instead of being staged under the
    old name; the size is checked against the listing too. (boto3's transfer
    pins the version it downloads with its own If-Match.)
    """
    key, etag, size = entry
    client.download_file(bucket, key, str(part))
    received = part.stat().st_size
    if received != size:
        raise HydrationError(f"s3://{bucket}/{key}: listed as {size} bytes, received {received}")
    now = str(client.head_object(Bucket=bucket, Key=key)["ETag"])
    if now != etag:
        raise HydrationError(f"s3://{bucket}/{key}: replaced while staging (ETag {etag} → {now})")


def _fetch_objects(client: Any, bucket: str, prefix: str, space: Workspace) -> str:
    entries = _list_objects(client, bucket, prefix)
    if not entries:
        raise HydrationError(f"s3://{bucket}/{prefix}: no objects under this prefix")
    done = _progress(space.work)
    manifest = []
    for key, etag, size in entries:
        rel = str(safe_relative(key[len(prefix) :]))
        target = space.tree / rel
        manifest.append((rel, etag, size))
        if done.get(rel) == etag and target.is_file() and target.stat().st_size == size:
            continue  # staged by an earlier run
        target.parent.mkdir(parents=True, exist_ok=True)
        # The part file is in the work folder, so a cut download never sits
        # among the published files (where a source file may carry its name).
        part = space.work / S3_PART
        _fetch_object(client, bucket, (key, etag, size), part)
        part.replace(target)
        done[rel] = etag
        (space.work / PROGRESS).write_text(json.dumps(done, sort_keys=True), encoding="utf-8")
    return etag_manifest_digest(manifest)


# ── HTTP(S) ──────────────────────────────────────────────────────────────────

PART = "http.part"
RESUME = "http.json"
MAX_NAME = 255  # bytes in one file name on the filesystems a PVC offers
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_UNSATISFIED_RANGE = re.compile(r"bytes \*/(\d+)")


# Headers a redirect may carry to another origin: what resuming needs, never a credential.
_PORTABLE_HEADERS = frozenset({"range", "if-range", "accept", "user-agent"})


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an http(s) URL, the port defaulted: what a credential is bound to."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def keeps_credentials(old_url: str, new_url: str) -> bool:
    """Whether a redirect from `old_url` to `new_url` may carry the headers given for `old_url`.

    Only to the same scheme, host and port (as curl decides): another host never
    receives them, and neither does plain http after https.
    """
    return _origin(old_url) == _origin(new_url)


class _HTTPOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s); the Secret's headers only to the origin they were for."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        """Refuse a redirect that leaves http(s); strip the headers a new origin must not get."""
        if urlsplit(newurl).scheme not in ("http", "https"):
            raise HydrationError(f"refusing redirect to {newurl!r}: not http or https")
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and not keeps_credentials(req.full_url, new.full_url):
            for name in [n for n in new.headers if n.lower() not in _PORTABLE_HEADERS]:
                new.remove_header(name)
        return new


def read_headers(folder: str | None) -> dict[str, str]:
    """Request headers from a mounted Secret: one file per header name."""
    if not folder:
        return {}
    out = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.is_file() and not entry.name.startswith("."):
            out[entry.name] = entry.read_text(encoding="utf-8").strip()
    return out


def _has_control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def check_url(url: str) -> None:
    """Refuse, before any request, what is not an absolute http(s) URL with a host.

    Whitespace and control characters are refused too: http.client would
    refuse them later, with a message that names neither the URL nor the cause.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is what raises for a malformed one
    except ValueError as err:
        raise HydrationError(f"{url!r}: not a valid URL ({err})") from err
    if parts.scheme not in ("http", "https"):
        raise HydrationError(f"{url!r}: only http and https URLs are fetched")
    if not parts.hostname:
        raise HydrationError(f"{url!r}: the URL names no host")
    if _has_control(url) or " " in url:
        raise HydrationError(f"{url!r}: the URL contains whitespace or a control character")


def file_name(url: str) -> str:
    """The staged file's name: the URL path's last segment, else `download`.

    A segment that decodes to a control character (`%00`, `%0A`) or to more
    than a file name can hold is refused rather than renamed, so the failure
    names the URL instead of surfacing as an error from the filesystem.
    """
    name = unquote(PurePosixPath(urlsplit(url).path).name)
    if _has_control(name):
        raise HydrationError(f"{url!r}: its file name {name!r} contains a control character")
    if len(name.encode()) > MAX_NAME:
        raise HydrationError(f"{url!r}: its file name is longer than {MAX_NAME} bytes")
    return name if name and name not in (".", "..") and "/" not in name else "download"


class Headers(Protocol):
    """Response headers as http.client and urllib give them (case-insensitive)."""

    def get(self, name: str, default: None = None, /) -> str | None:
        """The header's value, or None when absent."""


@dataclass(frozen=True)
class Version:
    """What identifies one version of the remote file, as a response describes it."""

    etag: str | None = None
    last_modified: str | None = None
    total: int | None = None

    def if_range(self) -> str | None:
        """The `If-Range` value: a strong ETag, else Last-Modified; None when neither exists.

        A weak ETag (`W/...`) may not be used in If-Range (RFC 9110 13.1.5).
        """
        if self.etag and not self.etag.startswith("W/"):
            return self.etag
        return self.last_modified


def content_length(headers: Headers) -> int | None:
    """The announced body length, or None when the response announces none."""
    value = (headers.get("Content-Length") or "").strip()
    return int(value) if value.isdigit() else None


def content_range(value: str | None) -> tuple[int, int, int] | None:
    """`bytes START-END/TOTAL` as numbers; None for anything else (`*`, malformed, inconsistent)."""
    match = _CONTENT_RANGE.fullmatch((value or "").strip())
    if match is None:
        return None
    start, end, total = (int(g) for g in match.groups())
    return (start, end, total) if start <= end < total else None


def _same_version(headers: Headers, saved: Version) -> bool:
    """Whether a partial answer describes the version the partial file came from.

    A server repeats the ETag in a 206 when it sends one in a 200 (RFC 9110
    15.3.7), so a missing or different one means another version.
    """
    if saved.etag is not None and headers.get("ETag") != saved.etag:
        return False
    modified = headers.get("Last-Modified")
    return saved.last_modified is None or modified is None or modified == saved.last_modified


def continues(status: int, headers: Headers, offset: int, saved: Version) -> bool:
    """Whether a response to `Range: bytes=<offset>-` carries exactly the rest of the saved version.

    Only a 206 whose Content-Range starts where the partial file ends, runs to
    the end, and whose total and validators match the saved ones does.
    """
    parsed = content_range(headers.get("Content-Range")) if status == 206 else None
    if parsed is None:
        return False
    start, end, total = parsed
    if start != offset or end != total - 1:
        return False
    return saved.total in (None, total) and _same_version(headers, saved)


def already_whole(headers: Headers, offset: int, saved: Version) -> bool:
    """Whether a 416 to `Range: bytes=<offset>-` says the partial file is the whole version."""
    match = _UNSATISFIED_RANGE.fullmatch((headers.get("Content-Range") or "").strip())
    if match is None or int(match.group(1)) != offset:
        return False
    return saved.total in (None, offset) and _same_version(headers, saved)


def _version(headers: Headers, total: int | None) -> Version:
    return Version(headers.get("ETag"), headers.get("Last-Modified"), total)


def _save(work: Path, url: str, version: Version) -> None:
    record = {"url": url, **asdict(version)}
    (work / RESUME).write_text(json.dumps(record, sort_keys=True), encoding="utf-8")


def _saved(work: Path, url: str) -> Version | None:
    """The version the partial file came from, as the run that started it saved it."""
    try:
        record = json.loads((work / RESUME).read_text(encoding="utf-8"))
        if record.pop("url") != url:
            return None
        version = Version(**record)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return version if version.total is None or isinstance(version.total, int) else None


def _open(url: str, headers: Mapping[str, str], method: str = "GET") -> Any:
    opener = urllib.request.build_opener(_HTTPOnlyRedirects)
    try:
        request = urllib.request.Request(url, headers=dict(headers), method=method)
        return opener.open(request, timeout=60)
    except urllib.error.HTTPError:
        raise
    except (OSError, ValueError, HTTPException) as err:
        raise HydrationError(f"{url}: {type(err).__name__}: {err}") from err


def _http_error(url: str, err: urllib.error.HTTPError) -> HydrationError:
    return HydrationError(f"{url}: HTTP {err.code} {err.reason}")


def _chunks(response: Any, url: str) -> Iterator[bytes]:
    """The response body in chunks; a body that breaks off raises, naming how far it got."""
    received = 0
    while True:
        try:
            chunk = response.read(CHUNK)
        except (OSError, ValueError, HTTPException) as err:
            # A truncated chunked body ends in IncompleteRead (whose `partial`
            # holds what this read got before the break, not written: the
            # next run fetches it again) or in a ValueError from parsing a
            # chunk size; a reset connection in an OSError.
            received += len(getattr(err, "partial", b""))
            raise HydrationError(
                f"{url}: the body broke off after {received} bytes "
                f"({type(err).__name__}: {err}); the next run resumes or restarts"
            ) from err
        if not chunk:
            return
        received += len(chunk)
        yield chunk


def _stream(response: Any, part: Path, mode: str, url: str) -> None:
    with part.open(mode) as out:
        for chunk in _chunks(response, url):
            out.write(chunk)


def _receive_whole(response: Any, work: Path, url: str) -> int | None:
    """Write a 200's body from byte zero; return the length it announced.

    The version is saved before the body, so a run cut midway can resume it.
    """
    total = content_length(response.headers)
    _save(work, url, _version(response.headers, total))
    _stream(response, work / PART, "wb", url)
    return total


def _fresh(url: str, headers: Mapping[str, str], work: Path) -> int | None:
    """Download the whole file from byte zero; return the length announced, if any."""
    try:
        response = _open(url, headers)
    except urllib.error.HTTPError as err:
        raise _http_error(url, err) from err
    with response:
        if response.status != 200:
            raise HydrationError(f"{url}: HTTP {response.status} to a request for the whole file")
        return _receive_whole(response, work, url)


def _resume(url: str, headers: Mapping[str, str], work: Path, saved: Version) -> int | None:
    """Continue the partial file; return its total, or None when it must restart from zero.

    The request carries `If-Range`, so a server that has another version
    answers 200 with the whole file, which is then written from byte zero.
    """
    part = work / PART
    offset = part.stat().st_size
    ranged = {**headers, "Range": f"bytes={offset}-", "If-Range": str(saved.if_range())}
    try:
        response = _open(url, ranged)
    except urllib.error.HTTPError as err:
        if err.code != 416:
            raise _http_error(url, err) from err
        return offset if already_whole(err.headers, offset, saved) else None
    with response:
        if response.status == 200:
            return _receive_whole(response, work, url)
        if not continues(response.status, response.headers, offset, saved):
            return None
        _stream(response, part, "ab", url)
        return content_range(response.headers.get("Content-Range"))[2]  # type: ignore[index]


def _download(url: str, headers: Mapping[str, str], work: Path) -> int | None:
    """Fill `work/http.part` with the file; return the length the server announced, if any.

    A partial file from an earlier run resumes only when the run that started
    it saved a validator (strong ETag or Last-Modified); otherwise, or when the
    server's answer does not continue exactly that version, it restarts.
    """
    part = work / PART
    saved = _saved(work, url) if part.is_file() and part.stat().st_size else None
    if saved is not None and saved.if_range() is not None:
        total = _resume(url, headers, work, saved)
        if total is not None:
            return total
    return _fresh(url, headers, work)


def _announced_by_head(url: str, headers: Mapping[str, str]) -> int | None:
    """The length a HEAD request reports, or None when it reports none or fails."""
    try:
        with _open(url, headers, "HEAD") as response:
            return content_length(response.headers)
    except (urllib.error.HTTPError, HydrationError):
        return None


def _confirm_length(url: str, headers: Mapping[str, str], size: int) -> None:
    """With neither a length nor a sha256, the size must match what a HEAD reports."""
    announced = _announced_by_head(url, headers)
    if announced is None:
        raise HydrationError(
            f"{url}: cannot tell whether the {size} bytes received are the whole file: "
            "the server announced no length (no Content-Length, and HEAD reports none) "
            "and the cache gives no sha256"
        )
    if announced != size:
        raise HydrationError(f"{url}: received {size} bytes, but HEAD reports {announced}")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def http(url: str, sha256: str | None = None, headers: Mapping[str, str] | None = None) -> Fetch:
    """Stream one file; resume a partial download safely; verify its length and sha256.

    Never published: a body shorter than the length announced (Content-Length
    or Content-Range), a sha256 mismatch, or — with no sha256 and no announced
    length — a size HEAD does not confirm.
    """
    sent = dict(headers or {})

    def fetch(space: Workspace) -> str:
        check_url(url)
        target = space.tree / file_name(url)
        part = space.work / PART
        if target.is_file():
            target.replace(part)  # finished by a run killed before publishing: verify again
        total = _download(url, sent, space.work)
        size = part.stat().st_size
        if total is not None and size != total:
            raise HydrationError(f"{url}: the server announced {total} bytes but sent {size}")
        actual = _sha256_of(part)
        if sha256 and actual != sha256.lower():
            part.unlink()
            raise HydrationError(f"{url}: sha256 {actual} does not match the expected {sha256}")
        if not sha256 and total is None:
            _confirm_length(url, sent, size)
        part.replace(target)
        return f"sha256:{actual}"

    return fetch


# ── Inline ───────────────────────────────────────────────────────────────────


def inline(content: str, name: str) -> Fetch:
    """Write the content as one file; the digest is its sha256."""

    def fetch(space: Workspace) -> str:
        data = content.encode()
        (space.tree / str(safe_relative(name))).write_bytes(data)
        return "sha256:" + hashlib.sha256(data).hexdigest()

    return fetch
