"""Progressive rollouts: a pure function from observed replicas and signals to the next step.

`decide` reads the deployment's own replicas (the revision each runs, Ready or
not), the clusters' labels, the new revision's replicas' serving signals and
the last `status.rollout`, and answers which replicas must be replaced now
(make-before-break, by the scheduler, within `maxSurge`), which revision new
placements run, whether the new revision's endpoints are canaries, and the
new `status.rollout` with its condition and events. It holds no clock: "now"
is the newest time the cluster agents' reports on the deployment's replicas
carry, and a wave's time is measured in those.

One wave at a time:

1. **Start.** The wave's clusters are fixed (a selector's clusters, or for a
   percentage, clusters in name order until they host that share of
   `spec.replicas`) and recorded with the report time it started at. While
   the new revision's cache is not Ready on a cluster of the wave, the wave
   waits (its time does not start).
2. **Update.** Every replica of an older revision on the wave's clusters (and
   the earlier waves') is replaced by one of the new revision.
3. **Judge.** Only the new revision's replicas, only signals reported after
   the wave started. A broken limit (error rate, TTFT p90) fails the wave at
   once; once `analysis.durationSeconds` has passed, the wave passes when its
   replicas are Ready enough, updated, and every one reported; missing
   signals hold it, never pass it.
4. After the last wave, the remaining replicas are updated; then the rollout
   is Complete and the new revision becomes the stable one.

A failed wave rolls every replica back to the stable revision (`Rollback`,
the same make-before-break replacement) or holds all where they are
(`Pause`). A rolled-back revision is not tried again until the spec changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.inventory_summary import epoch_seconds
from modelplane.api.readers import not_scraping_text
from modelplane.api.reasons import RolledOutReason
from modelplane.api.rollout import (
    MAX_ROLLOUT_MESSAGE,
    MAX_WAVE_CLUSTERS,
    Rollout,
    RolloutAnalysis,
    RolloutStatus,
    RolloutWave,
    WaveAnalysis,
)
from modelplane.compose.deployments.revision import Template
from modelplane.scheduling.labels import selector_matches
from modelplane.scheduling.words import truncate


@dataclass(frozen=True)
class ReplicaRevision:
    """One of the deployment's replicas as a rollout sees it."""

    name: str
    cluster: str
    index: int
    revision: str | None  # None: its template does not read (never replaced for it)
    ready: bool


@dataclass(frozen=True)
class RolloutInput:
    """Everything one rollout decision reads."""

    rollout: Rollout
    replicas_wanted: int  # spec.replicas (or the autoscaler's count)
    revision: str  # the spec's
    template: Template  # the spec's
    prior: RolloutStatus | None
    replicas: tuple[ReplicaRevision, ...]
    clusters: Mapping[str, Mapping[str, str]]  # every cluster's labels, by name
    signals: Mapping[str, ReplicaSignals]  # by replica name (its cluster's report)
    templates: Mapping[str, Template]  # templates read from observed replicas, by revision
    cache_ready: Callable[[str], bool] = lambda cluster: True  # the spec's caches, per cluster
    # Clusters whose agents scrape no engine metrics: they never report a signal.
    unscraped: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    """The condition a decision sets, and its events: (type, reason, message)."""

    status: bool | None
    reason: RolledOutReason
    message: str
    events: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class RolloutPlan:
    """What the composer does this cycle."""

    outdated: frozenset[str]  # replica names to replace (make-before-break)
    place: str  # the revision new placements run
    templates: Mapping[str, Template]  # the revisions the composer can compose, by name
    canary: frozenset[str] = frozenset()  # revisions whose endpoints are canaries
    canary_percent: int | None = None
    status: RolloutStatus | None = None
    verdict: Verdict | None = None


@dataclass
class _Judged:
    """One wave's analysis this cycle."""

    wave: WaveAnalysis
    outcome: str  # "hold", "pass" or "fail"
    reason: RolledOutReason = RolledOutReason.ANALYZING


@dataclass
class _State:
    inp: RolloutInput
    stable: str
    stable_template: Template
    waves: list[WaveAnalysis] = field(default_factory=list)
    now: int | None = None
    now_text: str | None = None


