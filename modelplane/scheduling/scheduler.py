"""The fleet scheduler, structured like kube-scheduler's framework.

`schedule()` reads a typed `ScheduleInput`, builds one `CycleState` and runs
named steps over it:

    filter → check_selectors → match_pools → filter_pools → resolve_contention →
    retain → scale_down → settle_drains → build_ledger → order_pools (cost) → fill →
    post_filter (preemption) → refuse (quota) → settle_stuck → explain → what_if → bind

A Ready replica that must leave for a reason other than its cluster being gone
is kept as *draining* (rollout MakeBeforeBreak): still composed and charged,
not counted toward `spec.replicas`, dropped once enough replacements are Ready;
the fill places replacements within `spec.replicas + maxSurge`. A replica its
cluster reports unschedulable (`unschedulable`) is kept, charged and not
counted until the fill places a replacement on another pool, then withdrawn
(`settle_stuck`); with no replacement anywhere it stays.

Policy lives in rule objects (`rules.FILTERS`, `rules.SCORES`; see
`framework`); the steps are the fixed skeleton. Everything is keyed and
iterated in sorted order, so the answer does not depend on the order of the
input lists. Work whose answer cannot change between replicas (device
matching, selector evaluation) is done once per call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.api.frozen import ReadOnlyDict
from modelplane.api.model_deployment import MAX_UNSCHEDULABLE_ENTRIES
from modelplane.api.readers import ObservedInferenceCluster
from modelplane.scheduling import cost, preempt, quota, words
from modelplane.scheduling.explain import explain
from modelplane.scheduling.fill import build_ledger, fill, rank, surge
from modelplane.scheduling.framework import (
    NOT_KEYED,
    ClusterScore,
    ScheduleInput,
    filter_key,
    filter_suspects,
    fleet_derived,
    read_input,
)
from modelplane.scheduling.matching import ClusterPools, Shape, Shapes, cluster_pools
from modelplane.scheduling.retain import (
    resolve_contention,
    retain,
    scale_down,
    settle_drains,
    settle_stuck,
)
from modelplane.scheduling.rules import FILTERS, POOL_FILTERS, SCORES
from modelplane.scheduling.state import CycleState, Slot, new_state
from modelplane.scheduling.types import (
    ClusterVerdict,
    PlannedReplica,
    ScheduleResult,
    StockedOutPool,
    WhatIf,
)
from modelplane.scheduling.whatif import what_if


def filter_clusters(state: CycleState) -> None:
    """Run every filter on every cluster; the first refusal is the cluster's verdict.

    The verdicts depend on the cluster table and on what each rule reads of
    the input (`ClusterFilter.key`) alone, so deployments alike share them: they
    are computed once per fleet table and key (`fleet_derived`).
    """
    inp = state.inp
    keys = tuple(filter_key(rule, inp) for rule in FILTERS)
    verdicts: Mapping[str, ClusterVerdict]
    schedulable: Sequence[str]
    if NOT_KEYED in keys:  # a rule that does not say what it reads: nothing is shared
        verdicts, schedulable = cluster_verdicts(inp)
    else:
        key = ("scheduling.filters", *keys)
        verdicts, schedulable = fleet_derived(inp.clusters, key, lambda: _shared(inp))
    state.verdicts.update(verdicts)
    state.schedulable.extend(schedulable)


def _shared(inp: ScheduleInput) -> tuple[Mapping[str, ClusterVerdict], tuple[str, ...]]:
    """`cluster_verdicts` in read-only containers, to remember on the fleet's table."""
    verdicts, schedulable = cluster_verdicts(inp)
    return ReadOnlyDict(verdicts), tuple(schedulable)


def cluster_verdicts(inp: ScheduleInput) -> tuple[dict[str, ClusterVerdict], list[str]]:
    """Every refused cluster's verdict, and the admitted clusters in table order.

    A cluster no filter names among its suspects is admitted by all of them,
    without asking each (`ClusterFilter.suspects`).
    """
    verdicts: dict[str, ClusterVerdict] = {}
    schedulable: list[str] = []
    suspects = _suspects(inp)
    texts: dict[tuple[str, tuple[str, ...]], str] = {}  # many are refused alike (NotSelected)
    for name, cl in inp.clusters.items():
        if suspects is not None and name not in suspects:
            schedulable.append(name)
            continue
        for rule in FILTERS:
            rejection = rule.admit(inp, cl)
            if rejection is not None:
                key = (rejection.reason, rejection.detail)
                why = texts.get(key)
                if why is None:
                    why = texts[key] = words.rejection_text(rejection)
                verdicts[name] = ClusterVerdict(name, False, rejection.reason, why)
                break
        else:
            schedulable.append(name)
    return verdicts, schedulable


