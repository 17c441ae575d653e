"""Each score rule on its own, the weighted fill order, and the default profile's strict order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.scheduling import fill as fill_step
from modelplane.scheduling import schedule
from modelplane.scheduling.framework import RuleStates, ScheduleInput, read_input
from modelplane.scheduling.rules import SCORES
from modelplane.scheduling.rules.cache_readiness import CacheReadiness
from modelplane.scheduling.rules.spread import SpreadByLoad
from modelplane.scheduling.scheduler import schedule_input
from modelplane.scheduling.scores import MAX_SCORE, normalise
from modelplane.scheduling.state import CycleState
from modelplane.scheduling.types import RuleScore, ScoreCard
from tests.scheduling.schedfleet import L4, cluster, deployment, request
from tests.scheduling.test_schedule_properties import SETTINGS, apply, deployments, fleets


def test_the_registry_is_cache_readiness_then_spread_with_their_weights() -> None:
    assert [(s.name, s.weight) for s in SCORES] == [("CacheReadiness", 2), ("SpreadByLoad", 1)]


def test_the_default_weights_cannot_overlap() -> None:
    # Wherever two clusters differ in cache readiness their scores differ by
    # MAX_SCORE (100 against 0); every other rule moves a sum by at most its
    # weight times MAX_SCORE. Readiness stays a strict tier while it outweighs them all.
    cache, *rest = SCORES
    assert cache.weight * MAX_SCORE > sum(r.weight for r in rest) * MAX_SCORE


@pytest.mark.parametrize(
    ("raw", "lower_is_better", "expected"),
    [
        ({}, False, {}),
        ({"a": 3.0}, False, {"a": 100.0}),
        ({"a": 1.0, "b": 1.0}, True, {"a": 100.0, "b": 100.0}),  # nothing to prefer
        ({"a": 0.0, "b": 5.0, "c": 10.0}, False, {"a": 0.0, "b": 50.0, "c": 100.0}),
        ({"a": 2.0, "b": 3.0, "c": 6.0}, True, {"a": 100.0, "b": 75.0, "c": 0.0}),
    ],
)
def test_normalise_maps_the_candidates_onto_0_to_100(
    raw: dict[str, float], lower_is_better: bool, expected: dict[str, float]
) -> None:
    assert normalise(raw, lower_is_better=lower_is_better) == expected


def _input(replicas: int, caches: list[dict[str, Any]] | None = None) -> ScheduleInput:
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("a", "b", "c")]
    dep = deployment(replicas, [request("gpu", L4)])
    if caches is not None:
        dep["spec"]["caches"] = [{"name": "w"}]
    return read_input(dep, fleet, [], caches)


@pytest.mark.parametrize(
    ("replicas", "placed", "expected"),
    [
        (4, [], {"a": 100.0, "b": 100.0}),
        (4, ["a"], {"a": 75.0, "b": 100.0}),
        (4, ["a", "b", "a"], {"a": 50.0, "b": 75.0}),
        (2, ["a", "a"], {"a": 0.0, "b": 100.0}),
        (0, [], {"a": 100.0, "b": 100.0}),  # no replicas: the bound is 1, nothing held
    ],
)
def test_spread_by_load_scores_the_share_of_the_replicas_a_cluster_does_not_hold(
    replicas: int, placed: list[str], expected: dict[str, float]
) -> None:
    rule, states = SpreadByLoad(), RuleStates()
    rule.prepare(states, _input(replicas))
    for cluster_name in placed:
        rule.placed(states, cluster_name)
    assert {k: rule.score(states, k) for k in expected} == expected


def test_state_lives_under_the_rules_own_key() -> None:
    rule, states = SpreadByLoad(), RuleStates()
    rule.prepare(states, _input(2))
    rule.placed(states, "a")
    other = states.get("SomeOtherRule", dict)
    assert other == {} and rule.score(states, "a") == 50.0


def test_fill_takes_the_highest_score_then_the_first_name() -> None:
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
        (None, {"a": 100.0, "b": 100.0, "c": 100.0}),  # not looked up: no preference
        ([_cache(("a", "Hydrating"), ("b", "Ready"))], {"a": 0.0, "b": 100.0, "c": 0.0}),
        ([_cache(("a", "Failed"), ("b", "Pending"))], {"a": 0.0, "b": 0.0, "c": 0.0}),
    ],
)
def test_cache_readiness_prefers_clusters_whose_copy_is_ready(
    caches: list[dict[str, Any]] | None, expected: dict[str, float]
) -> None:
    rule, states = CacheReadiness(), RuleStates()
    rule.prepare(states, _input(1, caches))
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


def test_the_ranking_shows_each_rules_score_and_weight_for_one_more_replica() -> None:
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("a", "b", "c")]
    ready_b_c = _cache(("a", "Hydrating"), ("b", "Ready"), ("c", "Ready"))
    result = schedule(_cached(2), fleet, [], [ready_b_c])
    assert sorted(r.cluster for r in result.replicas) == ["b", "c"]

    def card(name: str, cache: float, spread: float) -> ScoreCard:
        return ScoreCard(
            name, (RuleScore("CacheReadiness", cache, 2), RuleScore("SpreadByLoad", spread, 1))
        )

    # Readiness outweighs spread: b (Ready, holding half) before a (empty, Hydrating).
    assert result.ranking == (card("b", 100.0, 50.0), card("c", 100.0, 50.0))
    assert [x.total for x in result.ranking] == [250.0, 250.0]
    # Only with every verdict explained: the composer's call does not rank.
    assert schedule(_cached(2), fleet, [], [ready_b_c], explain_all=False).ranking == ()


# --- Two preferences at once --------------------------------------------------------


@dataclass(frozen=True)
class Cheaper:
    """A stand-in price rule: the `price` label, cheapest 100 and dearest 0 over the candidates."""

    weight: int = 1
    name = "Cheaper"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Normalise the candidates' prices once: they do not move during the fill."""
        prices = {k: float(inp.clusters[k].labels["price"]) for k in inp.candidates}
        states.get(self.name, dict).update(normalise(prices, lower_is_better=True))

    def score(self, states: RuleStates, cluster: str) -> float:
        """The cluster's normalised price score."""
        scores: Mapping[str, float] = states.get(self.name, dict)
        return scores[cluster]

    def placed(self, states: RuleStates, cluster: str) -> None:
        """A placement does not change prices."""


