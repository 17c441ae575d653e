"""Wave decisions of a Progressive rollout, table by table, from hand-written signals.

Every case is one call of `rollout.decide` with the replicas, the clusters'
labels, the signals their agents reported and the last `status.rollout`; the
expected answer (which replicas are replaced now, which revision new
placements run, the decision, the wave's phase and the condition) is written
out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.rollout import Rollout, RolloutStatus, WaveAnalysis
from modelplane.compose.deployments.rollout import (
    ReplicaRevision,
    RolloutInput,
    RolloutPlan,
    decide,
    wave_clusters,
)

OLD, NEW = "old0000000", "new0000000"
OLD_T: dict[str, Any] = {"backend": "Native", "caches": [], "roles": {"unified": {"count": 1}}}
NEW_T: dict[str, Any] = {"backend": "Native", "caches": [], "roles": {"unified": {"count": 2}}}
CLUSTERS = {
    "central": {"region": "eu"},
    "east": {"region": "us-east"},
    "west": {"region": "us-west"},
}
T0, T1, T2 = "2026-11-01T01:00:00Z", "2026-11-01T01:10:00Z", "2026-11-01T01:20:00Z"


def rollout(**over: Any) -> Rollout:
    spec: dict[str, Any] = {
        "strategy": "Progressive",
        "waves": [
            {"clusterSelector": {"matchLabels": {"region": "us-east"}}},
            {"clusterSelector": {"matchLabels": {"region": "us-west"}}},
            {"percent": 100},
        ],
        "analysis": {
            "durationSeconds": 300,
            "maxErrorRate": 0.01,
            "maxTtftP90Seconds": 1.0,
            "trafficPercent": 10,
        },
    }
    spec.update(over)
    return Rollout.model_validate(spec)


def rep(cluster: str, index: int, revision: str | None, ready: bool = True) -> ReplicaRevision:
    return ReplicaRevision(f"chat-{cluster}-{index}", cluster, index, revision, ready)


def sig(at: str, requests: int = 1000, errors: int = 1, ttft: float | None = 0.5) -> ReplicaSignals:
    return ReplicaSignals(
        replica="x",
        reachable=True,
        scraped_at=at,
        window_seconds=300,
        ttft_p90_seconds=ttft,
        requests=requests,
        errors=errors,
    )


def prior(**over: Any) -> RolloutStatus:
    fields: dict[str, Any] = {
        "revision": NEW,
        "stable_revision": OLD,
        "stable_template": OLD_T,
        "decision": "Progressing",
    }
    fields.update(over)
    return RolloutStatus.model_validate(fields)


def wave(n: int, phase: str, clusters: list[str], started: str | None = T0) -> WaveAnalysis:
    return WaveAnalysis(wave=n, phase=phase, clusters=clusters, started_at=started)  # type: ignore[arg-type]


def run(
    replicas: list[ReplicaRevision],
    signals: dict[str, ReplicaSignals],
    last: RolloutStatus | None = None,
    clusters: dict[str, dict[str, str]] | None = None,
    cache_ready: Any = None,
    unscraped: frozenset[str] = frozenset(),
    **rollout_over: Any,
) -> RolloutPlan:
    return decide(
        RolloutInput(
            rollout=rollout(**rollout_over),
            replicas_wanted=3,
            revision=NEW,
            template=NEW_T,
            prior=last,
            replicas=tuple(replicas),
            clusters=CLUSTERS if clusters is None else clusters,
            signals=signals,
            templates={OLD: OLD_T, NEW: NEW_T},
            cache_ready=cache_ready or (lambda cluster: True),
            unscraped=unscraped,
        )
    )


def outcome(plan: RolloutPlan) -> tuple[Any, ...]:
    assert plan.status is not None and plan.verdict is not None
    waves = plan.status.waves or []
    return (
        sorted(plan.outdated),
        plan.place,
        plan.status.decision,
        [(w.wave, w.phase) for w in waves],
        plan.verdict.status,
        str(plan.verdict.reason),
    )


OLD_FLEET = [rep("central", 0, OLD), rep("east", 0, OLD), rep("west", 0, OLD)]
OLD_SIGNALS = {r.name: sig(T0) for r in OLD_FLEET}


def test_a_new_revision_starts_wave_one_on_the_clusters_it_selects() -> None:
    plan = run(OLD_FLEET, OLD_SIGNALS)
    assert outcome(plan) == (
        ["chat-east-0"], NEW, "Progressing", [(1, "Updating")], False, "Updating",
    )  # fmt: skip
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].clusters == ["east"]
    assert plan.status.waves[0].started_at == T0  # the newest report, not a clock
    assert plan.status.stable_revision == OLD and plan.status.stable_template == OLD_T
    assert (plan.canary, plan.canary_percent) == (frozenset({NEW}), 10)


def test_no_report_yet_holds_the_wave_without_starting_its_time() -> None:
    plan = run(OLD_FLEET, {})
    assert outcome(plan) == (
        ["chat-east-0"], NEW, "Progressing", [(1, "Updating")], False, "SignalsMissing",
    )  # fmt: skip
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].started_at is None


AFTER_EAST = [rep("central", 0, OLD), rep("east", 1, NEW), rep("west", 0, OLD)]
WAVE_1 = prior(wave=1, waves=[wave(1, "Updating", ["east"])])
NOT_SCRAPING = (
    "the inventory agent of cluster east does not scrape engine metrics, so it reports no "
    "engine signal: set spec.servingStack.inventory.engineMetrics: true on that "
    "InferenceCluster"
)


# (case, clusters whose agents do not scrape, the hold's message).
UNSCRAPED_BEFORE_ANY_REPORT = [
    ("every agent", frozenset(CLUSTERS),
     "wave 1: no cluster agent has reported yet, so its time cannot start; " + NOT_SCRAPING),
    # west is in no wave started yet: not named.
    ("only west's", frozenset({"west"}),
     "wave 1: no cluster agent has reported yet, so its time cannot start"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "unscraped", "message"),
    UNSCRAPED_BEFORE_ANY_REPORT,
    ids=[c[0] for c in UNSCRAPED_BEFORE_ANY_REPORT],
)
def test_a_wave_on_clusters_that_do_not_scrape_says_why_it_holds(
    case: str, unscraped: frozenset[str], message: str
) -> None:
    plan = run(OLD_FLEET, {}, unscraped=unscraped)
    assert outcome(plan) == (
        ["chat-east-0"], NEW, "Progressing", [(1, "Updating")], False, "SignalsMissing",
    )  # fmt: skip
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].message == message


def test_time_up_on_a_cluster_that_does_not_scrape_holds_and_names_it() -> None:
    # central and west scrape and report; east's agent does not, so its new replica never
    # reports: the wave's time is up and it holds (never passes on absent data).
    signals = {"chat-central-0": sig(T1), "chat-west-0": sig(T1)}
    plan = run(AFTER_EAST, signals, WAVE_1, unscraped=frozenset({"east"}))
    assert outcome(plan) == ([], NEW, "Progressing", [(1, "Analyzing")], False, "SignalsMissing")
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].message == (
        "wave 1: held, signals missing: no report since the wave started from chat-east-1; "
        "no request counts (error rate); no time to first token; 1/1 Ready, 0 reporting; "
        + NOT_SCRAPING
    )


@pytest.mark.parametrize(
    ("signal", "expected"),
    [
        # Pass: ten minutes on, 0.2% errors, TTFT 0.5 s; wave 2 starts at that report's time.
        (
            sig(T1, errors=2),
            (
                ["chat-west-0"],
                NEW,
                "Progressing",
                [(1, "Passed"), (2, "Updating")],
                False,
                "Updating",
            ),
        ),
        # Fail on errors: 5% > 1%, at once (rolled back: the new replica is replaced).
        (
            sig(T1, errors=50),
            (["chat-east-1"], OLD, "RolledBack", [(1, "Failed")], False, "RolledBack"),
        ),
        # Fail on latency: TTFT p90 2.5 s > 1 s.
        (
            sig(T1, ttft=2.5),
            (["chat-east-1"], OLD, "RolledBack", [(1, "Failed")], False, "RolledBack"),
        ),
        # Stale: the only report of the new replica predates the wave: held, never passed.
        (
            sig("2026-11-01T00:50:00Z"),
            ([], NEW, "Progressing", [(1, "Analyzing")], False, "SignalsMissing"),
        ),
        # Missing TTFT (no first token seen): held, not passed.
        (
            sig(T1, ttft=None),
            ([], NEW, "Progressing", [(1, "Analyzing")], False, "SignalsMissing"),
        ),
        # Too early: four minutes of the five held, limits met: still analysing.
        (
            sig("2026-11-01T01:04:00Z"),
            ([], NEW, "Progressing", [(1, "Analyzing")], False, "Analyzing"),
        ),
    ],
    ids=["pass", "errors", "latency", "stale", "no-ttft", "early"],
)
def test_wave_one_is_judged_on_the_new_revision_only(
    signal: ReplicaSignals, expected: tuple[Any, ...]
) -> None:
    # The old replicas report all errors: not the new revision's, so not counted. Their
    # reports also carry "now" (ten minutes on, or the new replica's own time if later).
    now = signal.scraped_at if signal.scraped_at > T0 else T1
    signals = {
        "chat-central-0": sig(now, requests=10, errors=10),
        "chat-west-0": sig(now, requests=10, errors=10),
        "chat-east-1": signal,
    }
    assert outcome(run(AFTER_EAST, signals, WAVE_1)) == expected


def test_a_wave_not_yet_updated_is_not_passed_when_its_time_is_up() -> None:
    replicas = [*AFTER_EAST, rep("east", 0, OLD)]  # the old one still drains
    signals = {"chat-east-1": sig(T1)}
    assert outcome(run(replicas, signals, WAVE_1)) == (
        ["chat-east-0"], NEW, "Progressing", [(1, "Updating")], False, "Updating",
    )  # fmt: skip


def test_too_few_ready_when_time_is_up_fails_the_wave() -> None:
    replicas = [rep("central", 0, OLD), rep("east", 1, NEW, ready=False), rep("west", 0, OLD)]
    plan = run(replicas, {"chat-central-0": sig(T1)}, WAVE_1)
    assert outcome(plan) == (
        ["chat-east-1"], OLD, "RolledBack", [(1, "Failed")], False, "RolledBack",
    )  # fmt: skip
    assert plan.status is not None
    assert "only 0 of 1 replicas of the new revision are Ready" in plan.status.message


def test_on_failure_pause_holds_every_replica_where_it_is() -> None:
    plan = run(AFTER_EAST, {"chat-east-1": sig(T1, errors=50)}, WAVE_1, onFailure="Pause")
    assert outcome(plan) == ([], NEW, "Paused", [(1, "Failed")], False, "AnalysisFailed")
    assert plan.verdict is not None
    assert [e[1] for e in plan.verdict.events] == ["RolloutPaused"]
    # It stays paused on the next call, whatever the signals say now.
    again = run(AFTER_EAST, {"chat-east-1": sig(T2)}, plan.status, onFailure="Pause")
    assert outcome(again)[:3] == ([], NEW, "Paused")


def test_spec_paused_starts_and_judges_nothing() -> None:
    plan = run(AFTER_EAST, {"chat-east-1": sig(T1)}, WAVE_1, paused=True)
    assert outcome(plan) == ([], NEW, "Paused", [(1, "Updating")], False, "Paused")


def test_a_rolled_back_revision_is_not_tried_again_until_the_spec_changes() -> None:
    failed = prior(
        decision="RolledBack", failed_revision=NEW, wave=1,
        waves=[wave(1, "Failed", ["east"]).model_copy(update={"message": "wave 1 failed: x"})],
    )  # fmt: skip
    plan = run(OLD_FLEET, OLD_SIGNALS, failed)
    assert outcome(plan) == ([], OLD, "RolledBack", [(1, "Failed")], False, "RolledBack")
    assert plan.status is not None
    assert plan.status.message == "wave 1 failed: x; rolled back to revision old0000000"


def test_undo_to_the_stable_revision_replaces_the_new_ones() -> None:
    plan = decide(
        RolloutInput(
            rollout=rollout(),
            replicas_wanted=3,
            revision=OLD,
            template=OLD_T,
            prior=WAVE_1,
            replicas=tuple(AFTER_EAST),
            clusters=CLUSTERS,
            signals={},
            templates={OLD: OLD_T, NEW: NEW_T},
        )
    )
    assert outcome(plan) == (["chat-east-1"], OLD, "Progressing", [], False, "Promoting")


def test_a_cluster_that_disappears_mid_rollout_leaves_the_wave() -> None:
    # west (wave 2) is gone: its replica is the scheduler's to replace; wave 2 holds
    # nothing old, so once the replacement (new revision, on central) reports, it passes.
    clusters = {k: v for k, v in CLUSTERS.items() if k != "west"}
    replicas = [rep("central", 0, OLD), rep("central", 1, NEW), rep("east", 1, NEW)]
    last = prior(
        wave=2,
        waves=[wave(1, "Passed", ["east"]), wave(2, "Analyzing", ["east", "west"], T1)],
    )
    signals = {"chat-east-1": sig(T2), "chat-central-1": sig(T2)}
    plan = run(replicas, signals, last, clusters=clusters)
    assert outcome(plan) == (
        ["chat-central-0"], NEW, "Progressing",
        [(1, "Passed"), (2, "Passed"), (3, "Updating")], False, "Updating",
    )  # fmt: skip


def test_the_last_wave_passed_promotes_then_completes() -> None:
    done = [rep("central", 1, NEW), rep("east", 1, NEW), rep("west", 1, NEW)]
    last = prior(
        wave=3,
        waves=[
            wave(1, "Passed", ["east"]),
            wave(2, "Passed", ["east", "west"], T1),
            wave(3, "Analyzing", ["central", "east", "west"], T1),
        ],
    )
    plan = run(done, {r.name: sig(T2) for r in done}, last)
    assert outcome(plan) == (
        [], NEW, "Complete", [(1, "Passed"), (2, "Passed"), (3, "Passed")], True, "Complete",
    )  # fmt: skip
    assert plan.status is not None
    assert (plan.status.stable_revision, plan.status.previous_revision) == (NEW, OLD)
    assert plan.status.previous_template == OLD_T
    assert plan.canary == frozenset()  # one revision left: no canary share


def test_the_wave_waits_for_the_new_revisions_cache() -> None:
    plan = run(OLD_FLEET, OLD_SIGNALS, cache_ready=lambda cluster: cluster != "east")
    assert outcome(plan) == (
        [], NEW, "Progressing", [(1, "WaitingForCache")], False, "WaitingForCache",
    )  # fmt: skip
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].started_at is None  # its time starts once the cache is Ready


@pytest.mark.parametrize(
    ("percent", "expected"),
    [
        (1, ["central"]),
        (33, ["central"]),
        (34, ["central", "east"]),  # 34% of 3 is 1.02: rounded up, 2 replicas
        (66, ["central", "east"]),
        (67, ["central", "east", "west"]),
    ],
)
def test_a_percentage_takes_clusters_in_name_order(percent: int, expected: list[str]) -> None:
    from modelplane.api.rollout import RolloutWave

    waves = [RolloutWave(percent=percent)]
    assert wave_clusters(waves, CLUSTERS, OLD_FLEET, 3) == expected


def test_first_rollout_of_a_new_deployment_has_nothing_to_roll() -> None:
    plan = decide(
        RolloutInput(
            rollout=rollout(), replicas_wanted=3, revision=NEW, template=NEW_T, prior=None,
            replicas=(), clusters=CLUSTERS, signals={}, templates={},
        )
    )  # fmt: skip
    assert outcome(plan) == ([], NEW, "Complete", [], True, "Complete")


MID = "mid0000000"
MID_T: dict[str, Any] = {"backend": "Native", "caches": [], "roles": {"unified": {"count": 3}}}


@pytest.mark.parametrize(
    ("revisions", "stable"),
    [
        ([OLD, OLD, MID], OLD),
        ([MID, MID, OLD], MID),  # the most common, whatever its name
        ([MID, OLD], OLD),  # a tie: the later name (a fixed choice, stable across cycles)
    ],
)
def test_without_a_recorded_stable_revision_the_most_common_older_one_is(
    revisions: list[str], stable: str
) -> None:
    replicas = [rep(c, 0, r) for c, r in zip(["central", "east", "west"], revisions, strict=False)]
    plan = decide(
        RolloutInput(
            rollout=rollout(), replicas_wanted=3, revision=NEW, template=NEW_T, prior=None,
            replicas=tuple(replicas), clusters=CLUSTERS, signals={},
            templates={OLD: OLD_T, MID: MID_T, NEW: NEW_T},
        )
    )  # fmt: skip
    assert plan.status is not None
    assert plan.status.stable_revision == stable
    assert plan.status.stable_template == {OLD: OLD_T, MID: MID_T}[stable]


def test_a_replica_reporting_zero_errors_shows_zero_errors_and_rate_and_the_summary() -> None:
    plan = run(AFTER_EAST, {"chat-east-1": sig(T1, errors=0)}, WAVE_1)
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert (first.phase, first.requests, first.errors, first.error_rate) == ("Passed", 1000, 0, 0.0)
    assert first.message == (
        "wave 1 passed: 1/1 Ready, 1 reporting, error rate 0.00% of 1000 requests, TTFT p90 0.5s"
    )


def test_ready_fraction_is_rounded_to_four_places() -> None:
    # Two of the three new replicas Ready when the time is up: 0.6667, short of 1.0.
    replicas = [rep("east", 1, NEW), rep("east", 2, NEW), rep("east", 3, NEW, ready=False)]
    plan = run(replicas, {r.name: sig(T1) for r in replicas}, WAVE_1)
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert (first.phase, first.ready, first.replicas, first.ready_fraction) == (
        "Failed", 2, 3, 0.6667,
    )  # fmt: skip
    assert first.message == (
        "wave 1 failed: only 2 of 3 replicas of the new revision are Ready (at least 100% required)"
    )


def test_a_wave_over_more_than_eight_clusters_names_eight_and_counts_the_rest() -> None:
    clusters = {f"c{i:02d}": {"region": "eu"} for i in range(10)}
    replicas = [rep(name, 0, OLD) for name in clusters]
    plan = run(
        replicas, {r.name: sig(T0) for r in replicas}, clusters=clusters,
        waves=[{"clusterSelector": {"matchLabels": {"region": "eu"}}}],
    )  # fmt: skip
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert first.clusters == sorted(clusters)
    assert plan.verdict is not None
    assert [e for e in plan.verdict.events if e[1] == "WaveStarted"] == [
        (
            "Normal",
            "WaveStarted",
            "wave 1 started: replicas on c00, c01, c02, c03, c04, c05, c06, c07 and 2 more "
            "move to revision new0000000",
        )
    ]
    assert sorted(plan.outdated) == sorted(r.name for r in replicas)


def test_silent_replicas_are_named_up_to_four_and_counted_past_that() -> None:
    # Six new replicas on east, none reported since the wave started; central's report
    # says the time is up. Held: four named, two counted, and what the limits lack.
    new = [rep("east", i, NEW) for i in range(1, 7)]
    replicas = [rep("central", 0, OLD), *new, rep("west", 0, OLD)]
    plan = run(replicas, {"chat-central-0": sig(T1)}, WAVE_1)
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert first.phase == "Analyzing"
    assert first.message == (
        "wave 1: held, signals missing: no report since the wave started from chat-east-1, "
        "chat-east-2, chat-east-3, chat-east-4 and 2 more; no request counts (error rate); "
        "no time to first token; 6/6 Ready, 0 reporting"
    )


def test_every_wave_passed_with_replicas_outside_them_promotes_the_rest() -> None:
    # One wave (east); central's and west's replicas are on no wave: once east passes,
    # they are updated.
    replicas = [rep("central", 0, OLD), rep("east", 1, NEW), rep("west", 0, OLD, ready=False)]
    waves = [{"clusterSelector": {"matchLabels": {"region": "us-east"}}}]
    plan = run(replicas, {"chat-east-1": sig(T1, errors=2)}, WAVE_1, waves=waves)
    assert outcome(plan) == (
        ["chat-central-0", "chat-west-0"], NEW, "Progressing", [(1, "Passed")], False, "Promoting",
    )  # fmt: skip
    assert plan.verdict is not None and plan.status is not None
    msg = "every wave passed; updating the 2 remaining replica(s)"
    passed = (
        "wave 1 passed: 1/1 Ready, 1 reporting, error rate 0.20% of 1000 requests, TTFT p90 0.5s"
    )
    assert (plan.verdict.message, plan.verdict.events) == (msg, (("Normal", "WavePassed", passed),))
    assert [(r.revision, r.replicas, r.ready) for r in plan.status.revisions or []] == [
        (NEW, 1, 1),
        (OLD, 2, 1),
    ]


def test_a_wave_still_updating_at_time_up_says_how_many_are_left() -> None:
    # Three wanted, three there: east's old replica is still to come, so 1 of 2 is Ready.
    replicas = [rep("east", 1, NEW), rep("east", 0, OLD), rep("west", 0, OLD)]
    plan = run(replicas, {"chat-east-1": sig(T1)}, WAVE_1)
    assert plan.status is not None and plan.status.waves is not None
    assert plan.status.waves[0].message == (
        "wave 1: 1 replica(s) still to update; 1/2 Ready, 1 reporting, "
        "error rate 0.10% of 1000 requests, TTFT p90 0.5s"
    )


def test_reports_without_request_counts_leave_requests_unknown_not_zero() -> None:
    plan = run(AFTER_EAST, {"chat-east-1": sig(T1, requests=None, errors=None)}, WAVE_1)  # type: ignore[arg-type]
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert (first.phase, first.requests, first.errors, first.error_rate) == (
        "Analyzing", None, None, None,
    )  # fmt: skip
    assert first.message == (
        "wave 1: held, signals missing: no request counts (error rate); "
        "1/1 Ready, 1 reporting, TTFT p90 0.5s"
    )


def test_requests_counted_without_failures_leave_the_error_rate_unknown_not_zero() -> None:
    # vLLM's own finished-request counter (the engine double's only one) counts
    # 1000 requests and no failure: a rate of 0 would pass a wave that may fail
    # every other request. One replica counting errors does not make up for it.
    signals = {"chat-east-1": sig(T1, requests=1000, errors=None)}  # type: ignore[arg-type]
    plan = run(AFTER_EAST, signals, WAVE_1)
    assert plan.status is not None and plan.status.waves is not None
    first = plan.status.waves[0]
    assert (first.phase, first.requests, first.errors, first.error_rate) == (
        "Analyzing", 1000, None, None,
    )  # fmt: skip
    assert first.message == (
        "wave 1: held, signals missing: no error counts (error rate): the engines count "
        "their requests, not failures; 1/1 Ready, 1 reporting, TTFT p90 0.5s"
    )


def test_a_failed_revision_without_a_failed_wave_still_says_why_it_rolled_back() -> None:
    failed = prior(decision="RolledBack", failed_revision=NEW)
    plan = run(OLD_FLEET, OLD_SIGNALS, failed)
    assert plan.status is not None
    assert plan.status.message == "revision new0000000 failed; rolled back to revision old0000000"
