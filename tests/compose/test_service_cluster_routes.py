"""A ModelService reaches its endpoints on clusters through one route of its own per
cluster (issue 38's failover): request → expected response.

The fleet gateway weighs clusters, not replicas: one Backend per cluster's Gateway,
one backendRef each with no filter of its own (so Envoy Gateway builds one Envoy
cluster whose hosts are the clusters' Gateways, which retries and health checks can
move between), the summed weights of the cluster's endpoints. On each cluster the
service's own HTTPRoute, under the service's hop Host, weighs that cluster's
replicas' entries (`spec.backendRef`) as the service does. A BackendTrafficPolicy
health-checks each cluster under that Host, ejects one that fails, and retries a
refused request elsewhere. An endpoint without an entry is routed on its own, as
before; a cluster whose endpoints are still routed on their own moves over only once
every cluster's Backend, grant and route are observed ready (make before break, all
clusters in one step), and keeps what it used before for a rollback.
"""

from __future__ import annotations

from typing import Any

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
        "internalAddress": "envoy.gw.svc.cluster.local:80",
    },
}
SERVICE = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelService",
    "metadata": {"name": "chat", "namespace": NS},
    "spec": {
        "endpoints": [
            {"selector": {"matchLabels": {"model": "big"}}, "weight": 80},
            {"selector": {"matchLabels": {"model": "small"}}, "weight": 20},
        ]
    },
}
HEALTHY = [
    {"type": "Reachable", "status": "True", "reason": "Reachable"},
    {"type": "ServingStackReady", "status": "True", "reason": "Ready"},
]
ADDRESSES = {"east": "192.0.2.1", "west": "192.0.2.2"}
HOST = "chat.team-a.service.hop.modelplane.internal"


def _endpoint(name: str, model: str, cluster: str, entry: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "url": f"https://{ADDRESSES[cluster]}/{NS}/{name}/0",
        "cluster": cluster,
    }
    if entry:
        spec["backendRef"] = {"name": f"{name}-engine", "port": 8000}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": NS, "labels": {"model": model}},
        "spec": spec,
        "status": {"ready": True},
    }


def _cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "conditions": HEALTHY,
            "gatewayAddress": ADDRESSES[name],
            "providerConfigName": f"modelplane-{name}",
        },
    }


# big: two replicas, one per cluster (40 + 40); small: one replica on east (20).
ENDPOINTS = [
    _endpoint("big-1", "big", "east"),
    _endpoint("big-2", "big", "west"),
    _endpoint("small-1", "small", "east"),
]


def _compose(
    endpoints: list[dict[str, Any]] | None = None,
    observed: dict[str, Any] | None = None,
    extra: list[dict[str, Any]] | None = None,
) -> ComposeResult:
    required = {
        "gateway": [GATEWAY],
        "endpoints": [*(ENDPOINTS if endpoints is None else endpoints), *(extra or [])],
        "cluster-east": [_cluster("east")],
        "cluster-west": [_cluster("west")],
    }
    inp = ComposeInput(composite=SERVICE, required=required, observed=observed or {})
    return model_service.compose(inp)


def _manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    return res.desired[key].resource["spec"]["forProvider"]["manifest"]


def _provider(res: ComposeResult, key: str) -> str:
    return str(res.desired[key].resource["spec"]["providerConfigRef"]["name"])


def test_the_fleet_route_weighs_clusters_with_one_filterless_ref_each() -> None:
    res = _compose()
    route = _manifest(res, "route")
    for rule in route["spec"]["rules"]:
        refs = [
            (r["name"], r["namespace"], r["weight"], "filters" in r) for r in rule["backendRefs"]
        ]
        east = _manifest(res, "cluster-east-backend")["metadata"]["name"]
        west = _manifest(res, "cluster-west-backend")["metadata"]["name"]
        # east: big-1 (400) + small-1 (200); west: big-2 (400)
        assert refs == [
            (east, "modelplane-system", 600, False),
            (west, "modelplane-system", 400, False),
        ]
        (rewrite,) = rule["filters"]
        assert rewrite["urlRewrite"]["hostname"] == HOST
    # No Backend per endpoint any more, and no two-hop loopback.
    assert not [k for k in res.desired if k.startswith(("backend-", "route-", "grant-"))]


