"""The per-fleet caches give the answers the uncached path gives.

A scheduling cycle reuses what depends on the observed fleet alone while the
same read-only objects arrive: the cluster filters' verdicts per cluster table
and rule keys (`scheduler.filter_clusters`), the fleet's charges pool by pool
(`fill.fleet_runs`) and each pool's contention losers (`retain._pool_losers`).
Plain dicts are read afresh every call, so a cycle over deep copies is the
uncached answer: random fleets scheduled for several deployments in a row
over the same read-only objects (warm) must answer exactly as the copies (cold).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedfleet import ANY_GPU, cluster, deployment, replica, request, resolved
from tenancy import priority_class, run, with_priority
from test_schedule_properties import apply, deployments, fleets

from modelplane.api.frozen import frozen
from modelplane.scheduling import fill, retain, scheduler
from modelplane.scheduling.framework import Rejection
from modelplane.scheduling.scheduler import schedule

Obj = dict[str, Any]


def _plain(objs: list[Obj]) -> list[Obj]:
    return copy.deepcopy(objs)


def _with_ready(fleet: list[Obj], pick: list[bool]) -> list[Obj]:
    """The fleet with the replicas `pick` marks Ready (cycled over the fleet)."""
    out = []
    for i, r in enumerate(fleet):
        if pick and pick[i % len(pick)]:
            r = {**r, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        out.append(r)
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleets(),
    st.lists(deployments(name="other", max_replicas=4), min_size=1, max_size=3),
    st.lists(deployments(), min_size=2, max_size=4),
    st.lists(st.booleans(), max_size=5),
    st.booleans(),
)
def test_warm_cycles_answer_as_cold_ones(
    clusters: list[Obj], others: list[Obj], deps: list[Obj], ready: list[bool], explain_all: bool
) -> None:
    fleet: list[Obj] = []
    for i, other in enumerate(others):
        other["metadata"]["name"] = f"other-{i}"
        fleet = apply(fleet, other, schedule(other, clusters, fleet), i)
    fleet = _with_ready(fleet, ready)
    for i, dep in enumerate(deps):
        dep["metadata"]["name"] = f"d{i}"
    read_only = [frozen(x) for x in clusters], [frozen(r) for r in fleet]
    # Warm calls in a row (a cold one in between would replace the fleet's caches);
    # the second round finds every cache filled.
    warm = [schedule(d, *read_only, explain_all=explain_all) for d in deps * 2]
    cold = [schedule(d, _plain(clusters), _plain(fleet), explain_all=explain_all) for d in deps]
    assert warm == cold * 2
    # One replica changes (a new object): the pools it does not hold keep their memo.
    if fleet:
        edited = _with_ready(fleet[:1], [True]) + fleet[1:]
        changed = [frozen(edited[0]), *read_only[1][1:]]
        warm = [schedule(d, read_only[0], changed, explain_all=explain_all) for d in deps]
        cold = [
            schedule(d, _plain(clusters), _plain(edited), explain_all=explain_all) for d in deps
        ]
        assert warm == cold


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


def _contended() -> tuple[list[Obj], list[Obj]]:
    clusters = [
        cluster("a", {"x": ("l4-1x", 1)}, labels={"tier": "a"}),
        cluster("b", {"x": ("l4-1x", 2)}, labels={"tier": "b"}),
        cluster("t", {"x": ("l4-1x", 2)}, taints=[{"key": "t", "effect": "NoSchedule"}]),
    ]
    # Two replicas of another deployment, neither Ready, on a one-GPU pool: one loses.
    held = [replica("other", "a", i, "x", [resolved("gpu")], ready=False) for i in (0, 1)]
    return clusters, held


def test_the_fleet_is_worked_once_for_deployments_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = _counting(monkeypatch, scheduler, "cluster_verdicts")
    runs = _counting(monkeypatch, fill, "fleet_runs")
    replays = _counting(monkeypatch, retain, "_replay_losers")
    clusters, held = _contended()
    fleet = [frozen(x) for x in clusters], [frozen(r) for r in held]
    gold = {"matchLabels": {"tier": "a"}}
    tolerant = [{"key": "t", "operator": "Exists"}]
    deps = [
        deployment(1, [request("gpu", ANY_GPU)], name="p"),
        deployment(2, [request("gpu", ANY_GPU)], name="q"),  # alike: same verdicts
        deployment(1, [request("gpu", ANY_GPU)], name="r", selector=gold),
        deployment(1, [request("gpu", ANY_GPU)], name="s", tolerations=tolerant),
    ]
    warm = [schedule(d, *fleet) for d in deps]
    assert len(verdicts) == 3  # p and q share theirs; r and s read other keys
    assert len(runs) == 1
    assert len(replays) == 1  # one pool held, replayed once for every deployment
    reasons = [{v.cluster: v.reason for v in res.clusters} for res in warm]
    assert reasons[0]["t"] == reasons[1]["t"] == "Tainted"
    assert reasons[2]["b"] == "NotSelected"
    assert reasons[3]["t"] != "Tainted"
    # Another replica elsewhere: the fleet's runs are new; only its pool is replayed.
    fleet = fleet[0], [*fleet[1], frozen(replica("other", "b", 0, "x", [resolved("gpu")]))]
    schedule(deps[0], *fleet)
    assert len(runs) == 2
    assert len(replays) == 2
    assert warm == [schedule(d, _plain(clusters), _plain(held)) for d in deps]


def test_preemption_changes_the_fleets_charges() -> None:
    clusters = [frozen(cluster("a", {"x": ("l4-1x", 2)}))]
    low = replica("low", "a", 0, "x", [resolved("gpu")], ready=True)
    high = with_priority(
        replica("high", "a", 0, "x", [resolved("gpu")]),
        "high",
        [("team-a", low["metadata"]["name"])],
    )
    fleet = [frozen(low), frozen(high)]
    dep = deployment(1, [request("gpu", ANY_GPU)], name="third")
    # Without the PriorityClass the preemptor is no higher: both charge the pool, full.
    plain = run(dep, clusters, fleet)
    # With it, the victim charges nothing (its devices are the preemptor's): the same
    # replica objects, so the fleet's runs must be keyed by the priorities too.
    values = [priority_class("high", 1000)]
    ranked = run(dep, clusters, fleet, priorities=values)
    assert ranked == run(dep, _plain([*clusters]), _plain(fleet), priorities=values)
    assert plain == run(dep, _plain([*clusters]), _plain(fleet))
    assert plain.replicas == ()
    assert len(ranked.replicas) == 1


def test_the_ledgers_know_which_clusters_hold_one() -> None:
    from modelplane.scheduling.ledger import PoolLedger
    from modelplane.scheduling.state import Ledgers

    ledgers = Ledgers()
    led = PoolLedger((8,), 1, False)
    ledgers[("a", "x")] = led
    ledgers[("a", "y")] = led
    ledgers[("a", "x")] = led  # replaced, not a second one
    ledgers[("b", "x")] = led
    assert ledgers.holds("a") and ledgers.holds("b") and not ledgers.holds("c")
    assert ledgers.pop(("a", "x")) is led
    assert ledgers.holds("a")  # its pool y still has one
    assert ledgers.pop(("a", "y"), None) is led
    assert ledgers.pop(("a", "y"), None) is None
    assert not ledgers.holds("a") and ledgers.holds("b")
    assert dict(ledgers) == {("b", "x"): led}
    with pytest.raises(TypeError):
        ledgers.update({("c", "x"): led})


def test_a_cycle_splits_its_own_replicas_from_the_fleets_as_belongs_to_does() -> None:
    from modelplane.scheduling.framework import read_input
    from modelplane.scheduling.state import new_state

    long = "a-deployment-name-long-enough-that-its-label-value-is-shortened-" + "x" * 20
    objs = [
        replica(long, "a", 0, "x", [resolved("gpu")]),
        replica(long, "a", 1, "x", [resolved("gpu")], ready=True),
        replica(long, "b", 0, "x", [resolved("gpu")], namespace="team-b"),
        replica("other", "a", 0, "x", [resolved("gpu")], created="2025-01-01T00:00:00Z"),
    ]
    del objs[1]["spec"]["deploymentName"]  # known by its label alone (a label value)
    clusters = [cluster(n, {"x": ("l4-1x", 2)}) for n in ("a", "b")]
    inp = read_input(deployment(2, [request("gpu", ANY_GPU)], name=long), clusters, objs)
    assert any(r.deployment_is_label for r in inp.replicas)
    for fleet in (inp.replicas, list(inp.replicas)):  # a tuple is remembered, a list not
        state = new_state(dataclasses.replace(inp, replicas=fleet))
        mine = [r for r in inp.replicas if r.belongs_to(inp.namespace, inp.name)]
        rest = [r for r in inp.replicas if not r.belongs_to(inp.namespace, inp.name)]
        assert state.own == sorted(mine, key=lambda r: (r.cluster, r.index, r.order))
        assert state.others == sorted(rest, key=lambda r: r.order)
        assert [r.index for r in state.own] == [0, 1]
        assert len(state.others) == 2


class _ByName:
    """A filter with neither `suspects` nor `key`: it refuses cluster "a" to deployment "q"."""

    name = "ByName"

    def admit(self, inp: Any, cluster: Any) -> Any:
        return Rejection("NotSelected") if (inp.name, cluster.name) == ("q", "a") else None

    def evict(self, inp: Any, cluster: Any, replica: Any) -> Any:
        return None


def test_a_filter_without_the_caching_hooks_is_asked_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduler, "FILTERS", (*scheduler.FILTERS, _ByName()))
    clusters, _ = _contended()
    fleet: tuple[list[Obj], list[Obj]] = ([frozen(x) for x in clusters], [])
    # Deployments alike for every other rule: had the new rule's verdicts been shared
    # (as a rule keying on nothing would have them), q would get p's.
    p, q = (deployment(1, [request("gpu", ANY_GPU)], name=n) for n in ("p", "q"))
    first, second = schedule(p, *fleet), schedule(q, *fleet)
    by_cluster = {v.cluster: v for v in second.clusters}
    assert {v.cluster: v.reason for v in first.clusters}["a"] != "NotSelected"
    assert by_cluster["a"].reason == "NotSelected"
    assert second.clusters != first.clusters
