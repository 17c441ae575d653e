"""Cost-weighted placement (hand-computed sums) and Spot pools (only with allowSpot)."""

from __future__ import annotations

from collections import Counter

import pytest
from schedfleet import A100, H100, L4, cluster, deployment, replica, request, resolved, workers
from tenancy import priced, run

from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.scheduling.framework import build_input
from modelplane.scheduling.rules import COST_PROFILE, SCORES
from modelplane.scheduling.scheduler import schedule_input


def fleet() -> list[dict]:
    return [
        priced(cluster("a", {"l4": ("l4-1x", 4)}), l4=(0.6, None)),
        priced(cluster("b", {"l4": ("l4-1x", 4)}), l4=(0.7, None)),
        priced(cluster("c", {"l4": ("l4-1x", 4)}), l4=(0.8, None)),
    ]


def chat(replicas: int, **placement: object) -> dict:
    dep = deployment(replicas, [request("gpu", L4)], name="chat")
    if placement:
        dep["spec"]["placement"] = placement
    return dep


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        # Cost scores 100 / 50 / 0 (min-max of 0.6, 0.7, 0.8), spread 100 × (1 − held / n):
        # n=4: a 200, then a 175 vs b 150, then a 150 = b 150 (name: a), then a 125 < b 150.
        (4, {"a": 3, "b": 1}),
        # n=2: a 200, then a 150 = b 150 (name: a): both on a.
        (2, {"a": 2}),
        # n=6: a a a(150 vs b 150) b(a 133 vs b 150) a(133 vs b 133, name) then b, c never.
        (6, {"a": 4, "b": 2}),
    ],
)
def test_lowest_cost_weighs_against_spread(replicas: int, expected: dict[str, int]) -> None:
    result = run(chat(replicas, preference="LowestCost"), fleet())
    assert Counter(r.cluster for r in result.replicas) == expected


def test_without_the_preference_price_changes_nothing() -> None:
    result = run(chat(3), fleet())
    assert Counter(r.cluster for r in result.replicas) == {"a": 1, "b": 1, "c": 1}


def test_the_cost_profile_keeps_cache_readiness_a_strict_tier() -> None:
    cache, *rest = COST_PROFILE
    assert cache.name == SCORES[0].name
    assert cache.weight * 100 > sum(r.weight * 100 for r in rest)


def test_explain_ranks_with_the_cost_scores() -> None:
    # One replica, on a: for one more, b (spread 100, cost 50: 450) beats a (spread 0,
    # cost 100: 400), each with cache readiness 100 × 3.
    result = run(chat(1, preference="LowestCost"), fleet())
    cards = [
        (c.cluster, {s.rule: (pytest.approx(s.score), s.weight) for s in c.scores}, c.total)
        for c in result.ranking
    ]
    assert cards == [
        (
            "b",
            {"CacheReadiness": (100, 3), "SpreadByLoad": (100, 1), "LowestCost": (50, 1)},
            pytest.approx(450),
        ),
        (
            "a",
            {"CacheReadiness": (100, 3), "SpreadByLoad": (0, 1), "LowestCost": (100, 1)},
            pytest.approx(400),
        ),
    ]


def test_the_cheapest_pool_of_a_cluster_is_tried_first() -> None:
    two = priced(
        cluster("x", {"a-dear": ("l4-1x", 2), "b-cheap": ("l4-1x", 2)}),
        **{"a-dear": (1.0, None), "b-cheap": (0.5, None)},
    )
    cheap = run(chat(2, preference="LowestCost"), [two])
    assert {r.roles[0].pool for r in cheap.replicas} == {"b-cheap"}
    plain = run(chat(2), [two])
    assert {r.roles[0].pool for r in plain.replicas} == {"a-dear"}  # pool-name order


def test_a_free_pool_is_the_cheapest_to_grow() -> None:
    # A price of 0 is a price (an already-paid reservation): the what-if grows it, not
    # the pool at 0.5, though both need one node.
    empty = priced(
        cluster("x", {"a-paid": ("l4-1x", 0), "b-free": ("l4-1x", 0)}),
        **{"a-paid": (0.5, None), "b-free": (0.0, None)},
    )
    result = run(chat(1, preference="LowestCost"), [empty])
    assert [[(a.pool, a.nodes) for a in w.additions] for w in result.what_if] == [[("b-free", 1)]]


def test_under_lowest_cost_the_what_if_grows_the_cheapest_matching_pool() -> None:
    # Both pools are empty and equal but for the price: one node of either would place
    # the replica. LowestCost advises the cheaper; without it, the first by name.
    empty = priced(
        cluster("x", {"a-dear": ("l4-1x", 0), "b-cheap": ("l4-1x", 0)}),
        **{"a-dear": (1.0, None), "b-cheap": (0.5, None)},
    )
    cheap = run(chat(1, preference="LowestCost"), [empty])
    assert cheap.placed == 0
    assert [(w.cluster, [(a.pool, a.nodes) for a in w.additions]) for w in cheap.what_if] == [
        ("x", [("b-cheap", 1)])
    ]
    plain = run(chat(1), [empty])
    assert [[(a.pool, a.nodes) for a in w.additions] for w in plain.what_if] == [[("a-dear", 1)]]


def test_an_unpriced_cluster_is_never_preferred_on_cost() -> None:
    clusters = [
        cluster("a", {"l4": ("l4-1x", 4)}),
        priced(cluster("b", {"l4": ("l4-1x", 4)}), l4=(5.0, None)),
    ]
    result = run(chat(1, preference="LowestCost"), clusters)
    assert [r.cluster for r in result.replicas] == ["b"]


