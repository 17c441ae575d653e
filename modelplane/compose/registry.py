"""Which composer serves which kind: the one function dispatches on this table."""

from __future__ import annotations

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
from modelplane.compose.clusters import inference_class, inference_cluster, serving_stack
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
