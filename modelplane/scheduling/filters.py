"""Cluster filters: each a small rule answering "may a new replica go here" and
"must an existing replica leave", with its own reason code.

`FILTERS` is the registry, in the order verdicts are reported: the first
filter that refuses a cluster names the cluster's reason. Adding a filter is
a class here (or in its own module), one entry in `FILTERS`, and its table
test in tests/scheduling/test_filters.py.
"""

from __future__ import annotations

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import ClusterFilter, Eviction, Rejection, ScheduleInput
from modelplane.scheduling.labels import describe_taint, untolerated


class ClusterSelectorFilter:
    """`spec.clusterSelector`: only selected clusters take or keep replicas."""

    name = "ClusterSelector"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster the selector does not select."""
        return None if cluster.name in inp.candidates else Rejection("NotSelected")

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

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: readiness comes and goes; the replica is kept."""
        return None


class CacheFilter:
    """`spec.caches`: while a named ModelCache does not exist, no new replica is placed.

    Existing replicas keep serving from what they mounted.
    """

    name = "Caches"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse every cluster while a ModelCache of `spec.caches` is missing."""
        missing = inp.missing_caches
        return Rejection("WaitingForCache", missing) if missing else None

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: a replica already running keeps its mounted weights."""
        return None


FILTERS: tuple[ClusterFilter, ...] = (
    ClusterSelectorFilter(),
    TaintFilter(),
    ReadinessFilter(),
    CacheFilter(),
)
"""Every cluster filter, in the order a cluster's reason is reported."""
