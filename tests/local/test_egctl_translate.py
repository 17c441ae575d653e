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


def _weighted(out: Obj, route: str) -> list[list[tuple[str, int]]]:
    """Per xDS route of `route` (one per rule and listener): (cluster, weight) pairs."""
    found = []
    for config in _xds(out, "Routes"):
        for host in config["routeConfig"].get("virtualHosts") or []:
            for r in host["routes"]:
                if r["name"].startswith(f"httproute/{route}/rule/"):
                    action = r["route"]
                    clusters = (action.get("weightedClusters") or {}).get("clusters")
                    pairs = clusters or [{"name": action["cluster"], "weight": 1}]
                    found.append([(_target(p), p["weight"]) for p in pairs])
    return found


def _target(weighted: Obj) -> str:
    """A weighted cluster's target: the second hop's Host when it goes through the hop
    (the loopback cluster is shared), else the xDS cluster (one per rule and backendRef)."""
    host = str(weighted.get("hostRewriteLiteral") or "")
    return host if host.endswith(f".{c.HOP_DOMAIN}") else str(weighted["name"])


def _backend_of(inputs: list[Obj], namespace: str, route: str, target: str) -> str:
    """The endpoint whose Backend an xDS cluster (or the second hop's Host) of `route`
    leads to, by the endpoint label of the manifest it reaches (a Backend to a cluster's
    Gateway sits in the system namespace, under a name of its own)."""
    if target.endswith(f".{c.HOP_DOMAIN}"):
        (second,) = [
            o
            for o in inputs
            if o["kind"] == "HTTPRoute" and target in o["spec"].get("hostnames", [])
        ]
        return str(second["metadata"]["labels"][c.LABEL_ENDPOINT])
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
    return str(backend["metadata"]["labels"][c.LABEL_ENDPOINT])


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
        want = {
            label_value(e["name"]): e["weight"]
            for e in svc["status"]["endpoints"]
            if e.get("ready") and e["weight"] > 0
        }
        routes = _weighted(out, f"{ns}/{dns_label(name)}")
        assert routes, name
        for pairs in routes:
            got = {_backend_of(inputs, ns, f"{ns}/{name}", t): w for t, w in pairs}
            assert got == want, name


def _transport(cluster: Obj) -> list[Obj]:
    sockets = [m["transportSocket"] for m in cluster.get("transportSocketMatches") or []]
    return sockets or [cluster.get("transportSocket")]


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
            (tls,) = [t["typedConfig"] for t in _transport(cluster) if t]
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
    routes = {o["metadata"]["name"]: o for o in inputs if o["kind"] == "HTTPRoute"}
    first = copy.deepcopy(routes["llama"])
    rule = first["spec"]["rules"][0]
    one_hop = []
    for ref in rule["backendRefs"]:
        second = routes[ref["filters"][0]["urlRewrite"]["hostname"].split(".")[0]]["spec"]["rules"][
            0
        ]
        path = second["filters"][0]["urlRewrite"]["path"]
        target = second["backendRefs"][0]
        one_hop.append(
            {
                **target,
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
