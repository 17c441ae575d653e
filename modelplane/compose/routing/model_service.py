"""ModelService composer: one weighted OpenAI-compatible route over ModelEndpoints.

Inputs (required): the InferenceGateway `default` (its Gateway, address and the
control plane's provider config) and every ModelEndpoint **in the service's own
namespace** (a fetched endpoint of another namespace is ignored, whatever the
control plane returns).

Output, as provider-kubernetes Objects in the service's namespace on the
control plane's provider config:
- per selected Ready endpoint, an Envoy Gateway `Backend` (FQDN or IP, TLS with
  the system CA bundle and SNI for https upstreams; for an endpoint on a
  cluster's Gateway, `spec.cluster`, mutual TLS: that cluster's CA and name,
  the fleet's client certificate, from a Secret copy in the service's
  namespace, `hop`);
- per endpoint with a credential, an Envoy Gateway `HTTPRouteFilter` with
  `credentialInjection` (Envoy Gateway v1.9: the filter names a Secret whose key
  `credential` holds the header value; used as a backendRef filter so each
  backend gets its own credential). When the endpoint's key is not `credential`,
  a Secret copy is composed whose `data.credential` provider-kubernetes patches
  from the endpoint's Secret (`references[].patchesFrom`). Neither the function
  nor any composed manifest ever holds the value;
- one `HTTPRoute` on the InferenceGateway's Gateway: one rule per OpenAI path
  under the service's prefix (or host), rewritten to the endpoints' upstream
  path prefix, with one weighted backendRef per Ready endpoint (weights:
  `weights.py`).

Envoy Gateway v1.9 rejects path rewrites on individual backendRefs
(envoyproxy/gateway#9095, #9131; its translator says so, see
tests/local/test_egctl_translate.py) but rewrites the Host per backendRef
(#7826). When every Ready endpoint shares one upstream path prefix (SaaS
endpoints, replicas of one deployment behind one rewritePath), the route above
is all there is. When they differ (a canary between two deployments: each
replica is reached under its own path on its cluster's gateway), the service
routes in two hops through the same gateway: its route weighs the endpoints
and sends each request, Host rewritten to the chosen endpoint's internal
hostname (`<service>-<endpoint>.<namespace>.hop.modelplane.internal`), to a
Backend on the Envoy Service itself (the InferenceGateway's
`status.internalAddress`, plain HTTP inside the control plane); one route per
endpoint matches that hostname and rewrites path and Host for its upstream.
Without an internal address the service holds
(`EndpointsReady=False ConflictingUpstreamPaths`) and keeps what it composed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop
from modelplane.api.inference_gateway import ObservedGateway, read_gateway
from modelplane.api.model_endpoint import ObservedEndpoint, read_endpoint
from modelplane.api.model_service import (
    WEIGHT_TOTAL,
    ModelServiceSpec,
    ModelServiceStatus,
    ServiceEndpointStatus,
)
from modelplane.api.objects import label_value
from modelplane.api.reasons import (
    EndpointsReadyReason,
    GatewayReadyReason,
    InputsReadableReason,
    ValidReason,
)
from modelplane.compose import objects, outcome, unreadable
from modelplane.compose import readiness as rd
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.routing import gateway_objects as gwo
from modelplane.compose.routing import weights
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)
from modelplane.scheduling.labels import selector_matches

GATEWAY_REQUIREMENT = "gateway"
ENDPOINTS_REQUIREMENT = "endpoints"
ROUTE_KEY = "route"
# Gateway API: an HTTPRoute rule has at most 16 backendRefs.
MAX_BACKENDS = 16


@dataclass(frozen=True)
class Selected:
    """An endpoint some group selects, with the weight it receives (0 when not Ready)."""

    endpoint: ObservedEndpoint
    weight: int

    @property
    def ready(self) -> bool:
        """Whether it is routed to (Ready with a valid spec)."""
        return self.endpoint.ready and self.endpoint.spec is not None


def plan(
    spec: ModelServiceSpec, endpoints: Sequence[ObservedEndpoint], namespace: str
) -> list[Selected]:
    """Every endpoint of `namespace` some group selects, in name order, with its weight."""
    own = sorted((e for e in endpoints if e.namespace == namespace), key=lambda e: e.name)
    groups: list[tuple[int, list[str]]] = []
    selected: dict[str, ObservedEndpoint] = {}
    for group in spec.endpoints:
        members = [e for e in own if selector_matches(group.selector, e.labels)]
        selected.update((e.name, e) for e in members)
        # A draining endpoint stays listed at weight 0 (its replica leaves after).
        live = [e for e in members if e.ready and e.spec and not e.spec.draining]
        groups.extend(_cohorts(group.weight, live))
    split = weights.split(groups, WEIGHT_TOTAL)
    return [Selected(e, split.get(name, 0)) for name, e in sorted(selected.items())]


def _cohorts(weight: int, live: Sequence[ObservedEndpoint]) -> list[tuple[int, list[str]]]:
    """A group's live endpoints as weighted cohorts: canaries (`spec.canaryPercent`) share
    that percentage of the group's weight, the rest the remainder.

    With only canaries, or none, the group is one cohort: a canary share never
    leaves the model without traffic, nor sends the others' share nowhere.
    Every group's weight is scaled by 100 alike, which leaves the groups'
    shares exactly as they were (the apportioning is proportional).
    """
    canaries = [e for e in live if e.spec is not None and e.spec.canary_percent is not None]
    rest = [e.name for e in live if e not in canaries]
    if not canaries or not rest:
        return [(weight * 100, [e.name for e in live])]
    percent = min(e.spec.canary_percent or 0 for e in canaries if e.spec is not None)
    return [(weight * percent, [e.name for e in canaries]), (weight * (100 - percent), rest)]


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose the service's route and backends, or say why it cannot route."""
    name = str(meta(inp.composite).get("name") or "")
    namespace = str(meta(inp.composite).get("namespace") or "")
    if not name or not namespace:
        return outcome.fatal("ModelService has no metadata.name or metadata.namespace")
    inp = without_secret_data(inp)
    result = ComposeResult()
    spec, error = parse_spec(ModelServiceSpec, inp.composite)
    if spec is None:
        return outcome.hold(
            inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, error, readiness=_ready
        )
    result.condition(c.CONDITION_VALID, True, ValidReason.VALID)
    result.requirements[GATEWAY_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION, kind="InferenceGateway", match_name=c.INFERENCE_GATEWAY_NAME
    )
    result.requirements[ENDPOINTS_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION, kind="ModelEndpoint", namespace=namespace
    )
    if not all(inp.fetched(r) for r in result.requirements):
        result.condition(
            c.CONDITION_GATEWAY_READY,
            None,
            GatewayReadyReason.WAITING_FOR_RESOURCES,
            "waiting for the InferenceGateway and ModelEndpoints",
        )
        return outcome.wait(inp, result, readiness=_ready)
    gateway = _gateway(inp, result)
    if gateway is None:
        return outcome.hold(inp, result, *_gateway_problem(inp), readiness=_ready)
    endpoints = [read_endpoint(o) for o in inp.required.get(ENDPOINTS_REQUIREMENT) or []]
    nameless = [e.unreadable for e in endpoints if e.unreadable is not None]
    if nameless:
        # An endpoint that cannot be named may be any of them: route as before.
        message = (
            "a ModelEndpoint fetched for this service does not read ("
            + "; ".join(sorted(set(nameless)))
            + "): which endpoint it is cannot be told, so the route and backends are kept as "
            "they are until it reads"
        )
        return outcome.hold(
            inp,
            result,
            c.CONDITION_INPUTS_READABLE,
            InputsReadableReason.UNREADABLE,
            message,
            readiness=_ready,
        )
    endpoints = _last_known(inp, result, endpoints, namespace)
    selected = plan(spec, endpoints, namespace)
    status = ModelServiceStatus(
        endpoints=[
            ServiceEndpointStatus(name=s.endpoint.name, weight=s.weight, ready=s.ready)
            for s in selected
        ],
        endpoints_ready=f"{sum(s.ready for s in selected)}/{len(selected)}",
    )
    return _route(inp, result, spec, name, namespace, gateway, selected, status)


