"""What `modelplane rollout` reads and writes, as plain data (no I/O).

`status_doc` reads a ModelDeployment through the typed reader and says where
its rollout is, with the replicas per cluster and revision: for a rendered
deployment from the plan its composer makes (`planned_cluster_revisions`, the
plan `explain` and `fleet` read), for a live one from
`status.placements[].revision`. `pause_patch` and `undo_patch` compute the
JSON merge patch (RFC 7386) a command sends: `undo` writes back a revision's
template — each role's workers, the backend and the caches — and only what
differs from the spec, with `null` for what the template no longer has (a
merge patch merges mappings, so a key left out would survive the undo).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.model_deployment import ModelDeploymentSpec, Workers
from modelplane.api.objects import is_condition_true
from modelplane.api.readers import read_model_deployment
from modelplane.api.roles import DISAGGREGATED_ROLES, role_fields, role_path
from modelplane.api.rollout import STRATEGY_MAKE_BEFORE_BREAK, STRATEGY_PROGRESSIVE, RolloutStatus
from modelplane.compose.deployments.conditions import rolled_out
from modelplane.compose.deployments.planner import DeploymentPlan, replica_key
from modelplane.compose.types import ComposeResult

# Decisions while a rollout is in flight: undo goes back to the stable revision.
IN_FLIGHT = frozenset({"Progressing", "Paused", "RolledBack"})
DEFAULT_BACKEND = str(ModelDeploymentSpec.model_fields["backend"].default)


class RolloutError(ValueError):
    """The command cannot do what was asked; the message says why and what to do instead."""


@dataclass(frozen=True)
class Change:
    """A merge patch for one deployment and the one line that says what it does."""

    patch: dict[str, Any]
    summary: str

    @property
    def empty(self) -> bool:
        """Whether the spec already is what the command asks for."""
        return not self.patch.get("spec")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def strategy_of(obj: Mapping[str, Any]) -> str:
    """The deployment's spec.rollout.strategy (the default when unset)."""
    strategy = _map(_map(obj.get("spec")).get("rollout")).get("strategy")
    return str(strategy or STRATEGY_MAKE_BEFORE_BREAK)


def paused_of(obj: Mapping[str, Any]) -> bool:
    """Whether spec.rollout.paused is set."""
    return _map(_map(obj.get("spec")).get("rollout")).get("paused") is True


def planned_waves(obj: Mapping[str, Any]) -> int:
    """How many waves spec.rollout names."""
    waves = _map(_map(obj.get("spec")).get("rollout")).get("waves")
    return len(waves) if isinstance(waves, list) else 0


@dataclass(frozen=True)
class ClusterRevision:
    """How many of a deployment's replicas on one cluster run one revision."""

    cluster: str
    revision: str | None  # None: the placement names none (not a Progressive deployment)
    replicas: int
    ready: int
    draining: int


# One listed replica: (cluster, revision, ready, draining).
Listed = tuple[str, str | None, bool, bool]


def _per_cluster(listed: Iterable[Listed]) -> list[ClusterRevision]:
    counts: dict[tuple[str, str | None], list[int]] = {}
    for cluster, revision, ready, draining in listed:
        row = counts.setdefault((cluster, revision), [0, 0, 0])
        row[0] += 1
        row[1] += 1 if ready else 0
        row[2] += 1 if draining else 0
    return [
        ClusterRevision(cluster, revision, *counts[(cluster, revision)])
        for cluster, revision in sorted(counts, key=lambda k: (k[0], k[1] or ""))
    ]


def cluster_revisions(obj: Mapping[str, Any]) -> list[ClusterRevision]:
    """Replicas per (cluster, revision) from status.placements, in name order."""
    placements = read_model_deployment(obj).status.placements or ()
    return _per_cluster((p.cluster, p.revision, p.ready, bool(p.draining)) for p in placements)


