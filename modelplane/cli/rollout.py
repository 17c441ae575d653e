"""`modelplane rollout status|pause|resume|undo`: a Progressive rollout, seen and steered.

The deployment comes from one of two places, like the other commands:

- PATH... of manifests, rendered by the embedded control plane (as `explain`
  and `fleet` do). There is nothing to write to: `pause`, `resume` and `undo`
  print the merge patch they would send and say that it was not applied.
- `--kubeconfig FILE` [`--context NAME`]: a live control plane. The
  deployment is read with a GET and changed with one JSON merge patch; `undo`
  carries the resourceVersion it read, so nothing changed meanwhile is
  overwritten. Crossplane writes a composite's status on every reconcile, so
  on a conflict (409) `undo` reads the deployment again and sends the patch
  once more only if the same patch still follows from what it reads now (as
  client-go's RetryOnConflict re-reads and re-decides); a changed decision is
  refused.

`pause` and `resume` set `spec.rollout.paused`; they refuse a deployment whose
strategy is not Progressive, because the field would change nothing there.
`undo` writes back the revision before the current one: the stable revision
while a rollout is in flight, the previous one once it is Complete
(`rollout_view.undo_target`). Every mutating command prints what it changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from modelplane.api import constants as c
from modelplane.api.kinds import MODEL_DEPLOYMENT
from modelplane.api.rollout import RolloutStatus, WaveAnalysis
from modelplane.cli.kubeconfig import ConfiguredClient, KubeconfigError, load_kubeconfig
from modelplane.cli.options import max_rounds_option
from modelplane.cli.rollout_view import (
    Change,
    RolloutError,
    pause_patch,
    status_doc,
    undo_patch,
)
from modelplane.kube.client import KubeError

if TYPE_CHECKING:
    from modelplane.local.store import ObjectStore

F = TypeVar("F", bound=Callable[..., Any])
PIPE_WIDTH = 200  # piped output without COLUMNS: wide enough for the waves table

_DECISION_STYLE = {
    "Progressing": "yellow",
    "Paused": "yellow",
    "RolledBack": "red",
    "Complete": "green",
}
_PHASE_STYLE = {"Passed": "green", "Failed": "red", "Analyzing": "yellow", "Updating": "yellow"}


@dataclass(frozen=True)
class Rendered:
    """A ModelDeployment as the embedded control plane leaves it, and the store it is in
    (None: nothing to plan over)."""

    obj: dict[str, Any]
    store: ObjectStore | None = None


@dataclass(frozen=True)
class Target:
    """One ModelDeployment as read, and where a patch for it goes (None: rendered, a dry run)."""

    ref: str
    obj: dict[str, Any]
    client: ConfiguredClient | None = None
    path: str = ""
    store: ObjectStore | None = None  # rendered: the store its plan is made over


def _parse_ref(ref: str) -> tuple[str, str]:
    namespace, sep, name = ref.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise click.BadParameter(f"{ref!r} is not NAMESPACE/NAME", param_hint="--deployment")
    return namespace, name


def deployment_path(namespace: str, name: str) -> str:
    """The API path of one ModelDeployment."""
    return (
        f"/apis/{MODEL_DEPLOYMENT.api_version}/namespaces/{quote(namespace, safe='')}/"
        f"{MODEL_DEPLOYMENT.plural}/{quote(name, safe='')}"
    )


def render_deployment(paths: tuple[str, ...], namespace: str, name: str, rounds: int) -> Rendered:
    """The deployment as the embedded control plane leaves it after rendering `paths`."""
    # Imported here: the live mode needs none of the embedded control plane.
    from modelplane.local import ControlPlane, Key, LoadError, NotConvergedError, load_paths

    try:
        store = ControlPlane(load_paths(paths)).run(rounds).store
    except (LoadError, NotConvergedError) as err:
        raise click.ClickException(str(err)) from None
    obj = store.get(Key(c.API_VERSION, MODEL_DEPLOYMENT.kind, namespace, name))
    if obj is None:
        known = sorted(f"{k.namespace}/{k.name}" for k in store if k.kind == MODEL_DEPLOYMENT.kind)
        raise click.ClickException(
            f"ModelDeployment {namespace}/{name} not found in {', '.join(paths)} "
            f"(ModelDeployments there: {', '.join(known) or 'none'})"
        )
    return Rendered(dict(obj), store)


def _where(client: ConfiguredClient) -> str:
    return f"{client.server} (context {client.context_name})"


def _live(kubeconfig: Path, context: str | None, namespace: str, name: str) -> Target:
    try:
        client = load_kubeconfig(kubeconfig, context)
    except KubeconfigError as err:
        raise click.ClickException(f"{kubeconfig}: {err}") from None
    path = deployment_path(namespace, name)
    ref = f"{namespace}/{name}"
    try:
        obj = client.request("GET", path)
    except KubeError as err:
        if err.code == 404:
            raise click.ClickException(
                f"ModelDeployment {ref} not found on {_where(client)}: check the namespace "
                "and name (kubectl get modeldeployments -A)"
            ) from None
        raise click.ClickException(f"cannot read ModelDeployment {ref}: {err}") from None
    return Target(ref, obj, client, path)


def _open(
    paths: tuple[str, ...], ref: str, kubeconfig: Path | None, context: str | None, rounds: int
) -> Target:
    namespace, name = _parse_ref(ref)
    if bool(paths) == (kubeconfig is not None):
        raise click.UsageError(
            "give either PATH... (manifests, rendered here; changes are a dry run) or "
            "--kubeconfig FILE (a live control plane), not both and not neither"
        )
    if context is not None and kubeconfig is None:
        raise click.UsageError("--context needs --kubeconfig")
    if kubeconfig is not None:
        return _live(kubeconfig, context, namespace, name)
    rendered = render_deployment(paths, namespace, name, rounds)
    return Target(ref, rendered.obj, store=rendered.store)


def source_options(f: F) -> F:
    """The options every `rollout` subcommand shares: where the deployment comes from."""
    options = (
        click.argument("paths", nargs=-1, type=click.Path(exists=True)),
        click.option(
            "--deployment",
            "ref",
            required=True,
            metavar="NS/NAME",
            help="The ModelDeployment, as NAMESPACE/NAME.",
        ),
        click.option(
            "--kubeconfig",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="Read (and patch) the deployment on this live control plane instead of "
            "rendering PATH...",
        ),
        click.option("--context", help="The kubeconfig context (default: its current one)."),
        max_rounds_option,
    )
    for option in reversed(options):
        f = option(f)
    return f


# --- mutating commands ------------------------------------------------------


CONFLICT_RETRIES = 5  # status writes come once per reconcile; five in a row is contention


def _refused(target: Target, err: KubeError) -> click.ClickException:
    return click.ClickException(f"ModelDeployment {target.ref}: patch not applied: {err}")


def _meta(target: Target, key: str) -> Any:
    return (target.obj.get("metadata") or {}).get(key)


def _versioned(target: Target, patch: dict[str, Any]) -> dict[str, Any]:
    # The diff was computed against this version of the object: refuse to patch another.
    version = _meta(target, "resourceVersion")
    return {"metadata": {"resourceVersion": version}, **patch} if version else patch


def _reread(target: Target, make: Callable[[Target], Change], change: Change) -> Target:
    """The deployment read again after a conflict, if the same change still follows from it."""
    assert target.client is not None
    try:
        fresh = Target(
            target.ref, target.client.request("GET", target.path), target.client, target.path
        )
        again = make(fresh)
    except (KubeError, RolloutError) as err:
        raise click.ClickException(
            f"ModelDeployment {target.ref} changed since it was read and cannot be read "
            f"again ({err}); nothing was applied"
        ) from None
    # Generation moves with the spec only (composites have a status subresource): a
    # status write keeps it, and then the same patch means the same decision.
    if _meta(fresh, "generation") != _meta(target, "generation") or again.patch != change.patch:
        raise click.ClickException(
            f"ModelDeployment {target.ref} changed since it was read (its spec, or the "
            "revision it goes back to); nothing was applied: run the command again to see "
            "the new patch"
        )
    return fresh


def _send(
    target: Target, change: Change, make: Callable[[Target], Change], precondition: bool
) -> tuple[Target, dict[str, Any]]:
    """Send the patch; with a precondition, retry a conflict while the decision holds."""
    assert target.client is not None
    for attempt in range(CONFLICT_RETRIES + 1):
        patch = _versioned(target, change.patch) if precondition else change.patch
        try:
            return target, target.client.merge_patch(target.path, patch)
        except KubeError as err:
            if err.code != 409 or not precondition:
                raise _refused(target, err) from None
            if attempt == CONFLICT_RETRIES:
                break
        before = _meta(target, "resourceVersion")
        target = _reread(target, make, change)
        after = _meta(target, "resourceVersion")
        click.echo(
            f"resourceVersion {before} became {after} meanwhile (another writer, e.g. a "
            "status update); the same patch still follows from it: sending it again"
        )
    raise click.ClickException(
        f"ModelDeployment {target.ref} kept changing ({CONFLICT_RETRIES + 1} conflicts in a "
        "row); nothing was applied: run the command again"
    )


def _apply(
    target: Target,
    change: Change,
    make: Callable[[Target], Change],
    verify: Callable[[Target, dict[str, Any]], str],
    precondition: bool,
) -> None:
    """Print the patch and its summary; send it on a live control plane, and say what came back."""
    if change.empty:
        click.echo(change.summary)
        return
    shown = _versioned(target, change.patch) if precondition and target.client else change.patch
    click.echo(f"merge patch for ModelDeployment {target.ref}:")
    click.echo(yaml.safe_dump(shown, sort_keys=False, allow_unicode=True), nl=False)
    click.echo(change.summary)
    if target.client is None:
        click.echo(
            "not applied: the deployment was rendered from manifests (a dry run); change the "
            "manifests, or run with --kubeconfig to patch a live control plane"
        )
        return
    target, answer = _send(target, change, make, precondition)
    meta = answer.get("metadata") or {}
    assert target.client is not None
    click.echo(
        f"applied on {_where(target.client)}: generation {meta.get('generation', '?')}, "
        f"resourceVersion {meta.get('resourceVersion', '?')}; {verify(target, answer)}"
    )


def _run_change(
    paths: tuple[str, ...],
    ref: str,
    kubeconfig: Path | None,
    context: str | None,
    max_rounds: int,
    make: Callable[[Target], Change],
    verify: Callable[[Target, dict[str, Any]], str],
    precondition: bool = False,
) -> None:
    target = _open(paths, ref, kubeconfig, context, max_rounds)
    try:
        change = make(target)
    except RolloutError as err:
        raise click.ClickException(str(err)) from None
    _apply(target, change, make, verify, precondition)


def _paused_now(target: Target, answer: dict[str, Any]) -> str:
    paused = ((answer.get("spec") or {}).get("rollout") or {}).get("paused") is True
    return f"spec.rollout.paused is now {str(paused).lower()}"


def _undone(target: Target, answer: dict[str, Any]) -> str:
    # The answer's spec against the same target revision: nothing left to change.
    try:
        left = undo_patch(target.ref, {**answer, "status": target.obj.get("status")})
    except RolloutError as err:
        return f"could not check the answer: {err}"
    return "the spec now matches that revision" if left.empty else "the spec still differs"


@click.group("rollout")
def rollout() -> None:
    """Show, pause, resume or undo a ModelDeployment's Progressive rollout."""


