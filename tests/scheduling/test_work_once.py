"""Work done once per cluster version and shared across scheduling calls.

Decoded objects are read-only and shared between calls (one per object
version), so the scheduler remembers what depends on them alone: the interned
pools of a cluster, the shapes, the selector outcomes. These tests check that
a warm call does none of that work again, that the answers are the ones a
fresh process would give, and that the tables stay bounded.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from schedfleet import ANY_GPU, H100, cluster, deployment, placements, replica, request, resolved

from modelplane.api.frozen import frozen
from modelplane.dra import cel
from modelplane.scheduling import schedule
from modelplane.scheduling.matching import SHARED, Evaluator, Shapes

POOLS = {"h": ("h100-8x", 2), "l": ("l4-1x", 2), "x": ("a100-4x", 1)}


def _fleet() -> list[Any]:
    return [frozen(cluster(f"c{i:02d}", POOLS)) for i in range(6)]


def _interns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = Shapes.intern

    def counting(self: Shapes, class_name: str, devices: Any) -> Any:
        calls.append(class_name)
        return real(self, class_name, devices)

    monkeypatch.setattr(Shapes, "intern", counting)
    return calls


def test_unchanged_clusters_are_not_interned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _interns(monkeypatch)
    fleet = _fleet()
    first = schedule(deployment(4, [request("gpu", ANY_GPU)]), fleet, [])
    assert len(calls) == 6 * 3  # every pool of every cluster, once
    calls.clear()
    other = deployment(2, [request("gpu", H100)], name="other")
    schedule(other, fleet, [])
    schedule(deployment(4, [request("gpu", ANY_GPU)]), fleet, [])
    assert calls == []
    # A new version of one cluster (a new decoded object) is interned afresh, alone.
    changed = copy.deepcopy(cluster("c03", POOLS))
    changed["status"]["gpuPools"][0]["nodes"] = 5
    fleet[3] = frozen(changed)
    again = schedule(deployment(4, [request("gpu", ANY_GPU)]), fleet, [])
    assert sorted(calls) == ["a100-4x", "h100-8x", "l4-1x"]
    assert len(again.replicas) == len(first.replicas) == 4


def test_a_warm_process_answers_as_a_fresh_one() -> None:
    deployments = [
        deployment(5, [request("gpu", ANY_GPU)]),
        deployment(3, [request("gpu", H100)], name="h"),
        deployment(2, [request("gpu", ANY_GPU, count=2)], name="two"),
        deployment(40, [request("gpu", ANY_GPU)], name="too-many"),
    ]
    held = [replica("h", "c01", 0, "h", [resolved("gpu", cel=H100)])]
    fleet = _fleet()
    cold = []
    for d in deployments:
        SHARED.reset()
        cold.append(schedule(d, fleet, held))
    warm = [schedule(d, fleet, held) for d in deployments]
    assert [placements(r) for r in warm] == [placements(r) for r in cold]
    assert warm == cold


def test_plain_dicts_are_read_afresh_every_call() -> None:
    # A plain dict may be changed in place between calls: nothing is remembered of it.
    fleet = [cluster("only", {"h": ("h100-8x", 1)})]
    assert len(schedule(deployment(1, [request("gpu", ANY_GPU)]), fleet, []).replicas) == 1
    fleet[0]["status"]["conditions"][0]["status"] = "False"
    assert schedule(deployment(1, [request("gpu", ANY_GPU)]), fleet, []).replicas == ()


def test_the_shape_table_keeps_the_most_recent_shapes() -> None:
    table = Shapes(limit=2)
    lists = [frozen(cluster("c", {"p": v}))["status"]["gpuPools"][0] for v in POOLS.values()]
    shapes = [table.intern(p["className"], p["devices"]) for p in lists]
    assert len(table) == 2
    again = [table.intern(p["className"], p["devices"]) for p in lists]
    assert len(table) == 2
    assert [s.keys for s in again] == [s.keys for s in shapes]
    assert again[2] is shapes[2]  # the most recent was kept


def test_the_evaluator_starts_afresh_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = cel.Selector.evaluate

    def counting(self: cel.Selector, device: Any) -> Any:
        calls.append(self.expression)
        return real(self, device)

    monkeypatch.setattr(cel.Selector, "evaluate", counting)
    device = cluster("c", {"p": ("l4-1x", 1)})["status"]["gpuPools"][0]["devices"][0]
    ev = Evaluator(limit=1)
    ev.evaluate(ANY_GPU, "k", device)
    ev.bound()  # one outcome: within the bound, kept
    ev.evaluate(ANY_GPU, "k", device)
    assert calls == [ANY_GPU]
    ev.verdicts((H100,), "k", device)
    ev.bound()  # now past it: everything is forgotten
    ev.evaluate(ANY_GPU, "k", device)
    assert calls == [ANY_GPU, H100, ANY_GPU]


def test_contention_is_replayed_once_per_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelplane.scheduling import retain

    replays: list[int] = []
    real = retain._fleet_losers

    def counting(state: Any) -> Any:
        replays.append(1)
        return real(state)

    monkeypatch.setattr(retain, "_fleet_losers", counting)
    fleet = [frozen(cluster("small", {"x": ("l4-1x", 1)}))]
    # Two replicas of another deployment, neither Ready, on a one-GPU pool: one loses.
    held = [
        frozen(replica("other", "small", i, "x", [resolved("gpu")], ready=False)) for i in (0, 1)
    ]
    cold = schedule(deployment(1, [request("gpu", ANY_GPU)]), fleet, held)
    warm = schedule(deployment(1, [request("gpu", ANY_GPU)], name="b"), fleet, held)
    assert len(replays) == 1
    SHARED.reset()
    assert schedule(deployment(1, [request("gpu", ANY_GPU)], name="b"), fleet, held) == warm
    assert len(replays) == 2  # another shape table: replayed afresh
    assert cold.replicas == warm.replicas == ()  # the pool is taken