def decide(inp: RolloutInput) -> RolloutPlan:
    """The next step of a Progressive rollout (see the module docstring)."""
    state = _state(inp)
    if inp.revision == state.stable:
        return _settled(state)
    if inp.prior is not None and inp.prior.failed_revision == inp.revision:
        return _rolled_back(state)
    return _progress(state)


def _state(inp: RolloutInput) -> _State:
    """The stable revision and the waves so far; a new revision starts at wave 1."""
    stable, template = _stable(inp)
    state = _State(inp, stable, template)
    if inp.prior is not None and inp.prior.revision == inp.revision:
        state.waves = list(inp.prior.waves or ())
    state.now, state.now_text = _now(inp.signals.values())
    return state


def _stable(inp: RolloutInput) -> tuple[str, Template]:
    """The revision every replica ran before this rollout, and its template.

    Kept in status once known; before that, the revision the observed replicas
    share, or the spec's when there are none yet (nothing to roll).
    """
    prior = inp.prior
    if prior is not None and prior.stable_template is not None:
        return prior.stable_revision, prior.stable_template
    seen = sorted({r.revision for r in inp.replicas if r.revision and r.revision in inp.templates})
    if len(seen) == 1:
        return seen[0], inp.templates[seen[0]]
    if not seen or inp.revision in seen:
        return inp.revision, inp.template
    # Several older revisions and no record: the most common one is the stable one.
    counts = {rev: sum(1 for r in inp.replicas if r.revision == rev) for rev in seen}
    best = max(seen, key=lambda rev: (counts[rev], rev))
    return best, inp.templates[best]


def _now(signals: Iterable[ReplicaSignals]) -> tuple[int | None, str | None]:
    """The newest report time (epoch seconds and as written)."""
    best: tuple[int, str] | None = None
    for s in signals:
        at = epoch_seconds(s.scraped_at)
        if at is not None and (best is None or at > best[0]):
            best = (at, s.scraped_at)
    return (None, None) if best is None else best


def _templates(state: _State) -> dict[str, Template]:
    return {
        **state.inp.templates,
        state.stable: state.stable_template,
        state.inp.revision: state.inp.template,
    }


def _status(state: _State, decision: str, message: str, **extra: object) -> RolloutStatus:
    prior = state.inp.prior
    fields: dict[str, object] = {
        "revision": state.inp.revision,
        "stable_revision": state.stable,
        "stable_template": state.stable_template,
        "previous_revision": prior.previous_revision if prior else None,
        "previous_template": prior.previous_template if prior else None,
        "decision": decision,
        "wave": len(state.waves),
        "waves": state.waves or None,
        "revisions": _revision_counts(state.inp.replicas),
        "message": truncate(message, MAX_ROLLOUT_MESSAGE),
    }
    fields.update(extra)
    return RolloutStatus.model_validate(fields)


def _revision_counts(replicas: Sequence[ReplicaRevision]) -> list[dict[str, object]] | None:
    names = sorted({r.revision or "unknown" for r in replicas})
    counts = [
        {
            "revision": rev,
            "replicas": sum(1 for r in replicas if (r.revision or "unknown") == rev),
            "ready": sum(1 for r in replicas if (r.revision or "unknown") == rev and r.ready),
        }
        for rev in names
    ]
    return counts[:8] or None


def _other(replicas: Sequence[ReplicaRevision], revision: str) -> list[ReplicaRevision]:
    """Replicas that run a known revision other than `revision`."""
    return [r for r in replicas if r.revision is not None and r.revision != revision]


# ── Settled: the spec's revision is the stable one ─────────────────────────


def _settled(state: _State) -> RolloutPlan:
    """Nothing to roll out; replicas of other revisions (an undo, a rollback) are replaced."""
    inp = state.inp
    left = _other(inp.replicas, inp.revision)
    if left:
        msg = (
            f"replacing {len(left)} replica(s) of other revisions with revision "
            f"{inp.revision} (make-before-break)"
        )
        verdict = Verdict(False, RolledOutReason.PROMOTING, msg)
        status = _status(state, "Progressing", msg)
    else:
        msg = f"every replica runs revision {inp.revision}"
        verdict = Verdict(True, RolledOutReason.COMPLETE, msg)
        status = _status(state, "Complete", msg)
    return RolloutPlan(
        outdated=frozenset(r.name for r in left),
        place=inp.revision,
        templates=_templates(state),
        status=status,
        verdict=verdict,
    )