def _last_known(
    inp: ComposeInput, result: ComposeResult, endpoints: list[ObservedEndpoint], namespace: str
) -> list[ObservedEndpoint]:
    """Endpoints whose status does not read, as the service last routed them.

    Whether such an endpoint is Ready is unknown, so it is neither dropped nor
    added: it keeps receiving traffic when the service routes to it now (its
    Backend is observed) and stays without otherwise. Each is reported
    (`InputsReadable`).
    """
    out, found = [], []
    for e in endpoints:
        if e.unknown is not None and e.spec is not None and e.namespace == namespace:
            routed = f"backend-{e.name}" in inp.observed
            field, _, why = e.unknown.partition(": ")
            e = replace(e, ready=routed)
            kept = "routed to as before" if routed else "not routed to, as before"
            found.append(unreadable.Unreadable(f"ModelEndpoint {e.name}", field, why, kept))
        out.append(e)
    unreadable.report(inp, result, found)
    return out


def without_secret_data(inp: ComposeInput) -> ComposeInput:
    """`inp` with the data of every observed wrapped Secret dropped.

    provider-kubernetes writes the value it patched into a Secret copy back into
    the Object (crossplane-contrib/provider-kubernetes#223) and, without
    `--sanitize-secrets`, into its status; a hold or wait keeps observed Objects
    as desired, and must never echo that value. Conditions stay: they say
    whether the copy exists.
    """
    observed = {}
    for key, obj in inp.observed.items():
        manifest = gwo.wrapped_manifest(obj)
        if manifest is not None and manifest.get("kind") == "Secret":
            spec = {**obj["spec"], "forProvider": {**obj["spec"]["forProvider"]}}
            spec["forProvider"]["manifest"] = _no_data(dict(manifest))
            obj = {**obj, "spec": spec}
            status = obj.get("status")
            if isinstance(status, dict):
                obj["status"] = {k: v for k, v in status.items() if k != "atProvider"}
        observed[key] = obj
    return ComposeInput(composite=inp.composite, observed=observed, required=inp.required)


