"""`modelplane explain`: the full placement explanation of one ModelDeployment.

The fleet is rendered with the embedded control plane first, so the clusters
have published their pools and the replicas exist as they would on a live
control plane; then the scheduler runs once more for the deployment against
that state and every verdict it reached is printed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from modelplane.api import constants as c
from modelplane.api.autoscaling import read_autoscaling_status
from modelplane.api.readers import read_model_deployment
from modelplane.api.roles import role_label
from modelplane.api.rollout import read_rollout_status
from modelplane.cli.options import max_rounds_option
from modelplane.cli.plans import deployment_plan
from modelplane.cli.rollout import waves_table
from modelplane.local import ControlPlane, Key, LoadError, NotConvergedError, load_paths
from modelplane.local.engine import Event, RoundReport
from modelplane.local.store import ObjectStore
from modelplane.scheduling import PlannedReplica, ScheduleResult
from modelplane.scheduling.explanation import explanation_rows
from modelplane.scheduling.types import PoolAddition
from modelplane.scheduling.words import (
    preempting_text,
    quota_text,
    stuck_text,
    unverifiable_text,
)

# Piped output is sized to its content, within these bounds (a table cell
# longer than the upper one still folds).
PIPE_MIN_WIDTH = 160
PIPE_MAX_WIDTH = 1000

_STYLE = {
    "Eligible": "green",
    "matched": "green",
    "no match": "red",
    "errored": "yellow",
    "not enough devices": "red",
    "ReplicaUnschedulable": "red",
}


_STUCK_STYLE = {"Moved": "yellow", "Kept": "red", "Withdrawn": "red"}


def _parse_ref(ref: str) -> tuple[str, str]:
    namespace, sep, name = ref.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise click.BadParameter(f"{ref!r} is not NAMESPACE/NAME", param_hint="--deployment")
    return namespace, name


def _deployments(store: ObjectStore) -> list[str]:
    return sorted(
        f"{k.namespace}/{k.name}"
        for k in store
        if (k.api_version, k.kind) == (c.API_VERSION, c.KIND_MODEL_DEPLOYMENT)
    )


def explain_deployment(store: ObjectStore, namespace: str, name: str) -> ScheduleResult | None:
    """The deployment's schedule as its composer decides it over the store, every
    placement listed (those leaving included); None if absent.

    Raises click.ClickException when the deployment's spec is invalid.
    """
    plan = deployment_plan(store, namespace, name)
    return None if plan is None else plan.shown()


def _summary(ref: str, deployment: Mapping[str, Any], result: ScheduleResult) -> Text:
    text = Text()
    text.append(f"ModelDeployment {ref}: ", style="bold")
    # Draining (make-before-break) and unschedulable replicas are not counted.
    placed = result.placed
    style = "green" if placed >= result.desired else "red"
    text.append(f"{placed} of {result.desired} replicas placed", style=style)
    cond = read_model_deployment(deployment).condition(c.CONDITION_SCHEDULED)
    if cond is not None:
        text.append(f"  (Scheduled={cond.status} {cond.reason or ''})")
    latest = read_model_deployment(deployment).condition(c.CONDITION_PREEMPTION)
    if latest is not None:
        text.append(f"\nlatest preemption ({latest.reason}): {latest.message}", style="yellow")
    return text


def _notes(result: ScheduleResult) -> list[RenderableType]:
    """Everything said before the explanation table: selectors, holds, placements, moves."""
    out: list[RenderableType] = [
        Text(f"invalid selector {path}: {message}", style="red")
        for path, message in result.invalid_selectors
    ]
    if result.missing_caches and result.placed < result.desired:
        held = ", ".join(result.missing_caches)
        out.append(Text(f"new replicas held: ModelCache {held} not found", style="red"))
    if result.replicas:
        out.append(_placements(result))
    out.extend(
        Text(f"unverifiable: {unverifiable_text(u)}", style="yellow") for u in result.unverifiable
    )
    out.extend(Text(stuck_text(s), style=_STUCK_STYLE[s.outcome]) for s in result.stuck)
    out.extend(Text(f"replaced {what}: {why}", style="yellow") for what, why in result.replaced)
    out.extend(
        Text(f"withdrawn {w.cluster}/{w.index} from pool {w.pool}: {w.message}", style="yellow")
        for w in result.withdrawn
    )
    out.extend(
        Text(f"preempting: {preempting_text(p)}", style="yellow") for p in result.preemptions
    )
    out.extend(Text(f"preempted {what}: {why}", style="yellow") for what, why in result.preempted)
    out.extend(Text(quota_text(u), style="red" if u.used >= u.hard else "") for u in result.quota)
    return out


def _placements(result: ScheduleResult) -> Table:
    table = Table(title="Placements", title_justify="left", show_lines=False)
    for col in ("Cluster", "Index", "Replica", "Pools", "Kept"):
        table.add_column(col)
    for r in result.replicas:
        pools = ", ".join(f"{ra.role}={ra.pool}" for ra in r.roles)
        table.add_row(r.cluster, str(r.index), r.name, pools, _kept(r))
    return table


def _kept(r: PlannedReplica) -> str:
    if r.draining:
        return f"draining ({r.drain_reason})"
    if r.unschedulable:
        return f"unschedulable since {r.unschedulable_since or '?'}"
    return "yes" if r.retained else "new"


def _number(x: float) -> str:
    """A score as people read it: whole when it is, else one decimal."""
    return f"{x:.0f}" if x == round(x) else f"{x:.1f}"


def scores_table(result: ScheduleResult) -> Table | None:
    """Where one more replica would go and the runner-up: each rule's 0-100 score, its
    weight in the column header, and the weighted total the fill maximises.

    None when no cluster could take one more (the explanation says why).
    """
    if not result.ranking:
        return None
    table = Table(title="Scores for one more replica", title_justify="left")
    table.add_column("")
    table.add_column("Cluster")
    for s in result.ranking[0].scores:
        table.add_column(f"{s.rule} ×{s.weight}")
    table.add_column("Total")
    for label, card in zip(("chosen", "runner-up"), result.ranking, strict=False):
        cells = [_number(s.score) for s in card.scores]
        table.add_row(label, card.cluster, *cells, _number(card.total))
    return table


def _added(a: PoolAddition) -> str:
    """The nodes one pool takes, and the maxNodeCount they pass."""
    if a.ceiling is None:
        return str(a.nodes)
    return f"{a.nodes} (maxNodeCount {a.ceiling} → {a.raised_ceiling})"


def what_if_table(result: ScheduleResult) -> Table:
    """The what-if answers: per eligible cluster, the pools to grow to place what is missing."""
    table = Table(
        title=f"What if: capacity that would place the {result.missing} missing replica(s)",
        title_justify="left",
    )
    for col in ("Cluster", "Pool", "Class", "Roles", "Add nodes", "Places"):
        table.add_column(col)
    for w in result.what_if:
        for i, a in enumerate(w.additions):
            table.add_row(
                w.cluster if i == 0 else "",
                a.pool,
                a.class_name,
                ", ".join(a.roles),
                _added(a),
                str(w.replicas) if i == 0 else "",
            )
    # Pools an answer would have grown but whose cloud has no capacity: never suggested.
    for s in result.stocked_out:
        table.add_row(s.cluster, s.pool, "", "", "0 (stocked out)", s.note)
    return table


def _explanation(result: ScheduleResult) -> Table:
    table = Table(
        title="Every candidate cluster × pool × device request",
        title_justify="left",
        show_lines=True,
    )
    for col in ("Cluster", "Verdict", "Pool", "Request", "Outcome", "Why", "Capacity"):
        table.add_column(col, overflow="fold")
    for row in explanation_rows(result):
        pool = f"{row.pool}{role_label(row.role)}"
        table.add_row(
            row.cluster,
            Text(row.verdict, style=_STYLE.get(row.verdict, "red")),
            pool,
            row.request,
            Text(row.outcome, style=_STYLE.get(row.outcome, "")),
            row.detail,
            row.capacity,
        )
    return table


@click.command("explain")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--deployment",
    "ref",
    required=True,
    metavar="NS/NAME",
    help="The ModelDeployment to explain, as NAMESPACE/NAME.",
)
@max_rounds_option
def explain(paths: tuple[str, ...], ref: str, max_rounds: int) -> None:
    """Explain where one ModelDeployment's replicas go, and why not elsewhere.

    Renders the manifests under PATH... with the embedded control plane, then
    prints the deployment's placements and, for every candidate cluster, every
    pool and device request: matched, which selector was false, which errored
    and how, not enough devices, or nodes needed against nodes free.
    """
    namespace, name = _parse_ref(ref)
    try:
        objects = load_paths(paths)
    except LoadError as err:
        raise click.ClickException(str(err)) from None
    key = Key(c.API_VERSION, c.KIND_MODEL_DEPLOYMENT, namespace, name)
    plane = ControlPlane(objects)
    steps: list[tuple[int, Event]] = []

    def record(report: RoundReport) -> None:
        # Events are the last reconcile's: collected each round, they tell the steps.
        for event in plane.events.get(key, []):
            if event.reason in STEP_EVENTS and (report.round, event) not in steps:
                steps.append((report.round, event))

    try:
        rendered = plane.run(max_rounds, progress=record)
    except NotConvergedError as err:
        raise click.ClickException(str(err)) from None
    store = rendered.store
    result = explain_deployment(store, namespace, name)
    if result is None:
        known = ", ".join(_deployments(store)) or "none"
        raise click.ClickException(
            f"ModelDeployment {namespace}/{name} not found in {', '.join(paths)} "
            f"(ModelDeployments there: {known})"
        )
    deployment = store.get(Key(c.API_VERSION, c.KIND_MODEL_DEPLOYMENT, namespace, name)) or {}
    out: list[RenderableType] = [_summary(ref, deployment, result), *_notes(result)]
    scores = scores_table(result)
    if scores is not None:
        out.append(scores)
    out.append(_explanation(result))
    if result.what_if or result.stocked_out:
        out.append(what_if_table(result))
    auto_steps = [(r, e) for r, e in steps if e.reason in AUTOSCALING_EVENTS]
    out.extend(autoscaling_section(deployment, auto_steps))
    out.extend(
        rollout_section(deployment, [(r, e) for r, e in steps if e.reason in ROLLOUT_EVENTS])
    )
    out.extend(Text(f"Warning: {w}", style="yellow") for w in rendered.warnings)
    console = _console(out)
    for renderable in out:
        console.print(renderable)


# The deployment's events that tell the autoscaler's steps.
AUTOSCALING_EVENTS = frozenset(
    {"ScaledUp", "ScaledDown", "Limited", "ScaleDownDraining", "ScaleDownRemoved", "ExternalScaler"}
)


# The deployment's events that tell a Progressive rollout's steps.
ROLLOUT_EVENTS = frozenset(
    {"WaveStarted", "WavePassed", "RolledBack", "RolloutPaused", "RolloutComplete"}
)
STEP_EVENTS = AUTOSCALING_EVENTS | ROLLOUT_EVENTS


def rollout_section(
    deployment: Mapping[str, Any], steps: Sequence[tuple[int, Event]]
) -> list[RenderableType]:
    """A Progressive rollout's decision, each wave's analysis, and its steps."""
    rollout = read_rollout_status(deployment.get("status"))
    if rollout is None:
        return []
    text = Text()
    text.append("Rollout: ", style="bold")
    text.append(
        f"{rollout.decision}, wave {rollout.wave}; revision {rollout.revision} "
        f"(stable {rollout.stable_revision})"
    )
    text.append(f"\n  {rollout.message}")
    rows = Table(title="Rollout steps (the render's events, in order)", title_justify="left")
    rows.add_column("Round")
    rows.add_column("Reason")
    rows.add_column("Message", overflow="fold")
    for round_, e in steps:
        rows.add_row(str(round_), e.reason, e.message)
    return [text, waves_table(rollout), rows] if steps else [text, waves_table(rollout)]


def autoscaling_section(
    deployment: Mapping[str, Any], steps: Sequence[tuple[int, Event]]
) -> list[RenderableType]:
    """The autoscaler's decision (signals, each target's proposal, why) and its steps."""
    auto = read_autoscaling_status(deployment.get("status"))
    if auto is None:
        return []
    text = Text()
    text.append("Autoscaling: ", style="bold")
    text.append(f"{auto.current_replicas} → {auto.desired_replicas} replicas ({auto.reason})")
    text.append(f"\n  {auto.message}")
    if auto.draining:
        text.append(f"\n  leaving (weight 0 until deleted): {', '.join(auto.draining)}")
    for drain in auto.drains or []:
        if drain.message:
            text.append(f"\n  {drain.replica}: {drain.message}")
    table = Table(title="Autoscaling targets", title_justify="left")
    for col in ("Target", "Fleet measure per replica", "Target value", "Proposes"):
        table.add_column(col)
    for t in auto.targets or []:
        value = "no signal" if t.value is None else _number(t.value)
        table.add_row(t.target, value, _number(t.goal), str(t.replicas or "-"))
    rows = Table(title="Autoscaling steps (the render's events, in order)", title_justify="left")
    rows.add_column("Round")
    rows.add_column("Reason")
    rows.add_column("Message", overflow="fold")
    for round_, e in steps:
        rows.add_row(str(round_), e.reason, e.message)
    return [text, table, rows] if steps else [text, table]


def _console(renderables: Sequence[RenderableType]) -> Console:
    """A console for the output; piped without COLUMNS, as wide as the tables need.

    Rich assumes 80 columns when stdout is not a terminal, which folds the long
    "Why" cells over several lines and breaks grep and less; a terminal, or an
    explicit COLUMNS, keeps rich's own choice.
    """
    console = Console(soft_wrap=False)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    probe = Console(width=PIPE_MAX_WIDTH)
    natural = max(probe.measure(r).maximum for r in renderables)
    return Console(soft_wrap=False, width=max(PIPE_MIN_WIDTH, natural))
