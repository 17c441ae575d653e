"""Each score rule on its own, and the fill order the registry gives."""

from __future__ import annotations

import pytest

from modelplane.scheduling import schedule
from modelplane.scheduling.framework import RuleStates
from modelplane.scheduling.scores import SCORES, SpreadByLoad
from tests.scheduling.schedfleet import L4, cluster, deployment, request


def test_the_registry_is_spread_first() -> None:
    assert [s.name for s in SCORES] == ["SpreadByLoad"]


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