def _no_data(manifest: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in manifest.items() if k not in ("data", "stringData")}


def _gateway(inp: ComposeInput, result: ComposeResult) -> ObservedGateway | None:
    found = inp.required.get(GATEWAY_REQUIREMENT) or []
    gateway = read_gateway(found[0]) if found else None
    if gateway is None or not gateway.usable:
        return None
    result.condition(
        c.CONDITION_GATEWAY_READY,
        True,
        GatewayReadyReason.ADDRESSED,
        f"Gateway {gateway.gateway_namespace}/{gateway.gateway_name} at {gateway.address}",
    )
    return gateway


def _gateway_problem(inp: ComposeInput) -> tuple[str, GatewayReadyReason, str]:
    found = inp.required.get(GATEWAY_REQUIREMENT) or []
    if not found:
        return (
            c.CONDITION_GATEWAY_READY,
            GatewayReadyReason.GATEWAY_NOT_FOUND,
            f"InferenceGateway {c.INFERENCE_GATEWAY_NAME!r} not found: create it to serve "
            "ModelServices",
        )
    problem = read_gateway(found[0]).problem
    detail = f" ({problem})" if problem else ""
    return (
        c.CONDITION_GATEWAY_READY,
        GatewayReadyReason.NO_ADDRESS,
        f"InferenceGateway {c.INFERENCE_GATEWAY_NAME!r} publishes no address yet{detail}: "
        "the service waits for it",
    )


