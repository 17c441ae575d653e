"""Replica template revisions: what a revision is, its hash, and composing one.

A revision is the part of a ModelDeployment that decides what a replica
*runs*: each role's workers (count, topology, pod template), the backend and
the caches. Where it runs (node selector, clusters, priority) is the
scheduler's business and not part of it, so editing a selector moves
replicas (make-before-break) without starting a rollout.

The template is kept in one canonical form, the same whether it is read from
the deployment's spec or from a ModelReplica's spec (which carries exactly
those fields), so a replica's revision is always computed from what it runs,
never trusted from a label: the label `modelplane.ai/revision` only shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.common import LocalObjectReference
from modelplane.api.model_deployment import ModelDeploymentSpec, Workers
from modelplane.api.objects import short_hash
from modelplane.api.roles import DISAGGREGATED_ROLES, is_disaggregated, role_fields

Template = dict[str, Any]

_BACKEND = "backend"
_CACHES = "caches"
_ROLES = "roles"
# Only a Dynamo replica has a framework; left out otherwise, so every other
# deployment's revision names stay what they were.
_FRAMEWORK = "framework"


def template_of(spec: ModelDeploymentSpec) -> Template:
    """The revision template of a deployment's spec."""
    template: Template = {
        _BACKEND: spec.backend,
        _CACHES: [x.name for x in spec.caches or ()],
        _ROLES: {name: role.workers.to_dict() for name, role in spec.roles().items()},
    }
    if spec.framework is not None:
        template[_FRAMEWORK] = spec.framework
    return template


def revision_of(template: Template) -> str:
    """The revision's name: a short stable hash of its canonical template."""
    return short_hash(json.dumps(template, sort_keys=True, separators=(",", ":")))


def replica_template(spec: Any) -> Template | None:
    """The revision template a ModelReplica's raw spec runs; None when it does not read."""
    if not isinstance(spec, Mapping):
        return None
    roles = DISAGGREGATED_ROLES if is_disaggregated(spec) else (c.ROLE_UNIFIED,)
    workers: dict[str, Any] = {}
    try:
        for role in roles:
            workers[role] = Workers.model_validate(role_fields(spec, role).get("workers")).to_dict()
        caches = [LocalObjectReference.model_validate(x).name for x in spec.get(_CACHES) or ()]
    except (ValidationError, TypeError):
        return None
    backend = spec.get(_BACKEND, c.BACKEND_NATIVE)
    framework = spec.get(_FRAMEWORK)
    if not isinstance(backend, str) or not isinstance(framework, str | None):
        return None
    template: Template = {_BACKEND: backend, _CACHES: caches, _ROLES: workers}
    if framework is not None:
        template[_FRAMEWORK] = framework
    return template


def replica_revision(spec: Any) -> str | None:
    """The revision a ModelReplica's raw spec runs; None when it does not read."""
    template = replica_template(spec)
    return None if template is None else revision_of(template)


def with_template(spec: ModelDeploymentSpec, template: Template) -> ModelDeploymentSpec | None:
    """`spec` running `template` instead of its own; None when the template does not fit
    the spec's form (its roles differ) or does not read."""
    roles = template.get(_ROLES)
    if not isinstance(roles, Mapping) or set(roles) != set(spec.roles()):
        return None
    body = spec.to_dict()
    body[_BACKEND] = template.get(_BACKEND, c.BACKEND_NATIVE)
    caches = template.get(_CACHES)
    body.pop(_CACHES, None)
    if caches:
        body[_CACHES] = [{"name": name} for name in caches]
    for role, workers in roles.items():
        if role == c.ROLE_UNIFIED:
            body["workers"] = workers
        else:
            body[role] = {**body[role], "workers": workers}
    try:
        return ModelDeploymentSpec.model_validate(body)
    except (ValidationError, TypeError):
        return None
