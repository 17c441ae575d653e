"""The autoscaler's arithmetic (`compose/deployments/autoscaling.py`), by hand-computed tables."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api.autoscaling import Autoscaling, Recommendation, ReplicaSignals
from modelplane.api.reasons import AutoscalingReason as R
from modelplane.compose.deployments.autoscaling import decide

T0 = "2026-11-01T01:00:00Z"


def at(seconds: int) -> str:
    """T0 plus `seconds` (within the hour)."""
    m, s = divmod(seconds, 60)
    return f"2026-11-01T01:{m:02d}:{s:02d}Z"


def spec(**kw: object) -> Autoscaling:
    base: dict[str, object] = {
        "minReplicas": 1,
        "maxReplicas": 10,
        "targets": {"queueDepthPerReplica": 5},
        "scaleDownStabilizationSeconds": 0,
    }
    base.update(kw)
    return Autoscaling.model_validate(base)


def sig(name: str, waiting: float | None = 0, *, when: str = T0, **kw: object) -> ReplicaSignals:
    return ReplicaSignals.model_validate(
        {
            "replica": name,
            "reachable": kw.pop("reachable", True),
            "scrapedAt": when,
            "windowSeconds": 300,
            "requestsWaiting": waiting,
            "requestsRunning": kw.pop("running", 0),
            **kw,
        }
    )


def fleet(*signals: ReplicaSignals) -> tuple[list[str], dict[str, ReplicaSignals | None]]:
    return [s.replica for s in signals], {s.replica: s for s in signals}


# (case, spec, signals, current, desired, proposal, reason); every answer by hand.
CASES = [
    # 24 waiting over 2 replicas, target 5: ceil(24 / 5) = 5.
    ("sum scales up", spec(), [sig("a", 10), sig("b", 14)], 2, 5, 5, R.SCALED_UP),
    # 10 waiting over 2: 5 per replica, exactly the target.
    ("at target", spec(), [sig("a", 4), sig("b", 6)], 2, 2, 2, R.STEADY),
    # 10.8 over 2 = 5.4 per replica, ratio 1.08 within the default 0.1 tolerance.
    ("within tolerance", spec(), [sig("a", 5.4), sig("b", 5.4)], 2, 2, 2, R.STEADY),
    # 11.2 over 2 = 5.6 per replica, ratio 1.12 outside: ceil(2 × 1.12) = ceil(2.24) = 3.
    ("outside tolerance", spec(), [sig("a", 5.6), sig("b", 5.6)], 2, 3, 3, R.SCALED_UP),
    # 3 waiting over 4 replicas: ceil(3 / 5) = 1.
    ("scales down", spec(), [sig(n, 0.75) for n in "abcd"], 4, 1, 1, R.SCALED_DOWN),
    # 100 waiting: ceil(100 / 5) = 20, clamped to maxReplicas 10.
    ("max", spec(), [sig("a", 50), sig("b", 50)], 2, 10, 20, R.LIMITED),
    # Nothing waits: 0, clamped to minReplicas 2.
    ("min", spec(minReplicas=2), [sig(n, 0) for n in "abc"], 3, 2, 0, R.LIMITED),
    # Two targets: queue proposes ceil(6 / 5) = 2; KV 0.9 per replica against 0.6
    # proposes ceil(2 × 1.5) = 3; the larger wins.
    (
        "largest target",
        spec(targets={"queueDepthPerReplica": 5, "kvCacheUtilization": 0.6}),
        [sig("a", 3, kv_cache_utilization=0.9), sig("b", 3, kv_cache_utilization=0.9)],
        2,
        3,
        3,
        R.SCALED_UP,
    ),
    # TTFT: request-weighted p90 (1.0 × 300 + 4.0 × 100) / 400 = 1.75 s against 0.5 s:
    # ceil(2 × 3.5) = 7.
    (
        "ttft weighted",
        spec(targets={"ttftP90Seconds": 0.5}),
        [
            sig("a", ttft_p90_seconds=1.0, ttft_requests=300),
            sig("b", ttft_p90_seconds=4.0, ttft_requests=100),
        ],
        2,
        7,
        7,
        R.SCALED_UP,
    ),
    # b unreachable: counted as 0 for scale up: 30 / 5 = 6 replicas.
    (
        "missing scales up",
        spec(),
        [sig("a", 30), sig("b", None, reachable=False, error="refused")],
        2,
        6,
        6,
        R.SCALED_UP,
    ),
    # b unreachable and a idle: ceil(0 / 5) = 0 proposed, but a missing signal
    # never scales down: held at 2.
    (
        "missing never scales down",
        spec(),
        [sig("a", 0), sig("b", None, reachable=False, error="refused")],
        2,
        2,
        0,
        R.SIGNALS_MISSING,
    ),
    # b's report is 181 s older than a's (staleAfter 180): stale, so no scale-down.
    (
        "stale never scales down",
        spec(),
        [sig("a", 0, when=at(181)), sig("b", 0, when=T0)],
        2,
        2,
        0,
        R.SIGNALS_MISSING,
    ),
    # 180 s old is not yet stale: scale down to minReplicas.
    ("180 s is fresh", spec(), [sig("a", 0, when=at(180)), sig("b", 0)], 2, 1, 0, R.LIMITED),
    # Nothing reported at all: held.
    ("no signal", spec(), [], 3, 3, None, R.SIGNALS_MISSING),
]


@pytest.mark.parametrize(
    ("case", "sp", "signals", "current", "desired", "proposal", "reason"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_decision(
    case: str,
    sp: Autoscaling,
    signals: list[ReplicaSignals],
    current: int,
    desired: int,
    proposal: int | None,
    reason: R,
) -> None:
    names, by_name = fleet(*signals)
    if not names:
        names, by_name = ["a", "b", "c"], {}
    d = decide(sp, names, by_name, current)
    assert (d.desired, d.proposal, d.reason) == (desired, proposal, reason)


def test_unreported_replica_is_missing_by_name() -> None:
    d = decide(spec(), ["a", "b"], {"a": sig("a", 0), "b": None}, 2)
    assert d.missing == ("b",)
    assert d.reporting == 1
    assert "no fresh signal from b" in d.message


def test_message_names_each_target() -> None:
    d = decide(spec(), *fleet(sig("a", 10), sig("b", 14)), 2)
    assert d.message == (
        "2 → 5 replicas (scaled up); queueDepthPerReplica 12 per replica (target 5) "
        "proposes 5; largest 5; 2 of 2 replicas reporting at 2026-11-01T01:00:00Z"
    )


def test_scale_down_waits_for_the_window() -> None:
    """Down to the highest proposal of the window: 6 at T0 keeps 6 until T0 + 300 s."""
    sp = spec(scaleDownStabilizationSeconds=300)
    history = [Recommendation(at=T0, replicas=6)]
    # At T0 + 120 s, 10 waiting proposes ceil(10 / 5) = 2; the window still holds 6.
    d = decide(sp, *fleet(*(sig(n, 10 / 6, when=at(120)) for n in "abcdef")), 6, history)
    assert (d.desired, d.proposal, d.reason) == (6, 2, R.STABILIZING)
    assert [(r.at, r.replicas) for r in d.recommendations] == [(T0, 6), (at(120), 2)]
    # At T0 + 301 s the 6 has left the window; 2 (at 120) and 2 (now) remain: down to 2.
    d = decide(sp, *fleet(*(sig(n, 10 / 6, when=at(301)) for n in "abcdef")), 6, d.recommendations)
    assert (d.desired, d.reason) == (2, R.SCALED_DOWN)
    assert [r.at for r in d.recommendations] == [at(120), at(301)]


def test_scale_up_waits_for_its_window() -> None:
    """Up to the lowest proposal of the window: 3 at T0 caps a jump to 8 at T0 + 30 s."""
    sp = spec(scaleUpStabilizationSeconds=60)
    history = [Recommendation(at=T0, replicas=3)]
    d = decide(sp, *fleet(sig("a", 20, when=at(30)), sig("b", 20, when=at(30))), 2, history)
    # ceil(40 / 5) = 8 proposed; min(3, 8) = 3.
    assert (d.desired, d.proposal, d.reason) == (3, 8, R.SCALED_UP)
    d = decide(
        sp, *fleet(sig("a", 20, when=at(61)), sig("b", 20, when=at(61))), 3, d.recommendations
    )
    # At 61 s the window holds 8 (at 30) and 8 (now): up to 8.
    assert d.desired == 8


def test_flapping_signals_do_not_flap() -> None:
    """Load alternating 4 and 1 replicas' worth holds at 4 within a 300 s down window."""
    sp = spec(scaleDownStabilizationSeconds=300)
    history: tuple[Recommendation, ...] = ()
    current = 4
    seen = []
    for step in range(8):
        waiting = 20 if step % 2 == 0 else 5
        per = waiting / current
        d = decide(sp, *fleet(*(sig(f"r{i}", per, when=at(30 * step)) for i in range(current))),
                   current, history)  # fmt: skip
        history, current = d.recommendations, d.desired
        seen.append(current)
    assert seen == [4] * 8


