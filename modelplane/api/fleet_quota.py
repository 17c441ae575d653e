"""FleetQuota: how many devices a namespace's deployments may hold across the fleet.

A namespace holds at most one FleetQuota that counts (the first by name; the
others say so in their status). Each `spec.limits` entry caps the devices, in
DRA device units, that every replica of the namespace's ModelDeployments holds
on the pools it selects — by DRA DeviceClass, by InferenceClass, by a CEL
selector over the device, or all of them when it names none. Draining and
surge replicas count: they hold devices. The scheduler refuses a placement
past an entry; a limit lowered below what is used deletes nothing and blocks
new placements only.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    """A FleetQuota as the scheduler reads it: its name and parsed limits."""

    name: str
    limits: tuple[QuotaLimit, ...]


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
    return ObservedQuota(name, tuple(spec.limits))


def governing_quota(objects: list[Mapping[str, Any]]) -> ObservedQuota | None:
    """The namespace's quota that counts: the first readable one by name."""
    quotas = sorted((q for o in objects if (q := read_fleet_quota(o))), key=lambda q: q.name)
    return quotas[0] if quotas else None