def planned_cluster_revisions(
    plan: DeploymentPlan, composed: Mapping[str, Mapping[str, Any]]
) -> list[ClusterRevision]:
    """Replicas per (cluster, revision) as the plan lists them (`composed`: the deployment's
    composed resources, as observed), in name order: what status.placements says once the
    plan is written."""
    listed: list[Listed] = [
        (
            p.cluster,
            plan.revisions.listed(p.name, p.draining),
            is_condition_true(composed.get(replica_key(p.cluster, p.index)), c.CONDITION_READY),
            p.draining,
        )
        for p in plan.schedule.replicas
    ]
    # A replica leaving the routes serves until it is deleted: the composer lists it
    # Ready and draining, at the revision it runs.
    listed += [(p.cluster, plan.revisions.running(p.name), True, True) for p, _ in plan.leaving]
    return _per_cluster(listed)


def _rolled_out(plan: DeploymentPlan) -> dict[str, Any] | None:
    """The RolledOut condition the plan sets; None when it sets none."""
    result = ComposeResult()
    rolled_out(result, plan.revisions)
    cond = next((x for x in result.conditions if x.type == c.CONDITION_ROLLED_OUT), None)
    if cond is None:
        return None
    return {"status": cond.status, "reason": cond.reason, "message": cond.message}