@st.composite
def _situations(draw: st.DrawFn) -> tuple[Autoscaling, int, list[ReplicaSignals | None]]:
    lo = draw(st.integers(1, 5))
    hi = draw(st.integers(lo, 12))
    sp = spec(
        minReplicas=lo,
        maxReplicas=hi,
        tolerance=draw(st.sampled_from([0, 0.1, 0.5])),
        scaleDownStabilizationSeconds=draw(st.sampled_from([0, 60, 300])),
        targets={"queueDepthPerReplica": draw(st.sampled_from([0.5, 1, 5, 50]))},
    )
    current = draw(st.integers(lo, hi))
    signals: list[ReplicaSignals | None] = []
    for i in range(current):
        kind = draw(st.sampled_from(["ok", "ok", "ok", "none", "down", "stale"]))
        waiting = draw(st.floats(0, 500, allow_nan=False))
        name = f"r{i}"
        if kind == "none":
            signals.append(None)
        elif kind == "down":
            signals.append(sig(name, None, reachable=False, error="refused"))
        else:
            signals.append(sig(name, waiting, when=T0 if kind == "stale" else at(600)))
    return sp, current, signals


@settings(max_examples=300, deadline=None)
@given(_situations())
def test_within_bounds_and_never_down_while_missing(
    situation: tuple[Autoscaling, int, list[ReplicaSignals | None]],
) -> None:
    sp, current, signals = situation
    names = [f"r{i}" for i in range(current)]
    d = decide(sp, names, dict(zip(names, signals, strict=True)), current)
    assert sp.min_replicas <= d.desired <= sp.max_replicas
    if d.missing_count:
        assert d.desired >= current