# ── Rolled back ────────────────────────────────────────────────────────────


def _rolled_back(state: _State, events: tuple[tuple[str, str, str], ...] = ()) -> RolloutPlan:
    """Every replica goes back to the stable revision, make-before-break."""
    inp = state.inp
    left = _other(inp.replicas, state.stable)
    failed = [w for w in state.waves if w.phase == "Failed"]
    why = failed[-1].message if failed else f"revision {inp.revision} failed"
    msg = f"{why}; rolled back to revision {state.stable}"
    if left:
        msg = f"{msg}; {len(left)} replica(s) of revision {inp.revision} still being replaced"
    status = _status(state, "RolledBack", msg, failed_revision=inp.revision)
    return RolloutPlan(
        outdated=frozenset(r.name for r in left),
        place=state.stable,
        templates=_templates(state),
        status=status,
        verdict=Verdict(False, RolledOutReason.ROLLED_BACK, msg, events),
    )


# ── In progress ────────────────────────────────────────────────────────────


def _progress(state: _State) -> RolloutPlan:
    """Advance the rollout: start, update and judge waves until one holds."""
    inp = state.inp
    waves = inp.rollout.waves or []
    prior = inp.prior
    held = prior is not None and prior.revision == inp.revision and prior.decision == "Paused"
    if held and prior is not None and not inp.rollout.paused and _failed(state):
        # onFailure Pause holds until the spec changes or `rollout undo`.
        return _paused(state, prior.message, failed=True)
    if inp.rollout.paused:
        return _paused(state, "paused by spec.rollout.paused: no wave starts or is judged")
    events: list[tuple[str, str, str]] = []
    while len(state.waves) <= len(waves):
        k = len(state.waves)
        if k == 0 or state.waves[-1].phase == "Passed":
            if k == len(waves):
                return _promote(state, events)
            state.waves.append(_start(state, k + 1, waves[: k + 1]))
            events.append(("Normal", "WaveStarted", state.waves[-1].message))
        judged = _judge(state, waves[: len(state.waves)])
        state.waves[-1] = judged.wave
        if judged.outcome == "fail":
            return _failed_wave(state, judged, events)
        if judged.outcome == "hold":
            return _holding(state, judged, events, waves)
        events.append(("Normal", "WavePassed", judged.wave.message))
    return _promote(state, events)


def _failed(state: _State) -> bool:
    return any(w.phase == "Failed" for w in state.waves)


def _paused(
    state: _State, why: str, failed: bool = False, events: tuple[tuple[str, str, str], ...] = ()
) -> RolloutPlan:
    """Hold every replica where it is; replacements already under way finish."""
    inp = state.inp
    reason = RolledOutReason.ANALYSIS_FAILED if failed else RolledOutReason.PAUSED
    return RolloutPlan(
        outdated=frozenset(),
        place=inp.revision,
        templates=_templates(state),
        status=_status(state, "Paused", why),
        verdict=Verdict(False, reason, why, events),
    )


def wave_clusters(
    waves: Sequence[RolloutWave],
    clusters: Mapping[str, Mapping[str, str]],
    replicas: Sequence[ReplicaRevision],
    wanted: int,
) -> list[str]:
    """The clusters the last of `waves` updates, with those of the waves before it.

    A selector takes the clusters whose labels it matches; a percentage takes
    clusters in name order (those hosting replicas) until they host that share
    of `wanted`, rounded up.
    """
    taken: set[str] = set()
    hosting = sorted({r.cluster for r in replicas})
    for wave in waves:
        if wave.cluster_selector is not None:
            sel = wave.cluster_selector
            taken |= {n for n, labels in clusters.items() if selector_matches(sel, labels)}
            continue
        need = math.ceil((wave.percent or 0) * wanted / 100)
        held = sum(1 for r in replicas if r.cluster in taken)
        for name in hosting:
            if held >= need:
                break
            if name not in taken:
                taken.add(name)
                held += sum(1 for r in replicas if r.cluster == name)
    return sorted(taken)