@rollout.command("pause")
@source_options
def pause(
    paths: tuple[str, ...], ref: str, kubeconfig: Path | None, context: str | None, max_rounds: int
) -> None:
    """Hold a Progressive rollout where it is (spec.rollout.paused: true).

    No wave starts and none is judged; replicas being replaced finish. With
    PATH... the merge patch is printed, not applied.
    """
    _run_change(
        paths,
        ref,
        kubeconfig,
        context,
        max_rounds,
        lambda t: pause_patch(t.ref, t.obj, True),
        _paused_now,
    )


@rollout.command("resume")
@source_options
def resume(
    paths: tuple[str, ...], ref: str, kubeconfig: Path | None, context: str | None, max_rounds: int
) -> None:
    """Let a paused Progressive rollout go on (spec.rollout.paused: false)."""
    _run_change(
        paths,
        ref,
        kubeconfig,
        context,
        max_rounds,
        lambda t: pause_patch(t.ref, t.obj, False),
        _paused_now,
    )


@rollout.command("undo")
@source_options
def undo(
    paths: tuple[str, ...], ref: str, kubeconfig: Path | None, context: str | None, max_rounds: int
) -> None:
    """Set the spec back to the previous revision (workers, backend, caches).

    While a rollout is in flight that is the stable revision; once it is
    Complete, the revision before it. Only what differs is patched.
    """
    _run_change(
        paths,
        ref,
        kubeconfig,
        context,
        max_rounds,
        lambda t: undo_patch(t.ref, t.obj),
        _undone,
        precondition=True,
    )


