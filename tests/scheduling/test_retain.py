"""Retain when you cannot verify (SPEC §3.3, issue 10), one fault at a time.

A Ready replica sits on cluster `a`, pool `l4`; a second cluster `b` has room.
Each case applies one fault to what `a` publishes and asserts whether the
replica is kept (with the reason it could not be verified) or replaced.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from modelplane.scheduling import schedule
from tests.scheduling.schedfleet import (
    ANY_GPU,
    H100,
    IMMEDIATE,
    L4,
    cluster,
    deployment,
    placements,
    replica,
    request,
    resolved,
    workers,
)

Obj = dict[str, Any]


def _pool(cl: Obj, name: str = "l4") -> Obj:
    pool: Obj = next(p for p in cl["status"]["gpuPools"] if p["name"] == name)
    return pool


def _unknown(reason: str) -> Callable[[Obj], None]:
    def edit(cl: Obj) -> None:
        pool = _pool(cl)
        pool.update(devices=[], reason=reason, message=f"spec.pools[0].className: {reason}")

    return edit


def _device_edit(**fields: Any) -> Callable[[Obj], None]:
    def edit(cl: Obj) -> None:
        pool = _pool(cl)
        pool["devices"] = copy.deepcopy(pool["devices"])
        pool["devices"][0].update(fields)

    return edit


def _drop_pool(cl: Obj) -> None:
    cl["status"]["gpuPools"] = [p for p in cl["status"]["gpuPools"] if p["name"] != "l4"]


def _drop_pool_keep_junk(cl: Obj) -> None:
    _drop_pool(cl)
    cl["status"]["gpuPools"].append({"nodes": 3})  # unreadable: no name


def _not_ready(cl: Obj) -> None:
    cl["status"]["conditions"] = [{"type": "Ready", "status": "False"}]


def _no_nodes_field(cl: Obj) -> None:
    del _pool(cl)["nodes"]


BAD_VERSION = {
    "attributes": {
        "driverVersion": {"version": "570.124.06"},
        "productName": {"string": "NVIDIA L4"},
    }
}
BAD_QUANTITY = {"capacity": {"memory": {"value": "24Zi"}}}
BAD_ATTRIBUTE = {"attributes": {"productName": {"string": "NVIDIA L4", "int": 3}}}
BAD_INT = {"attributes": {"productName": {"string": "NVIDIA L4"}, "cores": {"int": "many"}}}
HUGE_QUANTITY = {"capacity": {"memory": {"value": "9" * 5000}}}
NOT_A_MAP = {"attributes": ["productName"]}

KEPT = [("a", 0, "l4")]


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        (_unknown("ClassNotFound"), "PoolUnknown"),
        (_unknown("InvalidClass"), "PoolUnknown"),
        (_no_nodes_field, "PoolUnknown"),
        (_drop_pool_keep_junk, "PoolsUnreadable"),
        (_not_ready, "ClusterNotReady"),
        (_device_edit(**BAD_VERSION), "DevicesUnparsable"),
        (_device_edit(**BAD_QUANTITY), "DevicesUnparsable"),
        (_device_edit(**BAD_ATTRIBUTE), "DevicesUnparsable"),
        (_device_edit(**BAD_INT), "DevicesUnparsable"),
        (_device_edit(**HUGE_QUANTITY), "DevicesUnparsable"),
        (_device_edit(**NOT_A_MAP), "DevicesUnparsable"),
    ],
    ids=[
        "class-not-found",
        "class-invalid",
        "pool-entry-without-nodes",
        "pool-missing-among-unreadable-entries",
        "cluster-not-ready",
        "version-leading-zero",
        "quantity-bad-suffix",
        "attribute-two-values",
        "attribute-int-not-a-number",
        "quantity-5000-digits",
        "attributes-not-a-map",
    ],
)
def test_an_unverifiable_place_is_kept_and_reported(
    fault: Callable[[Obj], None], cause: str
) -> None:
    a = cluster("a", {"l4": ("l4-1x", 1), "h100": ("h100-8x", 1)})
    fault(a)
    fleet = [a, cluster("b", {"l4": ("l4-1x", 3)})]
    mine = replica("llm", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True)
    result = schedule(deployment(1, [request("gpu", L4)]), fleet, [mine])
    assert placements(result) == KEPT
    assert result.replaced == ()
    assert [(u.cluster, u.pool, u.cause) for u in result.unverifiable] == [("a", "l4", cause)]


@pytest.mark.parametrize(
    ("fault", "nodeselector", "why"),
    [
        # A pool removed from a cluster whose published pools all read: it is gone.
        (_drop_pool, [request("gpu", L4)], "pool l4 is no longer published by cluster a"),
        # The selector was edited and the pool verifiably no longer matches.
        (None, [request("gpu", H100)], "pool l4 no longer matches spec.nodeSelector"),
    ],
)
def test_a_verifiable_mismatch_replaces_the_replica(
    fault: Callable[[Obj], None] | None, nodeselector: list[Obj], why: str
) -> None:
    a = cluster("a", {"l4": ("l4-1x", 1), "h100": ("h100-8x", 1)})
    if fault is not None:
        fault(a)
    fleet = [a, cluster("b", {"l4": ("l4-1x", 3), "h100": ("h100-8x", 1)})]
    mine = replica("llm", "a", 0, "l4", [resolved("gpu", cel=L4)], ready=True)
    # Under Immediate the Ready replica is dropped at once (make-before-break,
    # the default, keeps it draining instead: test_make_before_break.py).
    result = schedule(deployment(1, nodeselector, rollout=IMMEDIATE), fleet, [mine])
    ((name, reason),) = result.replaced
    assert name == mine["metadata"]["name"] and reason.startswith(why)
    assert result.unverifiable == ()


def test_new_replicas_never_go_to_an_unknown_pool() -> None:
    a = cluster("a", {"l4": ("l4-1x", 4)})
    _unknown("ClassNotFound")(a)
    result = schedule(deployment(2, [request("gpu", ANY_GPU)]), [a], [])
    assert placements(result) == []
    (v,) = result.clusters
    assert v.reason == "NoMatchingPool"
    assert [(p.pool, p.matched) for p in v.pools] == [("l4", False)]
    assert "pool is unknown (ClassNotFound)" in v.pools[0].message


def test_observed_work_is_bounded_by_the_api_limits() -> None:
    # An observed replica far beyond the API's limits (workers.count <= 1024,
    # topology <= 1024) is read clamped; the ledger charges at most every node.
    a = cluster("a", {"h100": ("h100-8x", 3)})
    huge = replica(
        "other",
        "a",
        0,
        "h100",
        [resolved("gpu", 8, cel=H100)],
        namespace="team-b",
        ready=True,
        work=workers(count=10**6, pipeline=10**6, data=10**6),
    )
    result = schedule(deployment(1, [request("gpu", H100, count=8)]), [a], [huge])
    assert placements(result) == []
    (v,) = result.clusters
    assert (v.reason, v.pools[0].free_nodes) == ("InsufficientCapacity", 0)
