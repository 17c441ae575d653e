"""The readiness rule: a NotReady cluster, or one publishing no pools, takes nothing new."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput, fleet_derived


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


def _not_ready(clusters: Mapping[str, ObservedInferenceCluster]) -> frozenset[str]:
    return frozenset(name for name, cl in clusters.items() if not cl.ready or not cl.published)
