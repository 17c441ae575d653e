"""Envoy Gateway v1.9.0's own translator as the routing oracle, over every routing example.

For each example that renders an InferenceGateway, `egctl experimental
translate --from gateway-api --to gateway-api,xds` is run over what Envoy
Gateway would read on the control plane and on each workload cluster; the
status it sets and the xDS it emits are what a live Envoy Gateway would.
Skipped, saying why, where egctl is not built (`modelplane dev parts --build`)
and Go is missing.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from egctl import Pki, cluster_inputs, control_plane_inputs, egctl, translate, wrapped_by_config

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop
from modelplane.api.objects import label_value
from modelplane.compose.objects import dns_label
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
API = "modelplane.ai/v1alpha1"
Obj = dict[str, Any]


def _routing_examples() -> list[Path]:
    folders = sorted({p.parent for p in (ROOT / "examples").rglob("*.yaml")})
    return [
        f
        for f in folders
        if any("kind: InferenceGateway" in p.read_text() for p in f.glob("*.yaml"))
    ]


EXAMPLES = _routing_examples()
# The example with credentials and a canary between two deployments.
ROUTING = [f for f in EXAMPLES if f.name == "routing"]
BINARY = egctl()
pytestmark = pytest.mark.skipif(
    BINARY is None,
    reason="egctl v1.9.0 is not built: `modelplane dev parts --build` (needs Go) builds it",
)


@cache
def _render(folder: Path) -> list[Obj]:
    return [dict(o) for o in ControlPlane(load_paths([str(folder)])).run().store.objects()]


@cache
def _pki() -> Pki:
    return Pki()


@cache
def _translated(folder: Path, config: str) -> Obj:
    """egctl's answer for one cluster (by provider config) of one example's render."""
    objs = _render(folder)
    if config == c.CONTROL_PLANE_PROVIDER_CONFIG:
        inputs = control_plane_inputs(objs, _pki())
    else:
        inputs = cluster_inputs(objs, config, _cluster_name(objs, config), _pki())
    return _run(inputs, f"{folder.name}-{config}")


def _run(inputs: list[Obj], name: str) -> Obj:
    assert BINARY is not None
    # A directory of its own per translation: two runs on one machine (or two
    # workers of one run) must not read each other's input file.
    with tempfile.TemporaryDirectory(prefix=f"modelplane-egctl-{name}-") as work:
        (result,) = translate(BINARY, inputs, Path(work))
    return result


def _cluster_name(objs: list[Obj], config: str) -> str:
    for o in objs:
        if o.get("kind") == "InferenceCluster":
            status = o.get("status") or {}
            if status.get("providerConfigName") == config:
                return str(o["metadata"]["name"])
    raise AssertionError(f"no InferenceCluster with provider config {config}")


def _workload_configs(folder: Path) -> list[str]:
    by_config = wrapped_by_config(_render(folder))
    return sorted(
        k
        for k, manifests in by_config.items()
        if k != c.CONTROL_PLANE_PROVIDER_CONFIG and any(m["kind"] == "Gateway" for m in manifests)
    )


def _cases() -> list[tuple[Path, str]]:
    return [
        (f, cfg)
        for f in EXAMPLES
        for cfg in [c.CONTROL_PLANE_PROVIDER_CONFIG, *_workload_configs(f)]
    ]


def _conditions(status: Obj | None) -> dict[str, str]:
    return {x["type"]: x["status"] for x in (status or {}).get("conditions") or []}


def _messages(status: Obj | None) -> str:
    return "; ".join(
        f"{x['type']}={x['status']} {x.get('reason')}: {x.get('message')}"
        for x in (status or {}).get("conditions") or []
    )


def _gateway_problems(out: Obj) -> Iterator[str]:
    if _conditions(out["gatewayClass"].get("status")).get("Accepted") != "True":
        yield f"GatewayClass: {_messages(out['gatewayClass'].get('status'))}"
    for gw in out["gateways"]:
        listeners = (gw.get("status") or {}).get("listeners") or []
        assert len(listeners) == len(gw["spec"]["listeners"]), gw["metadata"]["name"]
        for listener in listeners:
            conds = _conditions(listener)
            if not all(conds.get(t) == "True" for t in ("Programmed", "Accepted", "ResolvedRefs")):
                where = f"Gateway {gw['metadata']['name']} listener {listener['name']}"
                yield f"{where}: {_messages(listener)}"


def _route_problems(out: Obj) -> Iterator[str]:
    for route in out.get("httpRoutes") or []:
        parents = (route.get("status") or {}).get("parents") or []
        if not parents:
            yield f"HTTPRoute {route['metadata']['name']}: no parent status"
        for parent in parents:
            conds = _conditions(parent)
            if conds.get("Accepted") != "True" or conds.get("ResolvedRefs") != "True":
                yield f"HTTPRoute {route['metadata']['name']}: {_messages(parent)}"


def _policy_problems(out: Obj) -> Iterator[str]:
    for backend in out.get("backends") or []:
        if _conditions(backend.get("status")).get("Accepted") != "True":
            yield f"Backend {backend['metadata']['name']}: {_messages(backend.get('status'))}"
    for policy in out.get("clientTrafficPolicies") or []:
        ancestors = (policy.get("status") or {}).get("ancestors") or []
        if not ancestors or any(_conditions(a).get("Accepted") != "True" for a in ancestors):
            yield f"ClientTrafficPolicy {policy['metadata']['name']}: {ancestors}"


def _accept_every_namespace(inputs: list[Obj]) -> list[Obj]:
    """The inputs with each Gateway's namespace selector widened to `All`.

    egctl's file loader keeps a Namespace's name and drops its labels
    (internal/gatewayapi/resource/load.go, v1.9.0), so no namespace it loads
    matches a label selector; `test_the_selector_refuses_unlabelled_namespaces`
    relies on that, and `test_workload_routes_come_from_selected_namespaces`
    checks the selector against the composed Namespaces instead.
    """
    out = copy.deepcopy(inputs)
    for gw in (o for o in out if o["kind"] == "Gateway"):
        for listener in gw["spec"]["listeners"]:
            listener["allowedRoutes"]["namespaces"] = {"from": "All"}
    return out


def _translated_for(folder: Path, config: str) -> Obj:
    if config == c.CONTROL_PLANE_PROVIDER_CONFIG:
        return _translated(folder, config)
    objs = _render(folder)
    inputs = cluster_inputs(objs, config, _cluster_name(objs, config), _pki())
    return _run(_accept_every_namespace(inputs), f"{folder.name}-{config}-all")


@pytest.mark.parametrize(("folder", "config"), _cases(), ids=lambda x: getattr(x, "name", x))
def test_envoy_gateway_accepts_everything_the_render_sends_it(folder: Path, config: str) -> None:
    out = _translated_for(folder, config)
    routes = [o for o in wrapped_by_config(_render(folder))[config] if o["kind"] == "HTTPRoute"]
    assert len(out.get("httpRoutes") or []) == len(routes)
    problems = [*_gateway_problems(out), *_route_problems(out), *_policy_problems(out)]
    assert problems == []


def test_examples_are_found() -> None:
    assert [str(f.relative_to(ROOT / "examples")) for f in EXAMPLES] == [
        "autoscaling/down",
        "autoscaling/no-metrics",
        "autoscaling/up",
        "operations/platform-stack",
        "operations/progressive/fail",
        "operations/progressive/pass",
        "routing",
    ]
    assert _workload_configs(ROUTING[0]) == ["modelplane-eu-west", "modelplane-us-east"]


# --- xDS --------------------------------------------------------------------------------


def _xds(out: Obj, kind: str) -> list[Obj]:
    (dump,) = out["xds"].values()
    (found,) = [x for x in dump["configs"] if x["@type"].endswith(f".{kind}ConfigDump")]
    return list(
        found.get(
            {
                "Clusters": "dynamicActiveClusters",
                "Listeners": "dynamicListeners",
                "Routes": "dynamicRouteConfigs",
            }[kind]
        )
    )


def _localities(out: Obj, cluster: str) -> list[tuple[str, int]]:
    """A merged xDS cluster's localities: (Backend `namespace/name` it came from, weight)."""
    found = []
    for x in _load_assignments(out, cluster):
        for locality in x.get("endpoints") or []:
            (res,) = locality["metadata"]["filterMetadata"]["envoy-gateway"]["resources"]
            where = f"{res.get('namespace', '')}/{res['name']}"
            found.append((f"{res['kind']}:{where}", int(locality.get("loadBalancingWeight", 1))))
    return found


