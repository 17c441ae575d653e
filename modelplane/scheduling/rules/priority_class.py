"""PriorityClass: no new replica on a cluster where the class its pods name does not exist.

A replica's pods name `spec.priority`, else the cluster's
`spec.scheduling.defaultPriority`. Kubernetes rejects a pod naming a
PriorityClass the cluster lacks, so the replica would never run: such a
cluster takes none, and its verdict names the class and where it came from.
A class exists when the cluster's serving stack creates it
(`spec.scheduling.priorityClasses`) or the cluster declares it already there
(`spec.scheduling.existingPriorityClasses`). A replica already running stays:
a class dropped later deletes nothing that runs.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import Eviction, Rejection, ScheduleInput


def wanted(inp: ScheduleInput, cluster: ObservedInferenceCluster) -> tuple[str, str] | None:
    """The PriorityClass the deployment's pods would name on `cluster`, and the field
    naming it; None when they name none."""
    if inp.spec.priority:
        return inp.spec.priority, "spec.priority"
    default = cluster.scheduling.default_priority if cluster.scheduling else None
    return (default, "the cluster's spec.scheduling.defaultPriority") if default else None


def missing(inp: ScheduleInput, cluster: ObservedInferenceCluster) -> tuple[str, str] | None:
    """The class the pods would name on `cluster` when the cluster lacks it, else None."""
    found = wanted(inp, cluster)
    if found is None:
        return None
    sched = cluster.scheduling
    return None if sched is not None and sched.has_priority_class(found[0]) else found


class PriorityClassFilter:
    """A cluster lacking the PriorityClass the deployment's pods name takes none."""

    name = "PriorityClass"

    def admit(self, inp: ScheduleInput, cluster: ObservedInferenceCluster) -> Rejection | None:
        """Refuse a cluster without the class."""
        found = missing(inp, cluster)
        return None if found is None else Rejection("PriorityClassMissing", found)

    def suspects(self, inp: ScheduleInput) -> Collection[str]:
        """The clusters lacking the class the pods would name there."""
        return [n for n, cl in inp.clusters.items() if missing(inp, cl) is not None]

    def key(self, inp: ScheduleInput) -> Hashable:
        """The deployment's own class (a cluster's default is the cluster's part)."""
        return inp.spec.priority

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """Never: a class dropped later deletes nothing that runs."""
        return None