def spot_fleet() -> list[dict]:
    return [
        priced(
            cluster("a", {"l4": ("l4-1x", 1), "spot": ("l4-1x", 4)}),
            l4=(0.8, "OnDemand"),
            spot=(0.2, "Spot"),
        )
    ]


def test_a_spot_pool_takes_nothing_without_allow_spot() -> None:
    result = run(chat(2, preference="LowestCost"), spot_fleet())
    assert [r.roles[0].pool for r in result.replicas] == ["l4"]
    [verdict] = result.clusters
    refused = [p for p in verdict.pools if p.pool == "spot"]
    assert [p.refused for p in refused] == ["SpotNotAllowed"]


def test_allow_spot_takes_the_cheaper_spot_pool() -> None:
    result = run(chat(2, preference="LowestCost", allowSpot=True), spot_fleet())
    assert [r.roles[0].pool for r in result.replicas] == ["spot", "spot"]


def test_an_unreadable_capacity_type_takes_nothing_new_and_evicts_nothing() -> None:
    cl = priced(cluster("a", {"l4": ("l4-1x", 2)}), l4=(None, "Preemptible?"))
    assert run(chat(1), [cl]).placed == 0
    kept = replica("chat", "a", 0, "l4", [resolved("gpu", 1, cel=L4)], ready=True)
    result = run(chat(1), [cl], [kept])
    assert [(r.retained, r.draining) for r in result.replicas] == [(True, False)]


def test_a_replica_on_spot_drains_when_spot_is_no_longer_allowed() -> None:
    on_spot = replica("chat", "a", 0, "spot", [resolved("gpu", 1, cel=L4)], ready=True)
    result = run(chat(1), spot_fleet(), [on_spot])
    assert [(r.roles[0].pool, r.draining, r.drain_reason) for r in result.replicas] == [
        ("spot", True, "SpotNotAllowed"),
        ("l4", False, None),
    ]


def cost_scores(result) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Each ranked cluster's LowestCost score."""
    return {c.cluster: s.score for c in result.ranking for s in c.scores if s.rule == "LowestCost"}


def test_an_unpriced_cluster_scores_0_on_cost_beside_a_priced_one() -> None:
    clusters = [
        cluster("a", {"l4": ("l4-1x", 4)}),
        priced(cluster("b", {"l4": ("l4-1x", 4)}), l4=(5.0, None)),
    ]
    assert cost_scores(run(chat(1, preference="LowestCost"), clusters)) == {"a": 0.0, "b": 100.0}


def test_when_no_cluster_declares_a_price_every_cluster_scores_100_on_cost() -> None:
    clusters = [cluster("a", {"l4": ("l4-1x", 4)}), cluster("b", {"l4": ("l4-1x", 4)})]
    assert cost_scores(run(chat(1, preference="LowestCost"), clusters)) == {"a": 100.0, "b": 100.0}


def test_a_callers_cost_profile_without_the_preference_weighs_no_price() -> None:
    # No LowestCost preference, so no price is recorded: the rule, passed in the caller's
    # own profile, scores every cluster 100 and spread alone decides.
    dep = chat(2)
    spec = ModelDeploymentSpec.model_validate(dep["spec"])
    inp = build_input("team-a", "chat", spec, fleet(), [], None, [], [])
    result = schedule_input(inp, scores=COST_PROFILE)
    assert Counter(r.cluster for r in result.replicas) == {"a": 1, "b": 1}
    assert set(cost_scores(result).values()) == {100.0}


def split(prefill: int, decode: int) -> dict:
    """A LowestCost deployment: prefill on `prefill` A100s, decode on `decode` A100s."""
    dep = deployment(
        1,
        name="chat",
        prefill=([request("gpu", A100, count=prefill)], workers()),
        decode=([request("gpu", A100, count=decode)], workers()),
    )
    dep["spec"]["placement"] = {"preference": "LowestCost"}
    return dep


def test_a_clusters_cost_is_each_roles_devices_times_its_pools_price() -> None:
    # Prefill takes 1 H100, decode 4 A100s. On a: 1 × 1.0 + 4 × 2.0 = 9.0 per hour; on b:
    # 1 × 2.0 + 4 × 1.0 = 6.0, so b is the cheaper cluster though its H100 costs more.
    dep = deployment(
        1,
        name="chat",
        prefill=([request("gpu", H100)], workers()),
        decode=([request("gpu", A100, count=4)], workers()),
    )
    dep["spec"]["placement"] = {"preference": "LowestCost"}
    clusters = [
        priced(
            cluster("a", {"h100": ("h100-8x", 1), "a100": ("a100-4x", 1)}),
            h100=(1.0, None),
            a100=(2.0, None),
        ),
        priced(
            cluster("b", {"h100": ("h100-8x", 1), "a100": ("a100-4x", 1)}),
            h100=(2.0, None),
            a100=(1.0, None),
        ),
    ]
    result = run(dep, clusters)
    assert [r.cluster for r in result.replicas] == ["b"]


def test_pool_combinations_are_priced_by_each_roles_devices() -> None:
    # Prefill takes 1 A100, decode 4; x (1.0) and y (2.0) each hold one 4-A100 node, so
    # both roles on x do not fit. Prefill on y, decode on x costs 2.0 + 4 × 1.0 = 6.0,
    # less than prefill on x, decode on y: 1.0 + 4 × 2.0 = 9.0.
    one = priced(
        cluster("c", {"x": ("a100-4x", 1), "y": ("a100-4x", 1)}), x=(1.0, None), y=(2.0, None)
    )
    result = run(split(1, 4), [one])
    assert [[(r.role, r.pool) for r in p.roles] for p in result.replicas] == [
        [("prefill", "y"), ("decode", "x")]
    ]
