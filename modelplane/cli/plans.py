"""One ModelDeployment's plan over a rendered store: what `explain`, `fleet` and `rollout` read.

`deployment_plan` calls the composer's own planner (`plan_deployment`) on the
objects the embedded control plane's store holds, through `StoreFleet`, the
store's side of the planner's fleet seam (the function's side is the
composer's `_RequiredFleet`). The same function on the same objects: what
these commands show is what the deployment's status says once it is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from modelplane.api import constants as c
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.compose.common import parse_spec
from modelplane.compose.deployments.planner import DeploymentPlan, plan_deployment
from modelplane.local import Key
from modelplane.local.fetch import resource_name
from modelplane.local.store import ObjectStore, owned_by
from modelplane.scheduling.scheduler import schedule_input


def deployment_plan(store: ObjectStore, namespace: str, name: str) -> DeploymentPlan | None:
    """The plan the deployment's composer makes over the store (None if absent): the
    same function on the same objects, so what is shown is what the status says.

    Raises click.ClickException when the deployment's spec is invalid.
    """
    deployment = store.get(Key(c.API_VERSION, c.KIND_MODEL_DEPLOYMENT, namespace, name))
    if deployment is None:
        return None
    spec, error = parse_spec(ModelDeploymentSpec, deployment)
    if spec is None:
        raise click.ClickException(f"ModelDeployment {namespace}/{name} is invalid: {error}")
    return plan_deployment(deployment, spec, StoreFleet(store, deployment), schedule_input)


class StoreFleet:
    """The fleet as the local control plane's store holds it, around one deployment."""

    def __init__(self, store: ObjectStore, deployment: dict[str, Any]) -> None:
        """The fleet of `store` as `deployment` (an object of it) sees it."""
        self._store = store
        self._deployment = deployment
        self._namespace = str(deployment["metadata"].get("namespace") or "")

    def composed(self) -> Mapping[str, dict[str, Any]]:
        """The deployment's composed resources by composition resource name, as the
        control plane observes them."""
        out: dict[str, dict[str, Any]] = {}
        for obj in self._store.candidates_of(self._deployment):
            found = resource_name(obj)
            if found and owned_by(obj, self._deployment) and found not in out:
                out[found] = obj
        return out

    def clusters(self) -> Sequence[Mapping[str, Any]]:
        """Every InferenceCluster in the store."""
        return self._store.list(c.API_VERSION, c.KIND_INFERENCE_CLUSTER, None, None)

    def replicas(self) -> Sequence[Mapping[str, Any]]:
        """Every ModelReplica in the store, every namespace."""
        return self._store.list(c.API_VERSION, c.KIND_MODEL_REPLICA, None, None)

    def cache(self, name: str) -> Mapping[str, Any] | None:
        """The ModelCache `name` in the deployment's namespace."""
        return self._store.get(Key(c.API_VERSION, c.KIND_MODEL_CACHE, self._namespace, name))

    def quotas(self) -> Sequence[Mapping[str, Any]]:
        """The FleetQuotas of the deployment's namespace."""
        return self._store.list(c.API_VERSION, c.KIND_FLEET_QUOTA, self._namespace, None)

    def priority_classes(self) -> Sequence[Mapping[str, Any]]:
        """Every PriorityClass in the store."""
        return self._store.list(c.PRIORITY_CLASS_API_VERSION, c.KIND_PRIORITY_CLASS, None, None)

    def placers(self) -> Sequence[Mapping[str, Any]]:
        """Every ModelDeployment in the store (a preemption counts only if its own
        deployment placed the preempting replica)."""
        return self._store.list(c.API_VERSION, c.KIND_MODEL_DEPLOYMENT, None, None)

    def services(self) -> Sequence[dict[str, Any]]:
        """The ModelServices of the deployment's namespace."""
        return self._store.list(c.API_VERSION, c.KIND_MODEL_SERVICE, self._namespace, None)