def _xds_endpoints(out: Obj) -> list[Obj]:
    (dump,) = out["xds"].values()
    (found,) = [x for x in dump["configs"] if x["@type"].endswith(".EndpointsConfigDump")]
    return [e["endpointConfig"] for e in found.get("dynamicEndpointConfigs") or []]


def _weighted(out: Obj, route: str) -> list[list[tuple[str, int]]]:
    """Per xDS route of `route` (one per rule and listener): (target, weight) pairs.

    Weighted clusters give their own weights; a rule whose backendRefs Envoy
    Gateway merged into one cluster gives its localities' weights, each
    target then the Backend (`Backend:namespace/name`) the locality came from.
    """
    found = []
    for config in _xds(out, "Routes"):
        for host in config["routeConfig"].get("virtualHosts") or []:
            for r in host["routes"]:
                if r["name"].startswith(f"httproute/{route}/rule/"):
                    action = r["route"]
                    clusters = (action.get("weightedClusters") or {}).get("clusters")
                    if clusters:
                        found.append([(_target(p), p["weight"]) for p in clusters])
                    else:
                        found.append(_localities(out, action["cluster"]))
    return found


def _target(weighted: Obj) -> str:
    """A weighted cluster's target: the second hop's Host when it goes through the hop
    (the loopback cluster is shared), else the xDS cluster (one per rule and backendRef)."""
    host = str(weighted.get("hostRewriteLiteral") or "")
    return host if host.endswith(f".{c.HOP_DOMAIN}") else str(weighted["name"])


