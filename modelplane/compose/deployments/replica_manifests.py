"""The ModelReplicas a ModelDeployment composes: one per planned replica.

It owns how a planned replica becomes desired state: a manifest stamped from
the spec of the revision the replica runs (validated against the ModelReplica
schema, labelled with the workers' template labels it may inherit), or the
replica exactly as observed while it drains or runs a revision that can no
longer be composed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.objects import is_condition_true, label_value
from modelplane.api.roles import put_role_fields
from modelplane.compose.common import as_desired, composite_metadata, meta, without_crossplane_spec
from modelplane.compose.deployments.planner import observed_replica, replica_key
from modelplane.compose.deployments.revisions import Revisions
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Resource
from modelplane.scheduling.types import PlannedReplica, ScheduleResult

_LABEL_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_KEY = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_LABEL_NAME}$"
)


def compose_replicas(
    inp: ComposeInput,
    result: ComposeResult,
    revisions: Revisions,
    plan: ScheduleResult,
    listed: Sequence[Resource],
) -> tuple[str, str] | None:
    """One ModelReplica per planned replica, each from the spec of the revision it runs;
    (which, why) when one is inconsistent. `listed` is the fleet's replica listing."""
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    labels = user_labels(revisions.spec, result)
    for planned in plan.replicas:
        key = replica_key(planned.cluster, planned.index)
        revision = revisions.of(planned.name)
        spec = revisions.spec_for(revision)
        try:
            manifest = _draining_manifest(inp.observed, listed, planned, key)
            if manifest is None and spec is None:
                # A revision it cannot be composed from (no template): it stays as it is
                # until the rollout replaces it.
                manifest = _as_observed(inp.observed, listed, planned.name, key)
            if manifest is None:
                manifest = replica_manifest(
                    name, namespace, spec or revisions.spec, planned, labels, revision
                )
        except (ValidationError, KeyError) as err:
            detail = (
                format_validation_error(err, "spec") if isinstance(err, ValidationError) else err
            )
            return f"replica {planned.cluster}/{planned.index}", str(detail)
        ready = is_condition_true(inp.observed.get(key), c.CONDITION_READY)
        result.desired[key] = DesiredResource(manifest, "True" if ready else "False")
    return None


def _draining_manifest(
    observed: Mapping[str, Resource],
    listed: Sequence[Resource],
    planned: PlannedReplica,
    key: str,
) -> Resource | None:
    """A draining replica exactly as observed: it keeps serving what it serves today.

    Re-composing it from the (edited) spec would roll its pods, which is the
    break make-before-break avoids. None when it is not draining or not observed
    (then it is composed from the plan like any other).
    """
    if not planned.draining:
        return None
    return _as_observed(observed, listed, planned.name, key)


def _as_observed(
    observed: Mapping[str, Resource], listed: Sequence[Resource], name: str, key: str
) -> Resource | None:
    """The replica `name` (composed under `key`) as observed, as desired state; None if unseen."""
    found = observed_replica(observed, listed, name, key)
    return None if found is None else desired_copy(found)


def desired_copy(observed: Resource) -> Resource:
    """An observed replica as desired state: kept exactly as it runs."""
    desired = without_crossplane_spec(as_desired(observed))
    desired["metadata"].pop("annotations", None)
    return desired


def user_labels(spec: ModelDeploymentSpec, result: ComposeResult) -> dict[str, str]:
    """The workers' template labels a replica inherits, minus reserved and invalid ones."""
    labels: dict[str, str] = {}
    for role in spec.roles().values():
        tmeta = role.workers.template.get("metadata")
        raw = tmeta.get("labels") if isinstance(tmeta, dict) else None
        if not isinstance(raw, dict):
            continue
        for key, value in sorted(raw.items()):
            if str(key).startswith(c.LABEL_PREFIX):
                continue
            if (
                not isinstance(value, str)
                or not _LABEL_KEY.match(str(key))
                or len(str(key).rsplit("/", 1)[-1]) > 63
                or len(str(key)) > 316
                or label_value(value) != value
            ):
                msg = (
                    f"{role.workers_path}.template.metadata.labels: {key!r}={value!r} "
                    "is not a valid Kubernetes label; it is not copied to the replicas"
                )
                result.warn(c.REASON_INVALID_LABEL, msg)
                continue
            labels[str(key)] = value
    return labels


def replica_manifest(
    deployment: str,
    namespace: str,
    spec: ModelDeploymentSpec,
    planned: PlannedReplica,
    user_labels: dict[str, str],
    revision: str,
) -> Resource:
    """The ModelReplica XR of one planned replica, validated against its own schema."""
    roles = spec.roles()
    body: dict[str, Any] = {
        "deploymentName": deployment,
        "clusterName": planned.cluster,
        "index": planned.index,
    }
    if spec.priority:
        body["priority"] = spec.priority
    if planned.preempts:
        body["preempts"] = [{"namespace": ns, "name": n} for ns, n in planned.preempts]
    if spec.caches:
        body["caches"] = [x.to_dict() for x in spec.caches]
    if spec.backend != c.BACKEND_NATIVE:
        body["backend"] = spec.backend
    if spec.framework is not None:
        body["framework"] = spec.framework
    assigned = {ra.role for ra in planned.roles}
    if assigned != set(roles):
        raise KeyError(f"planned roles {sorted(assigned)} != spec roles {sorted(roles)}")
    for ra in planned.roles:
        role_body = {
            "nodePoolName": ra.pool,
            "deviceRequests": [d.to_dict() for d in ra.device_requests],
            "workers": roles[ra.role].workers.to_dict(),
        }
        put_role_fields(body, ra.role, role_body)
    ModelReplicaSpec.model_validate(body)
    labels = {
        **user_labels,
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_DEPLOYMENT: label_value(deployment),
        c.LABEL_CLUSTER: label_value(planned.cluster),
        c.LABEL_REPLICA_INDEX: str(planned.index),
        c.LABEL_REVISION: revision,
    }
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND_MODEL_REPLICA,
        "metadata": composite_metadata(planned.name, namespace, labels),
        "spec": body,
    }
