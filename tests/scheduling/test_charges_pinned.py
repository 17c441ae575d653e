"""How existing replicas are charged against pool capacity (SPEC §3.5), seen through placements.

Two rules no other table pins:
- an existing replica is charged only against the devices its resolved selectors
  match, not against any device of its device class;
- existing charges are replayed in a fixed order (Ready first, then oldest), so
  which devices stay free does not depend on who is scheduling.

The fleet is one cluster whose pool holds the `dual-1x` class: two single-count
L4s of the same device class, `gpu-a` (fast) and `gpu-b` (not fast). The cluster
bin-packs (`spec.scheduling.packing: BinPack`): these tables pin best-fit replay;
Spread is tabled in test_packing.py.
"""

from __future__ import annotations

import pytest
from schedfleet import ANY_GPU, FAST, cluster, deployment, placements, replica, request, resolved

from modelplane.scheduling import schedule

SLOW = 'device.attributes["gpu.nvidia.com"].fast == false'
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"


def _verdict(result, name):
    [v] = [v for v in result.clusters if v.cluster == name]
    return v


@pytest.mark.parametrize(
    ("held", "wanted", "placed"),
    [
        # The other deployment holds the device its selector picks; the other one is free.
        (SLOW, FAST, True),
        (FAST, SLOW, True),
        # ...and the device it holds is not.
        (SLOW, SLOW, False),
        (FAST, FAST, False),
    ],
    ids=["holds-b-wants-a", "holds-a-wants-b", "holds-b-wants-b", "holds-a-wants-a"],
)
def test_existing_replica_is_charged_only_against_the_devices_its_selectors_match(
    held, wanted, placed
):
    fleet = [cluster("a", {"dual": ("dual-1x", 1)})]
    other = replica("other", "a", 0, "dual", [resolved("gpu", cel=held)], ready=True)
    result = schedule(deployment(1, [request("gpu", wanted)]), fleet, [other])
    if placed:
        assert placements(result) == [("a", 0, "dual")]
        assert result.missing == 0
    else:
        assert placements(result) == []
        assert result.missing == 1
        verdict = _verdict(result, "a")
        assert verdict.reason == "InsufficientCapacity"
        # The pool matches the request; its one node has no such device left.
        [pool] = verdict.pools
        assert (pool.pool, pool.matched, pool.free_nodes) == ("dual", True, 0)


def test_free_nodes_count_what_selector_matched_charges_leave():
    # Two nodes; the other deployment holds gpu-b on one of them. A request for
    # gpu-b sees one free node (explained), a request for gpu-a sees two.
    fleet = [cluster("a", {"dual": ("dual-1x", 2)}, packing="BinPack")]
    other = replica("other", "a", 0, "dual", [resolved("gpu", cel=SLOW)], ready=True)
    for wanted, free in ((SLOW, 1), (FAST, 2)):
        result = schedule(deployment(3, [request("gpu", wanted)]), fleet, [other])
        assert len(result.replicas) == free
        assert result.missing == 3 - free
        assert _verdict(result, "a").reason == "InsufficientCapacity"


@pytest.mark.parametrize(
    ("own", "theirs", "placed"),
    [
        # Ours (fast only) is older: it takes gpu-a of one node, theirs (any GPU)
        # then fits best on that node's gpu-b, and the second node stays whole.
        ((T1, True), (T2, True), True),
        # Theirs is older: it takes gpu-a of one node, ours then needs the second
        # node's gpu-a, and no node has a fast GPU left for a new replica.
        ((T2, True), (T1, True), False),
        # Ready replicas are charged before not-Ready ones, whatever their age.
        ((T2, True), (T0, False), True),
    ],
    ids=["own-older", "theirs-older", "ready-before-older"],
)
def test_existing_charges_are_replayed_ready_first_then_oldest(own, theirs, placed):
    fleet = [cluster("a", {"dual": ("dual-1x", 2)}, packing="BinPack")]
    observed = [
        replica("llm", "a", 0, "dual", [resolved("gpu", cel=FAST)], created=own[0], ready=own[1]),
        replica(
            "other",
            "a",
            0,
            "dual",
            [resolved("gpu", cel=ANY_GPU)],
            created=theirs[0],
            ready=theirs[1],
        ),
    ]
    result = schedule(deployment(2, [request("gpu", FAST)]), fleet, observed)
    assert [p.retained for p in result.replicas][:1] == [True]
    assert not result.withdrawn
    if placed:
        assert placements(result) == [("a", 0, "dual"), ("a", 1, "dual")]
    else:
        assert placements(result) == [("a", 0, "dual")]
        assert _verdict(result, "a").reason == "InsufficientCapacity"


