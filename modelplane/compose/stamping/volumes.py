"""Volumes every serving pod may need: shared memory and the model cache.

`/dev/shm` is a memory-backed volume whenever a worker shards over several GPUs
(tensor > 1) or nodes (NCCL and Ray's object store both use it). A cache
(`spec.caches[0]`) is the PVC of the same name in the workload namespace (the
ModelCache composer's naming), mounted read-only at `/mnt/models`.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_deployment import Topology
from modelplane.compose.stamping import upsert

SHM_VOLUME = "dshm"
CACHE_VOLUME = "model-cache"


def stamp(
    pod: dict[str, Any], engine: dict[str, Any], topology: Topology, cache: str | None
) -> None:
    """Add the shared-memory and cache volumes (and the engine's mounts) the pod needs."""
    volumes = list(pod.get("volumes") or [])
    mounts = list(engine.get("volumeMounts") or [])
    if topology.tensor > 1 or topology.nodes_per_worker > 1:
        upsert(volumes, {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
        upsert(mounts, {"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    if cache:
        claim = {"claimName": cache, "readOnly": True}
        upsert(volumes, {"name": CACHE_VOLUME, "persistentVolumeClaim": claim})
        upsert(mounts, {"name": CACHE_VOLUME, "mountPath": c.CACHE_MOUNT_PATH, "readOnly": True})
    if volumes:
        pod["volumes"] = volumes
    if mounts:
        engine["volumeMounts"] = mounts