def test_each_cluster_backend_is_mutual_tls_to_that_clusters_gateway() -> None:
    res = _compose()
    backend = _manifest(res, "cluster-west-backend")
    assert backend["metadata"]["namespace"] == "modelplane-system"
    assert backend["spec"]["endpoints"] == [{"ip": {"address": "192.0.2.2", "port": 443}}]
    tls = backend["spec"]["tls"]
    assert tls["sni"] == "west.gateway.modelplane.internal"
    assert tls["clientCertificateRef"]["name"] == "west-gateway-hop"
    grant = _manifest(res, "cluster-west-grant")
    assert grant["spec"]["from"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": NS}
    ]
    assert grant["spec"]["to"][0]["name"] == backend["metadata"]["name"]


def test_the_service_route_on_each_cluster_weighs_that_clusters_replicas() -> None:
    res = _compose()
    east = _manifest(res, "cluster-east-route")
    assert _provider(res, "cluster-east-route") == "modelplane-east"
    assert east["metadata"]["namespace"] == NS
    assert east["spec"]["hostnames"] == [HOST]
    assert east["spec"]["parentRefs"][0]["name"] == "modelplane-inference"
    (rule,) = east["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/"}}]
    assert rule["backendRefs"] == [
        {"name": "big-1-engine", "port": 8000, "weight": 400},
        {"name": "small-1-engine", "port": 8000, "weight": 200},
    ]
    (west_rule,) = _manifest(res, "cluster-west-route")["spec"]["rules"]
    assert west_rule["backendRefs"] == [{"name": "big-2-engine", "port": 8000, "weight": 400}]
    assert _provider(res, "cluster-west-route") == "modelplane-west"


def test_the_traffic_policy_checks_each_cluster_and_retries_elsewhere() -> None:
    res = _compose()
    policy = _manifest(res, "traffic-policy")
    assert policy["kind"] == "BackendTrafficPolicy"
    assert policy["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "chat"}
    ]
    active = policy["spec"]["healthCheck"]["active"]
    assert (active["http"]["hostname"], active["http"]["path"]) == (HOST, "/health")
    assert policy["spec"]["healthCheck"]["passive"]["consecutiveGatewayErrors"] == 3
    assert set(policy["spec"]["retry"]["retryOn"]["triggers"]) >= {"connect-failure"}
    assert policy["spec"]["retry"]["retryOn"]["httpStatusCodes"] == [503]


def test_an_endpoint_without_an_entry_is_routed_on_its_own() -> None:
    old = [_endpoint("big-1", "big", "east", entry=False)]
    res = _compose(old)
    assert "backend-big-1" in res.desired
    assert not [k for k in res.desired if k.startswith("cluster-")]
    assert "traffic-policy" not in res.desired


def _named(res: ComposeResult, observed: dict[str, Any]) -> set[str]:
    """Every Backend a route on the control plane names, among `res`'s desired Objects and
    those observed."""
    names = set()
    for obj in [*(d.resource for d in res.desired.values()), *observed.values()]:
        manifest = obj["spec"]["forProvider"]["manifest"]
        if manifest["kind"] == "HTTPRoute":
            for rule in manifest["spec"]["rules"]:
                names |= {r["name"] for r in rule.get("backendRefs", [])}
    return names