# --- status -----------------------------------------------------------------


def _dash(value: object) -> str:
    return "—" if value is None or value == "" else str(value)


def _percent(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value * 100:.{digits}f}%"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} s"


def _header(doc: Mapping[str, Any], rollout: RolloutStatus | None) -> Text:
    text = Text()
    text.append(f"ModelDeployment {doc['deployment']}: ", style="bold")
    if rollout is None:
        text.append(f"rollout strategy {doc['strategy']}, no Progressive rollout recorded")
    else:
        text.append(rollout.decision, style=_DECISION_STYLE.get(rollout.decision, ""))
        of = max(doc["plannedWaves"], len(rollout.waves or ()))
        text.append(f", wave {rollout.wave} of {of}")
        text.append(f"\n  revision {rollout.revision} (spec), stable {rollout.stable_revision}")
        if rollout.previous_revision:
            text.append(f", previous {rollout.previous_revision}")
        if rollout.failed_revision:
            text.append(f", failed {rollout.failed_revision}", style="red")
    cond = doc["rolledOut"]
    if cond is not None:
        reason, message = cond["reason"] or "", cond["message"] or ""
        text.append(f"\n  RolledOut={cond['status']} {reason}: {message}")
    if doc["paused"]:
        text.append(
            "\n  paused: spec.rollout.paused is true (modelplane rollout resume)", style="yellow"
        )
    # The condition usually says the same; the rollout's own words only when they differ.
    if (
        rollout is not None
        and rollout.message
        and (cond is None or cond["message"] != rollout.message)
    ):
        text.append(f"\n  {rollout.message}")
    for problem in doc["unreadable"]:
        text.append(f"\n  unreadable: {problem}", style="red")
    return text