def status_doc(
    ref: str,
    obj: Mapping[str, Any],
    plan: DeploymentPlan | None = None,
    composed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Where the deployment's rollout is, as plain data (what `-o json|yaml` prints).

    With its plan (a rendered deployment, `cli/plans.py`; `composed` its composed
    resources as observed), the rollout, the RolledOut condition and the replicas per
    cluster and revision are the plan's, as `explain` and `fleet` show them; without (a
    live deployment), the status's.
    """
    observed = read_model_deployment(obj)
    rollout = observed.status.rollout
    cond = observed.condition(c.CONDITION_ROLLED_OUT)
    rolled = (
        None
        if cond is None
        else {"status": cond.status, "reason": cond.reason, "message": cond.message}
    )
    clusters = cluster_revisions(obj)
    if plan is not None:
        rollout = None if plan.revisions.rollout is None else plan.revisions.rollout.status
        rolled = _rolled_out(plan) or rolled
        clusters = planned_cluster_revisions(plan, composed or {})
    return {
        "deployment": ref,
        "strategy": strategy_of(obj),
        "paused": paused_of(obj),
        "plannedWaves": planned_waves(obj),
        "rollout": None if rollout is None else rollout.to_dict(),
        "rolledOut": rolled,
        "clusters": [asdict(r) for r in clusters],
        "unreadable": list(observed.unreadable),
    }


def _require_progressive(ref: str, obj: Mapping[str, Any]) -> None:
    strategy = strategy_of(obj)
    if strategy != STRATEGY_PROGRESSIVE:
        raise RolloutError(
            f"ModelDeployment {ref} uses rollout strategy {strategy}: spec.rollout.paused holds "
            f"only a Progressive rollout, so it would change nothing; set "
            f"spec.rollout.strategy: {STRATEGY_PROGRESSIVE} (with waves) to roll out in waves"
        )


def pause_patch(ref: str, obj: Mapping[str, Any], paused: bool) -> Change:
    """Set spec.rollout.paused; refused for a deployment that does not roll out in waves."""
    _require_progressive(ref, obj)
    verb = "pause" if paused else "resume"
    if paused_of(obj) == paused:
        state = "paused" if paused else "not paused"
        return Change({}, f"rollout {verb} {ref}: already {state}; nothing to change")
    revision = read_model_deployment(obj).status.rollout
    at = f" at revision {revision.revision}" if revision is not None else ""
    what = "holds where it is" if paused else "goes on"
    return Change(
        {"spec": {"rollout": {"paused": paused}}},
        f"rollout {verb} {ref}: spec.rollout.paused {str(paused).lower()} (the rollout{at} {what})",
    )


def undo_target(ref: str, rollout: RolloutStatus | None) -> tuple[str, dict[str, Any]]:
    """The revision `undo` goes back to and its template.

    In flight (Progressing, Paused, RolledBack) that is the stable revision; once
    Complete, the revision before it.
    """
    if rollout is None:
        raise RolloutError(
            f"ModelDeployment {ref} has no status.rollout: only a Progressive rollout records "
            "revisions (or the control plane has not reconciled it yet); nothing to undo"
        )
    if rollout.decision in IN_FLIGHT:
        if not rollout.stable_template:
            raise RolloutError(
                f"ModelDeployment {ref}: the stable revision {rollout.stable_revision} has no "
                "template in status.rollout.stableTemplate; edit the spec back by hand"
            )
        return rollout.stable_revision, rollout.stable_template
    if not rollout.previous_revision or not rollout.previous_template:
        raise RolloutError(
            f"ModelDeployment {ref}: the rollout of revision {rollout.revision} is "
            f"{rollout.decision} and no earlier revision is recorded "
            "(status.rollout.previousTemplate); nothing to undo to"
        )
    return rollout.previous_revision, rollout.previous_template


def merge_diff(current: Any, desired: Any) -> Any:
    """The merge patch that turns `current` into `desired` (RFC 7386: mappings merge, `null`
    removes a key, anything else is replaced whole)."""
    if not isinstance(current, Mapping) or not isinstance(desired, Mapping):
        return desired
    patch: dict[str, Any] = {k: None for k in current if k not in desired}
    for key, value in desired.items():
        if key not in current:
            if value is not None:
                patch[key] = value
        elif current[key] != value:
            patch[key] = merge_diff(current[key], value)
    return patch


def _roles_of(spec: Mapping[str, Any]) -> set[str]:
    roles = {r for r in DISAGGREGATED_ROLES if isinstance(spec.get(r), Mapping)}
    return roles or {c.ROLE_UNIFIED}


def _workers(value: Any, where: str) -> dict[str, Any]:
    """Workers in their canonical wire form (defaults filled), so equal workers compare equal."""
    try:
        return Workers.model_validate(value).to_dict()
    except ValidationError as err:
        raise RolloutError(f"{where} is not valid workers: {err.errors()[0]['msg']}") from None


def _role_patches(spec: Mapping[str, Any], roles: Mapping[str, Any], revision: str) -> dict:
    if set(roles) != _roles_of(spec):
        raise RolloutError(
            f"revision {revision} has roles {', '.join(sorted(roles))} but the spec has "
            f"{', '.join(sorted(_roles_of(spec)))}: a revision does not record node selectors, "
            "so undo cannot change the role layout; edit the spec by hand"
        )
    patch: dict[str, Any] = {}
    for role, raw in sorted(roles.items()):
        desired = _workers(raw, f"revision {revision}'s {role} workers")
        current_raw = role_fields(spec, role).get("workers")
        current = _workers(current_raw, f"{role_path(role)}.workers")
        diff = merge_diff(current, desired)
        if diff:
            if role == c.ROLE_UNIFIED:
                patch["workers"] = diff
            else:
                patch[role] = {"workers": diff}
    return patch


def _caches_patch(spec: Mapping[str, Any], names: Any, revision: str) -> dict[str, Any]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RolloutError(f"revision {revision}'s template names its caches unreadably")
    current = [_map(x).get("name") for x in spec.get("caches") or []]
    if current == names:
        return {}
    return {"caches": [{"name": n} for n in names] if names else None}


def undo_patch(ref: str, obj: Mapping[str, Any]) -> Change:
    """The merge patch that sets the spec back to the previous revision's template."""
    rollout = read_model_deployment(obj).status.rollout
    revision, template = undo_target(ref, rollout)
    roles = template.get("roles")
    if not isinstance(roles, Mapping) or not roles:
        raise RolloutError(f"revision {revision}'s template names no roles; edit the spec by hand")
    spec = _map(obj.get("spec"))
    body = _role_patches(spec, roles, revision)
    backend = str(template.get("backend") or DEFAULT_BACKEND)
    if str(spec.get("backend") or DEFAULT_BACKEND) != backend:
        body["backend"] = backend
    body |= _caches_patch(spec, template.get("caches") or [], revision)
    current = rollout.revision if rollout is not None else "?"
    if not body:
        return Change(
            {}, f"rollout undo {ref}: the spec already is revision {revision}; nothing to change"
        )
    return Change(
        {"spec": body}, f"rollout undo {ref}: spec back to revision {revision} (from {current})"
    )


__all__ = [
    "Change",
    "ClusterRevision",
    "RolloutError",
    "cluster_revisions",
    "merge_diff",
    "pause_patch",
    "planned_cluster_revisions",
    "status_doc",
    "undo_patch",
    "undo_target",
]
