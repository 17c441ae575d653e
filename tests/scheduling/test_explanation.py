"""Table tests: the words for scheduler verdicts (status reasons and explain rows)."""

from __future__ import annotations

import pytest

from modelplane.scheduling.explanation import ExplanationRow, explanation_rows
from modelplane.scheduling.types import (
    ClusterVerdict,
    DeviceVerdict,
    PoolVerdict,
    RequestVerdict,
    ScheduleResult,
    SelectorVerdict,
)
from modelplane.scheduling.words import (
    cluster_message,
    device_message,
    pool_message,
    request_message,
    truncate,
)

L4 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
IB = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'
TRUE_L4 = SelectorVerdict(L4, True)
FALSE_L4 = SelectorVerdict(L4, False)
ERR_IB = SelectorVerdict(IB, None, "no such key: fabric.modelplane.ai")
FALSE_IB = SelectorVerdict(IB, False)


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (DeviceVerdict("gpu", True, (TRUE_L4,)), ""),
        (DeviceVerdict("gpu", False, (FALSE_L4,)), f"device gpu: selector {L4!r} is false"),
        (
            DeviceVerdict("gpu", False, (ERR_IB,)),
            f"device gpu: selector {IB!r} errored: no such key: fabric.modelplane.ai",
        ),
        # The first selector that did not hold is the one named.
        (
            DeviceVerdict("gpu", False, (TRUE_L4, FALSE_IB, ERR_IB)),
            f"device gpu: selector {IB!r} is false",
        ),
        (
            DeviceVerdict("gpu", False, (TRUE_L4,), insufficient_count=(8, 4)),
            "device gpu: needs 8, only 4 unconsumed",
        ),
        (DeviceVerdict("gpu", False), "device gpu: does not match"),
    ],
)
def test_device_message(verdict: DeviceVerdict, expected: str) -> None:
    assert device_message(verdict) == expected


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (RequestVerdict("gpu", True, "gpu"), ""),
        # Closest miss first: short of count beats a false selector beats an error.
        (
            RequestVerdict(
                "gpu",
                False,
                devices=(
                    DeviceVerdict("nic", False, (ERR_IB,)),
                    DeviceVerdict("cpu", False, (FALSE_L4,)),
                    DeviceVerdict("gpu", False, (TRUE_L4,), insufficient_count=(2, 1)),
                ),
            ),
            "request gpu: device gpu: needs 2, only 1 unconsumed",
        ),
        (
            RequestVerdict(
                "gpu",
                False,
                devices=(
                    DeviceVerdict("nic", False, (ERR_IB,)),
                    DeviceVerdict("cpu", False, (FALSE_L4,)),
                ),
            ),
            f"request gpu: device cpu: selector {L4!r} is false",
        ),
        # A device matched: the pool failed on another request, not this one.
        (
            RequestVerdict(
                "fabric",
                False,
                devices=(DeviceVerdict("gpu", False, (ERR_IB,)), DeviceVerdict("ib", True)),
            ),
            "",
        ),
        (
            RequestVerdict("gpu", False, message="pool has no devices"),
            "request gpu: pool has no devices",
        ),
    ],
)
def test_request_message(verdict: RequestVerdict, expected: str) -> None:
    assert request_message(verdict) == expected


