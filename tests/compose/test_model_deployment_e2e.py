"""End to end: render each scheduling example with the embedded control plane.

The real scheduler and every composer run; the expectations are what each
example's README row promises, written out by hand (cluster, index, replica
name, pool; or, for the unschedulable one, the reason per cluster).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from modelplane.local import ControlPlane, RenderResult, load_paths

ROOT = Path(__file__).resolve().parents[2]
API = "modelplane.ai/v1alpha1"


@functools.cache
def rendered(example: str) -> RenderResult:
    return ControlPlane(load_paths([str(ROOT / "examples" / example)])).run()


def deployment(example: str, namespace: str, name: str) -> dict[str, Any]:
    obj = rendered(example).get(API, "ModelDeployment", name, namespace)
    assert obj is not None
    return obj


def placements(example: str, namespace: str, name: str) -> list[tuple[str, int, str, str]]:
    status = deployment(example, namespace, name)["status"]
    assert all(p["ready"] for p in status["placements"])
    return [
        (p["cluster"], p["index"], p["replicaName"], ",".join(x["pool"] for x in p["pools"]))
        for p in status["placements"]
    ]


def condition(obj: dict[str, Any], type_: str) -> tuple[str, str]:
    for cond in obj["status"]["conditions"]:
        if cond["type"] == type_:
            return cond["status"], cond["reason"]
    raise AssertionError(f"no {type_} condition")


def replica_names(example: str) -> set[str]:
    store = rendered(example).store
    return {o["metadata"]["name"] for o in store.list(API, "ModelReplica", None, None)}


@pytest.mark.parametrize(
    ("example", "ref", "expected"),
    [
        (
            "quickstart",
            ("ml-team", "qwen-small"),
            [
                ("eu-west-h100", 0, "qwen-small-79d500a0c5", "l4"),
                ("us-east-l4", 0, "qwen-small-587035c3ec", "l4"),
            ],
        ),
        (
            "quickstart",
            ("ml-team", "llama-70b"),
            [("eu-west-h100", 0, "llama-70b-ef5dba256f", "h100")],
        ),
        (
            "scheduling/spread",
            ("ml-team", "chat"),
            [
                ("eu-west", 0, "chat-b02eae7e9a", "l4"),
                ("us-east", 0, "chat-04c28b1dbe", "l4"),
                ("us-west", 0, "chat-4451afc719", "l4"),
            ],
        ),
        (
            "scheduling/pack",
            ("ml-team", "chat"),
            [
                ("l4-dense", 0, "chat-1d09b11321", "l4x4"),
                ("l4-dense", 1, "chat-bd68776749", "l4x4"),
                ("l4-dense", 2, "chat-3eac4c7367", "l4x4"),
                ("l4-dense", 3, "chat-c8820f72ee", "l4x4"),
                ("l4-single", 0, "chat-6f38a7dad9", "l4"),
            ],
        ),
        (
            # Both roles on one cluster, each on the pool its devices match.
            "scheduling/disaggregated",
            ("ml-team", "pd"),
            [("mixed", 0, "pd-c732b890e4", "l4,h100")],
        ),
        (
            # The replica on drained east is replaced on west.
            "scheduling/drained",
            ("ml-team", "chat"),
            [("west", 0, "chat-6a5c011ef6", "l4"), ("west", 1, "chat-05bd9d7c87", "l4")],
        ),
        (
            # east/0 and east/1 existed (replicas.yaml) and stay; west/0 is new.
            "scheduling/snapshot",
            ("ml-team", "chat"),
            [
                ("east", 0, "chat-f80ab129e8", "l4"),
                ("east", 1, "chat-661358c7d9", "l4"),
                ("west", 0, "chat-6a5c011ef6", "l4"),
            ],
        ),
    ],
)
def test_example_places_replicas(
    example: str, ref: tuple[str, str], expected: list[tuple[str, int, str, str]]
) -> None:
    assert placements(example, *ref) == expected
    dep = deployment(example, *ref)
    assert dep["status"]["replicas"] == len(expected)
    assert dep["status"]["readyReplicas"] == len(expected)
    # The CEL engine's error text is its own: only check that the selector errored.
    entries = [
        {**e, "message": re.sub(r"errored: .*", "errored", e["message"])}
        for e in dep["status"]["unschedulable"]
    ]
    assert entries == []
    assert condition(dep, "Scheduled") == ("True", "AllReplicasScheduled")
    assert condition(dep, "ReplicasReady") == ("True", "AllReplicasReady")
    assert condition(dep, "Ready") == ("True", "Available")


def test_drained_cluster_replica_is_gone() -> None:
    assert replica_names("scheduling/drained") == {"chat-6a5c011ef6", "chat-05bd9d7c87"}


def test_snapshot_keeps_existing_replicas_in_place() -> None:
    store = rendered("scheduling/snapshot")
    for name, cluster, index in (("chat-f80ab129e8", "east", 0), ("chat-661358c7d9", "east", 1)):
        obj = store.get(API, "ModelReplica", name, "ml-team")
        assert obj is not None
        assert obj["spec"]["clusterName"] == cluster
        assert obj["spec"]["index"] == index
        assert obj["metadata"]["creationTimestamp"] == f"2026-11-01T00:00:0{index}Z"


def test_unschedulable_names_failing_request_and_selector_per_cluster() -> None:
    dep = deployment("scheduling/unschedulable", "ml-team", "llama-405b")
    h100 = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'
    ib = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'
    assert dep["status"]["replicas"] == 0
    # The CEL engine's error text is its own: only check that the selector errored.
    entries = [
        {**e, "message": re.sub(r"errored: .*", "errored", e["message"])}
        for e in dep["status"]["unschedulable"]
    ]
    assert entries == [
        {
            "cluster": "h100-4x",
            "reason": "NoMatchingPool",
            "message": "pool h100: request gpu: device gpu: needs 8, only 4 unconsumed",
        },
        {
            "cluster": "h100-maintenance",
            "reason": "Tainted",
            "message": "untolerated taint maintenance=true:NoSchedule",
        },
        {
            "cluster": "h100-roce",
            "reason": "NoMatchingPool",
            "message": f"pool h100: request fabric: device fabric: selector {ib!r} is false",
        },
        {
            "cluster": "l4-only",
            "reason": "NoMatchingPool",
            "message": f"pool l4: request gpu: device gpu: selector {h100!r} is false; "
            f"request fabric: device gpu: selector {ib!r} errored",
        },
        {
            "cluster": "h100-dev",
            "reason": "NotSelected",
            "message": "labels do not match spec.clusterSelector",
        },
    ]
    assert condition(dep, "Scheduled") == ("False", "InsufficientCapacity")
    assert condition(dep, "Ready") == ("False", "Creating")
    assert replica_names("scheduling/unschedulable") == set()