def _wave_row(w: WaveAnalysis) -> list[Text | str]:
    return [
        str(w.wave),
        Text(w.phase, style=_PHASE_STYLE.get(w.phase, "")),
        ", ".join(w.clusters or ()) or "—",
        f"{w.replicas}/{w.ready}/{w.reporting}",
        _dash(w.requests),
        _dash(w.errors),
        _percent(w.error_rate),
        _seconds(w.ttft_p90_seconds),
        _percent(w.ready_fraction, 0),
        _dash(w.started_at),
        _dash(w.decided_at),
        w.message,
    ]


def waves_table(rollout: RolloutStatus) -> Table:
    """Each started wave's analysis and outcome."""
    table = Table(title="Waves", title_justify="left")
    for col in (
        "Wave",
        "Phase",
        "Clusters",
        "Replicas/ready/reporting",
        "Requests",
        "Errors",
        "Error rate",
        "TTFT p90",
        "Ready",
        "Started",
        "Decided",
    ):
        table.add_column(col)
    table.add_column("Message", overflow="fold")
    for w in rollout.waves or ():
        table.add_row(*_wave_row(w))
    return table


def revisions_table(rollout: RolloutStatus) -> Table:
    """Replicas per revision, each revision's part in the rollout named."""
    table = Table(title="Replicas per revision", title_justify="left")
    for col in ("Revision", "Is", "Replicas", "Ready"):
        table.add_column(col)
    # One revision may be several of these at once (spec and stable once Complete).
    parts = (
        (rollout.revision, "spec"),
        (rollout.stable_revision, "stable"),
        (rollout.previous_revision, "previous"),
        (rollout.failed_revision, "failed"),
    )
    for r in rollout.revisions or ():
        names = [n for rev, n in parts if rev == r.revision]
        table.add_row(r.revision, ", ".join(names), str(r.replicas), str(r.ready))
    return table