def _start(state: _State, number: int, waves: Sequence[RolloutWave]) -> WaveAnalysis:
    """Wave `number` begins: its clusters fixed, its time from the newest report."""
    inp = state.inp
    clusters = wave_clusters(waves, inp.clusters, inp.replicas, inp.replicas_wanted)
    shown = ", ".join(clusters[:8]) + (
        f" and {len(clusters) - 8} more" if len(clusters) > 8 else ""
    )
    return WaveAnalysis(
        wave=number,
        phase="Updating",
        clusters=clusters[:MAX_WAVE_CLUSTERS],
        started_at=None,
        message=f"wave {number} started: replicas on {shown or 'no cluster'} move to "
        f"revision {inp.revision}",
    )


def _wave_set(state: _State, waves: Sequence[RolloutWave]) -> set[str]:
    """The clusters of the current wave and the ones before it.

    Selector waves are re-read (labels decide); percentage waves keep the
    clusters recorded when they started, so replacements landing elsewhere
    cannot move the line.
    """
    inp = state.inp
    selectors = [w for w in waves if w.cluster_selector is not None]
    taken = set(wave_clusters(selectors, inp.clusters, inp.replicas, 0))
    for spec, started in zip(waves, state.waves, strict=False):
        if spec.percent is not None:
            taken |= set(started.clusters or ())
    return taken


def _judge(state: _State, waves: Sequence[RolloutWave]) -> _Judged:
    """Update and judge the current wave (its analysis, and hold, pass or fail)."""
    inp = state.inp
    wave = state.waves[-1]
    clusters = _wave_set(state, waves)
    if not all(inp.cache_ready(c) for c in clusters):
        waiting = sorted(c for c in clusters if not inp.cache_ready(c))
        msg = f"wave {wave.wave}: waiting for the new revision's cache on {', '.join(waiting[:8])}"
        held = wave.model_copy(update={"phase": "WaitingForCache", "message": msg})
        return _Judged(held, "hold", RolledOutReason.WAITING_FOR_CACHE)
    if wave.started_at is None:
        if state.now_text is None:
            msg = f"wave {wave.wave}: no cluster agent has reported yet, so its time cannot start"
            msg += _unscraped(inp, clusters)
            held = wave.model_copy(update={"message": msg})
            return _Judged(held, "hold", RolledOutReason.SIGNALS_MISSING)
        wave = wave.model_copy(update={"started_at": state.now_text})
    return _analyse(state, wave, clusters, _wave_set(state, waves[:-1]))


def _analyse(state: _State, wave: WaveAnalysis, clusters: set[str], earlier: set[str]) -> _Judged:
    """Measure the new revision since the wave started; fail on a broken limit at once.

    Every replica of the new revision counts toward the error rate, TTFT and
    Ready share; the ones this wave brought (not on an earlier wave's
    clusters) must each have reported since it started before it can pass.
    """
    inp = state.inp
    analysis = inp.rollout.judged
    outdated = [r for r in _other(inp.replicas, inp.revision) if r.cluster in clusters]
    new = [r for r in inp.replicas if r.revision == inp.revision]
    started = epoch_seconds(wave.started_at or "") or 0
    fresh = {r.name: s for r in new if (s := _fresh(inp.signals.get(r.name), started)) is not None}
    mine = [r for r in new if r.cluster not in earlier] or new
    # Replicas above the count are replacements in flight: their old ones are not still to come.
    surplus = max(0, len(inp.replicas) - inp.replicas_wanted)
    numbers = _numbers(new, max(0, len(outdated) - surplus), list(fresh.values()))
    wave = wave.model_copy(update=numbers)
    broken = _broken(analysis, wave)
    if broken:
        return _decided(state, wave, "Failed", broken, "fail")
    elapsed = (state.now or started) - started
    if elapsed < analysis.duration_seconds:
        left = analysis.duration_seconds - elapsed
        phase = "Updating" if outdated else "Analyzing"
        msg = f"wave {wave.wave}: {_summary(wave)}; held {left}s more"
        reason = RolledOutReason.UPDATING if outdated else RolledOutReason.ANALYZING
        return _Judged(wave.model_copy(update={"phase": phase, "message": msg}), "hold", reason)
    silent = [r.name for r in mine if r.name not in fresh]
    return _at_time_up(state, wave, outdated, silent, bool(new))


