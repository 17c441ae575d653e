"""FleetQuota: what a limit counts (hand-computed device totals) and what the scheduler
refuses past it, with the quota's name and numbers."""

from __future__ import annotations

import pytest
from schedfleet import (
    BIG_MEMORY,
    H100,
    L4,
    cluster,
    deployment,
    replica,
    request,
    resolved,
    workers,
)
from tenancy import quota, run

from modelplane.api.fleet_quota import read_fleet_quota
from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.scheduling import quota as q
from modelplane.scheduling.matching import Evaluator

CLUSTERS = [
    cluster("east", {"h100": ("h100-8x", 4), "l4": ("l4-1x", 4), "a100": ("a100-4x", 2)}),
    cluster("west", {"h100": ("h100-8x", 4)}),
]
H8 = [resolved("gpu", 8, cel=H100)]
# Observed replicas of namespace team-a (and one of team-b), with their devices by hand:
REPLICAS = [
    replica("chat", "east", 0, "h100", H8),  # 8 H100
    replica("chat", "west", 0, "h100", H8, ready=True),  # 8 H100 (Ready or not: it holds them)
    replica("big", "east", 0, "h100", H8, work=workers(pipeline=2)),  # 2 nodes × 8 = 16 H100
    replica("small", "east", 0, "l4", [resolved("gpu", 1, cel=L4)]),  # 1 L4
    replica(
        "nic", "east", 0, "a100", [resolved("gpu", 4), resolved("nic", 2, klass="rdma.example.com")]
    ),  # 4 A100 + 2 NICs
    replica("other", "east", 1, "h100", H8, namespace="team-b"),  # another namespace
]


@pytest.mark.parametrize(
    ("limit", "used"),
    [
        ({"devices": 100}, 8 + 8 + 16 + 1 + 4 + 2),  # no criterion: every device
        ({"devices": 100, "inferenceClasses": ["h100-8x"]}, 32),
        ({"devices": 100, "inferenceClasses": ["h100-8x", "l4-1x"]}, 33),
        ({"devices": 100, "deviceClassName": "gpu.nvidia.com"}, 8 + 8 + 16 + 1 + 4),
        ({"devices": 100, "deviceClassName": "rdma.example.com"}, 2),
        # Classes by selector: H100 (80Gi) and A100 (40Gi) have ≥ 40Gi, the L4 (24Gi) not;
        # the NICs have no gpu.nvidia.com capacity, so the selector errors on them and
        # they count (a selector that cannot judge a device fails closed, issue 40).
        ({"devices": 100, "selector": BIG_MEMORY}, 8 + 8 + 16 + 4 + 2),
        ({"devices": 100, "selector": BIG_MEMORY, "inferenceClasses": ["a100-4x"]}, 4 + 2),
        # An error on every device: every device counts.
        ({"devices": 100, "selector": "device.attributes['x'].nope == 1"}, 8 + 8 + 16 + 1 + 4 + 2),
    ],
)
def test_a_limit_counts_the_namespaces_devices_on_the_pools_it_selects(
    limit: dict[str, object], used: int
) -> None:
    observed = read_fleet_quota(quota("q", lim=limit))
    assert observed is not None
    clusters = {c.name: c for x in CLUSTERS if (c := read_inference_cluster(x))}
    replicas = [r for x in REPLICAS if (r := read_model_replica(x))]
    [use] = q.namespace_use(observed, replicas, "team-a", clusters, Evaluator())
    assert (use.used, use.hard) == (used, 100)


def test_the_scheduler_refuses_past_the_limit_naming_the_quota_and_the_numbers() -> None:
    dep = deployment(3, [request("gpu", H100, count=8)], name="chat")
    observed = [replica("batch", "east", 0, "h100", H8)]  # 8 of the namespace's 16
    result = run(dep, CLUSTERS, observed, [quota("team-a", h100={"devices": 16})])
    assert result.placed == 1
    assert {v.cluster: v.reason for v in result.clusters} == {
        "east": "QuotaExceeded",
        "west": "QuotaExceeded",
    }
    east = next(v for v in result.clusters if v.cluster == "east")
    assert "FleetQuota team-a limit h100: 16 of 16 devices used and a replica here needs 8" in (
        east.message
    )
    assert [(u.limit, u.used, u.hard) for u in result.quota] == [("h100", 16, 16)]


def test_a_limit_on_one_class_leaves_other_pools_open() -> None:
    dep = deployment(2, [request("gpu", "true", count=1)], name="chat")
    limits = quota("team-a", l4={"devices": 0, "inferenceClasses": ["l4-1x"]})
    result = run(dep, [cluster("east", {"l4": ("l4-1x", 4), "h100": ("h100-8x", 1)})], [], [limits])
    assert {r.roles[0].pool for r in result.replicas} == {"h100"}
    assert result.placed == 2


def test_a_quota_lowered_below_use_deletes_nothing_and_blocks_new_placements() -> None:
    dep = deployment(3, [request("gpu", H100, count=8)], name="chat")
    mine = [replica("chat", "east", 0, "h100", H8, ready=True)]
    mine += [replica("chat", "west", 0, "h100", H8, ready=True)]
    result = run(dep, CLUSTERS, mine, [quota("team-a", h100={"devices": 8})])
    assert sorted((r.cluster, r.retained) for r in result.replicas) == [
        ("east", True),
        ("west", True),
    ]
    assert result.quota[0].used == 16 and result.quota[0].hard == 8


