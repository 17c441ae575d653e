"""A ModelDeployment's ModelEndpoints follow its replicas: warm-up → Ready → drain.

The scheduler's answer is scripted (one replica on cluster `a`); what changes
from step to step is only what the control plane observes: the replica's
readiness, its endpoint, and its cluster's gateway address.
"""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.routing import model_service
from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.scheduling.types import PlannedReplica, RoleAssignment, ScheduleResult

CEL = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
URL = "https://203.0.113.10/team-a/chat/0"
GPU = ResolvedDeviceRequest(
    name="gpu", device_class_name="gpu.nvidia.com", count=1, selectors=[{"cel": CEL}]
)
DEPLOYMENT = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelDeployment",
    "metadata": {"name": "chat", "namespace": "team-a"},
    "spec": {
        "replicas": 1,
        "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": CEL}]}]},
        "workers": {
            "template": {
                "metadata": {"labels": {"model": "chat-8b", "track": "stable"}},
                "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]},
            }
        },
    },
}
PLAN = ScheduleResult(
    replicas=(
        PlannedReplica(
            cluster="a",
            index=0,
            roles=(RoleAssignment("unified", "l4", (GPU,), 1),),
            retained=True,
            name="chat-a0",
        ),
    ),
    desired=1,
)
REPLICA_KEY = md.replica_key("a", 0)
ENDPOINT_KEY = f"endpoint-{REPLICA_KEY}"


def scheduler(*_: Any) -> ScheduleResult:
    return PLAN


def cluster(gateway: str | None) -> dict[str, Any]:
    status = {"providerConfigName": "modelplane-a"}
    if gateway is not None:
        status["gatewayAddress"] = gateway
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "a"},
        "spec": {},
        "status": status,
    }


def observed_replica(ready: bool, endpoint: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]
    }
    if endpoint is not None:
        status["endpoint"] = endpoint
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": "chat-a0",
            "namespace": "team-a",
            "labels": {"modelplane.ai/deployment": "chat", "modelplane.ai/cluster": "a"},
        },
        "spec": {"deploymentName": "chat", "clusterName": "a", "index": 0},
        "status": status,
    }


def step(
    *,
    ready: bool,
    endpoint: str | None = URL,
    gateway: str | None = "203.0.113.10",
    **observed: Any,
) -> ComposeResult:
    inp = ComposeInput(
        composite=copy.deepcopy(DEPLOYMENT),
        observed={REPLICA_KEY: observed_replica(ready, endpoint), **observed},
        required={
            "inference-clusters": [cluster(gateway)],
            "model-replicas": [],
            "fleet-quotas": [],
            "priority-classes": [],
        },
    )
    return md.compose_with(inp, scheduler)


EXPECTED_ENDPOINT = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelEndpoint",
    "metadata": {
        "name": "chat-a0",
        "namespace": "team-a",
        "labels": {
            "model": "chat-8b",
            "track": "stable",
            "app.kubernetes.io/managed-by": "modelplane",
            "modelplane.ai/deployment": "chat",
            # The replica's template revision (its hash, as the composer prints it).
            "modelplane.ai/revision": "348de1d5af",
        },
        "finalizers": ["composite.apiextensions.crossplane.io"],
    },
    # On cluster `a`'s Gateway: the fleet gateway reaches it over mutual TLS.
    "spec": {"url": URL, "cluster": "a"},
}