def _backend_of(inputs: list[Obj], namespace: str, route: str, target: str) -> str:
    """What an xDS target of `route` leads to: `endpoint:<name>` or `cluster:<name>`, by
    the label of the manifest it reaches (the second hop's route for a Host, the Backend
    of a locality or of a route rule's backendRef; a Backend to a cluster's Gateway sits
    in the system namespace, under a name of its own)."""
    if target.endswith(f".{c.HOP_DOMAIN}"):
        (second,) = [
            o
            for o in inputs
            if o["kind"] == "HTTPRoute" and target in o["spec"].get("hostnames", [])
        ]
        return _leaf(second)
    if target.startswith("Backend:"):
        ns, name = target.removeprefix("Backend:").split("/")
        ref = {"name": name, "namespace": ns}
    else:
        (manifest,) = [
            o
            for o in inputs
            if o["kind"] == "HTTPRoute"
            and o["metadata"]["name"] == route.split("/")[-1]
            and o["metadata"]["namespace"] == namespace
        ]
        rule, index = target.split("/rule/")[1].split("/backend/")
        ref = manifest["spec"]["rules"][int(rule)]["backendRefs"][int(index)]
    (backend,) = [
        o
        for o in inputs
        if o["kind"] == "Backend"
        and o["metadata"]["name"] == ref["name"]
        and o["metadata"]["namespace"] == ref.get("namespace", namespace)
    ]
    return _leaf(backend)


def _leaf(manifest: Obj) -> str:
    labels = manifest["metadata"]["labels"]
    if c.LABEL_ENDPOINT in labels:
        return f"endpoint:{labels[c.LABEL_ENDPOINT]}"
    if manifest["kind"] == "HTTPRoute":
        # The second hop to the service's clusters.
        return "clusters"
    return f"cluster:{labels[c.LABEL_CLUSTER]}"


