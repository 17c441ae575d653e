"""The hydrator's bookkeeping lives outside the published tree: a source file may carry any name.

Files named like the hydrator's own (the names of this and earlier layouts)
are published intact and a rerun is a no-op, for every source kind; the
record of what is published is beside the folder, and one that cannot be
read is never trusted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydration import COMMIT, files, hf_cache, now, run
from loopback import FileServer

from modelplane.api.model_cache import HydrateEnv
from modelplane.hydrate import sources, staging
from modelplane.hydrate.staging import HydrationError, marker, published, stage, workspace

# The names the hydrator keeps (or kept) for itself, as a source's files.
LOOKALIKES = [
    ".modelplane-hydrated.json",
    ".modelplane-progress.json",
    ".modelplane-hydrated-model.json",
    ".cache/hf/models--acme--x/blobs/abc",
    ".cache/huggingface/download/x.lock",
    "hf/config.json",
    "s3-progress.json",
    "s3.part",
    "http.part",
    "http.json",
    "tree/a.bin",
    "work/b.bin",
    "model.bin.part",
    "model.bin",
]


# ── HTTP ─────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("name", [n for n in LOOKALIKES if "/" not in n])
def test_an_http_file_named_like_the_bookkeeping_is_published_intact(
    tmp_path: Path, file_server: FileServer, name: str
) -> None:
    dest = tmp_path / "model"
    fetch = sources.http(f"{file_server.url}/files/{name}")

    first = stage(dest, "k1", fetch, now)
    again = stage(dest, "k1", fetch, now)

    assert files(dest) == {name: file_server.payload}
    assert again.reused and (again.digest, again.bytes) == (first.digest, first.bytes)
    assert len(file_server.gets()) == 1


def test_an_http_file_named_like_the_bookkeeping_resumes_intact(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    fetch = sources.http(f"{file_server.url}/files/.modelplane-progress.json")
    file_server.cut_after = 1000
    with pytest.raises(HydrationError):
        stage(dest, "k1", fetch, now)
    file_server.cut_after = None
    stage(dest, "k1", fetch, now)
    assert files(dest) == {".modelplane-progress.json": file_server.payload}


# ── S3 ───────────────────────────────────────────────────────────────────────


def _put(endpoint: str, objects: dict[str, bytes]) -> None:
    import boto3

    client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    client.create_bucket(Bucket="models")
    for key, body in objects.items():
        client.put_object(Bucket="models", Key=key, Body=body)


def test_s3_objects_named_like_the_bookkeeping_are_published_intact(
    tmp_path: Path, s3_endpoint: str
) -> None:
    objects = {name: os.urandom(100 + i) for i, name in enumerate(LOOKALIKES)}
    _put(s3_endpoint, {f"m/{k}": v for k, v in objects.items()})
    dest = tmp_path / "model"
    fetch = sources.s3("models", "m/", "us-east-1", s3_endpoint)

    first = stage(dest, "k1", fetch, now)
    again = stage(dest, "k1", fetch, now)

    assert files(dest) == objects
    assert first.bytes == sum(len(v) for v in objects.values())
    assert again.reused and again.digest == first.digest


FILE_KEYS = ("m/weights/a.bin", "m/config.json")


def test_s3_folder_keys_are_skipped_and_a_folder_key_with_bytes_is_refused(
    tmp_path: Path, s3_endpoint: str
) -> None:
    _put(
        s3_endpoint,
        {"m/": b"", "m/weights/": b"", "m/weights/a.bin": b"abc", "m/config.json": b"{}"},
    )
    done = stage(tmp_path / "a", "k1", sources.s3("models", "m/", "us-east-1", s3_endpoint), now)
    assert files(tmp_path / "a") == {"weights/a.bin": b"abc", "config.json": b"{}"}
    import boto3

    client = boto3.client("s3", region_name="us-east-1", endpoint_url=s3_endpoint)
    listed = client.list_objects_v2(Bucket="models", Prefix="m/")["Contents"]
    assert len(listed) == 4
    manifest = [(o["Key"][2:], o["ETag"], o["Size"]) for o in listed if o["Key"] in FILE_KEYS]
    assert done.bytes == 5 and done.digest == sources.etag_manifest_digest(manifest)

    client.put_object(Bucket="models", Key="m/odd/", Body=b"not empty")
    failed = run(sources.s3("models", "m/", "us-east-1", s3_endpoint), tmp_path / "b")
    assert failed.final.phase == "Failed"
    assert failed.final.message == "s3://models/m/odd/: a folder key holding 9 bytes"


def test_s3_an_object_replaced_while_staging_fails_rather_than_lie(
    tmp_path: Path, s3_endpoint: str
) -> None:
    _put(s3_endpoint, {"m/a.bin": b"first version"})
    import boto3

    def replacing_client(*args: object, **kwargs: object) -> object:
        client = boto3.client(*args, **kwargs)  # type: ignore[call-overload]
        original = client.download_file

        def download_file(bucket: str, key: str, path: str) -> None:
            original(bucket, key, path)
            client.put_object(Bucket=bucket, Key=key, Body=b"second version")  # same size

        client.download_file = download_file
        return client

    fetch = sources.s3("models", "m/", "us-east-1", s3_endpoint, replacing_client)
    failed = run(fetch, tmp_path / "model")
    assert failed.final.phase == "Failed"
    assert "s3://models/m/a.bin: replaced while staging" in str(failed.final.message)
    assert not (tmp_path / "model").exists()


# ── Hugging Face ─────────────────────────────────────────────────────────────


def test_hugging_face_files_named_like_the_bookkeeping_are_published_intact(
    tmp_path: Path,
) -> None:
    content = {name: os.urandom(64 + i) for i, name in enumerate(LOOKALIKES)}
    hf_cache(tmp_path / "hub", "acme/tiny", content)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "MODELPLANE_"))},
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        HydrateEnv.HF_REPO: "acme/tiny",
        HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    command = [str(Path(sys.executable).parent / "modelplane"), "hydrate", "huggingface"]
    for expected in ("staged", "already staged (no-op)"):
        proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout.splitlines()[-1])
        assert (result["phase"], result["message"]) == ("Ready", expected)
        assert result["resolvedDigest"] == COMMIT
    assert files(tmp_path / "pvc" / "model") == content


# ── The record beside the published folder ───────────────────────────────────


def test_the_record_sits_beside_the_folder_and_names_what_it_holds(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    done = stage(dest, "k1", sources.inline("x", "f"), now)
    assert marker(dest) == tmp_path / ".modelplane-hydrated-model.json"
    assert json.loads(marker(dest).read_text()) == {
        "key": "k1",
        "digest": done.digest,
        "bytes": 1,
        "completedAt": now(),
    }
    assert files(dest) == {"f": b"x"}
    assert not workspace(dest, "k1").tree.parent.exists()


@pytest.mark.parametrize(
    "record",
    [
        "not json",
        "[]",
        '{"key": "k1"}',
        '{"key": "k1", "digest": "d", "bytes": "12", "completedAt": "t"}',
        '{"key": "k1", "digest": "d", "bytes": -1, "completedAt": "t"}',
        '{"key": "k1", "digest": "d", "bytes": true, "completedAt": "t"}',
        '{"key": "k1", "digest": 7, "bytes": 1, "completedAt": "t"}',
        '{"key": "k1", "digest": "d", "bytes": 1, "completedAt": null}',
        '{"key": "k2", "digest": "d", "bytes": 1, "completedAt": "t"}',
    ],
)
def test_a_record_that_cannot_be_trusted_means_stage_again(tmp_path: Path, record: str) -> None:
    dest = tmp_path / "model"
    dest.mkdir()
    marker(dest).write_text(record)
    assert published(dest, "k1") is None
    done = stage(dest, "k1", sources.inline("x", "f"), now)
    assert not done.reused and files(dest) == {"f": b"x"}


def test_a_record_without_its_folder_means_stage_again(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    good = '{"key": "k1", "digest": "d", "bytes": 1, "completedAt": "t"}'
    marker(dest).write_text(good)
    assert published(dest, "k1") is None
    dest.mkdir()
    assert published(dest, "k1") is not None


def test_a_run_killed_after_publishing_leaves_a_workspace_the_next_run_removes(
    tmp_path: Path,
) -> None:
    dest = tmp_path / "model"
    stage(dest, "k1", sources.inline("x", "f"), now)
    left = workspace(dest, "k1")
    left.work.mkdir(parents=True)
    again = stage(dest, "k1", sources.inline("x", "f"), now)
    assert again.reused and not left.tree.parent.exists()


def test_a_run_killed_between_publishing_and_recording_is_never_taken_for_the_old_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "model"
    stage(dest, "k1", sources.inline("one", "a"), now)

    def killed(dest: Path, staged: object) -> None:
        raise KeyboardInterrupt  # the pod dies after the rename, before the new record

    monkeypatch.setattr(staging, "_write_record", killed)
    with pytest.raises(KeyboardInterrupt):
        stage(dest, "k2", sources.inline("two", "b"), now)
    monkeypatch.undo()

    assert files(dest) == {"b": b"two"}
    assert published(dest, "k1") is None and published(dest, "k2") is None
    again = stage(dest, "k1", sources.inline("one", "a"), now)  # the spec went back to k1
    assert not again.reused and files(dest) == {"a": b"one"}
