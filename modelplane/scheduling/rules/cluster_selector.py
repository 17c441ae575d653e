"""The cluster selector rule: `spec.clusterSelector` picks where replicas go and stay."""

from __future__ import annotations

from collections.abc import Collection, Hashable

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput

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
