"""Builders for the tenancy tests: quotas, PriorityClasses, priced and Spot pools, and a
scheduler call that passes them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.scheduling.framework import build_input
from modelplane.scheduling.scheduler import schedule_input
from modelplane.scheduling.types import ScheduleResult

Obj = dict[str, Any]


def quota(name: str, namespace: str = "team-a", **limits: Obj) -> Obj:
    """A FleetQuota with one entry per keyword: `h100={"devices": 16, ...}`."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "FleetQuota",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"limits": [{"name": k, **v} for k, v in limits.items()]},
    }


def priority_class(name: str, value: int) -> Obj:
    """A PriorityClass."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def priced(cl: Obj, **pools: tuple[float | None, str | None]) -> Obj:
    """`cl` with `{pool: (pricePerDeviceHour, capacityType)}` published on its pools."""
    for p in cl["status"]["gpuPools"]:
        if p["name"] in pools:
            price, capacity = pools[p["name"]]
            if price is not None:
                p["pricePerDeviceHour"] = price
            if capacity is not None:
                p["capacityType"] = capacity
    return cl


def with_priority(obj: Obj, priority: str | None, preempts: Sequence[tuple[str, str]] = ()) -> Obj:
    """A ModelReplica or ModelDeployment with `spec.priority` (and a replica's preempts)."""
    if priority is not None:
        obj["spec"]["priority"] = priority
    if preempts:
        obj["spec"]["preempts"] = [{"namespace": ns, "name": n} for ns, n in preempts]
    return obj


def run(
    dep: Obj,
    clusters: list[Obj],
    replicas: Sequence[Obj] = (),
    quotas: Sequence[Obj] = (),
    priorities: Sequence[Obj] = (),
) -> ScheduleResult:
    """One scheduling cycle of `dep` with the namespace's quotas and the PriorityClasses,
    which every cluster is declared to have as well (a replica goes only where its class
    exists; tests/scheduling/test_filters.py covers that)."""
    names = [p["metadata"]["name"] for p in priorities]
    if names:
        clusters = [_with_classes(cl, names) for cl in clusters]
    spec = ModelDeploymentSpec.model_validate(dep["spec"])
    meta = dep["metadata"]
    inp = build_input(
        meta["namespace"], meta["name"], spec, clusters, replicas, None, quotas, priorities
    )
    return schedule_input(inp)


def _with_classes(cl: Obj, names: list[str]) -> Obj:
    spec = {**cl["spec"]}
    spec["scheduling"] = {**(spec.get("scheduling") or {}), "existingPriorityClasses": names}
    return {**cl, "spec": spec}