def _at_time_up(
    state: _State,
    wave: WaveAnalysis,
    outdated: Sequence[ReplicaRevision],
    silent: Sequence[str],
    any_new: bool,
) -> _Judged:
    """The wave's time is up: too few Ready fails it; updates or signals missing hold it."""
    analysis = state.inp.rollout.judged
    # None: nothing of the new revision is placed yet (held below, never failed for it).
    if wave.ready_fraction is not None and wave.ready_fraction < analysis.min_ready_fraction:
        why = (
            f"only {wave.ready} of {wave.replicas} replicas of the new revision are Ready "
            f"(at least {analysis.min_ready_fraction:.0%} required)"
        )
        return _decided(state, wave, "Failed", why, "fail")
    if outdated:
        msg = f"wave {wave.wave}: {len(outdated)} replica(s) still to update; {_summary(wave)}"
        held = wave.model_copy(update={"phase": "Updating", "message": msg})
        return _Judged(held, "hold", RolledOutReason.UPDATING)
    missing = _missing(analysis, wave, silent, any_new)
    if missing:
        msg = f"wave {wave.wave}: held, signals missing: {missing}; {_summary(wave)}"
        new = {r.cluster for r in state.inp.replicas if r.revision == state.inp.revision}
        msg += _unscraped(state.inp, new)
        held = wave.model_copy(update={"phase": "Analyzing", "message": msg})
        return _Judged(held, "hold", RolledOutReason.SIGNALS_MISSING)
    return _decided(state, wave, "Passed", _summary(wave), "pass")


def _decided(state: _State, wave: WaveAnalysis, phase: str, why: str, outcome: str) -> _Judged:
    word = "passed" if phase == "Passed" else "failed"
    msg = truncate(f"wave {wave.wave} {word}: {why}", MAX_ROLLOUT_MESSAGE)
    done = wave.model_copy(update={"phase": phase, "decided_at": state.now_text, "message": msg})
    reason = RolledOutReason.WAVE_PASSED if phase == "Passed" else RolledOutReason.ANALYSIS_FAILED
    return _Judged(done, outcome, reason)


def _fresh(signal: ReplicaSignals | None, started: int) -> ReplicaSignals | None:
    """A signal reported after the wave started by a reachable engine, else None."""
    if signal is None or not signal.reachable:
        return None
    at = epoch_seconds(signal.scraped_at)
    return signal if at is not None and at > started else None


def _numbers(
    new: Sequence[ReplicaRevision], to_come: int, fresh: Sequence[ReplicaSignals]
) -> dict[str, object]:
    """The wave's counts and measurements (None where no signal measured them)."""
    wanted = len(new) + to_come
    placed = len(new)
    ready = sum(1 for r in new if r.ready)
    counted = [s for s in fresh if s.requests is not None]
    requests = sum(s.requests or 0 for s in counted) if counted else None
    # An engine that counts its requests but not its failures (vLLM's own
    # counter) leaves the errors unknown: a sum without it would read 0.
    known_errors = counted and all(s.errors is not None for s in counted)
    errors = sum(s.errors or 0 for s in counted) if known_errors else None
    ttfts = [s.ttft_p90_seconds for s in fresh if s.ttft_p90_seconds is not None]
    return {
        "replicas": wanted,
        "ready": ready,
        "reporting": len(fresh),
        "requests": requests,
        "errors": errors,
        "error_rate": round(errors / requests, 4) if requests and errors is not None else None,
        "ttft_p90_seconds": max(ttfts) if ttfts else None,
        # Of the new revision's replicas placed: the ones still to come hold the wave.
        "ready_fraction": round(ready / placed, 4) if placed else None,
    }


def _broken(analysis: RolloutAnalysis, wave: WaveAnalysis) -> str | None:
    """The first limit the fresh signals break, in words; None when none is."""
    limit = analysis.max_error_rate
    if limit is not None and wave.error_rate is not None and wave.error_rate > limit:
        return (
            f"error rate {wave.error_rate:.2%} ({wave.errors} of {wave.requests} requests) "
            f"is above the limit {limit:.2%}"
        )
    ttft = analysis.max_ttft_p90_seconds
    if ttft is not None and wave.ttft_p90_seconds is not None and wave.ttft_p90_seconds > ttft:
        return f"time to first token p90 {wave.ttft_p90_seconds:g}s is above the limit {ttft:g}s"
    return None