def _expected_leaves(objs: list[Obj], svc: Obj) -> tuple[dict[str, int], dict[str, int]]:
    """What the fleet gateway should weigh for a service, from its status alone: each
    endpoint routed on its own (`endpoint:<name>`) or, for an endpoint the service reaches
    through its route on a cluster, the cluster (`cluster:<name>`, its endpoints' weights
    summed); and the clusters as one choice of the first hop (`clusters`)."""
    ns = svc["metadata"]["namespace"]
    specs = {
        o["metadata"]["name"]: o.get("spec") or {}
        for o in objs
        if o.get("kind") == "ModelEndpoint" and o["metadata"]["namespace"] == ns
    }
    leaves: dict[str, int] = {}
    clusters: dict[str, int] = {}
    for e in svc["status"]["endpoints"]:
        if not (e.get("ready") and e["weight"] > 0):
            continue
        spec = specs[e["name"]]
        if spec.get("cluster") and spec.get("backendRef"):
            key = f"cluster:{label_value(spec['cluster'])}"
            clusters[key] = clusters.get(key, 0) + e["weight"]
        else:
            leaves[f"endpoint:{label_value(e['name'])}"] = e["weight"]
    return leaves, clusters


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda f: f.name)
def test_xds_weights_are_the_weights_each_service_reports(folder: Path) -> None:
    out = _translated(folder, c.CONTROL_PLANE_PROVIDER_CONFIG)
    inputs = control_plane_inputs(_render(folder), _pki())
    services = [
        o
        for o in _render(folder)
        if o.get("kind") == "ModelService" and (o.get("status") or {}).get("address")
    ]
    assert services
    for svc in services:
        name, ns = svc["metadata"]["name"], svc["metadata"]["namespace"]
        leaves, clusters = _expected_leaves(_render(folder), svc)
        want = dict(leaves)
        if leaves and clusters:
            want["clusters"] = sum(clusters.values())
            for pairs in _weighted(out, f"{ns}/{dns_label(name)}-clusters"):
                got = {_backend_of(inputs, ns, f"{ns}/{name}-clusters", t): w for t, w in pairs}
                assert got == clusters, name
        else:
            want.update(clusters)
        routes = _weighted(out, f"{ns}/{dns_label(name)}")
        assert routes, name
        for pairs in routes:
            got = {_backend_of(inputs, ns, f"{ns}/{name}", t): w for t, w in pairs}
            assert got == want, name


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda f: f.name)
def test_a_service_reaches_a_cluster_through_one_envoy_cluster_with_health_checks(
    folder: Path,
) -> None:
    """The clusters a service reaches are hosts of one Envoy cluster (not weighted
    clusters, which a retry cannot leave), actively health checked under the service's
    Host, with outlier detection, and the route retries elsewhere on a refused request."""
    out = _translated(folder, c.CONTROL_PLANE_PROVIDER_CONFIG)
    policies = [
        o
        for o in control_plane_inputs(_render(folder), _pki())
        if o["kind"] == "BackendTrafficPolicy"
    ]
    if not policies:
        pytest.skip("no service of this example reaches a cluster through its own route")
    clusters = {x["cluster"]["name"]: x["cluster"] for x in _xds(out, "Clusters")}
    checked = 0
    for policy in policies:
        ns = policy["metadata"]["namespace"]
        (target,) = policy["spec"]["targetRefs"]
        host = policy["spec"]["healthCheck"]["active"]["http"]["hostname"]
        for config in _xds(out, "Routes"):
            for vhost in config["routeConfig"].get("virtualHosts") or []:
                for r in vhost["routes"]:
                    if not r["name"].startswith(f"httproute/{ns}/{target['name']}/rule/"):
                        continue
                    action = r["route"]
                    retry = action["retryPolicy"]
                    assert {"connect-failure", "refused-stream"} <= set(retry["retryOn"].split(","))
                    assert retry["retriableStatusCodes"] == [503]
                    # Backends of mixed address kinds (an IP and a DNS name) get one
                    # cluster each; every one is still checked.
                    weighted = (action.get("weightedClusters") or {}).get("clusters") or []
                    names = [w["name"] for w in weighted] or [action["cluster"]]
                    for xname in names:
                        xcluster = clusters[xname]
                        (check,) = xcluster["healthChecks"]
                        assert check["httpHealthCheck"]["host"] == host
                        assert xcluster["outlierDetection"]["consecutiveGatewayFailure"] == 3
                        assert len(_localities(out, xname)) >= 1
                        checked += 1
    assert checked, "no merged cluster was checked"


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda f: f.name)
def test_a_service_route_on_a_cluster_weighs_its_replicas_as_the_service_does(
    folder: Path,
) -> None:
    """On each workload cluster, the service's own route sends its Host to the cluster's
    Ready replicas' entries, weighted as the service's status says, in one Envoy cluster
    (a replica whose endpoints leave is skipped by Envoy itself)."""
    objs = _render(folder)
    checked = 0
    for config in _workload_configs(folder):
        routes = [
            m
            for m in wrapped_by_config(objs)[config]
            if m["kind"] == "HTTPRoute" and m["metadata"]["name"].endswith("-modelservice")
        ]
        if not routes:
            continue
        out = _translated_for(folder, config)
        for route in routes:
            ns, name = route["metadata"]["namespace"], route["metadata"]["name"]
            (rule,) = route["spec"]["rules"]
            want = {f"Service:{ns}/{r['name']}": r["weight"] for r in rule["backendRefs"]}
            svc_name = route["metadata"]["labels"][c.LABEL_SERVICE]
            (svc,) = [
                o
                for o in objs
                if o.get("kind") == "ModelService"
                and label_value(o["metadata"]["name"]) == svc_name
                and o["metadata"]["namespace"] == ns
            ]
            status = {e["name"]: e["weight"] for e in svc["status"]["endpoints"]}
            assert sorted(want.values()) == sorted(
                status[e]
                for e in status
                if any(r["name"].startswith(dns_label(e)[:30]) for r in rule["backendRefs"])
            )
            for pairs in _weighted(out, f"{ns}/{name}"):
                if any(t.startswith("Service:") for t, _ in pairs):
                    assert dict(pairs) == want, name
                    checked += 1
    if not checked:
        pytest.skip("no service route on a workload cluster in this example")


