"""The hydration Job as the composer renders it: its command and environment, read from the render.

Tests run the hydrator with exactly that environment (each volume mounted
under a temporary root, each Secret key given by the test) instead of a
retyped copy of it, so a change on either side shows up here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "caches"
SHIM = Path(__file__).resolve().parent / "in_cluster.py"
# Where the hydrator's own configuration comes from: nothing else of the
# developer's environment may leak into a run that claims to be the Job's.
JOB_PREFIXES = ("MODELPLANE_", "AWS_", "HF_", "HUGGINGFACE_")


@dataclass(frozen=True)
class Job:
    """One rendered hydration Job's container."""

    name: str
    namespace: str
    command: list[str]
    env: list[dict[str, Any]]
    mounts: dict[str, str]  # mountPath → volume name
    volumes: dict[str, dict[str, Any]]  # volume name → its source


def _jobs(rendered: Any) -> list[dict[str, Any]]:
    """Every Job manifest the render carries (wrapped in provider-kubernetes Objects)."""
    found = []
    for item in rendered["items"]:
        manifest = (item.get("spec") or {}).get("forProvider", {}).get("manifest")
        if isinstance(manifest, dict) and manifest.get("kind") == "Job":
            found.append(manifest)
    return sorted(found, key=lambda m: m["metadata"]["name"])


def render_job(
    example: str, tmp: Path, edit: Callable[[dict[str, Any]], None] | None = None
) -> Job:
    """Render `examples/caches/<example>`, its ModelCache edited by `edit`; read the first Job."""
    folder = tmp / "example"
    shutil.copytree(EXAMPLES / example, folder)
    if edit is not None:
        docs = list(yaml.safe_load_all((folder / "cache.yaml").read_text()))
        for doc in docs:
            if doc and doc.get("kind") == "ModelCache":
                edit(doc)
        (folder / "cache.yaml").write_text(yaml.safe_dump_all(docs))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "modelplane"), "render", str(folder), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    jobs = _jobs(json.loads(proc.stdout))
    assert jobs, "the render composed no hydration Job"
    manifest = jobs[0]
    pod = manifest["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return Job(
        name=manifest["metadata"]["name"],
        namespace=manifest["metadata"]["namespace"],
        command=container["command"],
        env=container["env"],
        mounts={m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])},
        volumes={v["name"]: v for v in pod.get("volumes", [])},
    )


def mounted(job: Job, root: Path, value: str) -> str:
    """`value` with a path inside a volume mount moved under `root`, where the test mounts it."""
    for path in sorted(job.mounts, key=len, reverse=True):
        if value == path or value.startswith(path.rstrip("/") + "/"):
            return str(root) + value
    return value


def _from(job: Job, ref: Mapping[str, Any], secrets: Mapping[str, str]) -> str | None:
    if "fieldRef" in ref:
        assert ref["fieldRef"]["fieldPath"] == "metadata.namespace", ref
        return job.namespace
    key_ref = ref["secretKeyRef"]
    value = secrets.get(key_ref["key"])
    assert value is not None or key_ref.get("optional"), f"the test gives no {key_ref}"
    return value


def expand(value: str, env: Mapping[str, str]) -> str:
    """The kubelet's expansion of an env value: `$$` is `$`, `$(NAME)` a variable defined above.

    A reference to an undefined variable stays as written, as the kubelet leaves it.
    """
    out = []
    i = 0
    while i < len(value):
        end = value.find(")", i) if value.startswith("$(", i) else -1
        if value.startswith("$$", i):
            out.append("$")
            i += 2
        elif end != -1 and value[i + 2 : end] in env:
            out.append(env[value[i + 2 : end]])
            i = end + 1
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _mount_secrets(job: Job, root: Path, files: Mapping[str, str]) -> None:
    """Write `files` into every Secret volume, one file per key, as the kubelet does."""
    for path, volume in job.mounts.items():
        if "secret" in job.volumes[volume]:
            folder = Path(str(root) + path)
            (folder / "..data").mkdir(
                parents=True, exist_ok=True
            )  # what a Secret volume also holds
            for key, value in files.items():
                (folder / key).write_text(value, encoding="utf-8")


def job_env(
    job: Job,
    root: Path,
    secret_keys: Mapping[str, str] | None = None,
    secret_files: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The container's environment as the kubelet sets it, each mount under `root`.

    Every mount's folder is created (an empty volume; Secret volumes hold
    `secret_files`); `secret_keys` gives the values the Job's `secretKeyRef`s
    name, by key (an optional key may be missing).
    """
    for path in job.mounts:
        Path(str(root) + path).mkdir(parents=True, exist_ok=True)
    _mount_secrets(job, root, secret_files or {})
    env: dict[str, str] = {}
    for entry in job.env:
        if "value" in entry:
            env[entry["name"]] = mounted(job, root, expand(entry["value"], env))
            continue
        value = _from(job, entry["valueFrom"], secret_keys or {})
        if value is not None:
            env[entry["name"]] = value
    return env


def clean_environ() -> dict[str, str]:
    """This process's environment without any hydrator, AWS or Hugging Face setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith(JOB_PREFIXES)}


def run_in_pod(
    job: Job, env: Mapping[str, str], api_url: str, extra: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the Job's command with exactly `env` (plus `extra`), reporting to the loopback API."""
    assert job.command[0] == "modelplane", job.command
    return subprocess.run(
        [sys.executable, str(SHIM), api_url, *job.command[1:]],
        env={**clean_environ(), **env, **(extra or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
