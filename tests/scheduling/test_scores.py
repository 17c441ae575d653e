"""Each score rule on its own, and the fill order the registry gives."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling import schedule
from modelplane.scheduling.framework import RuleStates, read_input
from modelplane.scheduling.scores import SCORES, CacheReadiness, SpreadByLoad
from tests.scheduling.schedfleet import L4, cluster, deployment, request


def test_the_registry_is_cache_readiness_then_spread() -> None:
    assert [s.name for s in SCORES] == ["CacheReadiness", "SpreadByLoad"]


@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        ([], {"a": 0, "b": 0}),
        (["a"], {"a": 1, "b": 0}),
        (["a", "b", "a"], {"a": 2, "b": 1}),
    ],
)
def test_spread_by_load_counts_replicas_per_cluster(
    placed: list[str], expected: dict[str, int]
) -> None:
    rule, states = SpreadByLoad(), RuleStates()
    for cluster_name in placed:
        rule.placed(states, cluster_name)
    assert {k: rule.score(states, k) for k in expected} == expected


def test_state_lives_under_the_rules_own_key() -> None:
    rule, states = SpreadByLoad(), RuleStates()
    rule.placed(states, "a")
    other = states.get("SomeOtherRule", dict)
    assert other == {} and rule.score(states, "a") == 1


def test_fill_takes_the_lowest_score_then_the_first_name() -> None:
    # Three equal clusters, four replicas: one each, then the first by name again.
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("c", "a", "b")]
    result = schedule(deployment(4, [request("gpu", L4)]), fleet, [])
    assert [(r.cluster, r.index) for r in result.replicas] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("c", 0),
    ]


def _cache(*copies: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "w", "namespace": "team-a"},
        "status": {"clusters": [{"cluster": c, "phase": p} for c, p in copies]},
    }


def _cached(n: int) -> dict[str, Any]:
    dep = deployment(n, [request("gpu", L4)])
    dep["spec"]["caches"] = [{"name": "w"}]
    return dep


@pytest.mark.parametrize(
    ("caches", "expected"),
    [
        (None, {"a": 0, "b": 0, "c": 0}),  # not looked up: no preference
        ([_cache(("a", "Hydrating"), ("b", "Ready"))], {"a": 1, "b": 0, "c": 1}),
        ([_cache(("a", "Failed"), ("b", "Pending"))], {"a": 1, "b": 1, "c": 1}),
    ],
)
def test_cache_readiness_prefers_clusters_whose_copy_is_ready(
    caches: list[dict[str, Any]] | None, expected: dict[str, int]
) -> None:
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("a", "b", "c")]
    inp = read_input(_cached(1), fleet, [], caches)
    rule, states = CacheReadiness(), RuleStates()
    rule.prepare(states, inp)
    rule.placed(states, "a")  # placements do not change readiness
    assert {k: rule.score(states, k) for k in expected} == expected


def test_the_ready_copy_is_chosen_first_then_spread_among_equally_ready() -> None:
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("a", "b", "c")]
    hydrating_a = _cache(("a", "Hydrating"), ("b", "Ready"), ("c", "Ready"))
    one = schedule(_cached(1), fleet, [], [hydrating_a])
    assert [r.cluster for r in one.replicas] == ["b"]  # not "a", first by name
    three = schedule(_cached(3), fleet, [], [hydrating_a])
    # b and c (Ready) take one each before a Hydrating cluster is used... and then
    # readiness still wins over spread: the third goes to a Ready cluster.
    assert sorted(r.cluster for r in three.replicas) == ["b", "b", "c"]
    # Only the covered clusters are candidates: d has no copy and is never chosen.
    fleet.append(cluster("d", {"l4": ("l4-1x", 4)}))
    all_hydrating = _cache(("a", "Hydrating"), ("b", "Hydrating"))
    two = schedule(_cached(4), fleet, [], [all_hydrating])
    assert sorted(r.cluster for r in two.replicas) == ["a", "a", "b", "b"]
    (d,) = [v for v in two.clusters if v.cluster == "d"]
    assert d.reason == "CacheNotOnCluster"
