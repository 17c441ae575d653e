"""Cluster filters: each a small rule answering "may a new replica go here" and
"must an existing replica leave", with its own reason code.

`FILTERS` is the registry, in the order verdicts are reported: the first
filter that refuses a cluster names the cluster's reason. Adding a filter is
a class here (or in its own module), one entry in `FILTERS`, and its table
test in tests/scheduling/test_filters.py. A rule that refuses single pools
rather than whole clusters is also registered in `POOL_FILTERS`.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.backend_filter import BackendFilter
from modelplane.scheduling.framework import (
    ClusterFilter,
    Eviction,
    PoolFilter,
    Rejection,
    ScheduleInput,
    fleet_derived,
)
from modelplane.scheduling.labels import describe_taint, untolerated
from modelplane.scheduling.preempt import PreemptionFilter
from modelplane.scheduling.spot import SpotFilter
from modelplane.scheduling.unschedulable import UnschedulableFilter

_NOT_SELECTED = Rejection("NotSelected")  # immutable: one for every cluster left out


class ClusterSelectorFilter:
    """`spec.clusterSelector`: only selected clusters take or keep replicas."""

    name = "ClusterSelector"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster the selector does not select."""
        return None if cluster.name in inp.candidates else _NOT_SELECTED

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The clusters the selector leaves out."""
        return inp.clusters.keys() - inp.candidates

    def key(self, inp: ScheduleInput) -> Hashable:
        """The selected clusters."""
        return inp.candidates

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """A replica leaves a cluster the (edited) selector no longer selects."""
        return None if cluster.name in inp.candidates else Eviction("Deselected", (cluster.name,))


class TaintFilter:
    """Cluster taints: any untolerated taint repels new replicas; NoExecute also drains."""

    name = "Taints"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster with any untolerated taint, naming every such taint."""
        taints = untolerated(cluster.taints, inp.tolerations)
        return Rejection("Tainted", tuple(map(describe_taint, taints))) if taints else None

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The tainted clusters."""
        clusters = inp.clusters
        return fleet_derived(clusters, "filters.tainted", lambda: _tainted(clusters))

    def key(self, inp: ScheduleInput) -> Hashable:
        """The deployment's tolerations, field by field."""
        return tuple((t.key, t.operator, t.value, t.effect) for t in inp.tolerations)

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """A replica leaves a cluster with an untolerated NoExecute taint (a drain)."""
        taints = untolerated(cluster.taints, inp.tolerations)
        drain = next((t for t in taints if t.effect == "NoExecute"), None)
        if drain is None:
            return None
        return Eviction("NoExecuteTaint", (cluster.name, describe_taint(drain)))


class ReadinessFilter:
    """Cluster readiness: a NotReady cluster, or one publishing no pools, takes nothing new.

    Existing replicas stay: a NotReady cluster is not a gone cluster, and what
    cannot be verified is kept (SPEC §3.3).
    """

    name = "Readiness"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster that is not Ready or publishes no pools."""
        if not cluster.ready:
            return Rejection("NotReady", ("not-ready",))
        if not cluster.published:
            return Rejection("NotReady", ("no-pools",))
        return None

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The clusters not Ready or publishing no pools."""
        clusters = inp.clusters
        return fleet_derived(clusters, "filters.not_ready", lambda: _not_ready(clusters))

    def key(self, inp: ScheduleInput) -> Hashable:
        """Nothing: readiness is the cluster's alone."""
        return ()

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: readiness comes and goes; the replica is kept."""
        return None


def _tainted(clusters: Mapping[str, ObservedInferenceCluster]) -> frozenset[str]:
    return frozenset(name for name, cl in clusters.items() if cl.taints)


def _not_ready(clusters: Mapping[str, ObservedInferenceCluster]) -> frozenset[str]:
    return frozenset(name for name, cl in clusters.items() if not cl.ready or not cl.published)


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


UNSCHEDULABLE = UnschedulableFilter()
SPOT = SpotFilter()

FILTERS: tuple[ClusterFilter, ...] = (
    ClusterSelectorFilter(),
    TaintFilter(),
    ReadinessFilter(),
    BackendFilter(),
    CacheFilter(),
    UNSCHEDULABLE,
    SPOT,
    PreemptionFilter(),
)
"""Every cluster filter, in the order a cluster's reason is reported."""

POOL_FILTERS: tuple[PoolFilter, ...] = (UNSCHEDULABLE, SPOT)
"""Every pool filter; the first that refuses a pool names the reason."""
