"""Hardware drift: what a cluster's DRA driver publishes versus what the pool's class says.

A pure comparison of observed ResourceSlices (read-only observations of the
workload cluster) with the devices an InferenceClass declares. Placement keeps
using the declared class; a drift only tells the platform team that, say, a
class promising 80Gi GPUs sits on a pool whose slices publish 40Gi.

Matching: the pool's nodes are the observed Nodes labelled with the pool; a
declared DRA device is compared with the devices of its driver that the
slices of those nodes publish. Attribute and capacity names are compared
without the driver's own domain prefix (a slice may publish `productName`
where the class says `gpu.nvidia.com/productName`). Synthetic devices have no
driver publishing them and are never compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.inference_class import Device
from modelplane.compose.capacity import observed_nodes
from modelplane.compose.types import Resource
from modelplane.dra.quantity import QuantityError, parse_quantity


@dataclass(frozen=True)
class Drift:
    """One difference between a declared device and what the cluster publishes."""

    pool: str
    device: str
    field: str
    declared: str
    observed: str
    nodes: int = 1

    def describe(self) -> str:
        """One sentence naming pool, device, field and both values."""
        return (
            f"pool {self.pool!r} device {self.device!r}: {self.field} is {self.observed} on "
            f"{self.nodes} node(s), the class declares {self.declared}"
        )


def _manifest(obj: Resource) -> dict[str, Any]:
    status = obj.get("status")
    at = status.get("atProvider") if isinstance(status, dict) else None
    wrapped = at.get("manifest") if isinstance(at, dict) else None
    return wrapped if isinstance(wrapped, dict) else obj


def resource_slices(objects: Iterable[Resource]) -> list[dict[str, Any]]:
    """The ResourceSlice manifests among observed objects (wrapped or plain)."""
    slices = [_manifest(o) for o in objects]
    return [s for s in slices if s.get("kind") == "ResourceSlice"]


def _short(name: str, driver: str) -> str:
    prefix = f"{driver}/"
    return name[len(prefix) :] if name.startswith(prefix) else name


def _attr_value(attr: Any) -> str | None:
    if not isinstance(attr, dict):
        return None
    for key in ("string", "int", "bool", "version"):
        if key in attr and attr[key] is not None:
            value = attr[key]
            return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def _same_quantity(a: str, b: str) -> bool:
    try:
        return parse_quantity(a) == parse_quantity(b)
    except QuantityError:
        return a == b


def _declared(device: Device) -> tuple[dict[str, str], dict[str, str]]:
    attrs = {
        _short(k, device.driver): v
        for k, a in (device.attributes or {}).items()
        if (v := _attr_value(a.to_dict())) is not None
    }
    caps = {_short(k, device.driver): q.value for k, q in (device.capacity or {}).items()}
    return attrs, caps


def _published(slice_device: dict[str, Any], driver: str) -> tuple[dict[str, str], dict[str, str]]:
    attrs = {
        _short(str(k), driver): v
        for k, a in (slice_device.get("attributes") or {}).items()
        if (v := _attr_value(a)) is not None
    }
    caps = {}
    for k, q in (slice_device.get("capacity") or {}).items():
        if isinstance(q, dict) and q.get("value") is not None:
            caps[_short(str(k), driver)] = str(q["value"])
    return attrs, caps


def _compare(device: Device, slice_device: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, declared, observed) for each declared attribute/capacity that differs."""
    want_attrs, want_caps = _declared(device)
    have_attrs, have_caps = _published(slice_device, device.driver)
    out = []
    for name, value in sorted(want_attrs.items()):
        got = have_attrs.get(name, "absent")
        if got != value:
            out.append((f"attribute {name}", value, got))
    for name, value in sorted(want_caps.items()):
        published = have_caps.get(name)
        if published is None or not _same_quantity(value, published):
            out.append((f"capacity {name}", value, published or "absent"))
    return out


def _devices_by_node(slices: list[dict[str, Any]], driver: str) -> dict[str, list[dict[str, Any]]]:
    by_node: dict[str, list[dict[str, Any]]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("driver") != driver or not spec.get("nodeName"):
            continue
        devices = [d for d in spec.get("devices") or [] if isinstance(d, dict)]
        by_node.setdefault(str(spec["nodeName"]), []).extend(devices)
    return by_node


def _pool_nodes(pool: str, observed: list[Resource]) -> list[str]:
    names = []
    for node in observed_nodes(observed):
        meta = node.get("metadata") or {}
        if (meta.get("labels") or {}).get(c.LABEL_POOL) == pool and meta.get("name"):
            names.append(str(meta["name"]))
    return sorted(names)


def _device_drift(
    pool: str, device: Device, nodes: list[str], by_node: dict[str, list[dict[str, Any]]]
) -> list[Drift]:
    found: dict[tuple[str, str, str], int] = {}
    for node in nodes:
        published = by_node.get(node, [])
        diffs: set[tuple[str, str, str]] = set()
        if len(published) != device.count:
            diffs.add(("count", str(device.count), str(len(published))))
        # Identical devices are declared once: every published one must match.
        for slice_device in published:
            diffs.update(_compare(device, slice_device))
        for diff in diffs:
            found[diff] = found.get(diff, 0) + 1
    return [Drift(pool, device.name, f, d, o, n) for (f, d, o), n in sorted(found.items())]


def hardware_drift(pool: str, devices: list[Device], observed: list[Resource]) -> list[Drift]:
    """Every difference between `devices` and the slices published by `pool`'s nodes.

    `observed` holds the observed Nodes and ResourceSlices of the cluster (plain
    or wrapped in provider-kubernetes Objects). A pool with no observed node
    reports nothing: there is nothing published to compare yet.
    """
    nodes = _pool_nodes(pool, observed)
    if not nodes:
        return []
    slices = resource_slices(observed)
    out: list[Drift] = []
    for device in devices:
        if device.claim != "DRA":
            continue
        out += _device_drift(pool, device, nodes, _devices_by_node(slices, device.driver))
    return out
