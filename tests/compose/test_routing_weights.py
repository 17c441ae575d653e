"""Weights of a ModelService's backends: hand-computed tables and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api.model_endpoint import ModelEndpointSpec, ObservedEndpoint
from modelplane.api.model_service import WEIGHT_TOTAL, ModelServiceSpec
from modelplane.compose.routing import weights
from modelplane.compose.routing.model_service import plan


@pytest.mark.parametrize(
    ("group_weights", "total", "expected"),
    [
        ([1, 1, 1], 1000, [334, 333, 333]),  # remainder to the first listed
        ([1, 2], 1000, [333, 667]),  # 333.33 / 666.67: the larger remainder wins
        ([90, 10], 1000, [900, 100]),
        ([7], 1000, [1000]),
        ([1, 1, 1], 100, [34, 33, 33]),
        ([5, 3], 7, [4, 3]),  # 4.375 / 2.625 → 4 + 3 (remainders .375 vs .625)
        ([], 1000, []),
    ],
)
def test_apportion_table(group_weights: list[int], total: int, expected: list[int]) -> None:
    assert weights.apportion(group_weights, total) == expected


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        # Three endpoints sharing one group's weight 100: 1000 split 334/333/333,
        # the extra unit to the first in name order.
        ([(100, ["c", "a", "b"])], {"a": 334, "b": 333, "c": 333}),
        # Canary 90/10: stable has two Ready endpoints, canary one.
        (
            [(90, ["stable-0", "stable-1"]), (10, ["canary-0"])],
            {"stable-0": 450, "stable-1": 450, "canary-0": 100},
        ),
        # A group with no Ready endpoint drops out; its share goes to the rest.
        ([(90, []), (10, ["saas-a", "saas-b"])], {"saas-a": 500, "saas-b": 500}),
        # Drop-out among three: 70 drops, 20:10 renormalise to 667:333.
        ([(20, ["x"]), (70, []), (10, ["y"])], {"x": 667, "y": 333}),
        # Group shares 667/333; 667 over three endpoints is 223/222/222.
        ([(2, ["p", "q", "r"]), (1, ["s"])], {"p": 223, "q": 222, "r": 222, "s": 333}),
        # A weight-0 group takes nothing even with Ready endpoints.
        ([(0, ["off"]), (1, ["on"])], {"on": 1000}),
        # An endpoint selected by two groups receives both parts: 250 + 500.
        ([(1, ["both", "only-a"]), (1, ["both"])], {"both": 750, "only-a": 250}),
        # Nothing Ready anywhere: no weights at all.
        ([(90, []), (10, [])], {}),
    ],
)
def test_split_table(groups: list[tuple[int, list[str]]], expected: dict[str, int]) -> None:
    got = weights.split(groups, WEIGHT_TOTAL)
    assert got == expected
    if got:
        assert sum(got.values()) == WEIGHT_TOTAL


def test_an_endpoint_may_round_to_zero_but_the_sum_stays_exact() -> None:
    names = [f"e{i:02d}" for i in range(12)]
    got = weights.split([(1, names[:2]), (1, names[2:])], 10)
    assert got == {
        "e00": 3,
        "e01": 2,
        **{n: 1 for n in names[2:7]},
        **{n: 0 for n in names[7:]},
    }
    assert sum(got.values()) == 10


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=1_000_000),
            st.lists(st.sampled_from("abcdefgh"), max_size=5),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_split_properties(groups: list[tuple[int, list[str]]]) -> None:
    got = weights.split(groups, WEIGHT_TOTAL)
    active = [(w, set(n)) for w, n in groups if w > 0 and n]
    assert bool(got) == bool(active)
    if not active:
        return
    assert sum(got.values()) == WEIGHT_TOTAL
    assert set(got) == set().union(*(n for _, n in active))
    # Each group's part is within one unit of its exact proportional share.
    whole = sum(w for w, _ in active)
    shares = weights.apportion([w for w, _ in active], WEIGHT_TOTAL)
    for (w, _), share in zip(active, shares, strict=True):
        assert abs(share - w * WEIGHT_TOTAL / whole) < 1


def _endpoint(name: str, labels: dict[str, str], *, ready: bool = True, ns: str = "team-a"):
    spec = ModelEndpointSpec(url=f"https://{name}.example.com")
    return ObservedEndpoint(name, ns, labels, spec, ready=ready)


def test_plan_selects_only_its_namespace_and_weights_ready_endpoints() -> None:
    spec = ModelServiceSpec.model_validate(
        {
            "endpoints": [
                {"selector": {"matchLabels": {"track": "stable"}}, "weight": 90},
                {
                    "selector": {
                        "matchExpressions": [
                            {"key": "track", "operator": "In", "values": ["canary"]}
                        ]
                    },
                    "weight": 10,
                },
            ]
        }
    )
    endpoints = [
        _endpoint("stable-1", {"track": "stable"}),
        _endpoint("stable-0", {"track": "stable"}),
        _endpoint("stable-2", {"track": "stable"}, ready=False),
        _endpoint("canary-0", {"track": "canary"}),
        # Same labels, another namespace: never selected.
        _endpoint("intruder", {"track": "stable"}, ns="team-b"),
        _endpoint("unlabelled", {}),
    ]
    got = [(s.endpoint.name, s.weight, s.ready) for s in plan(spec, endpoints, "team-a")]
    assert got == [
        ("canary-0", 100, True),
        ("stable-0", 450, True),
        ("stable-1", 450, True),
        ("stable-2", 0, False),
    ]


def test_a_draining_endpoint_is_listed_at_weight_zero() -> None:
    """An endpoint whose replica is leaving (autoscaling) gets 0; the rest share everything."""
    spec = ModelServiceSpec.model_validate(
        {"endpoints": [{"selector": {"matchLabels": {"app": "chat"}}, "weight": 100}]}
    )
    leaving = ObservedEndpoint(
        "chat-2",
        "team-a",
        {"app": "chat"},
        ModelEndpointSpec(url="https://chat-2.example.com", draining=True),
        ready=True,
    )
    endpoints = [
        _endpoint("chat-0", {"app": "chat"}),
        _endpoint("chat-1", {"app": "chat"}),
        leaving,
    ]
    got = [(s.endpoint.name, s.weight, s.ready) for s in plan(spec, endpoints, "team-a")]
    assert got == [("chat-0", 500, True), ("chat-1", 500, True), ("chat-2", 0, True)]


def _canary(name: str, percent: int) -> ObservedEndpoint:
    spec = ModelEndpointSpec(url=f"https://{name}.example.com", canary_percent=percent)
    return ObservedEndpoint(name, "team-a", {"app": "chat"}, spec, ready=True)


@pytest.mark.parametrize(
    ("endpoints", "expected"),
    [
        # A rollout wave under analysis: the new revision's one endpoint gets 10%.
        (
            [_endpoint("old-0", {"app": "chat"}), _endpoint("old-1", {"app": "chat"}),
             _canary("new-0", 10)],
            [("new-0", 100), ("old-0", 450), ("old-1", 450)],
        ),
        # Two canaries share their 10% evenly.
        (
            [_endpoint("old-0", {"app": "chat"}), _canary("new-0", 10), _canary("new-1", 10)],
            [("new-0", 50), ("new-1", 50), ("old-0", 900)],
        ),
        # Only canaries left (every old endpoint gone): they take everything.
        ([_canary("new-0", 10), _canary("new-1", 10)], [("new-0", 500), ("new-1", 500)]),
    ],
    ids=["one-canary", "two-canaries", "only-canaries"],
)  # fmt: skip
def test_canary_endpoints_share_their_percentage_of_the_group(
    endpoints: list[ObservedEndpoint], expected: list[tuple[str, int]]
) -> None:
    spec = ModelServiceSpec.model_validate(
        {"endpoints": [{"selector": {"matchLabels": {"app": "chat"}}, "weight": 100}]}
    )
    got = [(s.endpoint.name, s.weight) for s in plan(spec, endpoints, "team-a")]
    assert got == expected


def test_a_canary_share_leaves_other_groups_shares_as_they_were() -> None:
    """Group shares stay 75/25 when one group splits into canary and the rest."""
    spec = ModelServiceSpec.model_validate(
        {
            "endpoints": [
                {"selector": {"matchLabels": {"app": "chat"}}, "weight": 3},
                {"selector": {"matchLabels": {"app": "saas"}}, "weight": 1},
            ]
        }
    )
    endpoints = [
        _endpoint("old-0", {"app": "chat"}),
        _canary("new-0", 20),
        _endpoint("saas-0", {"app": "saas"}),
    ]
    got = {s.endpoint.name: s.weight for s in plan(spec, endpoints, "team-a")}
    assert got == {"new-0": 150, "old-0": 600, "saas-0": 250}