def test_a_draining_replica_and_its_surge_replacement_both_count() -> None:
    # The Ready replica on east is deselected: it drains (still holding 8) while its
    # replacement needs 8 more. 16 fit the limit; 15 do not.
    dep = deployment(
        1, [request("gpu", H100, count=8)], name="chat", selector={"matchLabels": {"zone": "w"}}
    )
    fleet = [
        cluster("east", {"h100": ("h100-8x", 1)}),
        cluster("west", {"h100": ("h100-8x", 1)}, labels={"zone": "w"}),
    ]
    mine = [replica("chat", "east", 0, "h100", H8, ready=True)]
    fits = run(dep, fleet, mine, [quota("team-a", h100={"devices": 16})])
    assert [(r.cluster, r.draining) for r in fits.replicas] == [("east", True), ("west", False)]
    assert fits.quota[0].used == 16
    short = run(dep, fleet, mine, [quota("team-a", h100={"devices": 15})])
    assert [(r.cluster, r.draining) for r in short.replicas] == [("east", True)]
    assert {v.cluster: v.reason for v in short.clusters}["west"] == "QuotaExceeded"


def test_other_namespaces_do_not_count_and_every_quota_applies() -> None:
    # Issue 40: a second FleetQuota no longer replaces the first; the tightest wins.
    dep = deployment(1, [request("gpu", H100, count=8)], name="chat")
    theirs = [replica("x", "east", 0, "h100", H8, namespace="team-b")]
    quotas = [quota("b-second", h100={"devices": 16}), quota("a-first", h100={"devices": 8})]
    result = run(dep, CLUSTERS, theirs, quotas)
    assert result.placed == 1
    assert [(u.quota, u.used) for u in result.quota] == [("a-first", 8), ("b-second", 8)]
    tighter = [quota("b-second", h100={"devices": 0}), quota("a-first", h100={"devices": 8})]
    refused = run(dep, CLUSTERS, theirs, tighter)
    assert refused.placed == 0
    assert {v.reason for v in refused.clusters} == {"QuotaExceeded"}


@pytest.mark.parametrize(
    ("limit", "used"),
    [
        # A limit on nothing in particular counts the 8 H100s on a cluster the fleet no
        # longer lists: the replica still holds them.
        ({"devices": 100}, 8),
        ({"devices": 100, "deviceClassName": "gpu.nvidia.com"}, 8),
        # A limit on classes cannot tell the class of an unknown cluster's pool: not counted.
        ({"devices": 100, "inferenceClasses": ["h100-8x"]}, 0),
    ],
)
def test_a_replica_on_a_cluster_not_in_the_fleet_still_counts(
    limit: dict[str, object], used: int
) -> None:
    observed = read_fleet_quota(quota("q", lim=limit))
    assert observed is not None
    clusters = {c.name: c for x in CLUSTERS if (c := read_inference_cluster(x))}
    gone = read_model_replica(replica("chat", "gone", 0, "h100", H8))
    assert gone is not None and "gone" not in clusters
    [use] = q.namespace_use(observed, [gone], "team-a", clusters, Evaluator())
    assert use.used == used


def test_the_deployments_own_multi_node_replicas_count_devices_times_nodes() -> None:
    # Its own Ready replica spans 2 nodes of 8 H100s: 16 devices. A limit of 24 leaves
    # room for 8, not for a second 16; a limit of 32 takes the second.
    dep = deployment(2, [request("gpu", H100, count=8)], name="big", work=workers(pipeline=2))
    mine = [replica("big", "east", 0, "h100", H8, work=workers(pipeline=2), ready=True)]
    short = run(dep, CLUSTERS, mine, [quota("team-a", h100={"devices": 24})])
    assert [(u.used, u.hard) for u in short.quota] == [(16, 24)]
    assert short.placed == 1
    east = next(v for v in short.clusters if v.cluster == "east")
    assert "16 of 24 devices used and a replica here needs 16" in east.message
    room = run(dep, CLUSTERS, mine, [quota("team-a", h100={"devices": 32})])
    assert [(u.used, u.hard) for u in room.quota] == [(32, 32)]
    assert room.placed == 2


def test_a_limit_on_a_class_is_named_where_it_refuses() -> None:
    # The limit counts only h100-8x pools: with 8 of 8 held, every h100 pool is refused
    # by the quota (named, with its numbers), not for want of nodes.
    dep = deployment(2, [request("gpu", H100, count=8)], name="chat")
    observed = [replica("batch", "east", 0, "h100", H8)]
    limits = quota("team-a", h100={"devices": 8, "inferenceClasses": ["h100-8x"]})
    result = run(dep, CLUSTERS, observed, [limits])
    assert result.placed == 0
    assert {v.cluster: v.reason for v in result.clusters} == {
        "east": "QuotaExceeded",
        "west": "QuotaExceeded",
    }
    west = next(v for v in result.clusters if v.cluster == "west")
    assert "FleetQuota team-a limit h100: 8 of 8 devices used and a replica here needs 8" in (
        west.message
    )
