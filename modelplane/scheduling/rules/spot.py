"""Spot capacity: only a deployment with `spec.placement.allowSpot` runs on a Spot pool.

A pool filter (new replicas never go to a Spot pool without it) and a cluster
filter's eviction (a replica on a Spot pool leaves once `allowSpot` is turned
off, make-before-break). A spot *reclaim* needs nothing here: the cloud takes
the nodes, the pods go Pending and the cluster's inventory agent reports the
replica unschedulable, so it moves exactly as a replica on a stocked-out pool
does (`unschedulable`).
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.scheduling.framework import (
    AdmitsEveryCluster,
    Eviction,
    PoolKey,
    Rejection,
    ScheduleInput,
    fleet_derived,
)


def allows_spot(inp: ScheduleInput) -> bool:
    """Whether the deployment accepts Spot pools."""
    placement = inp.spec.placement
    return placement is not None and placement.allow_spot


class SpotFilter(AdmitsEveryCluster):
    """Spot pools take and keep replicas only of deployments that allow them."""

    name = "Spot"

    def evict(
        self, inp: ScheduleInput, cluster: ObservedInferenceCluster, replica: ObservedModelReplica
    ) -> Eviction | None:
        """A replica on a Spot pool leaves when the deployment no longer allows Spot."""
        if allows_spot(inp):
            return None
        for role in replica.roles:
            pool = cluster.pool(role.pool)
            if pool is not None and pool.spot is True:  # an unreadable type evicts nothing
                return Eviction("SpotNotAllowed", (pool.name, cluster.name))
        return None

    def refusals(self, inp: ScheduleInput) -> Mapping[PoolKey, Rejection]:
        """Every Spot pool of a candidate cluster, unless the deployment allows Spot."""
        if allows_spot(inp):
            return {}
        clusters = inp.clusters
        spot = fleet_derived(clusters, "spot.pools", lambda: _spot_pools(clusters))
        return {
            (name, pool): Rejection("SpotNotAllowed", (pool,))
            for name, pool in spot
            if name in inp.candidates
        }


def _spot_pools(clusters: Mapping[str, ObservedInferenceCluster]) -> tuple[tuple[str, str], ...]:
    """Every (cluster, pool) of Spot capacity, or whose capacityType does not read, sorted."""
    return tuple(
        (name, p.name)
        for name in sorted(clusters)
        for p in clusters[name].pools
        if p.spot is not False
    )
