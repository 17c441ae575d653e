"""Which composer serves which kind: the one function dispatches on this table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

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
from modelplane.compose.caches import model_cache
from modelplane.compose.clusters import inference_class, inference_cluster, serving_stack, sources
from modelplane.compose.clusters.clouds import PROVISIONERS
from modelplane.compose.deployments import fleet_quota, model_deployment
from modelplane.compose.replica import model_replica
from modelplane.compose.routing import inference_gateway, model_endpoint, model_service
from modelplane.compose.types import Composer

COMPOSERS: dict[tuple[str, str], tuple[Kind, Composer]] = {
    (k.api_version, k.kind): (k, fn)
    for k, fn in (
        (INFERENCE_CLASS, inference_class.compose),
        (INFERENCE_CLUSTER, inference_cluster.compose),
        (MODEL_DEPLOYMENT, model_deployment.compose),
        (MODEL_REPLICA, model_replica.compose),
        # One provisioning composite per cloud (compose/clusters/clouds/).
        *((provisioning_kind(p.cloud), p.compose) for p in PROVISIONERS),
        (SERVING_STACK, serving_stack.compose),
        (MODEL_CACHE, model_cache.compose),
        (FLEET_QUOTA, fleet_quota.compose),
        (MODEL_ENDPOINT, model_endpoint.compose),
        (MODEL_SERVICE, model_service.compose),
        (INFERENCE_GATEWAY, inference_gateway.compose),
    )
}


def composer_for(api_version: str, kind: str) -> Composer | None:
    """Return the composer for a composite's apiVersion/kind, or None if unknown."""
    entry = COMPOSERS.get((api_version, kind))
    return entry[1] if entry else None


# What a composer refuses in one parsed spec beyond its types, by kind; each
# message names its field. `modelplane validate` runs the same functions, so it
# refuses what the function would.
SPEC_CHECKS: dict[str, Callable[[Any], list[str]]] = {
    INFERENCE_CLASS.kind: inference_class.device_problems,
    MODEL_DEPLOYMENT.kind: model_deployment.spec_errors,
    MODEL_REPLICA.kind: model_replica.spec_errors,
}


def spec_problems(kind: str, spec: BaseModel) -> list[str]:
    """What the composer of `kind` would refuse in `spec`, which its types accepted."""
    check = SPEC_CHECKS.get(kind)
    return check(spec) if check is not None else []


def provisioning_problems(
    name: str, spec: InferenceClusterSpec, classes: Mapping[str, InferenceClassSpec]
) -> list[str]:
    """Why the InferenceCluster composer would not provision `spec` with these classes
    (its PoolsResolved NotProvisionable), e.g. a class without provisioning for the cloud."""
    return sources.provisioning_problems(name, spec, classes)