def _route(
    inp: ComposeInput,
    result: ComposeResult,
    spec: ModelServiceSpec,
    name: str,
    namespace: str,
    gateway: ObservedGateway,
    selected: Sequence[Selected],
    status: ModelServiceStatus,
) -> ComposeResult:
    result.status = status.to_dict()
    routed = [s for s in selected if s.ready and s.weight > 0]
    if not routed:
        return outcome.hold(inp, result, *_no_ready(selected), readiness=_ready)
    if len(routed) > MAX_BACKENDS:
        message = (
            f"{len(routed)} endpoints would receive traffic; a Gateway API route rule takes at "
            f"most {MAX_BACKENDS} backends: narrow spec.endpoints[].selector"
        )
        return outcome.hold(
            inp,
            result,
            c.CONDITION_ENDPOINTS_READY,
            EndpointsReadyReason.TOO_MANY_ENDPOINTS,
            message,
            readiness=_ready,
        )
    paths = sorted({_upstream_path(s) for s in routed})
    builder = _Builder(spec, name, namespace, gateway)
    if len(paths) == 1:
        wanted = builder.backends(routed)
        wanted[ROUTE_KEY] = (builder.route(routed, paths[0]), gwo.ROUTE)
    elif gateway.internal_address:
        wanted = builder.two_hop(routed, gateway.internal_address)
    else:
        message = (
            "Ready endpoints disagree on their upstream path prefix ("
            + ", ".join(f"{s.endpoint.name}: {_upstream_path(s) or '/'}" for s in routed)
            + "); that needs the two-hop route through the gateway's plain-HTTP listener, "
            "and the InferenceGateway publishes no status.internalAddress: add an HTTP "
            "listener, or give the endpoints one spec.rewritePath"
        )
        return outcome.hold(
            inp,
            result,
            c.CONDITION_ENDPOINTS_READY,
            EndpointsReadyReason.CONFLICTING_UPSTREAM_PATHS,
            message,
            readiness=_ready,
        )
    _emit(inp, result, wanted)
    _endpoints_condition(result, selected, routed)
    status.address = builder.address()
    result.status = status.to_dict()
    return result


def _no_ready(selected: Sequence[Selected]) -> tuple[str, EndpointsReadyReason, str]:
    if not selected:
        why = "no ModelEndpoint in the service's namespace matches spec.endpoints[].selector"
    else:
        why = "none of the selected endpoints is Ready: " + ", ".join(
            f"{s.endpoint.name}" + (f" ({s.endpoint.problem})" if s.endpoint.problem else "")
            for s in selected
        )
    return (
        c.CONDITION_ENDPOINTS_READY,
        EndpointsReadyReason.NO_READY_ENDPOINTS,
        f"{why}; the service does not route until one is",
    )


def _endpoints_condition(
    result: ComposeResult, selected: Sequence[Selected], routed: Sequence[Selected]
) -> None:
    table = ", ".join(f"{s.endpoint.name}={s.weight}" for s in routed)
    waiting = [s.endpoint.name for s in selected if not s.ready]
    if waiting:
        result.condition(
            c.CONDITION_ENDPOINTS_READY,
            True,
            EndpointsReadyReason.SOME_ENDPOINTS_NOT_READY,
            f"routing to {table}; not Ready (no traffic): {', '.join(waiting)}",
        )
    else:
        result.condition(
            c.CONDITION_ENDPOINTS_READY,
            True,
            EndpointsReadyReason.ALL_ENDPOINTS_READY,
            f"routing to {table}",
        )


def _emit(
    inp: ComposeInput, result: ComposeResult, wanted: Mapping[str, tuple[Resource, gwo.ReadyWhen]]
) -> None:
    all_ready = True
    for key, (resource, rule) in wanted.items():
        ok = gwo.observed(rule, inp.observed.get(key))
        all_ready = all_ready and ok
        result.desired[key] = DesiredResource(resource, "True" if ok else "False")
    result.ready = "True" if all_ready else "False"


def _ready(obj: Resource) -> bool:
    """Readiness of a kept Object: the rule it declared."""
    return rd.observed_ready(obj)


def _upstream_path(s: Selected) -> str:
    assert s.endpoint.spec is not None
    return s.endpoint.spec.upstream_path()


