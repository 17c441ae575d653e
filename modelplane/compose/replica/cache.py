"""A replica's ModelCache: which claim to mount, whether its copy is Ready, and its Usages.

The replica requires its cache (`spec.caches[0]`, same namespace) and reads it
only through `api.model_cache.read_model_cache`: the copy on the replica's
cluster names the claim (the cache's own PVC, or the adopted ExistingPVC) and
whether it is Ready. Until it is, the replica is not Ready (`CacheReady`
says why) and a serving workload that does not exist yet is not created, so
nothing starts serving from a half-staged folder; a workload that exists is
kept. Each serving workload Object is declared a user of the cache's claim
Object through a Crossplane `Usage`, so the claim is never deleted while a
replica there mounts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.api import constants as c
from modelplane.api.model_cache import read_model_cache
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.reasons import CacheReadyReason
from modelplane.compose.caches.manifests import pvc_object_name
from modelplane.compose.objects import Item, Ref, usage
from modelplane.compose.replica.stamping.volumes import CacheMount
from modelplane.compose.types import ComposeInput, ComposeResult, Requirement, Resource

CACHE_REQUIREMENT = "model-cache"


@dataclass(frozen=True)
class ReplicaCache:
    """The replica's cache: its name, what to mount, and whether the copy is Ready."""

    name: str
    mount: CacheMount
    ready: bool


def requirement(spec: ModelReplicaSpec, namespace: str) -> Requirement | None:
    """The ModelCache the replica needs fetched, if it names one."""
    if not spec.caches:
        return None
    return Requirement(
        api_version=c.API_VERSION,
        kind="ModelCache",
        match_name=spec.caches[0].name,
        namespace=namespace,
    )


def resolve(inp: ComposeInput, res: ComposeResult, spec: ModelReplicaSpec) -> ReplicaCache | None:
    """Read the cache's copy on the replica's cluster and set `CacheReady` (None: no cache)."""
    if not spec.caches:
        return None
    name, cluster = spec.caches[0].name, spec.cluster_name
    found = inp.required.get(CACHE_REQUIREMENT, [])
    if not found:
        msg = f"spec.caches: ModelCache {name!r} not found: the replica waits for it"
        res.condition(c.CONDITION_CACHE_READY, False, CacheReadyReason.CACHE_NOT_FOUND, msg)
        return ReplicaCache(name, CacheMount(name, c.HYDRATE_SUBPATH), False)
    cache = read_model_cache(found[0])
    copy = cache.copy_on(cluster)
    claim = copy.claim_name if copy is not None and copy.claim_name else name
    mount = CacheMount(claim, cache.sub_path)
    if copy is None:
        msg = f"ModelCache {name!r} stages no copy on cluster {cluster!r}"
        res.condition(c.CONDITION_CACHE_READY, False, CacheReadyReason.NOT_ON_CLUSTER, msg)
        return ReplicaCache(name, mount, False)
    if not copy.ready:
        msg = (
            f"ModelCache {name!r} copy on cluster {cluster!r} is {copy.phase}: the replica "
            "starts serving once it is Ready"
        )
        res.condition(c.CONDITION_CACHE_READY, False, CacheReadyReason.COPY_NOT_READY, msg)
        return ReplicaCache(name, mount, False)
    digest = f" ({copy.resolved_digest})" if copy.resolved_digest else ""
    msg = f"ModelCache {name!r} copy on cluster {cluster!r} Ready{digest}, claim {claim!r}"
    res.condition(c.CONDITION_CACHE_READY, True, CacheReadyReason.READY, msg)
    return ReplicaCache(name, mount, True)


def held(inp: ComposeInput, items: list[Item], cache: ReplicaCache | None) -> set[str]:
    """Serving items not created yet, held back while the cache's copy is not Ready."""
    if cache is None or cache.ready:
        return set()
    return {i.key for i in items if i.serves and i.key not in inp.observed}


def usages(
    items: list[Item], held_keys: set[str], cache: ReplicaCache | None, cluster: str, ns: str
) -> dict[str, Resource]:
    """One Usage per serving workload Object: it uses the cache's claim Object."""
    if cache is None:
        return {}
    out = {}
    for item in items:
        if not item.serves or item.key in held_keys:
            continue
        out[f"{item.key}-cache-usage"] = usage(
            f"{item.name}-cache",
            ns,
            of=Ref(
                c.PROVIDER_KUBERNETES_API_VERSION, "Object", pvc_object_name(cache.name, cluster)
            ),
            by=Ref(c.PROVIDER_KUBERNETES_API_VERSION, "Object", item.name),
            reason="a replica's serving workload mounts the cache's claim",
        )
    return out