def _ready_observed(res: ComposeResult, observed: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every desired Object as observed with the conditions its rule reads once its
    controller acted, as Envoy Gateway acts: it judges a Backend (Accepted) only when a
    route names it, so one no route names (among `res`'s routes and `observed`'s) is
    applied with no condition, its Object not Ready."""
    out = {}
    named = _named(res, observed or {})
    for key, d in res.desired.items():
        obj = dict(d.resource)
        manifest = obj["spec"]["forProvider"]["manifest"]
        status: dict[str, Any] = {
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted"}]
        }
        ready = "True"
        if manifest["kind"] == "Backend" and manifest["metadata"]["name"] not in named:
            status, ready = {}, "False"
        if manifest["kind"] == "HTTPRoute":
            status = {
                "parents": [
                    {
                        "parentRef": manifest["spec"]["parentRefs"][0],
                        "conditions": [
                            {"type": "Accepted", "status": "True", "reason": "Accepted"}
                        ],
                    }
                ]
            }
        obj["status"] = {
            "conditions": [
                {"type": "Ready", "status": ready, "reason": "Available"},
                {"type": "Synced", "status": "True", "reason": "ReconcileSuccess"},
            ],
            "atProvider": {"manifest": {**manifest, "status": status}},
        }
        out[key] = obj
    return out


def _legacy() -> ComposeResult:
    """The service as a release that routed endpoint by endpoint left it."""
    return _compose(
        [
            _endpoint(
                e["metadata"]["name"],
                e["metadata"]["labels"]["model"],
                e["spec"]["cluster"],
                entry=False,
            )
            for e in ENDPOINTS
        ]
    )


def _refs(res: ComposeResult, key: str = "route") -> set[str]:
    return {r["name"] for r in _manifest(res, key)["spec"]["rules"][0]["backendRefs"]}


def test_an_upgrade_moves_the_clusters_only_once_their_objects_are_ready() -> None:
    legacy = _legacy()
    observed = _ready_observed(legacy)
    # The endpoints now name their entries: the clusters' objects are composed, the
    # route still reaches each endpoint through its own Backend.
    moving = _compose(observed=observed)
    assert {"cluster-east-backend", "cluster-east-route", "cluster-west-route"} <= set(
        moving.desired
    )
    assert "backend-big-1" in moving.desired
    assert _refs(moving) == {"chat-hop"}  # the two-hop route over the endpoints' own routes
    assert "traffic-policy" not in moving.desired
    # Still Ready: it routes as before, and does not wait on what it prepares.
    assert legacy.ready == "False" and moving.ready == "True"
    assert moving.desired["cluster-east-route"].ready == "False"
    # Once they are observed ready, the route moves to the clusters.
    moved = _compose(observed={**observed, **_ready_observed(moving)})
    assert _refs(moved) == {
        _manifest(moved, "cluster-east-backend")["metadata"]["name"],
        _manifest(moved, "cluster-west-backend")["metadata"]["name"],
    }
    assert "clusters-route" not in moved.desired
    assert "traffic-policy" in moved.desired
    # The policy is new: the service, which answers without it, does not wait on it.
    assert moved.desired["traffic-policy"].ready == "False" and moved.ready == "True"


def test_an_upgrade_makes_no_half_move() -> None:
    """One cluster ready and the other not, or one endpoint without its entry yet: the
    service routes as before (a half move would need a two-hop route not yet ready)."""
    observed = _ready_observed(_legacy())
    moving = _compose(observed=observed)
    east = {k: v for k, v in _ready_observed(moving).items() if k.startswith("cluster-east")}
    half = _compose(observed={**observed, **east})
    assert _refs(half) == {"chat-hop"}
    assert "clusters-route" not in half.desired and "traffic-policy" not in half.desired
    assert half.ready == "True"
    # Every cluster ready, but one endpoint still without its replica's entry.
    late = [*ENDPOINTS[:2], _endpoint("small-1", "small", "east", entry=False)]
    waiting = _compose(late, observed={**observed, **_ready_observed(moving)})
    assert _refs(waiting) == {"chat-hop"}
    assert "traffic-policy" not in waiting.desired and waiting.ready == "True"


def test_after_the_move_the_old_objects_stay_for_a_rollback_and_it_never_moves_back() -> None:
    observed = _ready_observed(_legacy())
    moving = _compose(observed=observed)
    moved = _compose(observed={**observed, **_ready_observed(moving)})
    after = {**observed, **_ready_observed(moved)}
    settled = _compose(observed=after)
    # What the release before used is kept as it was, and no route of the service
    # reaches it: a rollback to that release routes at once.
    for key in ("backend-big-1", "grant-big-1", "route-big-1", "backend-hop"):
        assert settled.desired[key].resource == moving.desired[key].resource, key
    assert "chat-hop" not in _refs(settled)
    assert settled.ready == "True"
    # A cluster's route no longer ready after the move: the service stays moved
    # (health checks take that cluster out, not a route change).
    broken = dict(after)
    del broken["cluster-west-route"]
    assert _refs(_compose(observed=broken)) == _refs(settled)
    # An endpoint that goes takes its kept objects with it.
    fewer = _compose(ENDPOINTS[1:], observed=after)
    assert not [k for k in fewer.desired if k.endswith("big-1")]


def test_a_saas_endpoint_beside_clusters_takes_two_hops() -> None:
    saas = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {"name": "saas", "namespace": NS, "labels": {"model": "small"}},
        "spec": {"url": "https://api.example.com/openai"},
        "status": {"ready": True},
    }
    res = _compose(extra=[saas])
    first = _manifest(res, "route")["spec"]["rules"][0]["backendRefs"]
    hosts = {r["filters"][0]["urlRewrite"]["hostname"]: r["weight"] for r in first}
    # small (200) is shared by small-1 and saas: 100 each.
    assert hosts == {
        "chat-saas.team-a.hop.modelplane.internal": 100,
        "chat.team-a.clusters.hop.modelplane.internal": 900,
    }
    clusters = _manifest(res, "clusters-route")
    assert clusters["spec"]["hostnames"] == ["chat.team-a.clusters.hop.modelplane.internal"]
    refs = [r["weight"] for r in clusters["spec"]["rules"][0]["backendRefs"]]
    assert refs == [500, 400]
    policy = _manifest(res, "traffic-policy")
    assert policy["spec"]["targetRefs"][0]["name"] == clusters["metadata"]["name"]


def _serving(endpoints: list[dict[str, Any]]) -> dict[str, Any]:
    """The observed state of a service that routes `endpoints` and has settled."""
    first = _compose(endpoints)
    return _ready_observed(_compose(endpoints, observed=_ready_observed(first)))


def test_a_cluster_joins_a_serving_route_once_its_objects_are_ready() -> None:
    east = [ENDPOINTS[0], ENDPOINTS[2]]
    observed = _serving(east)
    joining = _compose(observed=observed)  # big-2 on west is new
    west = _manifest(joining, "cluster-west-backend")["metadata"]["name"]
    assert west not in _refs(joining)
    assert joining.desired["cluster-west-route"].ready == "False"
    assert joining.ready == "True"  # it serves east as before
    joined = _compose(observed={**observed, **_ready_observed(joining)})
    assert west in _refs(joined)
    # A service that serves nothing yet routes every cluster at once.
    assert west in _refs(_compose())


def test_a_cluster_leaves_before_its_objects_go() -> None:
    observed = _serving(ENDPOINTS)
    west = _manifest(_compose(observed=observed), "cluster-west-backend")["metadata"]["name"]
    east = [ENDPOINTS[0], ENDPOINTS[2]]
    leaving = _compose(east, observed=observed)
    assert west not in _refs(leaving)
    # The route as observed still names west's Backend: its objects stay as observed.
    for part in ("backend", "grant", "route"):
        key = f"cluster-west-{part}"
        assert leaving.desired[key].resource["spec"] == observed[key]["spec"], key
    assert leaving.ready == "True"
    # Once the route without west is observed, they go.
    gone = _compose(east, observed={**observed, "route": _ready_observed(leaving)["route"]})
    assert not [k for k in gone.desired if k.startswith("cluster-west")]


def _weights(res: ComposeResult) -> dict[str, tuple[int, str | None]]:
    return {e["name"]: (e["weight"], e.get("message")) for e in res.status["endpoints"]}


def _refused(obj: dict[str, Any]) -> dict[str, Any]:
    """An observed Backend Object Envoy Gateway refused."""
    manifest = obj["status"]["atProvider"]["manifest"]
    refused = {"conditions": [{"type": "Accepted", "status": "False", "reason": "Invalid"}]}
    return {
        **obj,
        "status": {**obj["status"], "atProvider": {"manifest": {**manifest, "status": refused}}},
    }


def test_a_joining_cluster_shows_no_weight_until_its_route_names_it() -> None:
    """Envoy Gateway judges a Backend only once a route names it: a joining cluster waits
    for its Backend applied, its grant and route ready, and the status says what the
    route carries meanwhile (weight 0, joining) rather than the weight to come."""
    east = [ENDPOINTS[0], ENDPOINTS[2]]
    observed = _serving(east)
    joining = _compose(observed=observed)
    weights = _weights(joining)
    assert weights["big-2"][0] == 0 and "joining" in str(weights["big-2"][1])
    assert weights["big-1"][0] > 0 and weights["big-1"][1] is None
    cond = next(x for x in joining.conditions if x.type == "EndpointsReady")
    assert cond.reason == "EndpointsJoining" and "big-2 on west" in cond.message
    # West's Backend applied (no route names it: not judged), its grant and route ready.
    applied = {**observed, **_ready_observed(joining, observed)}
    assert applied["cluster-west-backend"]["status"]["atProvider"]["manifest"]["status"] == {}
    joined = _compose(observed=applied)
    west = _manifest(joined, "cluster-west-backend")["metadata"]["name"]
    assert west in _refs(joined)
    weight, message = _weights(joined)["big-2"]
    assert weight > 0 and message is None
    # Named now but not judged yet: the service does not wait on that Backend.
    assert joined.desired["cluster-west-backend"].ready == "False" and joined.ready == "True"
    # Refused once named: the service waits on it, and says so by not being Ready.
    named = {**applied, **_ready_observed(joined, applied)}
    assert named["cluster-west-backend"]["status"]["atProvider"]["manifest"]["status"]
    assert _compose(observed=named).ready == "True"
    refused = {**named, "cluster-west-backend": _refused(named["cluster-west-backend"])}
    assert _compose(observed=refused).ready == "False"


def test_a_cluster_whose_backend_is_refused_does_not_join() -> None:
    east = [ENDPOINTS[0], ENDPOINTS[2]]
    observed = _serving(east)
    applied = {**observed, **_ready_observed(_compose(observed=observed), observed)}
    applied["cluster-west-backend"] = _refused(applied["cluster-west-backend"])
    res = _compose(observed=applied)
    west = _manifest(res, "cluster-west-backend")["metadata"]["name"]
    assert west not in _refs(res) and res.ready == "True"
    assert _weights(res)["big-2"][0] == 0


def test_a_forged_backend_ref_reaches_nothing_outside_the_services_namespace() -> None:
    """`spec.backendRef` is tenant-written: it names a Service (or InferencePool) with no
    namespace, so the service's route on the cluster, which lives in the service's own
    namespace, can reach only that namespace's objects; a namespace in it, or a kind
    other than the two, does not read, and the endpoint is routed on its own path
    (which the hop verdict checks) or not at all."""
    forged = _endpoint("big-1", "big", "east")
    forged["spec"]["backendRef"] = {"name": "other-tenant-engine", "port": 8000}
    res = _compose([forged, *ENDPOINTS[1:]])
    east = _manifest(res, "cluster-east-route")
    assert east["metadata"]["namespace"] == NS
    for ref in east["spec"]["rules"][0]["backendRefs"]:
        assert "namespace" not in ref and set(ref) <= {"name", "port", "weight"}, ref
    for extra in ({"namespace": "team-b"}, {"kind": "Gateway", "group": "x"}):
        bad = _endpoint("big-1", "big", "east")
        bad["spec"]["backendRef"] = {"name": "engine", "port": 8000, **extra}
        out = _compose([bad, *ENDPOINTS[1:]])
        refs = [
            ref
            for key, d in out.desired.items()
            if key.startswith("cluster-") and key.endswith("-route")
            for ref in d.resource["spec"]["forProvider"]["manifest"]["spec"]["rules"][0][
                "backendRefs"
            ]
        ]
        assert all(r["name"] != "engine" for r in refs), (extra, refs)