def _transport(out: Obj, cluster: Obj, backend: str) -> list[Obj | None]:
    """The transport sockets `cluster` uses toward Backend `backend`: where several
    Backends share one cluster, the match its locality's hosts carry."""
    matches = cluster.get("transportSocketMatches") or []
    if not matches:
        return [cluster.get("transportSocket")]
    wanted = set()
    for x in _load_assignments(out, cluster["name"]):
        for locality in x.get("endpoints") or []:
            resources = locality["metadata"]["filterMetadata"]["envoy-gateway"]["resources"]
            if any(r["name"] == backend for r in resources):
                for host in locality["lbEndpoints"]:
                    meta = host["metadata"]["filterMetadata"]["envoy.transport_socket_match"]
                    wanted.add(meta["name"])
    if not wanted:
        return [m["transportSocket"] for m in matches]
    return [m["transportSocket"] for m in matches if m["match"].get("name") in wanted]


def _load_assignments(out: Obj, cluster: str) -> list[Obj]:
    static = [
        x["cluster"]["loadAssignment"]
        for x in _xds(out, "Clusters")
        if x["cluster"]["name"] == cluster and "loadAssignment" in x["cluster"]
    ]
    return [x for x in [*_xds_endpoints(out), *static] if x["clusterName"] == cluster]


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda f: f.name)
def test_hop_backends_verify_the_cluster_gateway_and_present_the_fleet_certificate(
    folder: Path,
) -> None:
    out = _translated(folder, c.CONTROL_PLANE_PROVIDER_CONFIG)
    inputs = control_plane_inputs(_render(folder), _pki())
    hops = [b for b in out["backends"] if (b["spec"].get("tls") or {}).get("clientCertificateRef")]
    assert hops, "no Backend to a cluster's Gateway: nothing checked"
    clusters = {x["cluster"]["name"]: x["cluster"] for x in _xds(out, "Clusters")}
    checked = 0
    for backend in hops:
        ns, name = backend["metadata"]["namespace"], backend["metadata"]["name"]
        # Beside the fleet's client certificate, never in the service's namespace; the
        # service's routes, in its own namespace, reach it through a ReferenceGrant.
        assert ns == c.SYSTEM_NAMESPACE
        (route_ns,) = {
            o["metadata"]["labels"][c.LABEL_SERVICE_NAMESPACE]
            for o in inputs
            if o["kind"] == "Backend"
            and o["metadata"]["name"] == name
            and o["metadata"]["namespace"] == ns
        }
        sni = backend["spec"]["tls"]["sni"]
        for xname, cluster in clusters.items():
            if f"/{route_ns}/" not in xname or not _leads_to(out, xname, route_ns, name):
                continue
            (tls,) = [t["typedConfig"] for t in _transport(out, cluster, name) if t]
            assert tls["sni"] == sni
            common = tls["commonTlsContext"]
            sans = common["combinedValidationContext"]["defaultValidationContext"][
                "matchTypedSubjectAltNames"
            ]
            assert sans == [{"matcher": {"exact": sni}, "sanType": "DNS"}]
            assert (
                common["tlsCertificateSdsSecretConfigs"][0]["name"]
                == f"{ns}/{backend['spec']['tls']['clientCertificateRef']['name']}"
            )
            checked += 1
    assert checked >= len(hops)


