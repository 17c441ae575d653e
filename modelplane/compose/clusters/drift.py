"""Hardware drift: what a cluster's DRA driver publishes versus what the pool's class says.

A pure comparison of a pool's inventory (the distinct device shapes its nodes'
ResourceSlices publish, as the cluster's inventory agent summarised them,
`api/inventory_summary.py`) with the devices an InferenceClass declares. Placement
keeps using the declared class; a drift only tells the platform team that,
say, a class promising 80Gi GPUs sits on a pool whose slices publish 40Gi.

Matching: a declared DRA device is compared with the shapes of its driver;
every node of the pool must publish `count` devices of that driver, and every
published shape must carry the declared attributes and capacities. Attribute
and capacity names are compared without the driver's own domain prefix (a
slice may publish `productName` where the class says
`gpu.nvidia.com/productName`). Attributes are compared by type and value: a
string "132" is not the int 132 (a selector comparing with 132 would not
match it), and the message then names both types. Synthetic devices have no
driver publishing them and are never compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api.inference_class import Device
from modelplane.api.inventory import DeviceShape, PoolInventory
from modelplane.api.memo import Memo
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


def _short(name: str, driver: str) -> str:
    prefix = f"{driver}/"
    return name[len(prefix) :] if name.startswith(prefix) else name


_ATTR_TYPES = ("string", "int", "bool", "version")


@dataclass(frozen=True)
class _Attr:
    """A DRA attribute's type (its one-of key) and value, compared together."""

    type: str
    value: Any

    def text(self) -> str:
        """The value as a drift message shows it (`true`, `132`, `1.2.3`)."""
        return str(self.value).lower() if isinstance(self.value, bool) else str(self.value)


def _typed(kind: str, value: Any) -> Any:
    """`value` normalized for comparison within its type; None when it is not of that type.

    An `int` may arrive as a whole float (protobuf Structs carry numbers as
    doubles); a string is never an int, an int never a bool.
    """
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if kind == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def _attr_value(attr: Any) -> _Attr | None:
    """The attribute's type and value; a value not of its declared type keeps its own type."""
    if not isinstance(attr, dict):
        return None
    for key in _ATTR_TYPES:
        if key in attr and attr[key] is not None:
            value = attr[key]
            typed = _typed(key, value)
            if typed is None:  # e.g. {"int": "132"}: a string under the int key
                return _Attr(type(value).__name__, value)
            return _Attr(key, typed)
    return None


def _shown(want: _Attr, got: _Attr) -> tuple[str, str]:
    """Both values as a message shows them, with their types when only the types differ."""
    if want.type == got.type and want.text() != got.text():
        return want.text(), got.text()
    return f"{want.text()} ({want.type})", f"{got.text()} ({got.type})"


def _same_quantity(a: str, b: str) -> bool:
    try:
        return parse_quantity(a) == parse_quantity(b)
    except QuantityError:
        return a == b


def _declared(device: Device) -> tuple[dict[str, _Attr], dict[str, str]]:
    attrs = {
        _short(k, device.driver): v
        for k, a in (device.attributes or {}).items()
        if (v := _attr_value(a.to_dict())) is not None
    }
    caps = {_short(k, device.driver): q.value for k, q in (device.capacity or {}).items()}
    return attrs, caps


def _published(
    slice_device: dict[str, Any], driver: str
) -> tuple[dict[str, _Attr], dict[str, str]]:
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


Diff = tuple[str, str, str]
"""(field, declared, observed)."""


def _compare(device: Device, slice_device: dict[str, Any]) -> list[Diff]:
    """(field, declared, observed) for each declared attribute/capacity that differs."""
    want_attrs, want_caps = _declared(device)
    have_attrs, have_caps = _published(slice_device, device.driver)
    out: list[tuple[str, str, str]] = []
    for name, attr in sorted(want_attrs.items()):
        got = have_attrs.get(name)
        if got is None:
            out.append((f"attribute {name}", attr.text(), "absent"))
        elif got != attr:
            out.append((f"attribute {name}", *_shown(attr, got)))
    for name, value in sorted(want_caps.items()):
        published = have_caps.get(name)
        if published is None or not _same_quantity(value, published):
            out.append((f"capacity {name}", value, published or "absent"))
    return out


def _count_drift(device: Device, pool: PoolInventory) -> dict[tuple[str, str, str], int]:
    """Nodes publishing another number of the device's driver than the class declares."""
    found: dict[tuple[str, str, str], int] = {}
    publishing = 0
    for entry in pool.driver_counts:
        if entry.driver != device.driver:
            continue
        publishing += entry.nodes
        if entry.devices != device.count:
            key = ("count", str(device.count), str(entry.devices))
            found[key] = found.get(key, 0) + entry.nodes
    silent = pool.nodes - publishing
    if silent > 0:
        key = ("count", str(device.count), "0")
        found[key] = found.get(key, 0) + silent
    return found


_COMPARED: Memo[tuple[Device, list[Diff]]] = Memo("compose.clusters.drift._COMPARED")
"""`_compare` by published shape (its content) and declared device (held with its result,
so its id stays its own while remembered)."""


def _compared(device: Device, shape: DeviceShape) -> list[Diff]:
    """The differences between `device` and `shape`, remembered by the shape's content.

    Every call compares the shapes of a cluster's inventory with the same class
    devices, and a fleet's clusters publish the same few shapes: each is
    compared once, not once per cluster and reading. Results are only read.
    """
    published = shape.to_dict()
    key = (repr(published), id(device))
    return list(_COMPARED.get(key, lambda: (device, _compare(device, published)))[1])


def _device_drift(pool: PoolInventory, device: Device) -> list[Drift]:
    found = _count_drift(device, pool)
    for shape in pool.shapes:
        if shape.driver != device.driver:
            continue
        # Identical devices are declared once: every published shape must match.
        for diff in _compared(device, shape):
            found[diff] = min(pool.nodes, found.get(diff, 0) + shape.nodes)
    return [Drift(pool.name, device.name, f, d, o, n) for (f, d, o), n in sorted(found.items())]


def hardware_drift(
    pool: str, devices: list[Device], inventory: PoolInventory | None
) -> list[Drift]:
    """Every difference between `devices` and what the pool's nodes publish.

    `inventory` is the pool's entry of the cluster's inventory summary; a pool
    the agent saw no node of reports nothing: there is nothing published to
    compare yet.
    """
    if inventory is None or inventory.nodes == 0:
        return []
    out: list[Drift] = []
    for device in devices:
        if device.claim == "DRA":
            out += _device_drift(inventory, device)
    return out