def _suspects(inp: ScheduleInput) -> set[str] | None:
    """The clusters some filter may refuse; None: any of them."""
    out: set[str] = set()
    for rule in FILTERS:
        some = filter_suspects(rule, inp)
        if some is None:
            return None
        out.update(some)
    return out


def check_selectors(state: CycleState) -> None:
    """Compile every selector; a compile error is the user's, with its field path."""
    for role in state.roles:
        for i, req in enumerate(role.requests):
            for j, expr in enumerate(req.selectors):
                error = state.ev.compile_error(expr)
                if error is not None:
                    state.invalid.append((f"{role.path}.devices[{i}].selectors[{j}].cel", error))


def match_pools(state: CycleState) -> None:
    """Intern the known pools of the clusters that matter; roles are matched on first use.

    Those are the schedulable clusters and the selected ones holding replicas
    (retention and the ledger need their pools); a tainted or not-Ready cluster
    holding none is explained by its filter verdict alone. Unknown pools are
    never matched against: nothing new goes there. Matching itself happens in
    `CycleState.pool_matches`, once per shape, when a step first asks.
    """
    inp = state.inp
    admitted = set(state.schedulable)
    held = {r.cluster for r in inp.replicas if r.cluster not in admitted}
    extra = held & inp.candidates
    # The admitted clusters come in table order, by name: sorting them again is linear.
    names = tuple(sorted(admitted | extra if extra else state.schedulable))
    every = fleet_pools(inp.clusters, state.shapes)
    known, shapes, nodes = fleet_derived(
        inp.clusters, ("scheduling.matched", state.shapes, names), lambda: _pools_of(every, names)
    )
    state.known_pools = dict(known)
    state.pool_shapes.update(shapes)
    state.pool_nodes.update(nodes)


def _pools_of(
    every: Mapping[str, ClusterPools], names: Sequence[str]
) -> tuple[
    Mapping[str, Sequence[str]], Mapping[str, Mapping[str, Shape]], Mapping[str, Mapping[str, int]]
]:
    """The pool names, shapes and node counts of the clusters `names`, by cluster
    (read-only: remembered on the fleet's table)."""
    return (
        ReadOnlyDict({name: every[name].names for name in names}),
        ReadOnlyDict({name: every[name].shapes for name in names}),
        ReadOnlyDict({name: every[name].nodes for name in names}),
    )


def fleet_pools(
    clusters: Mapping[str, ObservedInferenceCluster], shapes: Shapes
) -> Mapping[str, ClusterPools]:
    """Every cluster's interned pools by name, once per fleet table (`fleet_derived`).

    Each cluster's are interned once per cluster version (`cluster_pools`).
    """

    def derive() -> tuple[Shapes, Mapping[str, ClusterPools]]:
        return shapes, ReadOnlyDict({n: cluster_pools(cl, shapes) for n, cl in clusters.items()})

    found = fleet_derived(clusters, "scheduling.pools", derive)
    return found[1] if found[0] is shapes else derive()[1]


def filter_pools(state: CycleState) -> None:
    """Run every pool filter: a refused pool whose devices match takes no new replica.

    The refusals are recorded in the cycle state, whose lazy matching hands out
    such a pool unmatched with the rule's reason and words, so the fill, the
    explanation and the what-if all see it refused; retained replicas are
    judged against their pools afresh. It runs before any step matches a pool.
    """
    for rule in POOL_FILTERS:
        for key, rejection in rule.refusals(state.inp).items():
            state.refused.setdefault(key, rejection)