def _leads_to(out: Obj, xname: str, ns: str, backend: str) -> bool:
    """Whether the xDS cluster `xname` (one route rule's) sends to Backend `backend`."""
    route = xname.split("/")[2]
    for r in out.get("httpRoutes") or []:
        if r["metadata"]["namespace"] == ns and r["metadata"]["name"] == route:
            if "/backend/" in xname:
                # One xDS cluster per rule and backendRef: that very ref.
                rule, index = xname.split("/rule/")[1].split("/backend/")
                ref = r["spec"]["rules"][int(rule)]["backendRefs"][int(index)]
                return bool(ref["name"] == backend)
            return any(
                ref["name"] == backend for rule in r["spec"]["rules"] for ref in rule["backendRefs"]
            )
    return False


@pytest.mark.parametrize(
    ("folder", "config"),
    [(f, cfg) for f in EXAMPLES for cfg in _workload_configs(f)],
    ids=lambda x: getattr(x, "name", x),
)
def test_workload_listeners_require_the_fleet_client_certificate(folder: Path, config: str) -> None:
    out = _translated_for(folder, config)
    listeners = [x["activeState"]["listener"] for x in _xds(out, "Listeners")]
    served = [x for x in listeners if not x["name"].startswith("envoy-gateway-proxy-ready")]
    assert served
    for listener in served:
        for chain in listener["filterChains"]:
            tls = chain["transportSocket"]["typedConfig"]
            assert tls["requireClientCertificate"] is True, listener["name"]
            context = tls["commonTlsContext"]["combinedValidationContext"]
            sans = context["defaultValidationContext"]["matchTypedSubjectAltNames"]
            assert sans == [{"matcher": {"exact": hop.FLEET_CLIENT_URI}, "sanType": "URI"}]


@pytest.mark.parametrize(
    ("folder", "config"),
    [(f, cfg) for f in EXAMPLES for cfg in _workload_configs(f)],
    ids=lambda x: getattr(x, "name", x),
)
def test_the_selector_refuses_unlabelled_namespaces(folder: Path, config: str) -> None:
    # The translator sees every namespace without labels (see _accept_every_namespace):
    # with the composed selector, no route may attach.
    out = _translated(folder, config)
    routes = out.get("httpRoutes") or []
    if not routes:
        # A cluster the deployment left (examples/autoscaling/down) routes nothing.
        cluster = config.removeprefix("modelplane-")
        placed = [o for o in _render(folder) if o["kind"] == "ModelReplica"]
        assert placed and all(o["spec"]["clusterName"] != cluster for o in placed)
        return
    for route in routes:
        for parent in route["status"]["parents"]:
            accepted = [x for x in parent["conditions"] if x["type"] == "Accepted"]
            assert [(x["status"], x["reason"]) for x in accepted] == [
                ("False", "NotAllowedByListeners")
            ]


