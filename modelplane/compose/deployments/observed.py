"""The scheduler's typed input, built once from what the control plane observed.

The ModelDeployment composer and `modelplane explain` both schedule a
deployment; they differ only in where the objects come from (the function's
required resources, the local control plane's store). Each hands an
`ObservedFleet` to `scheduler_input`, which decides what the scheduler is
given — every InferenceCluster, every ModelReplica, the ModelCaches of
`spec.caches` in the deployment's namespace — so the two cannot drift, and
the spec the caller already validated is not parsed again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.scheduling.framework import ScheduleInput, build_input

Object = Mapping[str, Any]  # a Kubernetes object as observed (read, never written)


class ObservedFleet(Protocol):
    """The objects around one deployment, as one source observed them."""

    def clusters(self) -> Sequence[Object]:
        """Every InferenceCluster (the scheduler applies `spec.clusterSelector` itself)."""

    def replicas(self) -> Sequence[Object]:
        """Every ModelReplica of the fleet, every namespace (others' charge the pools)."""

    def cache(self, name: str) -> Object | None:
        """The ModelCache `name` in the deployment's namespace; None when not found."""

    def quotas(self) -> Sequence[Object]:
        """The FleetQuotas of the deployment's namespace."""

    def priority_classes(self) -> Sequence[Object]:
        """Every PriorityClass (their values order the fleet's replicas for preemption)."""

    def placers(self) -> Sequence[Object]:
        """The ModelDeployments that may own the fleet's preempting replicas (every one
        while some replica preempts): a preemption counts only if its deployment placed it."""


def scheduler_input(
    composite: Object, spec: ModelDeploymentSpec, fleet: ObservedFleet
) -> ScheduleInput:
    """The typed input of one scheduling cycle for `composite`, whose spec is `spec`.

    `spec` is the composite's spec as the caller validated it. Every ModelCache
    of `spec.caches` is looked up (the ones not found become
    `ScheduleInput.missing_caches`, which hold new placements).
    """
    m = composite.get("metadata")
    m = m if isinstance(m, Mapping) else {}
    caches = [obj for x in spec.caches or () if (obj := fleet.cache(x.name)) is not None]
    return build_input(
        str(m.get("namespace") or ""),
        str(m.get("name") or ""),
        spec,
        fleet.clusters(),
        fleet.replicas(),
        caches,
        fleet.quotas(),
        fleet.priority_classes(),
        fleet.placers(),
    )