class _Builder:
    """Names and manifests of one service's composed resources."""

    def __init__(
        self, spec: ModelServiceSpec, name: str, namespace: str, gateway: ObservedGateway
    ) -> None:
        self.spec, self.name, self.namespace, self.gateway = spec, name, namespace, gateway
        assert gateway.provider_config_name is not None
        self.provider_config = gateway.provider_config_name
        self.labels = {c.LABEL_MANAGED_BY: c.MANAGED_BY, c.LABEL_SERVICE: label_value(name)}

    def _meta(self, name: str, endpoint: str | None = None) -> dict[str, Any]:
        labels = dict(self.labels)
        if endpoint is not None:
            labels[c.LABEL_ENDPOINT] = label_value(endpoint)
        return {"name": name, "namespace": self.namespace, "labels": labels}

    def _wrap(
        self, suffix: tuple[str, ...], manifest: Resource, rule: gwo.ReadyWhen, **kw: Any
    ) -> Resource:
        name = objects.object_name(self.name, *suffix)
        return gwo.wrap(
            name, self.namespace, self.provider_config, manifest, rule, self.labels, **kw
        )

    def backend_name(self, endpoint: str) -> str:
        """The Backend's name: service and endpoint, as a DNS label."""
        return objects.dns_label(f"{self.name}-{endpoint}")

    def backends(self, routed: Sequence[Selected]) -> dict[str, tuple[Resource, gwo.ReadyWhen]]:
        """Per routed endpoint: its Backend and, with a credential, filter and Secret copy."""
        out: dict[str, tuple[Resource, gwo.ReadyWhen]] = {}
        for s in routed:
            e = s.endpoint
            out[f"backend-{e.name}"] = (
                self._wrap(("backend", e.name), self.backend(e), gwo.ACCEPTED),
                gwo.ACCEPTED,
            )
            out.update(self.credential(e))
            if e.spec is not None and e.spec.cluster is not None:
                out.update(self.hop(e.spec.cluster))
        return out

    def backend(self, e: ObservedEndpoint) -> Resource:
        """The Envoy Gateway Backend of one endpoint."""
        assert e.spec is not None
        up = e.spec.upstream()
        address = (
            {"ip": {"address": up.host, "port": up.port}}
            if up.is_ip
            else {"fqdn": {"hostname": up.host, "port": up.port}}
        )
        body: dict[str, Any] = {"endpoints": [address]}
        if e.spec.cluster is not None:
            body["tls"] = self.hop_tls(e.spec.cluster)
        elif up.scheme == "https":
            tls: dict[str, Any] = {"wellKnownCACertificates": "System"}
            if not up.is_ip:
                tls["sni"] = up.host
            body["tls"] = tls
        return {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "Backend",
            "metadata": self._meta(self.backend_name(e.name), e.name),
            "spec": body,
        }

    def hop_secret_name(self, cluster: str) -> str:
        """The copy, in the service's namespace, of the fleet's client certificate for
        `cluster` and of the CA that signed that cluster's Gateway."""
        return objects.dns_label(f"{self.name}-{cluster}-hop")

    def hop_tls(self, cluster: str) -> dict[str, Any]:
        """Mutual TLS to a cluster's Gateway: verify it by its CA and name, present the
        fleet's client certificate for that cluster (`api/gateway_hop.py`)."""
        secret = {"group": "", "kind": "Secret", "name": self.hop_secret_name(cluster)}
        return {
            "caCertificateRefs": [dict(secret)],
            "sni": hop.server_name(cluster),
            "clientCertificateRef": dict(secret),
        }

    def hop(self, cluster: str) -> dict[str, tuple[Resource, gwo.ReadyWhen]]:
        """The Secret a Backend to `cluster`'s Gateway reads, filled by provider-kubernetes
        from the ServingStack's connection Secret (the function never holds a value).

        Envoy Gateway v1.9 takes a Backend's client certificate only from the Backend's
        own namespace (a ReferenceGrant does not help; its translator says so), hence a
        copy per service rather than a reference to the stack's Secret.
        """
        source = hop.connection_secret(cluster)
        copy = {
            "apiVersion": c.CORE_API_VERSION,
            "kind": "Secret",
            "metadata": self._meta(self.hop_secret_name(cluster)),
            "type": "kubernetes.io/tls",
        }
        patches = [
            {
                "patchesFrom": {
                    "apiVersion": c.CORE_API_VERSION,
                    "kind": "Secret",
                    "name": source,
                    "namespace": c.SYSTEM_NAMESPACE,
                    "fieldPath": _data_path(key),
                },
                "toFieldPath": _data_path(key),
            }
            for key in (hop.CERT_KEY, hop.PRIVATE_KEY, hop.CA_KEY)
        ]
        wrapped = self._wrap(("hop", cluster), copy, gwo.EXISTS, references=patches)
        return {f"hop-{cluster}": (wrapped, gwo.EXISTS)}

    def credential(self, e: ObservedEndpoint) -> dict[str, tuple[Resource, gwo.ReadyWhen]]:
        """The credential filter (and Secret copy when the key is not `credential`)."""
        assert e.spec is not None
        ref = e.spec.auth_secret_ref
        if ref is None:
            return {}
        out: dict[str, tuple[Resource, gwo.ReadyWhen]] = {}
        secret = ref.name
        if ref.key != c.ENVOY_CREDENTIAL_KEY:
            secret = objects.dns_label(f"{self.name}-{e.name}-credential")
            copy = {
                "apiVersion": c.CORE_API_VERSION,
                "kind": "Secret",
                "metadata": self._meta(secret, e.name),
                "type": "Opaque",
            }
            patch = {
                "patchesFrom": {
                    "apiVersion": c.CORE_API_VERSION,
                    "kind": "Secret",
                    "name": ref.name,
                    "namespace": self.namespace,
                    "fieldPath": _data_path(ref.key),
                },
                "toFieldPath": _data_path(c.ENVOY_CREDENTIAL_KEY),
            }
            wrapped = self._wrap(("credential", e.name), copy, gwo.EXISTS, references=[patch])
            out[f"credential-{e.name}"] = (wrapped, gwo.EXISTS)
        filt = {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "HTTPRouteFilter",
            "metadata": self._meta(self.filter_name(e.name), e.name),
            "spec": {
                "credentialInjection": {
                    "header": e.spec.header_name,
                    "overwrite": True,
                    "credential": {"valueRef": {"name": secret}},
                }
            },
        }
        out[f"filter-{e.name}"] = (self._wrap(("filter", e.name), filt, gwo.EXISTS), gwo.EXISTS)
        return out

    def filter_name(self, endpoint: str) -> str:
        """The credential filter's name."""
        return objects.dns_label(f"{self.name}-{endpoint}-auth")

    def credential_filters(self, e: ObservedEndpoint) -> list[dict[str, Any]]:
        """The endpoint's credential filter as a backendRef filter (none without one)."""
        assert e.spec is not None
        if e.spec.auth_secret_ref is None:
            return []
        return [
            {
                "type": "ExtensionRef",
                "extensionRef": {
                    "group": c.ENVOY_GATEWAY_GROUP,
                    "kind": "HTTPRouteFilter",
                    "name": self.filter_name(e.name),
                },
            }
        ]

    def backend_ref(self, s: Selected) -> dict[str, Any]:
        """One weighted backendRef to the endpoint's Backend with its own filters."""
        assert s.endpoint.spec is not None
        up = s.endpoint.spec.upstream()
        filters: list[dict[str, Any]] = []
        if not up.is_ip:
            # The upstream sees its own Host, not the gateway's.
            filters.append({"type": "URLRewrite", "urlRewrite": {"hostname": up.host}})
        filters += self.credential_filters(s.endpoint)
        return _backend_ref(self.backend_name(s.endpoint.name), s.weight, filters)

    def route(self, routed: Sequence[Selected], upstream: str) -> Resource:
        """The service's HTTPRoute: one rule per OpenAI path, weighted backends."""
        prefix = self.spec.path_prefix(self.namespace, self.name)
        refs = [self.backend_ref(s) for s in routed]
        hostnames = [self.spec.host] if self.spec.host else []
        manifest = self._route_manifest(
            objects.dns_label(self.name), hostnames, _rules(prefix, upstream, None, refs)
        )
        return self._wrap(("route",), manifest, gwo.ROUTE)

    def _route_manifest(
        self,
        name: str,
        hostnames: list[str],
        rules: list[dict[str, Any]],
        endpoint: str | None = None,
    ) -> Resource:
        spec: dict[str, Any] = {
            "parentRefs": [
                {
                    "group": c.GATEWAY_GROUP,
                    "kind": "Gateway",
                    "name": self.gateway.gateway_name,
                    "namespace": self.gateway.gateway_namespace,
                }
            ],
            "rules": rules,
        }
        if hostnames:
            spec["hostnames"] = hostnames
        return {
            "apiVersion": c.GATEWAY_API_VERSION,
            "kind": "HTTPRoute",
            "metadata": self._meta(name, endpoint),
            "spec": spec,
        }

    def hop_host(self, endpoint: str) -> str:
        """The internal hostname that selects one endpoint's second-hop route."""
        return f"{objects.dns_label(f'{self.name}-{endpoint}')}.{self.namespace}.{c.HOP_DOMAIN}"

    def two_hop(
        self, routed: Sequence[Selected], internal: str
    ) -> dict[str, tuple[Resource, gwo.ReadyWhen]]:
        """Endpoints with different upstream paths: weigh first, rewrite the path second.

        Envoy Gateway rewrites paths per rule, not per backendRef, but does
        rewrite the Host per backendRef. So the service's route picks an
        endpoint by weight and sends the request, Host set to that endpoint's
        internal hostname, back into the gateway (a Backend on the Envoy
        Service, plain HTTP inside the control plane); the endpoint's own route
        matches that hostname and rewrites path and Host for its upstream.
        """
        host, _, port = internal.rpartition(":")
        hop = objects.dns_label(f"{self.name}-hop")
        loopback = {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "Backend",
            "metadata": self._meta(hop),
            "spec": {"endpoints": [{"fqdn": {"hostname": host, "port": int(port)}}]},
        }
        out = self.backends(routed)
        out["backend-hop"] = (self._wrap(("hop",), loopback, gwo.ACCEPTED), gwo.ACCEPTED)
        refs = [
            _backend_ref(
                hop,
                s.weight,
                [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {"hostname": self.hop_host(s.endpoint.name)},
                    }
                ],
            )
            for s in routed
        ]
        prefix = self.spec.path_prefix(self.namespace, self.name)
        hostnames = [self.spec.host] if self.spec.host else []
        first = self._route_manifest(
            objects.dns_label(self.name), hostnames, _rules(prefix, "", None, refs)
        )
        out[ROUTE_KEY] = (self._wrap(("route",), first, gwo.ROUTE), gwo.ROUTE)
        for s in routed:
            out[f"route-{s.endpoint.name}"] = (self.second_hop(s), gwo.ROUTE)
        return out

    def second_hop(self, s: Selected) -> Resource:
        """One endpoint's route behind its internal hostname: path and Host for its upstream."""
        e = s.endpoint
        assert e.spec is not None
        up = e.spec.upstream()
        ref = _backend_ref(self.backend_name(e.name), None, self.credential_filters(e))
        rules = _rules("", e.spec.upstream_path(), None if up.is_ip else up.host, [ref])
        name = objects.dns_label(f"{self.name}-{e.name}")
        manifest = self._route_manifest(name, [self.hop_host(e.name)], rules, e.name)
        return self._wrap(("route", e.name), manifest, gwo.ROUTE)

    def address(self) -> str:
        """Where clients call the service: the gateway's base URL (or host) and prefix."""
        base = str(self.gateway.address or "").rstrip("/")
        if self.spec.host:
            scheme, _, rest = base.partition("://")
            port = rest.partition(":")[2]
            base = f"{scheme}://{self.spec.host}" + (f":{port}" if port else "")
        return base + self.spec.path_prefix(self.namespace, self.name)


