"""FleetQuota: how many devices a namespace's deployments may hold across the fleet.

Every FleetQuota of a namespace counts: each limit of each of them must hold,
so a second quota can only narrow what the first allows (the tightest wins).
FleetQuotas are the platform's to write (docs/security.md: the ML team's role
reads them only). Each `spec.limits` entry caps the devices, in
DRA device units, that every replica of the namespace's ModelDeployments holds
on the pools it selects — by DRA DeviceClass, by InferenceClass, by a CEL
selector over the device, or all of them when it names none. Draining and
surge replicas count: they hold devices. The scheduler refuses a placement
past an entry; a limit lowered below what is used deletes nothing and blocks
new placements only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationError

from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    StatusModel,
)

MAX_LIMITS = 16


class QuotaLimit(KubeModel):
    """One cap: the devices the namespace may hold on the pools this entry selects."""

    name: DNSLabel = Field(description="The entry's name, used in messages and status.")
    devices: int = Field(ge=0, le=1_000_000, description="Devices the namespace may hold.")
    device_class_name: DNSSubdomain | None = Field(
        default=None,
        description="Counts only requests of this DRA DeviceClass (e.g. gpu.nvidia.com).",
    )
    inference_classes: list[DNSSubdomain] | None = Field(
        default=None,
        max_length=32,
        description="Counts only devices of pools of these InferenceClasses.",
    )
    selector: str | None = Field(
        default=None,
        max_length=1024,
        description="A DRA CEL expression over `device`: counts only requests whose device "
        "satisfies it, e.g. device.capacity['gpu.nvidia.com'].memory.compareTo("
        "quantity('40Gi')) >= 0 (any class with at least 40Gi).",
    )


class FleetQuotaSpec(KubeModel):
    """The namespace's limits; every entry must hold for a placement to go ahead."""

    limits: list[QuotaLimit] = Field(
        min_length=1, max_length=MAX_LIMITS, description="The caps, each in device units."
    )
    priority_classes: list[DNSSubdomain] | None = Field(
        default=None,
        max_length=32,
        description="The PriorityClasses the namespace's ModelDeployments may name in "
        "spec.priority. A deployment may use one only when some FleetQuota of its namespace "
        "lists it and every FleetQuota that sets this field does (the tightest wins); "
        "without any list, none. Names starting with system- are never allowed.",
    )


class QuotaUsage(StatusModel):
    """One entry's use against its limit."""

    name: str = Field(description="The entry.")
    used: int = Field(description="Devices held by the namespace's replicas on its pools.")
    hard: int = Field(description="The entry's limit.")


class FleetQuotaStatus(ConditionedStatus):
    """Use against each limit, as the scheduler counts it."""

    used: list[QuotaUsage] | None = Field(
        default=None, max_length=MAX_LIMITS, description="Each entry's used / hard devices."
    )


@dataclass(frozen=True)
class ObservedQuota:
    """A FleetQuota as the scheduler reads it: its name and parsed limits.

    The namespace's quotas together are one of these too (`namespace_quota`): every
    limit of every FleetQuota, each with the quota it came from (`owners`).
    """

    name: str
    limits: tuple[QuotaLimit, ...]
    priority_classes: tuple[str, ...] | None = None
    owners: tuple[str, ...] = ()  # the FleetQuota of each limit; empty: all `name`

    def owner(self, i: int) -> str:
        """The name of the FleetQuota limit `i` belongs to."""
        return self.owners[i] if self.owners else self.name


def read_fleet_quota(obj: Mapping[str, Any]) -> ObservedQuota | None:
    """A FleetQuota's name and limits; None when it has no name or its spec does not parse.

    The API server validated the spec against the same schema, so a spec that
    does not parse here is a stale or foreign object: it limits nothing rather
    than crash a reconcile.
    """
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    try:
        spec = FleetQuotaSpec.model_validate(dict(obj.get("spec") or {}))
    except (ValidationError, TypeError, ValueError):
        return None
    classes = tuple(spec.priority_classes) if spec.priority_classes is not None else None
    return ObservedQuota(name, tuple(spec.limits), classes)


def namespace_quota(objects: list[Mapping[str, Any]]) -> ObservedQuota | None:
    """Every readable FleetQuota of a namespace as one: all their limits apply, so the
    tightest wins and a second quota can only narrow what the first allows. None when
    there is none. Quotas are taken by name, each once (the last copy of a name wins)."""
    by_name = {q.name: q for o in objects if (q := read_fleet_quota(o))}
    quotas = [by_name[n] for n in sorted(by_name)]
    if not quotas:
        return None
    if len(quotas) == 1:
        return quotas[0]
    return ObservedQuota(
        ", ".join(q.name for q in quotas),
        tuple(lim for q in quotas for lim in q.limits),
        None,
        tuple(q.name for q in quotas for _ in q.limits),
    )


SYSTEM_PRIORITY_PREFIX = "system-"


def priority_problem(
    objects: Sequence[Mapping[str, Any]], namespace: str, priority: str
) -> str | None:
    """Why the namespace's FleetQuotas (`objects`) do not let a deployment name PriorityClass
    `priority` in spec.priority; None when they do.

    Fail closed: a `system-` class never; otherwise every readable FleetQuota that
    sets `spec.priorityClasses` must list it, and at least one must. A FleetQuota
    that does not read cannot say yes.
    """
    where = f"spec.priority: PriorityClass {priority!r}"
    if priority.startswith(SYSTEM_PRIORITY_PREFIX):
        return f"{where} is reserved for the platform's own pods and never allowed"
    lists = [(q.name, q.priority_classes) for o in objects if (q := read_fleet_quota(o))]
    lists = [(n, pcs) for n, pcs in lists if pcs is not None]
    refusing = sorted(n for n, pcs in lists if priority not in (pcs or ()))
    if not lists:
        return (
            f"{where} is not allowed in namespace {namespace}: no FleetQuota of the "
            "namespace lists it in spec.priorityClasses"
        )
    if refusing:
        return (
            f"{where} is not allowed in namespace {namespace}: FleetQuota "
            f"{', '.join(refusing)} does not list it in spec.priorityClasses"
        )
    return None
