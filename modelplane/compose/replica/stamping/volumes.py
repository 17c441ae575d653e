"""Volumes every serving pod may need: shared memory, the model cache and its scratch space.

`/dev/shm` is a memory-backed volume whenever a worker shards over several GPUs
(tensor > 1) or nodes (NCCL and Ray's object store both use it).

A cache (`spec.caches[0]`) is its claim on the replica's cluster, mounted
read-only at `/mnt/models`: for a `PVC` backend the `model` folder the
hydration Job publishes (`subPath`), for an `ExistingPVC` the claim's root.
Engines write next to their model (tokenizer conversions, compile caches,
`HF_HOME`) and fail on a read-only model folder, so a pod that mounts a cache
also gets a writable `emptyDir` scratch volume, and the engine's cache
variables point into it unless the user set them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_deployment import Topology
from modelplane.compose.replica.stamping import upsert

SHM_VOLUME = "dshm"
CACHE_VOLUME = "model-cache"
SCRATCH_VOLUME = "engine-scratch"
SCRATCH_PATH = "/var/cache/modelplane"
# Where engines and their libraries keep what they write at run time.
SCRATCH_ENV = {
    "HF_HOME": f"{SCRATCH_PATH}/huggingface",
    "XDG_CACHE_HOME": SCRATCH_PATH,
    "VLLM_CACHE_ROOT": f"{SCRATCH_PATH}/vllm",
    "TRITON_CACHE_DIR": f"{SCRATCH_PATH}/triton",
    "TORCHINDUCTOR_CACHE_DIR": f"{SCRATCH_PATH}/torchinductor",
}


@dataclass(frozen=True)
class CacheMount:
    """The claim holding a cache's copy on the replica's cluster, and the folder to mount."""

    claim: str
    sub_path: str | None = None


def _cache(
    volumes: list[Any], mounts: list[Any], engine: dict[str, Any], cache: CacheMount
) -> None:
    claim = {"claimName": cache.claim, "readOnly": True}
    upsert(volumes, {"name": CACHE_VOLUME, "persistentVolumeClaim": claim})
    mount: dict[str, Any] = {
        "name": CACHE_VOLUME,
        "mountPath": c.CACHE_MOUNT_PATH,
        "readOnly": True,
    }
    if cache.sub_path:
        mount["subPath"] = cache.sub_path
    upsert(mounts, mount)
    upsert(volumes, {"name": SCRATCH_VOLUME, "emptyDir": {}})
    upsert(mounts, {"name": SCRATCH_VOLUME, "mountPath": SCRATCH_PATH})
    env = list(engine.get("env") or [])
    names = {e.get("name") for e in env if isinstance(e, dict)}
    env += [{"name": k, "value": v} for k, v in SCRATCH_ENV.items() if k not in names]
    engine["env"] = env


def stamp(
    pod: dict[str, Any], engine: dict[str, Any], topology: Topology, cache: CacheMount | None
) -> None:
    """Add the shared-memory, cache and scratch volumes (and the engine's mounts) the pod needs."""
    volumes = list(pod.get("volumes") or [])
    mounts = list(engine.get("volumeMounts") or [])
    if topology.tensor > 1 or topology.nodes_per_worker > 1:
        upsert(volumes, {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
        upsert(mounts, {"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    if cache is not None:
        _cache(volumes, mounts, engine, cache)
    if volumes:
        pod["volumes"] = volumes
    if mounts:
        engine["volumeMounts"] = mounts