def _data_path(key: str) -> str:
    """A field path to `data.<key>`; bracketed when the key holds a dot."""
    return f"data.{key}" if "." not in key else f"data[{key}]"


def _backend_ref(name: str, weight: int | None, filters: list[dict[str, Any]]) -> dict[str, Any]:
    ref: dict[str, Any] = {"group": c.ENVOY_GATEWAY_GROUP, "kind": "Backend", "name": name}
    if weight is not None:
        ref["weight"] = weight
    if filters:
        ref["filters"] = filters
    return ref


def _rules(
    prefix: str, upstream: str, host: str | None, refs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One rule per OpenAI path: `prefix + path` rewritten to `upstream + path` (and Host)."""
    rules = []
    for path in c.OPENAI_PATHS:
        rule: dict[str, Any] = {
            "matches": [{"path": {"type": "PathPrefix", "value": prefix + path}}]
        }
        rewrite: dict[str, Any] = {}
        if host is not None:
            rewrite["hostname"] = host
        if prefix != upstream:
            rewrite["path"] = {"type": "ReplacePrefixMatch", "replacePrefixMatch": upstream + path}
        if rewrite:
            rule["filters"] = [{"type": "URLRewrite", "urlRewrite": rewrite}]
        rule["backendRefs"] = refs
        rules.append(rule)
    return rules