# Inputs the arithmetic must read right, and the edges of the HPA step:
# (case, spec, signals, current, desired, proposal, reason, missing); every answer by hand.
INPUTS = [
    # Both replicas report, but nothing of the KV-cache target: no measure, so no
    # proposal, and the count is held (an absent gauge is not an idle one).
    (
        "reports without the target's metric",
        spec(targets={"kvCacheUtilization": 0.6}),
        [sig("a", 0), sig("b", 0)],
        2, 2, None, R.SIGNALS_MISSING, (),
    ),
    # A TTFT target and no replica saw a first token (no p90): held the same way.
    (
        "ttft target without a p90",
        spec(targets={"ttftP90Seconds": 0.5}),
        [sig("a", 0, ttft_requests=40), sig("b", 0)],
        2, 2, None, R.SIGNALS_MISSING, (),
    ),
    # p90s of 1 s and 2 s without request counts: their plain mean, 1.5 s, against
    # 0.5 s is a ratio of 3: ceil(2 × 3) = 6.
    (
        "ttft p90s without request counts",
        spec(targets={"ttftP90Seconds": 0.5}),
        [sig("a", ttft_p90_seconds=1.0), sig("b", ttft_p90_seconds=2.0)],
        2, 6, 6, R.SCALED_UP, (),
    ),
    # b's scrapedAt does not read as a time: b is missing, so a's idle report cannot
    # scale down (0 proposed, held at 2).
    (
        "unreadable scrapedAt",
        spec(),
        [sig("a", 0), sig("b", 0, when="yesterday")],
        2, 2, 0, R.SIGNALS_MISSING, ("b",),
    ),
    # No report time reads at all: nothing is fresh, the count is held.
    (
        "no readable scrapedAt",
        spec(),
        [sig("a", 50, when="later"), sig("b", 50, when="")],
        2, 2, None, R.SIGNALS_MISSING, ("a", "b"),
    ),
    # From zero replicas (a reporting one being replaced): ceil(12 / 5) = 3, not
    # ceil(0 × ratio).
    ("from zero", spec(), [sig("a", 12)], 0, 3, 3, R.SCALED_UP, ()),
    # From zero with nothing waiting: 0 proposed, clamped to minReplicas 1.
    ("from zero, idle", spec(), [sig("a", 0)], 0, 1, 0, R.LIMITED, ()),
    # One replica at 5.4 waiting against 5: a ratio of 1.08 is within the 0.1
    # tolerance, so 1 stays (not ceil(1 × 1.08) = 2).
    ("tolerance at one replica", spec(), [sig("a", 5.4)], 1, 1, 1, R.STEADY, ()),
    # At 5.6 the ratio 1.12 is outside: ceil(1.12) = 2.
    ("outside tolerance at one replica", spec(), [sig("a", 5.6)], 1, 2, 2, R.SCALED_UP, ()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "sp", "signals", "current", "desired", "proposal", "reason", "missing"),
    INPUTS,
    ids=[c[0] for c in INPUTS],
)
def test_inputs_and_edges(
    case: str,
    sp: Autoscaling,
    signals: list[ReplicaSignals],
    current: int,
    desired: int,
    proposal: int | None,
    reason: R,
    missing: tuple[str, ...],
) -> None:
    d = decide(sp, *fleet(*signals), current)
    assert (d.desired, d.proposal, d.reason, d.missing) == (desired, proposal, reason, missing)