def test_replay_order_does_not_depend_on_input_order():
    fleet = [cluster("a", {"dual": ("dual-1x", 2)}, packing="BinPack")]
    observed = [
        replica("llm", "a", 0, "dual", [resolved("gpu", cel=FAST)], created=T1, ready=True),
        replica("other", "a", 0, "dual", [resolved("gpu", cel=ANY_GPU)], created=T2, ready=True),
    ]
    dep = deployment(2, [request("gpu", FAST)])
    assert schedule(dep, fleet, observed) == schedule(dep, fleet, observed[::-1])
    assert placements(schedule(dep, fleet, observed[::-1])) == [("a", 0, "dual"), ("a", 1, "dual")]


def test_a_request_for_a_class_the_pool_no_longer_offers_charges_only_the_others():
    # The other replica asked for a NIC class this pool does not offer (any more)
    # and for a GPU: the GPU request is still charged, so no L4 is left.
    fleet = [cluster("a", {"l4": ("l4-1x", 1)})]
    held = [resolved("nic", klass="rdma.example.com", cel=ANY_GPU), resolved("gpu", cel=ANY_GPU)]
    other = replica("other", "a", 0, "l4", held, ready=True)
    result = schedule(deployment(1, [request("gpu", ANY_GPU)]), fleet, [other])
    assert placements(result) == []
    assert _verdict(result, "a").reason == "InsufficientCapacity"


@pytest.mark.parametrize("wanted", [FAST, SLOW, ANY_GPU])
def test_a_replica_no_node_can_hold_still_holds_its_node(wanted):
    # The other replica asks for two GPUs of the class on one node, which no single
    # device can serve. It still holds what it holds: charged to the first device
    # of its class, overdrawing it, and an overdrawn node takes nothing more.
    fleet = [cluster("a", {"dual": ("dual-1x", 1)})]
    other = replica("other", "a", 0, "dual", [resolved("gpu", count=2)], ready=True)
    result = schedule(deployment(1, [request("gpu", wanted)]), fleet, [other])
    assert placements(result) == []
    [pool] = _verdict(result, "a").pools
    assert (pool.matched, pool.free_nodes) == (True, 0)


def test_contention_charges_by_selector_even_when_the_deployment_selector_does_not_compile():
    # Our node selector no longer compiles, so nothing new is placed and nothing is
    # re-matched; contention still charges each held replica against the devices its
    # own resolved selectors match. The older Ready replica holds the only fast GPU,
    # so our not-yet-Ready one, which holds a fast GPU too, is withdrawn.
    fleet = [cluster("a", {"dual": ("dual-1x", 1)})]
    observed = [
        replica("other", "a", 0, "dual", [resolved("gpu", cel=FAST)], ready=True, created=T0),
        replica("llm", "a", 0, "dual", [resolved("gpu", cel=FAST)], created=T1),
    ]
    result = schedule(deployment(1, [request("gpu", "device.attributes[")]), fleet, observed)
    assert result.invalid_selectors
    assert [(w.cluster, w.index, w.pool) for w in result.withdrawn] == [("a", 0, "dual")]
    assert placements(result) == []