NO_L4 = RequestVerdict("gpu", False, devices=(DeviceVerdict("gpu", False, (FALSE_L4,)),))


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (PoolVerdict("l4", "unified", True, needed_nodes=1, free_nodes=3), ""),
        (
            PoolVerdict("l4", "unified", True, needed_nodes=2, free_nodes=1),
            "needs 2 nodes, 1 free",
        ),
        (
            PoolVerdict("l4", "unified", True, needed_nodes=2, free_nodes=1, message="custom"),
            "custom",
        ),
        (
            PoolVerdict("h100", "unified", False, requests=(NO_L4,)),
            f"request gpu: device gpu: selector {L4!r} is false",
        ),
        (PoolVerdict("h100", "unified", False), "devices do not match"),
    ],
)
def test_pool_message(verdict: PoolVerdict, expected: str) -> None:
    assert pool_message(verdict) == expected


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (
            ClusterVerdict("a", False, "Tainted", "untolerated taint x=y:NoSchedule"),
            "untolerated taint x=y:NoSchedule",
        ),
        # Device mismatches are spelled out per pool (and role), not the scheduler's summary.
        (
            ClusterVerdict(
                "a",
                False,
                "NoMatchingPool",
                "no pool matches",
                (
                    PoolVerdict("h100", "decode", False, requests=(NO_L4,)),
                    PoolVerdict("l4", "prefill", True, needed_nodes=1, free_nodes=1),
                ),
            ),
            f"pool h100 (decode): request gpu: device gpu: selector {L4!r} is false",
        ),
        (
            ClusterVerdict(
                "a",
                False,
                "InsufficientCapacity",
                pools=(PoolVerdict("l4", "unified", True, needed_nodes=2, free_nodes=0),),
            ),
            "pool l4: needs 2 nodes, 0 free",
        ),
        (ClusterVerdict("a", False, "NotReady"), "NotReady"),
    ],
)
def test_cluster_message(verdict: ClusterVerdict, expected: str) -> None:
    assert cluster_message(verdict) == expected


def test_truncate() -> None:
    assert truncate("abcdef", 6) == "abcdef"
    assert truncate("abcdefg", 6) == "abcde…"
    assert len(truncate("x" * 5000, 1024)) == 1024


def test_explanation_rows_cover_every_cluster_pool_and_request() -> None:
    result = ScheduleResult(
        replicas=(),
        desired=1,
        clusters=(
            ClusterVerdict(
                "a",
                True,
                pools=(
                    PoolVerdict(
                        "l4",
                        "unified",
                        True,
                        (RequestVerdict("gpu", True, "gpu"),),
                        needed_nodes=1,
                        free_nodes=2,
                        message="needs 1; 2 free",
                    ),
                ),
            ),
            ClusterVerdict(
                "b",
                False,
                "NoMatchingPool",
                pools=(
                    PoolVerdict(
                        "h100",
                        "unified",
                        False,
                        (
                            NO_L4,
                            RequestVerdict(
                                "fabric",
                                False,
                                devices=(
                                    DeviceVerdict("gpu", False, (ERR_IB,)),
                                    DeviceVerdict("ib", True, (SelectorVerdict(IB, True),)),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
            ClusterVerdict("c", False, "NotSelected", "labels do not match spec.clusterSelector"),
        ),
    )
    assert explanation_rows(result) == [
        ExplanationRow(
            "a",
            "Eligible",
            "l4",
            "unified",
            "gpu",
            "matched",
            "device gpu",
            "needs 1; 2 free",
        ),
        ExplanationRow(
            "b",
            "NoMatchingPool",
            "h100",
            "unified",
            "gpu",
            "no match",
            f"device gpu: selector {L4!r} is false",
        ),
        ExplanationRow("b", "NoMatchingPool", "h100", "unified", "fabric", "matched", "device ib"),
        ExplanationRow("c", "NotSelected", detail="labels do not match spec.clusterSelector"),
    ]


def test_a_refused_pool_is_one_row_with_the_rule_and_its_words() -> None:
    why = "the cluster reports replica chat-1 of this deployment unschedulable on this pool"
    refused = PoolVerdict(
        "l4",
        "unified",
        False,
        (RequestVerdict("gpu", True, "gpu", (DeviceVerdict("gpu", True, (TRUE_L4,)),)),),
        1,
        0,
        why,
        "ReplicaUnschedulable",
    )
    verdict = ClusterVerdict(
        "east", False, "ReplicaUnschedulable", "no pool may take it", (refused,)
    )
    rows = explanation_rows(ScheduleResult(replicas=(), desired=1, clusters=(verdict,)))
    assert rows == [
        ExplanationRow(
            "east", "ReplicaUnschedulable", "l4", "unified", "", "ReplicaUnschedulable", why
        )
    ]
