"""The cache rule: new replicas go only where the deployment's ModelCache has a copy."""

from __future__ import annotations

from collections.abc import Collection, Hashable

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput


class CacheFilter:
    """`spec.caches`: new replicas go only where the deployment's ModelCache has a copy.

    While a named ModelCache does not exist, no new replica is placed at all;
    once it does, a cluster it stages no copy on (its clusterSelector leaves
    the cluster out, or the cluster is not Ready for it) takes none. Existing
    replicas keep serving from what they mounted.
    """

    name = "Caches"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse every cluster while a cache is missing, else those it does not cover."""
        missing = inp.missing_caches
        if missing:
            return Rejection("WaitingForCache", missing)
        cache = inp.cache
        if cache is not None and not cache.covers(cluster.name):
            return Rejection("CacheNotOnCluster", (cache.name,))
        return None

    def suspects(self, inp: ScheduleInput) -> Collection[str] | None:
        """Every cluster while a cache is missing, else those the cache does not cover."""
        if inp.missing_caches:
            return None
        cache = inp.cache
        if cache is None:
            return ()
        return [name for name in inp.clusters if not cache.covers(name)]

    def key(self, inp: ScheduleInput) -> Hashable:
        """The missing caches, else the clusters the deployment's cache covers (its name
        too: the refusal names it)."""
        if inp.missing_caches:
            return ("missing", inp.missing_caches)
        cache = inp.cache
        if cache is None:
            return ()
        return ("covers", cache.name, frozenset(x.cluster for x in cache.copies))

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: a replica already running keeps its mounted weights."""
        return None