@pytest.mark.parametrize(
    ("folder", "config"),
    [(f, cfg) for f in EXAMPLES for cfg in _workload_configs(f)],
    ids=lambda x: getattr(x, "name", x),
)
def test_workload_routes_come_from_selected_namespaces(folder: Path, config: str) -> None:
    manifests = wrapped_by_config(_render(folder))[config]
    labels = {
        m["metadata"]["name"]: m["metadata"].get("labels") or {}
        for m in manifests
        if m["kind"] == "Namespace"
    }
    (gateway,) = [m for m in manifests if m["kind"] == "Gateway"]
    for listener in gateway["spec"]["listeners"]:
        wanted = listener["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]
        for route in (m for m in manifests if m["kind"] == "HTTPRoute"):
            have = labels[route["metadata"]["namespace"]]
            assert {k: have.get(k) for k in wanted} == wanted


# --- the two routing deviations, checked by the translator ---------------------------


@pytest.mark.parametrize("folder", ROUTING, ids=lambda f: f.name)
def test_injected_credentials_carry_no_scheme_so_the_secret_holds_the_whole_value(
    folder: Path,
) -> None:
    """Envoy Gateway v1.9 injects the Secret's value as the header, adding nothing.

    So the deviation stays: a ModelEndpoint's Secret holds `Bearer <token>`
    (SPEC §2 says the value is sent as `Bearer <value>`).
    """
    out = _translated(folder, c.CONTROL_PLANE_PROVIDER_CONFIG)
    injectors = list(_credential_injectors(_xds(out, "Clusters")))
    assert injectors, "no credential filter rendered: nothing checked"
    for generic in injectors:
        assert set(generic) == {"@type", "credential", "header"}, generic  # no headerValuePrefix


def _credential_injectors(clusters: list[Obj]) -> Iterator[Obj]:
    for x in clusters:
        options = (x["cluster"].get("typedExtensionProtocolOptions") or {}).values()
        for option in options:
            for f in option.get("httpFilters") or []:
                if f["name"].startswith("envoy.filters.http.credential_injector/"):
                    yield f["typedConfig"]["credential"]["typedConfig"]


@pytest.mark.parametrize("folder", ROUTING, ids=lambda f: f.name)
def test_one_hop_with_per_backend_paths_is_refused_so_the_canary_takes_two(folder: Path) -> None:
    """The canary's two hops exist because Envoy Gateway refuses a path rewrite per backendRef.

    The first hop's route rewritten as the one hop it would otherwise be: each
    backendRef straight to its endpoint's Backend with that endpoint's path.
    """
    inputs = control_plane_inputs(_render(folder), _pki())
    routes = [o for o in inputs if o["kind"] == "HTTPRoute"]
    # The service with a SaaS endpoint beside its clusters routes in two hops.
    (first,) = [copy.deepcopy(o) for o in routes if o["metadata"]["name"] == "llama-spillover"]
    rule = first["spec"]["rules"][0]
    one_hop = []
    for ref in rule["backendRefs"]:
        host = ref["filters"][0]["urlRewrite"]["hostname"]
        (second,) = [o for o in routes if host in o["spec"].get("hostnames", [])]
        hop_rule = second["spec"]["rules"][0]
        path = hop_rule["filters"][0]["urlRewrite"].get("path") or {
            "type": "ReplacePrefixMatch",
            "replacePrefixMatch": "/v1/chat/completions",
        }
        one_hop.append(
            {
                **hop_rule["backendRefs"][0],
                "weight": ref["weight"],
                "filters": [{"type": "URLRewrite", "urlRewrite": {"path": path}}],
            }
        )
    rule["backendRefs"] = one_hop
    rule.pop("filters", None)
    first["spec"]["rules"] = [rule]
    others = [o for o in inputs if o["kind"] != "HTTPRoute"]
    out = _run([*others, first], f"{folder.name}-one-hop")
    (route,) = out["httpRoutes"]
    (parent,) = route["status"]["parents"]
    resolved = [x for x in parent["conditions"] if x["type"] == "ResolvedRefs"]
    assert [(x["status"], x["reason"]) for x in resolved] == [("False", "UnsupportedRefValue")]
    assert "URLRewrite path modifier is not supported within BackendRef" in resolved[0]["message"]


@pytest.mark.parametrize("folder", ROUTING, ids=lambda f: f.name)
def test_a_hop_backend_is_reached_only_from_the_namespace_its_grant_names(folder: Path) -> None:
    """The Backends that present the fleet's client certificate sit in the system
    namespace; Envoy Gateway lets a route refer to one only through its ReferenceGrant,
    which names the service's namespace: granted to another namespace, every route that
    refers to one is refused (`RefNotPermitted`), so the grant is what opens the way."""
    inputs = control_plane_inputs(_render(folder), _pki())
    grants = [o for o in inputs if o["kind"] == "ReferenceGrant"]
    assert grants, "no ReferenceGrant: nothing checked"
    assert {g["metadata"]["namespace"] for g in grants} == {c.SYSTEM_NAMESPACE}
    assert list(_route_problems(_translated(folder, c.CONTROL_PLANE_PROVIDER_CONFIG))) == []
    elsewhere = copy.deepcopy(inputs)
    for grant in (o for o in elsewhere if o["kind"] == "ReferenceGrant"):
        for source in grant["spec"]["from"]:
            source["namespace"] = "another-team"
    refused = list(_route_problems(_run(elsewhere, f"{folder.name}-grant-elsewhere")))
    hop_routes = {
        r["metadata"]["name"]
        for r in inputs
        if r["kind"] == "HTTPRoute"
        and any(
            ref.get("namespace") == c.SYSTEM_NAMESPACE
            for rule in r["spec"]["rules"]
            for ref in rule["backendRefs"]
        )
    }
    assert hop_routes
    assert {p.split(":")[0].removeprefix("HTTPRoute ") for p in refused} == hop_routes
    assert all("RefNotPermitted" in p for p in refused), refused
