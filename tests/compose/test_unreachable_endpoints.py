"""A ModelService gives weight 0 to an endpoint the fleet gateway cannot reach (issue 41,
item 4), names it and says why; it stays Ready while another endpoint routes.

One table row per reason the cluster an endpoint names (`spec.cluster`) cannot take
the fleet gateway's traffic, read from the InferenceCluster's status: no hop
credentials (its serving stack is the platform's, `spec.servingStack.enabled:
false`, so no client certificate is minted), not `Reachable`, its hop Gateway not
Programmed, not found, no gateway address. The other endpoint, on a healthy
cluster, takes all the traffic.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.compose.routing import model_service
from modelplane.compose.types import ComposeInput, ComposeResult

NS = "team-a"
GATEWAY = {
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
SERVICE = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelService",
    "metadata": {"name": "chat", "namespace": NS},
    "spec": {"endpoints": [{"selector": {"matchLabels": {"model": "chat"}}}]},
}
HEALTHY = [
    {"type": "Reachable", "status": "True", "reason": "Reachable"},
    {"type": "ServingStackReady", "status": "True", "reason": "Ready"},
]


def _endpoint(name: str, cluster: str, address: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NS, "labels": {"model": "chat"}},
        "spec": {"url": f"https://{address}/{NS}/chat/0", "cluster": cluster},
        "status": {"ready": True},
    }


def _cluster(name: str, address: str | None, conditions: list[dict[str, str]]) -> Any:
    status: dict[str, Any] = {"conditions": conditions}
    if address is not None:
        status["gatewayAddress"] = address
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "status": status,
    }


def _compose(
    far: list[dict[str, Any]], observed: dict[str, dict[str, Any]] | None = None
) -> ComposeResult:
    """The service over `near` (healthy, 192.0.2.1) and `far` (192.0.2.2, as given)."""
    required = {
        "gateway": [GATEWAY],
        "endpoints": [
            _endpoint("chat-near", "near", "192.0.2.1"),
            _endpoint("chat-far", "far", "192.0.2.2"),
        ],
        "cluster-near": [_cluster("near", "192.0.2.1", HEALTHY)],
        "cluster-far": far,
    }
    inp = ComposeInput(composite=SERVICE, required=required, observed=observed or {})
    return model_service.compose(inp)


NOT_PROGRAMMED = "ClientTrafficPolicy modelplane-system/modelplane-hop-clients is not accepted yet"
CASES = {
    "no hop credentials": (
        [
            {"type": "Reachable", "status": "True", "reason": "Reachable"},
            {"type": "ServingStackReady", "status": "True", "reason": "Disabled"},
        ],
        "192.0.2.2",
        "no hop credentials for InferenceCluster 'far': its spec.servingStack.enabled is "
        "false, so Modelplane mints no client certificate for its Gateway",
    ),
    "not reachable": (
        [
            {"type": "Reachable", "status": "False", "reason": "APIServerUnreachable"},
            {"type": "ServingStackReady", "status": "True", "reason": "Ready"},
        ],
        "192.0.2.2",
        "InferenceCluster 'far' is not Reachable",
    ),
    "hop gateway not programmed": (
        [
            {"type": "Reachable", "status": "True", "reason": "Reachable"},
            {
                "type": "ServingStackReady",
                "status": "False",
                "reason": "GatewayNotProgrammed",
                "message": NOT_PROGRAMMED,
            },
        ],
        "192.0.2.2",
        f"InferenceCluster 'far''s hop Gateway is not Programmed ({NOT_PROGRAMMED})",
    ),
    "no gateway address": (
        HEALTHY,
        None,
        "InferenceCluster 'far' publishes no gateway address yet",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unreachable_endpoint_gets_weight_0_and_says_why(case: str) -> None:
    conditions, address, why = CASES[case]
    res = _compose([_cluster("far", address, conditions)])
    _assert_far_unreachable(res, why)


def test_an_endpoint_on_a_cluster_not_found_gets_weight_0() -> None:
    res = _compose([])
    _assert_far_unreachable(res, "InferenceCluster 'far' not found")


def test_both_clusters_healthy_share_the_traffic() -> None:
    res = _compose([_cluster("far", "192.0.2.2", HEALTHY)])
    assert res.status["endpoints"] == [
        {"name": "chat-far", "weight": 500, "ready": True},
        {"name": "chat-near", "weight": 500, "ready": True},
    ]
    assert {x.type: x.status for x in res.conditions}["EndpointsRoutable"] == "True"
    assert res.events == []


def _assert_far_unreachable(res: ComposeResult, why: str) -> None:
    message = f"chat-far: spec.cluster: {why}"
    assert res.status["endpoints"] == [
        {"name": "chat-far", "weight": 0, "ready": False, "message": message},
        {"name": "chat-near", "weight": 1000, "ready": True},
    ]
    assert res.status["endpointsReady"] == "1/2"
    routable = next(x for x in res.conditions if x.type == "EndpointsRoutable")
    assert (routable.status, routable.reason) == ("False", "EndpointUnreachable")
    assert routable.message == f"weight 0 (no traffic): {message}"
    assert [(e.severity, e.reason) for e in res.events] == [("Warning", "EndpointUnreachable")]
    assert "chat-far" in res.events[0].message and why in res.events[0].message
    # Only the reachable endpoint's Backend is composed; the route sends it everything.
    assert sorted(k for k in res.desired if k.startswith("backend-")) == ["backend-chat-near"]
    route = res.desired["route"].resource["spec"]["forProvider"]["manifest"]
    weights = {r.get("weight") for rule in route["spec"]["rules"] for r in rule["backendRefs"]}
    assert weights == {1000}
    # Still routing: the unreachable endpoint holds nothing up (the render example
    # shows the service Ready, tests/local/test_render_routing.py).
    ready = next(x for x in res.conditions if x.type == "EndpointsReady")
    assert ready.status == "True"


def _malformed(mutate: Any) -> dict[str, Any]:
    obj = _cluster("far", "192.0.2.2", HEALTHY)
    mutate(obj)
    return obj


def _object(name: str) -> dict[str, Any]:
    return {"apiVersion": OBJECT, "kind": "Object", "metadata": {"name": name}, "spec": {}}


OBJECT = "kubernetes.m.crossplane.io/v1alpha1"
# A malformed InferenceCluster is unknown, not gone: the fields the hop verdict reads.
MALFORMED = {
    "metadata": (lambda o: o.update(metadata=7), "metadata.name is null, not a name"),
    "name": (lambda o: o["metadata"].update(name=["far"]), "metadata.name is a list"),
    "status": (lambda o: o.update(status="up"), "status is a string, not an object"),
    "conditions": (
        lambda o: o["status"].update(conditions={"Reachable": "True"}),
        "status.conditions is an object, not a list",
    ),
    "gateway address": (
        lambda o: o["status"].update(gatewayAddress=42),
        "status.gatewayAddress is a number, not a string",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_cluster_keeps_the_route_and_backends_as_observed(case: str) -> None:
    mutate, field = MALFORMED[case]
    observed = {
        "backend-chat-far": _object("chat-far-backend"),
        "route-chat": _object("chat-route"),
    }
    res = _compose([_malformed(mutate)], observed)
    assert set(res.desired) == set(observed), "what the service routes through is kept"
    readable = next(x for x in res.conditions if x.type == "InputsReadable")
    assert readable.status == "False"
    assert "InferenceCluster far" in readable.message and field in readable.message
    assert not any(x.type == "EndpointsRoutable" and x.status == "False" for x in res.conditions)