def clusters_table(doc: Mapping[str, Any]) -> Table:
    """Replicas per cluster and revision, from status.placements."""
    table = Table(title="Replicas per cluster and revision", title_justify="left")
    for col in ("Cluster", "Revision", "Replicas", "Ready", "Draining"):
        table.add_column(col)
    for row in doc["clusters"]:
        table.add_row(
            row["cluster"],
            _dash(row["revision"]),
            str(row["replicas"]),
            str(row["ready"]),
            str(row["draining"]),
        )
    return table


def _console() -> Console:
    # Rich assumes 80 columns when piped, which folds the waves table beyond reading.
    console = Console(soft_wrap=False)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(soft_wrap=False, width=PIPE_WIDTH)


def status_document(target: Target) -> dict[str, Any]:
    """The status document: a rendered deployment's from the plan `explain` and `fleet`
    read (its status's when its spec is invalid), a live one's from its status."""
    if target.store is None:
        return status_doc(target.ref, target.obj)
    from modelplane.cli.plans import StoreFleet, deployment_plan

    namespace, name = _parse_ref(target.ref)
    try:
        plan = deployment_plan(target.store, namespace, name)
    except click.ClickException:
        plan = None  # an invalid spec: the composer plans nothing, the status says why
    if plan is None:
        return status_doc(target.ref, target.obj)
    composed = StoreFleet(target.store, target.obj).composed()
    return status_doc(target.ref, target.obj, plan, composed)


@rollout.command("status")
@source_options
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"]),
    default="table",
    show_default=True,
    help="Output format.",
)
def status(
    paths: tuple[str, ...],
    ref: str,
    kubeconfig: Path | None,
    context: str | None,
    max_rounds: int,
    output: str,
) -> None:
    """Show where a ModelDeployment's rollout is.

    The revisions (spec, stable, previous, failed), the decision and the
    RolledOut condition, each wave's analysis (replicas, requests, errors,
    error rate, TTFT p90, ready fraction, when it started and was decided),
    and the replicas per revision and per cluster.
    """
    target = _open(paths, ref, kubeconfig, context, max_rounds)
    doc = status_document(target)
    if output == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
        return
    if output == "yaml":
        click.echo(yaml.safe_dump(doc, sort_keys=True, allow_unicode=True), nl=False)
        return
    raw = doc["rollout"]
    rollout_status = None if raw is None else RolloutStatus.model_validate(raw)
    console = _console()
    console.print(_header(doc, rollout_status))
    if rollout_status is not None:
        console.print(waves_table(rollout_status))
        console.print(revisions_table(rollout_status))
    console.print(clusters_table(doc))