def test_warm_up_ready_drain() -> None:
    # Warming up: placed and routed on its cluster, but not Ready: no endpoint.
    warming = step(ready=False)
    assert sorted(warming.desired) == [REPLICA_KEY]

    # Ready behind its cluster's gateway: the endpoint appears, not yet ready itself.
    serving = step(ready=True)
    assert sorted(serving.desired) == [ENDPOINT_KEY, REPLICA_KEY]
    assert serving.desired[ENDPOINT_KEY].resource == EXPECTED_ENDPOINT
    assert serving.desired[ENDPOINT_KEY].ready == "False"
    # Endpoints are not replicas: the replica count is unchanged.
    cond = next(x for x in serving.conditions if x.type == "ReplicasReady")
    assert cond.message == "1 of 1 replicas ready"

    # The endpoint composer marked it ready: so does the deployment.
    endpoint = {**EXPECTED_ENDPOINT, "status": {"ready": True}}
    settled = step(ready=True, **{ENDPOINT_KEY: endpoint})
    assert settled.desired[ENDPOINT_KEY].ready == "True"

    # A service selecting the deployment routes to it.
    service = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": "chat", "namespace": "team-a"},
        "spec": {
            "endpoints": [{"selector": {"matchLabels": {"modelplane.ai/deployment": "chat"}}}]
        },
    }
    gateway = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceGateway",
        "metadata": {"name": "default"},
        "status": {
            "address": "http://198.51.100.7",
            "gatewayName": "modelplane",
            "gatewayNamespace": "envoy-gateway-system",
            "providerConfigName": "modelplane-control-plane",
        },
    }
    # Its cluster, as the service reads it: Reachable, the stack's hop Gateway Programmed.
    cluster = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "a"},
        "status": {
            "gatewayAddress": "203.0.113.10",
            "conditions": [
                {"type": "Reachable", "status": "True", "reason": "Reachable"},
                {"type": "ServingStackReady", "status": "True", "reason": "Ready"},
            ],
        },
    }
    required = {"gateway": [gateway], "endpoints": [endpoint], "cluster-a": [cluster]}
    routed = model_service.compose(ComposeInput(composite=service, required=required))
    assert routed.status["endpoints"] == [{"name": "chat-a0", "weight": 1000, "ready": True}]
    # Over mutual TLS to cluster `a`'s Gateway: its CA and name, the fleet's certificate,
    # read where the cluster's ServingStack put them: the Backend sits beside that Secret
    # in modelplane-system, named after the service's namespace (hashed: the dot).
    backend = routed.desired["backend-chat-a0"].resource["spec"]["forProvider"]["manifest"]
    stack_secret = {"group": "", "kind": "Secret", "name": "a-gateway-hop"}
    assert backend["metadata"]["namespace"] == "modelplane-system"
    assert backend["metadata"]["name"].startswith("team-a-chat-chat-a0-")
    assert backend["spec"]["tls"] == {
        "caCertificateRefs": [stack_secret],
        "sni": "a.gateway.modelplane.internal",
        "clientCertificateRef": stack_secret,
    }
    # No copy of the certificate or key anywhere: no Secret is composed at all.
    manifests = [d.resource["spec"]["forProvider"]["manifest"] for d in routed.desired.values()]
    assert [m for m in manifests if m["kind"] == "Secret"] == []
    # Exactly the service's namespace's routes may refer to exactly that Backend.
    grant = routed.desired["grant-chat-a0"].resource["spec"]["forProvider"]["manifest"]
    assert grant["metadata"]["namespace"] == "modelplane-system"
    assert grant["spec"] == {
        "from": [
            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "team-a"}
        ],
        "to": [
            {
                "group": "gateway.envoyproxy.io",
                "kind": "Backend",
                "name": backend["metadata"]["name"],
            }
        ],
    }
    route = routed.desired["route"].resource["spec"]["forProvider"]["manifest"]
    assert route["metadata"]["namespace"] == "team-a"
    assert {str(rule["backendRefs"]) for rule in route["spec"]["rules"]} == {
        str(
            [
                {
                    "group": "gateway.envoyproxy.io",
                    "kind": "Backend",
                    "name": backend["metadata"]["name"],
                    "namespace": "modelplane-system",
                    "weight": 1000,
                }
            ]
        )
    }

    # Draining (no longer Ready): the endpoint is withdrawn at once.
    draining = step(ready=False, **{ENDPOINT_KEY: endpoint})
    assert sorted(draining.desired) == [REPLICA_KEY]


def test_no_endpoint_without_a_gateway_address_or_a_route() -> None:
    assert ENDPOINT_KEY not in step(ready=True, gateway=None).desired
    assert ENDPOINT_KEY not in step(ready=True, endpoint=None).desired
