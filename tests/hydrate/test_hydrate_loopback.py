"""The hydrator's real download code over loopback: HTTP, S3 (moto server), HF (offline).

Each test downloads real bytes, checks the digest against an independent
computation, and shows what a second run does (resume or no-op).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydration import COMMIT, NOW, files, hf_cache, now
from loopback import FakeKubeAPI, FileServer

from modelplane.api.model_cache import HydrateEnv, HydrationResult
from modelplane.hydrate import sources
from modelplane.hydrate.report import write_result
from modelplane.hydrate.run import hydrate
from modelplane.hydrate.staging import PREVIOUS, STAGING, HydrationError, marker, stage, workspace
from modelplane.kube.client import KubeClient, KubeError, configmap_path

# ── HTTP ─────────────────────────────────────────────────────────────────────


def test_http_downloads_verifies_sha256_and_a_rerun_is_a_noop(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    url = f"{file_server.url}/files/model.gguf"
    fetch = sources.http(url, file_server.sha256, {"Authorization": "Bearer s3cr3t"})

    first = stage(dest, "k1", fetch, now)

    assert files(dest) == {"model.gguf": file_server.payload}
    assert first.digest == "sha256:" + hashlib.sha256(file_server.payload).hexdigest()
    assert first.bytes == len(file_server.payload) == 1048580
    assert (first.completed_at, first.reused) == (NOW, False)
    assert file_server.requests[0]["authorization"] == "Bearer s3cr3t"

    again = stage(dest, "k1", fetch, now)
    assert again.reused and (again.digest, again.bytes) == (first.digest, first.bytes)
    assert len(file_server.requests) == 1  # no second download


def test_http_resumes_an_interrupted_download_with_a_range_request(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    url = f"{file_server.url}/files/model.gguf"
    file_server.cut_after = 300_000
    with pytest.raises(HydrationError):
        stage(dest, "k1", sources.http(url, file_server.sha256), now)
    part = workspace(dest, "k1").work / sources.PART
    assert part.stat().st_size == 300_000 and not dest.exists()

    file_server.cut_after = None
    done = stage(dest, "k1", sources.http(url, file_server.sha256), now)

    assert file_server.requests[-1]["range"] == "bytes=300000-"
    assert file_server.requests[-1]["if-range"] == file_server.etag
    assert files(dest) == {"model.gguf": file_server.payload}
    assert done.digest == f"sha256:{file_server.sha256}"


def test_http_sha256_mismatch_fails_and_publishes_nothing(
    tmp_path: Path, file_server: FileServer
) -> None:
    dest = tmp_path / "model"
    wrong = "0" * 64
    with pytest.raises(HydrationError, match="does not match the expected"):
        stage(dest, "k1", sources.http(f"{file_server.url}/files/x.bin", wrong), now)
    assert not dest.exists()
    assert list(workspace(dest, "k1").tree.iterdir()) == []
    assert not (workspace(dest, "k1").work / sources.PART).exists()


@pytest.mark.parametrize(
    ("scheme", "message"),
    [
        ("file", "Redirection to url 'file:///etc/passwd' is not allowed"),
        ("ftp", "refusing redirect"),
    ],
)
def test_http_refuses_a_redirect_that_leaves_http(
    tmp_path: Path, file_server: FileServer, scheme: str, message: str
) -> None:
    with pytest.raises(HydrationError, match=message):
        stage(tmp_path / "m", "k", sources.http(f"{file_server.url}/redirect-to-{scheme}"), now)


def test_http_headers_come_from_a_mounted_secret_folder(tmp_path: Path) -> None:
    (tmp_path / "Authorization").write_text("Bearer abc\n")
    (tmp_path / "X-Team").write_text("ml")
    (tmp_path / "..data").mkdir()  # what a Secret volume also holds
    assert sources.read_headers(str(tmp_path)) == {"Authorization": "Bearer abc", "X-Team": "ml"}


def test_file_name_comes_from_the_url_path_and_never_escapes() -> None:
    assert sources.file_name("https://h/a/b/model%20v1.gguf?x=1") == "model v1.gguf"
    assert sources.file_name("https://h/") == "download"
    assert sources.file_name("https://h/a/..") == "download"


# ── S3 (moto in server mode) ─────────────────────────────────────────────────


def _bucket(endpoint: str) -> dict[str, bytes]:
    import boto3

    client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    client.create_bucket(Bucket="models")
    objects = {
        "tiny/v1/config.json": b'{"layers": 2}',
        "tiny/v1/weights/model-00001.safetensors": os.urandom(70_000),
        "tiny/v1/weights/model-00002.safetensors": os.urandom(50_000),
        "other/readme.md": b"not under the prefix",
    }
    for key, body in objects.items():
        client.put_object(Bucket="models", Key=key, Body=body)
    return objects


def _etag_manifest(endpoint: str, prefix: str) -> str:
    """An independent digest: the manifest of ETags as S3 lists them."""
    import boto3

    client = boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)
    listed = client.list_objects_v2(Bucket="models", Prefix=prefix)["Contents"]
    lines = sorted(
        f"{o['Key'][len(prefix) :]}\t{o['ETag'].strip(chr(34))}\t{o['Size']}\n" for o in listed
    )
    return "s3-etags:sha256:" + hashlib.sha256("".join(lines).encode()).hexdigest()


def test_s3_compatible_endpoint_downloads_the_prefix_and_a_rerun_is_a_noop(
    tmp_path: Path, s3_endpoint: str
) -> None:
    objects = _bucket(s3_endpoint)
    dest = tmp_path / "model"
    fetch = sources.s3("models", "tiny/v1/", "us-east-1", s3_endpoint)

    first = stage(dest, "k1", fetch, now)

    expected = {k.removeprefix("tiny/v1/"): v for k, v in objects.items() if "tiny/v1/" in k}
    assert files(dest) == expected
    assert first.bytes == sum(len(v) for v in expected.values()) == 120_013
    assert first.digest == _etag_manifest(s3_endpoint, "tiny/v1/")

    again = stage(dest, "k1", fetch, now)
    assert again.reused and again.digest == first.digest


def test_s3_resume_skips_objects_an_interrupted_run_already_staged(
    tmp_path: Path, s3_endpoint: str
) -> None:
    _bucket(s3_endpoint)
    import boto3

    fetched: list[str] = []

    def counting_client(*args: object, **kwargs: object) -> object:
        client = boto3.client(*args, **kwargs)  # type: ignore[call-overload]
        original = client.download_file

        def download_file(bucket: str, key: str, path: str) -> None:
            fetched.append(key)
            if key.endswith("00002.safetensors") and len(fetched) == 3:
                raise HydrationError("pod killed")  # the first run dies on its last object
            original(bucket, key, path)

        client.download_file = download_file
        return client

    fetch = sources.s3("models", "tiny/v1/", "us-east-1", s3_endpoint, counting_client)
    with pytest.raises(HydrationError, match="pod killed"):
        stage(tmp_path / "model", "k1", fetch, now)
    done = stage(tmp_path / "model", "k1", fetch, now)

    assert fetched == [
        "tiny/v1/config.json",
        "tiny/v1/weights/model-00001.safetensors",
        "tiny/v1/weights/model-00002.safetensors",  # killed
        "tiny/v1/weights/model-00002.safetensors",  # the resumed run fetches only this one
    ]
    assert done.digest == _etag_manifest(s3_endpoint, "tiny/v1/")


def test_s3_empty_prefix_and_missing_bucket_fail_with_a_message(
    tmp_path: Path, s3_endpoint: str
) -> None:
    _bucket(s3_endpoint)
    with pytest.raises(HydrationError, match="no objects under this prefix"):
        stage(tmp_path / "a", "k", sources.s3("models", "nope/", None, s3_endpoint), now)
    with pytest.raises(HydrationError, match="NoSuchBucket"):
        stage(tmp_path / "b", "k", sources.s3("absent", "", "us-east-1", s3_endpoint), now)


def test_s3_keys_that_would_escape_the_folder_are_refused() -> None:
    with pytest.raises(HydrationError, match="not a path inside the cache"):
        sources.safe_relative("../../etc/passwd")
    assert str(sources.safe_relative("/a/b")) == "a/b"


# ── Hugging Face (offline, over a prepared cache) ─────────────────────────────


def _hf_cache(root: Path) -> dict[str, bytes]:
    """A Hub cache holding acme/tiny-llm at COMMIT (refs/main points at it)."""
    content = {"config.json": b'{"model_type": "llama"}', "model.safetensors": os.urandom(40_000)}
    hf_cache(root, "acme/tiny-llm", content)
    return content


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "modelplane"), "hydrate", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_huggingface_resolves_the_revision_to_its_commit_through_the_cli(tmp_path: Path) -> None:
    content = _hf_cache(tmp_path / "hub")
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        HydrateEnv.HF_REPO: "acme/tiny-llm",
        HydrateEnv.HF_REVISION: "main",
        HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    first = _cli(env, "huggingface")
    assert first.returncode == 0, first.stderr
    ready = json.loads(first.stdout.splitlines()[-1])
    assert ready["phase"] == "Ready" and ready["resolvedDigest"] == COMMIT
    assert int(ready["bytesStaged"]) == sum(len(b) for b in content.values())
    assert files(tmp_path / "pvc" / "model") == content  # real files, not links to the cache

    again = _cli(env, "huggingface")
    assert json.loads(again.stdout.splitlines()[-1])["message"] == "already staged (no-op)"


def test_huggingface_unknown_revision_fails_with_the_libraries_message(tmp_path: Path) -> None:
    _hf_cache(tmp_path / "hub")
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        HydrateEnv.HF_REPO: "acme/tiny-llm",
        HydrateEnv.HF_REVISION: "$(id)",
        HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    proc = _cli(env, "huggingface")
    assert proc.returncode == 1
    failed = json.loads(proc.stdout.splitlines()[-1])
    assert failed["phase"] == "Failed" and "acme/tiny-llm@$(id)" in failed["message"]
    assert not (tmp_path / "pvc" / "model").exists()


# ── Atomic publish, inline, reporting ─────────────────────────────────────────


def test_a_new_key_replaces_the_previous_artifact_atomically(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    stage(dest, "k1", sources.inline("one", "a.txt"), now)
    second = stage(dest, "k2", sources.inline("two", "b.txt"), now)
    assert files(dest) == {"b.txt": b"two"}
    assert second.digest == "sha256:" + hashlib.sha256(b"two").hexdigest()
    # The replaced artifact stays as the previous one (pods that mounted it keep
    # reading it); a third publish replaces it.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [marker(dest).name, PREVIOUS, STAGING, "model"]
    )
    assert list((tmp_path / STAGING).iterdir()) == []  # the workspace goes once published
    assert files(tmp_path / PREVIOUS) == {"a.txt": b"one"}
    stage(dest, "k3", sources.inline("three", "c.txt"), now)
    assert files(tmp_path / PREVIOUS) == {"b.txt": b"two"}


def test_report_patches_only_the_named_configmap_with_a_merge_patch(
    tmp_path: Path, kube_api: FakeKubeAPI
) -> None:
    token = tmp_path / "token"
    token.write_text("sa-token\n", encoding="utf-8")
    api = KubeClient(kube_api.url, token_file=str(token))
    result = HydrationResult(
        source_hash="k1", phase="Ready", resolved_digest="sha256:ab", bytes_staged="12"
    )
    write_result(api, "ml-team", "qwen-hydration", result)

    ((method, path, body, headers),) = kube_api.patches
    assert (method, path) == ("PATCH", "/api/v1/namespaces/ml-team/configmaps/qwen-hydration")
    assert headers["content-type"] == "application/merge-patch+json"
    assert headers["authorization"] == "Bearer sa-token"
    assert body == {
        "data": {
            "sourceHash": "k1",
            "phase": "Ready",
            "resolvedDigest": "sha256:ab",
            "bytesStaged": "12",
        }
    }
    assert configmap_path("a/b", "c") == "/api/v1/namespaces/a%2Fb/configmaps/c"


def test_report_refused_by_rbac_is_an_error_naming_the_configmap(kube_api: FakeKubeAPI) -> None:
    kube_api.forbidden = True
    with pytest.raises(KubeError, match="configmaps/x: HTTP 403"):
        write_result(
            KubeClient(kube_api.url), "ns", "x", HydrationResult(source_hash="k", phase="Hydrating")
        )


def test_run_reports_hydrating_then_ready_and_failed_on_error(
    tmp_path: Path, kube_api: FakeKubeAPI, file_server: FileServer
) -> None:
    api = KubeClient(kube_api.url)

    def report(r: HydrationResult) -> None:
        write_result(api, "ml-team", "cache-hydration", r)

    hydrate(sources.inline("x", "f"), tmp_path / "a", "k1", report, now)
    phases = [p[2]["data"]["phase"] for p in kube_api.patches]
    assert phases == ["Hydrating", "Ready"]
    final = kube_api.configmaps["/api/v1/namespaces/ml-team/configmaps/cache-hydration"]
    assert final["resolvedDigest"] == "sha256:" + hashlib.sha256(b"x").hexdigest()
    assert final["completedAt"] == NOW

    with pytest.raises(HydrationError):
        hydrate(sources.http(f"{file_server.url}/missing"), tmp_path / "b", "k2", report, now)
    assert kube_api.patches[-1][2]["data"]["phase"] == "Failed"
    assert "HTTP 404" in kube_api.patches[-1][2]["data"]["message"]


def test_http_through_the_cli_with_every_parameter_in_the_environment(
    tmp_path: Path, file_server: FileServer
) -> None:
    (tmp_path / "headers").mkdir()
    (tmp_path / "headers" / "Authorization").write_text("Bearer from-a-secret")
    env = {
        HydrateEnv.HTTP_URL: f"{file_server.url}/files/weights.bin",
        HydrateEnv.HTTP_SHA256: file_server.sha256,
        HydrateEnv.HTTP_HEADERS_DIR: str(tmp_path / "headers"),
        HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    proc = _cli(env, "http")
    assert proc.returncode == 0, proc.stderr
    ready = json.loads(proc.stdout.splitlines()[-1])
    assert ready["resolvedDigest"] == f"sha256:{file_server.sha256}"
    assert ready["bytesStaged"] == str(len(file_server.payload))
    assert file_server.requests[0]["authorization"] == "Bearer from-a-secret"
    assert (tmp_path / "pvc" / "model" / "weights.bin").read_bytes() == file_server.payload


def test_inline_through_the_cli_keeps_shell_text_as_plain_bytes(tmp_path: Path) -> None:
    content = "#!/bin/sh\nrm -rf / $(id) `id` {{ .Env }}\n"
    env = {
        HydrateEnv.INLINE_CONTENT: content,
        HydrateEnv.INLINE_FILE: "chat_template.jinja",
        HydrateEnv.DEST: str(tmp_path / "pvc" / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    proc = _cli(env, "inline")
    assert proc.returncode == 0, proc.stderr
    staged = tmp_path / "pvc" / "model" / "chat_template.jinja"
    assert staged.read_text() == content
    expected = "sha256:" + hashlib.sha256(content.encode()).hexdigest()
    assert json.loads(proc.stdout.splitlines()[-1])["resolvedDigest"] == expected
