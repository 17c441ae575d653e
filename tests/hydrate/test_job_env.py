"""The hydrator run with the environment the composed Job really sets (read from a render).

Each test renders a ModelCache example through the CLI, takes the hydration
Job's command and environment from the output, and runs it with every
volume mounted under a temporary root, reporting to a loopback API server.
Only what stands in for the outside world is added: the Hub in offline mode
over a prepared cache, moto for AWS, a loopback file server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hydration import COMMIT, files, hf_cache
from job import JOB_PREFIXES, Job, job_env, render_job, run_in_pod
from loopback import FakeKubeAPI, FileServer

from modelplane.api.model_cache import HydrateEnv
from modelplane.hydrate import sources
from modelplane.hydrate.staging import marker, workspace
from modelplane.kube.client import KubeClient

HF_FILES = {
    "config.json": b'{"model_type": "qwen2"}',
    "model.safetensors": os.urandom(50_000),
    "tokenizer/vocab.json": b'{"a": 1}',
}


def _results(api: FakeKubeAPI, job: Job, env: dict[str, str]) -> list[dict[str, Any]]:
    """The data of every PATCH of the Job's result ConfigMap, in order."""
    path = f"/api/v1/namespaces/{job.namespace}/configmaps/{env[HydrateEnv.RESULT_CONFIGMAP]}"
    patches = [p[2]["data"] for p in api.patches if p[1] == path]
    assert len(patches) == len(api.patches), "the Job patched another object"
    return patches


# ── Hugging Face: HF_HOME set, HF_HUB_CACHE not ───────────────────────────────


@pytest.fixture
def hf_job(tmp_path: Path) -> tuple[Job, dict[str, str]]:
    job = render_job("huggingface", tmp_path)
    env = job_env(job, tmp_path / "pod", secret_keys={"token": "hf_test_token"})
    assert job.command == ["modelplane", "hydrate", "huggingface"]
    # The Job relies on the hydrator's default cache location: HF_HOME points
    # at the pod's scratch volume, HF_HUB_CACHE is not set.
    assert "HF_HUB_CACHE" not in env and env["HF_HOME"].startswith(str(tmp_path / "pod/tmp/"))
    return job, env


def _default_hf_cache(env: dict[str, str]) -> Path:
    """Where the hydrator keeps huggingface_hub's cache when the Job sets only HF_HOME."""
    return workspace(Path(env[HydrateEnv.DEST]), env[HydrateEnv.SOURCE_HASH]).work / "hf"


def test_huggingface_with_the_jobs_environment_uses_the_cache_on_the_pvc(
    hf_job: tuple[Job, dict[str, str]], kube_api: FakeKubeAPI
) -> None:
    job, env = hf_job
    hf_cache(_default_hf_cache(env), env[HydrateEnv.HF_REPO], HF_FILES)

    proc = run_in_pod(job, env, kube_api.url, {"HF_HUB_OFFLINE": "1"})

    assert proc.returncode == 0, proc.stderr
    results = _results(kube_api, job, env)
    assert [r["phase"] for r in results] == ["Hydrating", "Ready"]
    assert results[-1]["resolvedDigest"] == COMMIT
    assert results[-1]["bytesStaged"] == str(sum(len(b) for b in HF_FILES.values()))
    dest = Path(env[HydrateEnv.DEST])
    assert files(dest) == HF_FILES
    # The cache lived on the PVC (so a killed pod's blobs resume), not under
    # HF_HOME on the scratch volume, and went with the workspace.
    assert not (Path(env["HF_HOME"]) / "hub").exists()
    assert not _default_hf_cache(env).exists()
    assert marker(dest).is_file()


def test_huggingface_resumes_into_a_workspace_a_killed_pod_already_linked_into(
    hf_job: tuple[Job, dict[str, str]], kube_api: FakeKubeAPI
) -> None:
    job, env = hf_job
    snapshot = hf_cache(_default_hf_cache(env), env[HydrateEnv.HF_REPO], HF_FILES)
    space = workspace(Path(env[HydrateEnv.DEST]), env[HydrateEnv.SOURCE_HASH])
    space.tree.mkdir(parents=True)
    sources._link_tree(snapshot, space.tree)  # what the killed pod did before dying
    linked = space.tree / "model.safetensors"
    assert linked.samefile(snapshot / "model.safetensors")

    proc = run_in_pod(job, env, kube_api.url, {"HF_HUB_OFFLINE": "1"})

    assert proc.returncode == 0, proc.stderr  # not a SameFileError
    assert [r["phase"] for r in _results(kube_api, job, env)] == ["Hydrating", "Ready"]
    assert files(Path(env[HydrateEnv.DEST])) == HF_FILES