def _missing(
    analysis: RolloutAnalysis, wave: WaveAnalysis, silent: Sequence[str], any_new: bool
) -> str:
    """What the analysis lacks to pass ("" when nothing)."""
    lacking = []
    if not any_new:
        lacking.append("no replica runs the new revision")
    elif silent:
        shown = ", ".join(silent[:4]) + (f" and {len(silent) - 4} more" if len(silent) > 4 else "")
        lacking.append(f"no report since the wave started from {shown}")
    if analysis.max_error_rate is not None and wave.error_rate is None:
        lacking.append(
            "no request counts (error rate)"
            if wave.requests is None
            else "no error counts (error rate): the engines count their requests, not failures"
        )
    if analysis.max_ttft_p90_seconds is not None and wave.ttft_p90_seconds is None:
        lacking.append("no time to first token")
    return "; ".join(lacking)


def _unscraped(inp: RolloutInput, clusters: Iterable[str]) -> str:
    """Why some of `clusters` will never report (appended to a hold's message), or ""."""
    names = sorted(inp.unscraped.intersection(clusters))
    return f"; {not_scraping_text(names)}" if names else ""


def _summary(wave: WaveAnalysis) -> str:
    parts = [f"{wave.ready}/{wave.replicas} Ready", f"{wave.reporting} reporting"]
    if wave.error_rate is not None:
        parts.append(f"error rate {wave.error_rate:.2%} of {wave.requests} requests")
    if wave.ttft_p90_seconds is not None:
        parts.append(f"TTFT p90 {wave.ttft_p90_seconds:g}s")
    return ", ".join(parts)


def _holding(
    state: _State,
    judged: _Judged,
    events: list[tuple[str, str, str]],
    waves: Sequence[RolloutWave],
) -> RolloutPlan:
    """The current wave holds: replace its clusters' older replicas, route canaries."""
    inp = state.inp
    clusters = _wave_set(state, waves[: len(state.waves)])
    waiting = judged.reason == RolledOutReason.WAITING_FOR_CACHE
    left = (
        [] if waiting else [r for r in _other(inp.replicas, inp.revision) if r.cluster in clusters]
    )
    percent = inp.rollout.judged.traffic_percent
    msg = f"wave {judged.wave.wave} of {len(waves)}: {judged.wave.message}"
    return RolloutPlan(
        outdated=frozenset(r.name for r in left),
        place=inp.revision,
        templates=_templates(state),
        canary=frozenset({inp.revision}) if percent is not None else frozenset(),
        canary_percent=percent,
        status=_status(state, "Progressing", msg),
        verdict=Verdict(False, judged.reason, msg, tuple(events)),
    )


def _failed_wave(state: _State, judged: _Judged, events: list[tuple[str, str, str]]) -> RolloutPlan:
    """A wave failed: roll back or pause, as spec.rollout.onFailure says."""
    inp = state.inp
    msg = judged.wave.message
    if inp.rollout.on_failure == "Pause":
        events.append(("Warning", "RolloutPaused", f"{msg}; every replica is held where it is"))
        return _paused(state, f"{msg}; paused (onFailure: Pause)", True, tuple(events))
    events.append(("Warning", "RolledBack", f"{msg}; rolled back to revision {state.stable}"))
    return _rolled_back(state, tuple(events))


def _promote(state: _State, events: list[tuple[str, str, str]]) -> RolloutPlan:
    """Every wave passed: update the rest, then the new revision is the stable one."""
    inp = state.inp
    left = _other(inp.replicas, inp.revision)
    if left:
        msg = f"every wave passed; updating the {len(left)} remaining replica(s)"
        return RolloutPlan(
            outdated=frozenset(r.name for r in left),
            place=inp.revision,
            templates=_templates(state),
            status=_status(state, "Progressing", msg),
            verdict=Verdict(False, RolledOutReason.PROMOTING, msg, tuple(events)),
        )
    msg = f"every wave passed; every replica runs revision {inp.revision}"
    events.append(("Normal", "RolloutComplete", msg))
    status = _status(
        state,
        "Complete",
        msg,
        stable_revision=inp.revision,
        stable_template=inp.template,
        previous_revision=state.stable,
        previous_template=state.stable_template,
    )
    return RolloutPlan(
        outdated=frozenset(),
        place=inp.revision,
        templates=_templates(state),
        status=status,
        verdict=Verdict(True, RolledOutReason.COMPLETE, msg, tuple(events)),
    )
