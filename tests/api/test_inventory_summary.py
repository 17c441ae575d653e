"""The inventory summarizer and the summary contract: tables of cluster objects → summaries.

Every expected summary is written by hand in its wire form (what the agent
writes into the ConfigMap and the InferenceCluster reads back).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelplane.api import inventory as inv
from modelplane.api.inventory import parse_duration, read_inventory
from modelplane.api.inventory_summary import epoch_seconds, summarize

NOW = "2026-03-01T12:00:00Z"


def _node(name: str, pool: str | None, ready: str = "True", zone: str | None = None) -> dict:
    labels = {}
    if pool:
        labels["modelplane.ai/pool"] = pool
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def _gpu(i: int, memory: str = "80Gi", **extra: Any) -> dict[str, Any]:
    return {
        "name": f"gpu-{i}",
        "attributes": {
            "productName": {"string": "H100"},
            "uuid": {"string": f"GPU-{i}"},
            "index": {"int": i},
            **extra,
        },
        "capacity": {"memory": {"value": memory}},
    }


def _slice(node: str | None, *devices: dict[str, Any], driver: str = "gpu.nvidia.com") -> dict:
    spec: dict[str, Any] = {"driver": driver, "devices": list(devices)}
    if node:
        spec["nodeName"] = node
    return {"spec": spec}


def _pod(replica: str | None, since: str, **overrides: Any) -> dict[str, Any]:
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available",
        "lastTransitionTime": since,
        **overrides.pop("condition", {}),
    }
    labels = {"modelplane.ai/replica": replica} if replica else {}
    return {
        "metadata": {"labels": labels},
        "spec": {"nodeSelector": {"modelplane.ai/pool": "h100"}},
        "status": {"phase": overrides.pop("phase", "Pending"), "conditions": [cond]},
    }


H100_SHAPE = {
    "driver": "gpu.nvidia.com",
    "attributes": {"productName": {"string": "H100"}},
    "capacity": {"memory": {"value": "80Gi"}},
}

CASES = [
    pytest.param(
        [_node("a", "h100", zone="z1"), _node("b", "h100", "False", zone="z2"), _node("c", None)],
        [_slice("a", _gpu(0), _gpu(1)), _slice("b", _gpu(0), _gpu(1))],
        [],
        {
            "version": 1,
            "observedAt": NOW,
            "pools": [
                {
                    "name": "h100",
                    "nodes": 2,
                    "readyNodes": 1,
                    "zones": [{"zone": "z1", "nodes": 1}, {"zone": "z2", "nodes": 1}],
                    "driverCounts": [{"driver": "gpu.nvidia.com", "devices": 2, "nodes": 2}],
                    # uuid and index tell identical GPUs apart: left out, one shape.
                    "shapes": [{**H100_SHAPE, "devicesPerNode": 2, "nodes": 2}],
                    "shapesTruncated": False,
                }
            ],
            "poolsTruncated": False,
            "unschedulable": [],
            "unschedulableTruncated": False,
        },
        id="identical-gpus-one-shape-node-without-pool-ignored",
    ),
    pytest.param(
        [_node("a", "h100"), _node("b", "h100")],
        [_slice("a", _gpu(0, "40Gi"), _gpu(1)), _slice("b", _gpu(0), _gpu(1))],
        [],
        {
            "version": 1,
            "observedAt": NOW,
            "pools": [
                {
                    "name": "h100",
                    "nodes": 2,
                    "readyNodes": 2,
                    "zones": [],
                    "driverCounts": [{"driver": "gpu.nvidia.com", "devices": 2, "nodes": 2}],
                    # Most nodes first; ties by driver, attributes, capacity, count.
                    "shapes": [
                        {
                            **H100_SHAPE,
                            "capacity": {"memory": {"value": "40Gi"}},
                            "devicesPerNode": 1,
                            "nodes": 1,
                        },
                        {**H100_SHAPE, "devicesPerNode": 1, "nodes": 1},
                        {**H100_SHAPE, "devicesPerNode": 2, "nodes": 1},
                    ],
                    "shapesTruncated": False,
                }
            ],
            "poolsTruncated": False,
            "unschedulable": [],
            "unschedulableTruncated": False,
        },
        id="one-gpu-differs",
    ),
    pytest.param(
        [_node("a", "l4")],
        [
            _slice(None, _gpu(0)),  # no node: a network-attached pool, not this node's
            _slice("a", _gpu(0, "nonsense"), {"name": "x", "attributes": {"bad": {"list": 1}}}),
            {"spec": "not a map"},
        ],
        [],
        {
            "version": 1,
            "observedAt": NOW,
            "pools": [
                {
                    "name": "l4",
                    "nodes": 1,
                    "readyNodes": 1,
                    "zones": [],
                    "driverCounts": [{"driver": "gpu.nvidia.com", "devices": 2, "nodes": 1}],
                    # A malformed capacity or attribute is dropped, never raised on.
                    "shapes": [
                        {
                            "driver": "gpu.nvidia.com",
                            "attributes": {"productName": {"string": "H100"}},
                            "capacity": {},
                            "devicesPerNode": 1,
                            "nodes": 1,
                        },
                        {
                            "driver": "gpu.nvidia.com",
                            "attributes": {},
                            "capacity": {},
                            "devicesPerNode": 1,
                            "nodes": 1,
                        },
                    ],
                    "shapesTruncated": False,
                }
            ],
            "poolsTruncated": False,
            "unschedulable": [],
            "unschedulableTruncated": False,
        },
        id="malformed-slices-are-skipped",
    ),
    pytest.param(
        [],
        [],
        [
            _pod("r1", "2026-03-01T11:50:00Z"),
            _pod("r1", "2026-03-01T11:45:00+00:00"),  # earlier, other offset form
            _pod("r2", "2026-03-01T11:58:00Z"),  # within the grace period
            _pod("r3", "2026-03-01T11:00:00Z", phase="Running"),
            _pod("r4", "2026-03-01T11:00:00Z", condition={"reason": "SchedulerError"}),
            _pod(None, "2026-03-01T11:00:00Z"),  # not a replica's pod
            _pod("r5", "yesterday"),  # unreadable time: cannot tell how long
        ],
        {
            "version": 1,
            "observedAt": NOW,
            "pools": [],
            "poolsTruncated": False,
            "unschedulable": [
                {
                    "replica": "r1",
                    "pool": "h100",
                    "pods": 2,
                    "since": "2026-03-01T11:45:00+00:00",
                    "message": "0/3 nodes are available",
                }
            ],
            "unschedulableTruncated": False,
        },
        id="unschedulable-past-grace-grouped-by-replica",
    ),
]


@pytest.mark.parametrize(("nodes", "slices", "pods", "want"), CASES)
def test_summarize(nodes: list, slices: list, pods: list, want: dict[str, Any]) -> None:
    summary = summarize(nodes, slices, pods, NOW, 300)
    assert summary.to_dict() == want
    # The wire form reads back to the same summary.
    again, problem = read_inventory(summary.to_data())
    assert problem is None and again == summary


def test_bounds_mark_what_was_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [_node(f"n{i}", f"p{i:03d}") for i in range(inv.MAX_POOLS + 1)]
    shapes = [_gpu(0, f"{i + 1}Gi") for i in range(inv.MAX_SHAPES + 1)]
    slices = [_slice("n0", *shapes)]
    pods = [_pod(f"r{i:03d}", "2026-03-01T11:00:00Z") for i in range(inv.MAX_UNSCHEDULABLE + 1)]
    summary = summarize(nodes, slices, pods, NOW, 300)
    assert (len(summary.pools), summary.pools_truncated) == (inv.MAX_POOLS, True)
    first = summary.pools[0]
    assert (len(first.shapes), first.shapes_truncated) == (inv.MAX_SHAPES, True)
    assert (len(summary.unschedulable), summary.unschedulable_truncated) == (
        inv.MAX_UNSCHEDULABLE,
        True,
    )
    assert summary.unschedulable[0].replica == "r000"  # sorted, so the cut is stable
    assert len(json.dumps(summary.to_data())) < 1024 * 1024  # fits a ConfigMap


def test_a_long_message_is_shortened() -> None:
    pod = _pod("r", "2026-03-01T11:00:00Z", condition={"message": "x" * 2000})
    (entry,) = summarize([], [], [pod], NOW, 0).unschedulable
    assert len(entry.message) == 512 and entry.message.endswith("...")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (None, "data[inventory.json]: missing"),
        ({}, "data[inventory.json]: missing"),
        ({"inventory.json": "{not json"}, "data[inventory.json]: not JSON: "),
        ({"inventory.json": "[]"}, "data[inventory.json]: not a JSON object"),
        (
            {"inventory.json": json.dumps({"observedAt": NOW, "pools": [{"name": "a"}]})},
            "data[inventory.json].pools[0].nodes: Field required",
        ),
        (
            {"inventory.json": json.dumps({"observedAt": NOW, "version": 2})},
            "data[inventory.json].version: 2 is not supported",
        ),
    ],
)
def test_read_inventory_names_the_field(data: Any, problem: str) -> None:
    summary, why = read_inventory(data)
    assert summary is None and why is not None
    assert why.startswith(problem)


@pytest.mark.parametrize(
    ("text", "seconds"), [("5m", 300), ("90s", 90), ("1h30m", 5400), ("2h", 7200)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "5 minutes", "-1m", "1d", "m5"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("stamp", "seconds"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-03-01T12:00:00Z", 1772366400),
        ("2026-03-01T13:00:00+01:00", 1772366400),
        ("2026-03-01T12:00:00.123456Z", 1772366400),
        ("2026-13-01T12:00:00Z", None),
        ("not a time", None),
    ],
)
def test_epoch_seconds(stamp: str, seconds: int | None) -> None:
    assert epoch_seconds(stamp) == seconds


def test_devices_json_cannot_write_are_still_summarized() -> None:
    # Shapes are read once per distinct device text; a device that has no such
    # text (a value or key JSON cannot write) is read on its own, never raised on.
    odd = _gpu(2, extra={"string": {1, 2}})
    odd["attributes"][3] = {"bogus": 3}  # not a DRA attribute value: skipped
    nodes = [_node("a", "h100")]
    summary = summarize(nodes, [_slice("a", _gpu(0), odd, _gpu(1))], [], NOW, 300)
    (pool,) = summary.to_dict()["pools"]
    assert [(s["attributes"], s["devicesPerNode"]) for s in pool["shapes"]] == [
        (H100_SHAPE["attributes"], 3)
    ]


def test_devices_sharing_their_attribute_objects_summarize_as_copies_do() -> None:
    # The render's simulated nodes share one class's attribute and capacity
    # objects; that shortcut must not change the summary.
    shared = _gpu(0)
    a100 = _gpu(1, "40Gi", productName={"string": "A100"})
    copies = [_slice("a", *[json.loads(json.dumps(d)) for d in (shared, shared, a100)])]
    sharing = [_slice("a", shared, dict(shared), a100)]
    nodes = [_node("a", "h100")]
    want = summarize(nodes, copies, [], NOW, 300).to_dict()
    assert summarize(nodes, sharing, [], NOW, 300).to_dict() == want
    assert sorted(s["devicesPerNode"] for s in want["pools"][0]["shapes"]) == [1, 2]
