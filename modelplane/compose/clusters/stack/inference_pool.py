"""The InferencePool CRD on every cluster the stack serves.

A disaggregated replica (native or KServe) sends an `inference.networking.k8s.io/v1`
InferencePool and routes its HTTPRoute to it. Gateway API Inference Extension
v1.6.0 ships the CRD only as a release manifest (no chart at that tag), so the
stack applies the CRD itself as an Object; Envoy Gateway serves pools through
Envoy AI Gateway's extension server (`charts.AI_GATEWAY`, `_envoy_gateway_values`).
Every cluster with the stack gets both unless `spec.servingStack.inferencePool.enabled`
is false; then the fleet scheduler places no disaggregated replica there.
"""

from __future__ import annotations

from modelplane.api.frozen import frozen
from modelplane.api.serving_stack import ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.clusters.stack.inference_pool_crd import CRD, VERSION
from modelplane.compose.objects import Item, wrap
from modelplane.compose.readiness import EXISTS
from modelplane.compose.types import Resource

KEY = "inference-pool-crd"
# The release file carries the empty status it was generated with; the API
# server owns a CRD's status, so what is applied is everything else. Built
# once and shared read-only by every result (deep-copying it per call was a
# tenth of the ServingStack composer's time).
_MANIFEST = frozen({k: v for k, v in CRD.items() if k != "status"})


def crd_object(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    """The InferencePool CRD (GIE `VERSION`) wrapped in an Object, when the stack serves pools.

    Left on the cluster when the Object goes (deleting a CRD deletes every pool),
    as Helm leaves the CRDs it installs.
    """
    if not spec.inference_pool:
        return {}
    item = Item(
        KEY,
        resource_name(spec.cluster_name, KEY),
        _MANIFEST,
        EXISTS,
        f"CustomResourceDefinition {CRD['metadata']['name']} ({VERSION})",
        deletable=False,
    )
    obj_labels = labels(spec.cluster_name, "inference-pool")
    return {KEY: wrap(item, namespace, spec.provider_config_name, obj_labels)}
