"""Which composer serves which kind: the one function dispatches on this table.

The table names each composer by its module, imported on first use: a process
that composes a few kinds (a render of one folder, `modelplane validate`)
loads only their wings, and importing the registry loads none
(tests/compose/test_registry_deferred.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any, cast

from pydantic import BaseModel

from modelplane.api.clouds import CLOUDS
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import InferenceClusterSpec
from modelplane.api.kinds import (
    FLEET_QUOTA,
    INFERENCE_CLASS,
    INFERENCE_CLUSTER,
    INFERENCE_GATEWAY,
    MODEL_CACHE,
    MODEL_DEPLOYMENT,
    MODEL_ENDPOINT,
    MODEL_REPLICA,
    MODEL_SERVICE,
    SERVING_STACK,
    Kind,
    provisioning_kind,
)
from modelplane.compose.types import Composer

_COMPOSE = "modelplane.compose."


def cloud_module(cloud: str) -> str:
    """The module of a cloud's provisioning composer, whose `PROVISIONER` holds its
    composer and what its provider reports (`compose/clusters/clouds/`)."""
    return f"{_COMPOSE}clusters.clouds.{cloud.lower()}"


# (apiVersion, kind) → the kind and where its composer lives: (module, attribute path).
COMPOSERS: dict[tuple[str, str], tuple[Kind, tuple[str, str]]] = {
    (k.api_version, k.kind): (k, (module, attribute))
    for k, module, attribute in (
        (INFERENCE_CLASS, _COMPOSE + "clusters.inference_class", "compose"),
        (INFERENCE_CLUSTER, _COMPOSE + "clusters.inference_cluster", "compose"),
        (MODEL_DEPLOYMENT, _COMPOSE + "deployments.model_deployment", "compose"),
        (MODEL_REPLICA, _COMPOSE + "replica.model_replica", "compose"),
        # One provisioning composite per cloud (compose/clusters/clouds/), each
        # module's PROVISIONER.
        *(
            (provisioning_kind(cloud), cloud_module(cloud.name), "PROVISIONER.compose")
            for cloud in CLOUDS
        ),
        (SERVING_STACK, _COMPOSE + "clusters.serving_stack", "compose"),
        (MODEL_CACHE, _COMPOSE + "caches.model_cache", "compose"),
        (FLEET_QUOTA, _COMPOSE + "deployments.fleet_quota", "compose"),
        (MODEL_ENDPOINT, _COMPOSE + "routing.model_endpoint", "compose"),
        (MODEL_SERVICE, _COMPOSE + "routing.model_service", "compose"),
        (INFERENCE_GATEWAY, _COMPOSE + "routing.inference_gateway", "compose"),
    )
}


def load(where: tuple[str, str]) -> Any:
    """The object at `where` (module, dotted attribute path), importing its module
    the first time (then it is found in `sys.modules`, one lookup per call)."""
    found: Any = sys.modules.get(where[0]) or import_module(where[0])
    for name in where[1].split("."):
        found = getattr(found, name)
    return found


def composer_for(api_version: str, kind: str) -> Composer | None:
    """Return the composer for a composite's apiVersion/kind, or None if unknown."""
    entry = COMPOSERS.get((api_version, kind))
    return cast(Composer, load(entry[1])) if entry else None


# What a composer refuses in one parsed spec beyond its types, by kind; each
# message names its field. `modelplane validate` runs the same functions, so it
# refuses what the function would.
SPEC_CHECKS: dict[str, tuple[str, str]] = {
    INFERENCE_CLASS.kind: (_COMPOSE + "clusters.inference_class", "device_problems"),
    MODEL_DEPLOYMENT.kind: (_COMPOSE + "deployments.model_deployment", "spec_errors"),
    MODEL_REPLICA.kind: (_COMPOSE + "replica.model_replica", "spec_errors"),
}


def spec_problems(kind: str, spec: BaseModel) -> list[str]:
    """What the composer of `kind` would refuse in `spec`, which its types accepted."""
    where = SPEC_CHECKS.get(kind)
    if where is None:
        return []
    check: Callable[[Any], list[str]] = load(where)
    return check(spec)


def provisioning_problems(
    name: str, spec: InferenceClusterSpec, classes: Mapping[str, InferenceClassSpec]
) -> list[str]:
    """Why the InferenceCluster composer would not provision `spec` with these classes
    (its PoolsResolved NotProvisionable), e.g. a class without provisioning for the cloud."""
    problems: Callable[..., list[str]] = load(
        (_COMPOSE + "clusters.sources", "provisioning_problems")
    )
    return problems(name, spec, classes)