# ── S3: plain AWS, no endpoint (moto stands in for AWS) ───────────────────────


def _plain_s3(cache: dict[str, Any]) -> None:
    source = cache["spec"]["artifact"]["source"]["s3"]
    del source["endpoint"]


S3_FILES = {
    "config.json": b'{"layers": 2}',
    "weights/model-00001.safetensors": os.urandom(70_000),
    ".cache/hf/notes.txt": b"a source file, not the hydrator's",
}


def test_plain_s3_without_an_endpoint_with_the_jobs_environment(
    tmp_path: Path, kube_api: FakeKubeAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    moto = pytest.importorskip("moto")
    import boto3
    from click.testing import CliRunner

    from modelplane.cli.main import cli

    job = render_job("s3-compatible", tmp_path, _plain_s3)
    secrets = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    env = job_env(job, tmp_path / "pod", secret_keys=secrets)
    assert HydrateEnv.S3_ENDPOINT not in env and job.command == ["modelplane", "hydrate", "s3"]
    for name in os.environ:
        if name.startswith(JOB_PREFIXES):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(KubeClient, "in_cluster", classmethod(lambda cls: cls(kube_api.url)))
    bucket, prefix = env[HydrateEnv.S3_BUCKET], env[HydrateEnv.S3_PREFIX]

    with moto.mock_aws():
        client = boto3.client("s3", region_name=env[HydrateEnv.S3_REGION])
        client.create_bucket(Bucket=bucket)
        for rel, body in S3_FILES.items():
            client.put_object(Bucket=bucket, Key=prefix + rel, Body=body)
        client.put_object(Bucket=bucket, Key=prefix + "weights/", Body=b"")  # a console "folder"
        outcome = CliRunner().invoke(cli, job.command[1:], catch_exceptions=False)

    assert outcome.exit_code == 0, outcome.output
    results = _results(kube_api, job, env)
    assert [r["phase"] for r in results] == ["Hydrating", "Ready"]
    assert results[-1]["resolvedDigest"].startswith("s3-etags:sha256:")
    assert files(Path(env[HydrateEnv.DEST])) == S3_FILES


# ── HTTP: the headers Secret mounted as a volume ──────────────────────────────


def test_http_with_the_jobs_environment_and_its_mounted_headers(
    tmp_path: Path, kube_api: FakeKubeAPI, file_server: FileServer
) -> None:
    url = f"{file_server.url}/files/model$1.bin"  # `$` reaches the Job escaped as `$$`

    def http_source(cache: dict[str, Any]) -> None:
        creds = {"name": "hf-token"}
        cache["spec"]["artifact"]["source"] = {"http": {"url": url, "headersSecretRef": creds}}

    job = render_job("huggingface", tmp_path, http_source)
    env = job_env(job, tmp_path / "pod", secret_files={"Authorization": "Bearer from-a-secret"})
    (raw,) = [e["value"] for e in job.env if e["name"] == HydrateEnv.HTTP_URL]
    assert (raw, env[HydrateEnv.HTTP_URL]) == (url.replace("$", "$$"), url)

    proc = run_in_pod(job, env, kube_api.url)

    assert proc.returncode == 0, proc.stderr
    results = _results(kube_api, job, env)
    assert [r["phase"] for r in results] == ["Hydrating", "Ready"]
    assert results[-1]["resolvedDigest"] == f"sha256:{file_server.sha256}"
    assert file_server.gets()[0]["authorization"] == "Bearer from-a-secret"
    assert files(Path(env[HydrateEnv.DEST])) == {"model$1.bin": file_server.payload}


def test_a_failure_in_the_jobs_environment_reaches_the_configmap_as_failed(
    tmp_path: Path, kube_api: FakeKubeAPI, file_server: FileServer
) -> None:
    file_server.chunked = True
    file_server.cut_after = 100_000

    def http_source(cache: dict[str, Any]) -> None:
        cache["spec"]["artifact"]["source"] = {"http": {"url": f"{file_server.url}/files/m.bin"}}

    job = render_job("huggingface", tmp_path, http_source)
    env = job_env(job, tmp_path / "pod")

    proc = run_in_pod(job, env, kube_api.url)

    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    results = _results(kube_api, job, env)
    assert [r["phase"] for r in results] == ["Hydrating", "Failed"]
    assert "the body broke off after" in results[-1]["message"]
    assert json.loads(proc.stdout.splitlines()[-1]) == results[-1]