def bind(
    state: CycleState,
    changes: tuple[WhatIf, ...] = (),
    stocked_out: tuple[StockedOutPool, ...] = (),
) -> ScheduleResult:
    """Turn the cycle's slots (and the what-if answers) into the immutable result."""
    replicas = tuple(
        _planned(state, s)
        for s in sorted(
            [*state.slots, *state.draining, *state.stuck], key=lambda s: (s.cluster, s.index)
        )
    )
    return ScheduleResult(
        replicas=replicas,
        desired=state.inp.spec.replicas,
        invalid_selectors=tuple(state.invalid),
        clusters=tuple(state.verdicts[k] for k in sorted(state.verdicts)),
        withdrawn=tuple(sorted(state.withdrawn, key=lambda w: (w.cluster, w.index))),
        replaced=tuple(sorted((name, words.eviction_text(e)) for name, e in state.evicted)),
        scaled_down=tuple(sorted(state.scaled_down)),
        unverifiable=tuple(sorted(state.unverifiable, key=lambda u: (u.cluster, u.index, u.pool))),
        missing_caches=state.inp.missing_caches,
        what_if=changes,
        stocked_out=stocked_out,
        surge=surge(state),
        stuck=tuple(sorted(state.stuck_report, key=lambda x: (x.cluster, x.index))),
        ranking=state.ranking,
        preemptions=preempt.preemptions(state),
        preempted=tuple(
            sorted((n, words.eviction_text(e)) for n, e in state.evicted if e.reason == "Preempted")
        ),
        quota=quota.use(state),
        superseded=tuple(
            _planned(state, s) for s in sorted(state.superseded, key=lambda s: (s.cluster, s.index))
        ),
    )


def _planned(state: CycleState, s: Slot) -> PlannedReplica:
    """One slot of the cycle as the result lists it."""
    return PlannedReplica(
        s.cluster,
        s.index,
        s.roles,
        s.retained,
        s.name,
        ready=s.ready,
        drain_reason=None if s.drain is None else s.drain.reason,
        drain_message="" if s.drain is None else words.eviction_text(s.drain),
        unschedulable_since=None if s.stuck is None else s.stuck.report.since,
        preempts=preempt.victims_of(state, s.name, s.retained),
    )


def schedule_input(
    inp: ScheduleInput, *, explain_all: bool = True, scores: tuple[ClusterScore, ...] = SCORES
) -> ScheduleResult:
    """Run one scheduling cycle over a typed input, ranking clusters by `scores`.

    The per-cluster verdicts of the explain step (a trial placement per
    cluster) are computed when some replica is missing, or always with
    `explain_all`; otherwise the result carries only the filters' verdicts.
    Without `explain_all`, only the rejections status lists
    (`MAX_UNSCHEDULABLE_ENTRIES`) are spelled out pool by pool; every other
    cluster's verdict carries its reason alone. With `explain_all` the result
    also ranks the eligible clusters for one more replica (`ranking`).
    """
    state = new_state(inp, cost.profile(inp, scores))
    state.ev.bound()  # between calls: the evaluator's tables stay bounded
    filter_clusters(state)
    check_selectors(state)
    match_pools(state)
    filter_pools(state)
    resolve_contention(state)
    retain(state)
    scale_down(state)
    settle_drains(state)
    build_ledger(state)
    cost.order_pools(state)
    fill(state)
    preempt.post_filter(state)
    if explain_all or len(state.slots) < inp.spec.replicas:
        quota.refuse(state)  # only the explanation reads its refusals
    settle_stuck(state)
    if explain_all or len(state.slots) < inp.spec.replicas:
        explain(state, None if explain_all else MAX_UNSCHEDULABLE_ENTRIES)
    if explain_all:
        state.ranking = rank(state)
    return bind(state, *what_if(state))


def schedule(
    deployment: Mapping[str, Any],
    clusters: Sequence[Mapping[str, Any]],
    replicas: Sequence[Mapping[str, Any]],
    caches: Sequence[Mapping[str, Any]] | None = None,
    *,
    explain_all: bool = True,
) -> ScheduleResult:
    """Compute the desired replicas of `deployment` and why any are missing.

    `deployment` is the ModelDeployment object (already validated), `clusters` every
    InferenceCluster, `replicas` every ModelReplica in the fleet, `caches` the
    ModelCaches of `spec.caches` found in the deployment's namespace (None: not
    looked up).
    Pure and deterministic: the same objects in any order give the same result.
    With `explain_all=False` every cluster's verdict is computed only when some
    replica could not be placed (what the composer needs); `modelplane explain`
    wants them all.
    """
    return schedule_input(
        read_input(deployment, clusters, replicas, caches), explain_all=explain_all
    )
