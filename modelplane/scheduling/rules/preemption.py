"""The preemption rule: a replica a higher-priority replica preempts leaves at once.

The search for victims is the scheduler's post-filter step (`scheduling.preempt`);
this rule withdraws, in the victim's own deployment, the replicas that search named.
"""

from __future__ import annotations

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import AdmitsEveryCluster, Eviction, ScheduleInput


def preempted(inp: ScheduleInput, r: ObservedModelReplica) -> bool:
    """Whether a strictly higher-priority replica preempts `r` (it is charged nowhere)."""
    return inp.preemptor(r) is not None


class PreemptionFilter(AdmitsEveryCluster):
    """A replica a higher-priority replica preempts leaves at once (no make-before-break)."""

    name = "Preemption"

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """The replica leaves when a strictly higher-priority replica names it."""
        by = inp.preemptor(replica)
        if by is None:
            return None
        pool = next((role.pool for role in by.roles), "")
        return Eviction(
            "Preempted",
            (
                by.name,
                f"{by.namespace}/{by.deployment}",
                str(inp.priority(by.priority)),
                str(inp.priority(replica.priority)),
                pool,
                by.cluster,
            ),
        )