@pytest.mark.parametrize(
    ("price_weight", "spread_weight", "expected"),
    [
        # Spread barely counts: the cheap cluster takes every replica it can.
        (1, 1, {"cheap": 4, "dear": 0}),
        # Cheaper wins until the cheap cluster holds two replicas more than the dear one
        # (2 × 3/4 × 100 > 100): prefer cheaper, but still spread.
        (1, 3, {"cheap": 3, "dear": 1}),
        # Spread first (one replica's difference, 8/4 × 100, outweighs the price); the
        # price decides only between equally loaded clusters.
        (1, 8, {"cheap": 2, "dear": 2}),
    ],
)
def test_a_price_and_spread_hold_at_once(
    price_weight: int, spread_weight: int, expected: dict[str, int]
) -> None:
    # The dear cluster comes first by name, so a tie would go to it: none occurs here.
    fleet = [
        cluster(n, {"l4": ("l4-1x", 4)}, labels={"price": p})
        for n, p in (("b-cheap", "1.0"), ("a-dear", "3.0"))
    ]
    inp = read_input(deployment(4, [request("gpu", L4)]), fleet, [])
    profile = (Cheaper(price_weight), SpreadByLoad(spread_weight))
    result = schedule_input(inp, scores=profile)
    held = {"cheap": 0, "dear": 0}
    for r in result.replicas:
        held[r.cluster.split("-")[1]] += 1
    assert held == expected


# --- The default profile keeps the strict order -------------------------------------


def _strict_order(
    state: CycleState, cluster_name: str
) -> tuple[tuple[int, int], tuple[float, ...], str]:
    """The order before scores were weighed, written out independently of the rules:
    a Ready copy (or no cache) first, then the fewest replicas held, then the best
    fit (the fill's own, below every score: pinned by test_best_fit.py), then the name."""
    cache = state.inp.cache
    ready = cache is None or any(c.ready and c.cluster == cluster_name for c in cache.copies)
    held = sum(1 for s in state.slots if s.cluster == cluster_name)
    # the fill's (order, fit, name) shape
    best = tuple(-x for x in fill_step.rank_fit(state, cluster_name))
    return ((0 if ready else 1), held), best, cluster_name


PHASES = [None, "Ready", "Ready", "Hydrating", "Pending"]


@SETTINGS
@given(fleets(), st.lists(deployments(name="other", max_replicas=4), max_size=2), st.data())
def test_the_weighted_default_equals_the_strict_order(clusters, others, data) -> None:
    fleet: list[dict[str, Any]] = []
    for i, other in enumerate(others):
        other["metadata"]["name"] = f"other-{i}"
        fleet = apply(fleet, other, schedule(other, clusters, fleet), i)
    dep = data.draw(deployments())
    copies = [(cl["metadata"]["name"], data.draw(st.sampled_from(PHASES))) for cl in clusters]
    caches = None
    if data.draw(st.booleans()):
        dep["spec"]["caches"] = [{"name": "w"}]
        caches = [_cache(*[(n, p) for n, p in copies if p is not None])]
    # A first cycle places from scratch; a second, scaled up, spreads over what it kept.
    grown = {**dep, "spec": {**dep["spec"], "replicas": dep["spec"]["replicas"] + 3}}
    first = schedule(dep, clusters, fleet, caches)
    mine = apply(fleet, dep, first, 50)
    for d, f in ((dep, fleet), (grown, mine)):
        weighted = schedule(d, clusters, f, caches)
        with mock.patch.object(fill_step, "_key", _strict_order):
            strict = schedule(d, clusters, f, caches)
        assert weighted == strict
