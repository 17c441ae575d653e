"""The taint rule: a cluster's untolerated taints repel new replicas; NoExecute drains."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput, fleet_derived
from modelplane.scheduling.labels import describe_taint, untolerated


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


def _tainted(clusters: Mapping[str, ObservedInferenceCluster]) -> frozenset[str]:
    return frozenset(name for name, cl in clusters.items() if cl.taints)
