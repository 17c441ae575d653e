"""The unschedulable-replica rule: a replica its cluster cannot schedule moves (issue 17).

An InferenceCluster's inventory agent reports in `status.unschedulableReplicas`
the replicas whose pods stayed Unschedulable past a grace period, by their pods'
`modelplane.ai/replica` label (`ObservedInferenceCluster.stuck` maps a
ModelReplica's name to it). The ledger admitted them, the cluster's own
scheduler disagrees (it spreads where the ledger assumed packing, nodes are
cordoned in-cluster, ...), so the ledger is not to be trusted for that pool while
the report stands:

- `evict`: a replica so reported that is not Ready must leave (`Unschedulable`).
  A Ready replica serves, so a report about it is stale or partial: it stays (a
  healthy replica never moves, SPEC §3.3).
- `refusals`: while a replica of the deployment is reported on a pool, no new
  replica of the deployment goes on that pool (`ReplicaUnschedulable`); the
  cluster's other pools may take one.

What becomes of the evicted replica is the retain step's: under rollout
MakeBeforeBreak it is kept, charged and not counted until a replacement is
placed elsewhere, then withdrawn in the same cycle (it serves nothing, so
waiting for the replacement to be Ready would buy no capacity); under Immediate
it is withdrawn at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica, StuckReplica
from modelplane.scheduling.framework import (
    AdmitsEveryCluster,
    Eviction,
    PoolKey,
    Rejection,
    ScheduleInput,
)


def stuck_report(
    cluster: ObservedInferenceCluster, replica: ObservedModelReplica
) -> StuckReplica | None:
    """The cluster's report that `replica` is unschedulable, unless the replica is Ready."""
    if replica.ready:
        return None
    return cluster.stuck(replica.name, replica.namespace)


def stuck_pools(report: StuckReplica, replica: ObservedModelReplica) -> tuple[str, ...]:
    """The pools a report holds against: the one the pods asked for, when it is one of the
    replica's pools, else every pool the replica holds."""
    pools = sorted({role.pool for role in replica.roles})
    if report.pool is not None and report.pool in pools:
        return (report.pool,)
    return tuple(pools)


class UnschedulableFilter(AdmitsEveryCluster):
    """Replicas the cluster reports unschedulable leave, and their pools take no new ones."""

    name = "Unschedulable"

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """A replica that is not Ready and reported unschedulable must leave."""
        report = stuck_report(cluster, replica)
        if report is None:
            return None
        pools = ", ".join(stuck_pools(report, replica)) or "?"
        return Eviction("Unschedulable", (cluster.name, pools, report.since, report.message))

    def refusals(self, inp: ScheduleInput) -> Mapping[PoolKey, Rejection]:
        """Each pool holding a reported replica of the deployment, with the first such replica."""
        out: dict[PoolKey, Rejection] = {}
        for r in inp.replicas:
            cluster = inp.clusters.get(r.cluster)
            if cluster is None or not cluster.unschedulable:
                continue
            if not r.belongs_to(inp.namespace, inp.name):
                continue
            report = stuck_report(cluster, r)
            if report is None:
                continue
            for pool in stuck_pools(report, r):
                detail = (r.name, report.since)
                out.setdefault((r.cluster, pool), Rejection("ReplicaUnschedulable", detail))
        return out
