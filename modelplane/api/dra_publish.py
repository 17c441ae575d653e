"""The ResourceSlices a DRA driver publishes for one node's devices.

Shared by `modelplane render`'s simulated clusters and `modelplane dev`'s fake
nodes, so both publish the same shape: one slice per driver per node, its pool
named after the node (as the NVIDIA driver does), and each declared device
expanded into `count` devices named `<name>-<i>`. The attribute and capacity
objects of a declared device are shared by its expanded devices, never copied:
the inventory summarizer recognises identical devices by identity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import dns_label

Obj = dict[str, Any]


def _count(value: Any) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 1


def _device(declared: Mapping[str, Any], index: int) -> Obj:
    out: Obj = {"name": f"{declared.get('name')}-{index}"}
    if declared.get("attributes"):
        out["attributes"] = declared["attributes"]
    if declared.get("capacity"):
        out["capacity"] = declared["capacity"]
    return out


def node_slices(node: str, devices: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """The ResourceSlices of one node publishing `devices` (InferenceClass device wire form)."""
    by_driver: dict[str, list[Obj]] = {}
    for declared in devices:
        count = _count(declared.get("count", 1))
        items = by_driver.setdefault(str(declared.get("driver")), [])
        items += [_device(declared, i) for i in range(count)]
    return [
        {
            "apiVersion": c.DRA_API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": dns_label(f"{node}-{driver}")},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": items,
            },
        }
        for driver, items in sorted(by_driver.items())
    ]
