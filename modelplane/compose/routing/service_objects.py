"""The objects a ModelService composes on the control plane, by name and manifest.

Everything Envoy Gateway reads for one service: per endpoint a `Backend`
(and, with a credential, an `HTTPRouteFilter` and a Secret copy), the service's
`HTTPRoute`, and for the two-hop route the loopback Backend and one route per
endpoint (`model_service.py` says when each is composed).

The fleet's client certificate and key for a cluster stay where the cluster's
ServingStack put them, in the connection Secret `api.gateway_hop.
connection_secret(cluster)` of the system namespace: the Backend of an endpoint
on a cluster's Gateway (`spec.cluster`) is composed there, beside that Secret
(Envoy Gateway v1.9 reads a Backend's client certificate only from the
Backend's own namespace), under a name that carries the service's namespace
(`api.gateway_hop.backend_name`). The service's routes stay in its own
namespace and reach that Backend through a Gateway API `ReferenceGrant`, also
in the system namespace, which lets HTTPRoutes of exactly the service's
namespace refer to exactly that Backend. Nothing of the key is ever copied
into, or referable from, a tenant's namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop
from modelplane.api.inference_cluster import GatewayRef
from modelplane.api.inference_gateway import ObservedGateway
from modelplane.api.model_endpoint import ObservedEndpoint, Upstream
from modelplane.api.model_service import ModelServiceSpec
from modelplane.api.objects import label_value
from modelplane.compose import objects
from modelplane.compose.routing import gateway_objects as gwo
from modelplane.compose.routing.hops import Verdict
from modelplane.compose.types import Resource

Wanted = dict[str, tuple[Resource, gwo.ReadyWhen]]
REFERENCE_GRANT_API_VERSION = "gateway.networking.k8s.io/v1beta1"
ROUTE_KEY = "route"
POLICY_KEY = "traffic-policy"
CLUSTERS_ROUTE_KEY = "clusters-route"
# The Envoy Gateway defaults every cluster hop gets (`traffic_policy`): a request that
# never reached a cluster's engines (connection refused, a refused stream, a 503 from
# a cluster with no Ready replica left) is tried on another cluster; a cluster whose
# Gateway stops answering its health check leaves the rotation within seconds.
HEALTH_PATH = "/health"
HEALTH_INTERVAL = "2s"
HEALTH_TIMEOUT = "2s"  # a busy engine's /health may take a while: not a dead cluster
UNHEALTHY_AFTER = 3
HEALTHY_AFTER = 1
RETRIES = 2
EJECT_AFTER = 3  # consecutive gateway errors (502, 503, 504, connect failures)
EJECTION = "15s"
# Outlier detection never ejects more than half the clusters: errors seen
# everywhere at once (an overload) are not a reason to send traffic nowhere.
MAX_EJECTED_PERCENT = 50


@dataclass(frozen=True)
class Selected:
    """An endpoint some group selects, with the weight it receives (0 when not Ready)."""

    endpoint: ObservedEndpoint
    weight: int
    refused: Verdict | None = None  # why the fleet gateway must not route to it

    @property
    def ready(self) -> bool:
        """Whether it is routed to (Ready with a valid spec, and not refused)."""
        return self.endpoint.ready and self.endpoint.spec is not None and self.refused is None


def clustered(s: Selected) -> bool:
    """Whether a selected endpoint is reached through its service's own route on its
    cluster (it names the cluster and its replica's entry there)."""
    spec = s.endpoint.spec
    return spec is not None and spec.cluster is not None and spec.backend_ref is not None


@dataclass(frozen=True)
class ClusterShare:
    """The routed endpoints a service reaches on one cluster, and their summed weight."""

    cluster: str
    provider_config: str
    gateway: GatewayRef
    members: tuple[Selected, ...]

    @property
    def weight(self) -> int:
        """The fleet gateway's weight for the cluster: its endpoints' weights summed."""
        return sum(m.weight for m in self.members)

    @property
    def upstream(self) -> Upstream:
        """The cluster Gateway's address and port (every member's URL names it)."""
        spec = self.members[0].endpoint.spec
        assert spec is not None
        return spec.upstream()


def upstream_path(s: Selected) -> str:
    """The upstream path prefix of a selected endpoint (its spec is valid)."""
    assert s.endpoint.spec is not None
    return s.endpoint.spec.upstream_path()


class Builder:
    """Names and manifests of one service's composed resources."""

    def __init__(
        self, spec: ModelServiceSpec, name: str, namespace: str, gateway: ObservedGateway
    ) -> None:
        self.spec, self.name, self.namespace, self.gateway = spec, name, namespace, gateway
        assert gateway.provider_config_name is not None
        self.provider_config = gateway.provider_config_name
        self.labels = {c.LABEL_MANAGED_BY: c.MANAGED_BY, c.LABEL_SERVICE: label_value(name)}

    def _meta(
        self, name: str, endpoint: str | None = None, namespace: str | None = None
    ) -> dict[str, Any]:
        labels = dict(self.labels)
        if endpoint is not None:
            labels[c.LABEL_ENDPOINT] = label_value(endpoint)
        if namespace is not None:
            # In the system namespace: whose service it serves, for people and listings.
            labels[c.LABEL_SERVICE_NAMESPACE] = self.namespace
        return {"name": name, "namespace": namespace or self.namespace, "labels": labels}

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

    def backends(self, routed: Sequence[Selected]) -> Wanted:
        """Per routed endpoint: its Backend and, with a credential, filter and Secret copy;
        for an endpoint on a cluster's Gateway, the ReferenceGrant its Backend needs."""
        out: Wanted = {}
        for s in routed:
            e = s.endpoint
            out[f"backend-{e.name}"] = (
                self._wrap(("backend", e.name), self.backend(e), gwo.ACCEPTED),
                gwo.ACCEPTED,
            )
            out.update(self.credential(e))
            if e.spec is not None and e.spec.cluster is not None:
                grant = self._wrap(("grant", e.name), self.grant(e.name), gwo.EXISTS)
                out[f"grant-{e.name}"] = (grant, gwo.EXISTS)
        return out

    def backend(self, e: ObservedEndpoint) -> Resource:
        """The Envoy Gateway Backend of one endpoint (in the system namespace when it is
        on a cluster's Gateway)."""
        assert e.spec is not None
        up = e.spec.upstream()
        body: dict[str, Any] = {"endpoints": [_endpoint(up)]}
        meta = self._meta(self.backend_name(e.name), e.name)
        if e.spec.cluster is not None:
            body["tls"] = hop_tls(e.spec.cluster)
            meta = self._meta(self.hop_backend_name(e.name), e.name, c.SYSTEM_NAMESPACE)
        elif up.scheme == "https":
            tls: dict[str, Any] = {"wellKnownCACertificates": "System"}
            if not up.is_ip:
                tls["sni"] = up.host
            body["tls"] = tls
        return {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "Backend",
            "metadata": meta,
            "spec": body,
        }

    def hop_backend_name(self, endpoint: str) -> str:
        """The name, in the system namespace, of the Backend to an endpoint on a cluster's
        Gateway."""
        return hop.backend_name(self.namespace, self.name, endpoint)

    def grant(self, endpoint: str) -> Resource:
        """The ReferenceGrant that lets HTTPRoutes of exactly this service's namespace
        refer to exactly the endpoint's Backend in the system namespace."""
        return self._grant(self.hop_backend_name(endpoint), endpoint)

    def _grant(self, name: str, endpoint: str | None) -> Resource:
        return {
            "apiVersion": REFERENCE_GRANT_API_VERSION,
            "kind": "ReferenceGrant",
            "metadata": self._meta(name, endpoint, c.SYSTEM_NAMESPACE),
            "spec": {
                "from": [
                    {"group": c.GATEWAY_GROUP, "kind": "HTTPRoute", "namespace": self.namespace}
                ],
                "to": [{"group": c.ENVOY_GATEWAY_GROUP, "kind": "Backend", "name": name}],
            },
        }

    def credential(self, e: ObservedEndpoint) -> Wanted:
        """The credential filter (and Secret copy when the key is not `credential`)."""
        assert e.spec is not None
        ref = e.spec.auth_secret_ref
        if ref is None:
            return {}
        out: Wanted = {}
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
        return self.ref_to(s.endpoint, s.weight, filters)

    def ref_to(
        self, e: ObservedEndpoint, weight: int | None, filters: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A backendRef to the endpoint's Backend: its own namespace's, or the system
        namespace's for an endpoint on a cluster's Gateway (its ReferenceGrant allows it)."""
        if e.spec is not None and e.spec.cluster is not None:
            name = self.hop_backend_name(e.name)
            return _backend_ref(name, weight, filters, c.SYSTEM_NAMESPACE)
        return _backend_ref(self.backend_name(e.name), weight, filters)

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
        self, routed: Sequence[Selected], internal: str, shares: Sequence[ClusterShare] = ()
    ) -> Wanted:
        """Endpoints with different upstream paths: weigh first, rewrite the path second.

        Envoy Gateway rewrites paths per rule, not per backendRef, but does
        rewrite the Host per backendRef. So the service's route picks an
        endpoint by weight and sends the request, Host set to that endpoint's
        internal hostname, back into the gateway (a Backend on the Envoy
        Service, plain HTTP inside the control plane); the endpoint's own route
        matches that hostname and rewrites path and Host for its upstream. The
        service's clusters (`shares`) are one such choice, weighted by their
        sum, whose route weighs the clusters as `clusters_route` does.
        """
        host, _, port = internal.rpartition(":")
        loop = objects.dns_label(f"{self.name}-hop")
        loopback = {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "Backend",
            "metadata": self._meta(loop),
            "spec": {"endpoints": [{"fqdn": {"hostname": host, "port": int(port)}}]},
        }
        out = self.backends(routed)
        out["backend-hop"] = (self._wrap(("hop",), loopback, gwo.ACCEPTED), gwo.ACCEPTED)
        choices = [(self.hop_host(s.endpoint.name), s.weight) for s in routed]
        if shares:
            choices.append((self.clusters_host(), sum(s.weight for s in shares)))
        refs = [
            _backend_ref(loop, weight, [{"type": "URLRewrite", "urlRewrite": {"hostname": h}}])
            for h, weight in choices
        ]
        prefix = self.spec.path_prefix(self.namespace, self.name)
        hostnames = [self.spec.host] if self.spec.host else []
        first = self._route_manifest(
            objects.dns_label(self.name), hostnames, _rules(prefix, "", None, refs)
        )
        out[ROUTE_KEY] = (self._wrap(("route",), first, gwo.ROUTE), gwo.ROUTE)
        for s in routed:
            out[f"route-{s.endpoint.name}"] = (self.second_hop(s), gwo.ROUTE)
        if shares:
            rules = _rules("", "", self.service_host(), self.cluster_refs(shares))
            name = objects.dns_label(f"{self.name}-clusters")
            manifest = self._route_manifest(name, [self.clusters_host()], rules)
            out[CLUSTERS_ROUTE_KEY] = (
                self._wrap(("clusters", "route"), manifest, gwo.ROUTE),
                gwo.ROUTE,
            )
        return out

    def second_hop(self, s: Selected) -> Resource:
        """One endpoint's route behind its internal hostname: path and Host for its upstream."""
        e = s.endpoint
        assert e.spec is not None
        up = e.spec.upstream()
        ref = self.ref_to(e, None, self.credential_filters(e))
        rules = _rules("", e.spec.upstream_path(), None if up.is_ip else up.host, [ref])
        name = objects.dns_label(f"{self.name}-{e.name}")
        manifest = self._route_manifest(name, [self.hop_host(e.name)], rules, e.name)
        return self._wrap(("route", e.name), manifest, gwo.ROUTE)

    # --- endpoints on clusters: one Backend per cluster, the split on the cluster ----------

    def service_host(self) -> str:
        """The Host the service's requests carry to a cluster's Gateway."""
        return hop.service_host(self.namespace, self.name)

    def clusters_host(self) -> str:
        """The internal hostname of the fleet route to the service's clusters (two hops)."""
        return f"{objects.dns_label(self.name)}.{self.namespace}.clusters.{c.HOP_DOMAIN}"

    def cluster_objects(self, shares: Sequence[ClusterShare]) -> Wanted:
        """Per cluster: the Backend to its Gateway (mutual TLS), the ReferenceGrant the
        service's routes need for it, and the service's route on the cluster itself."""
        out: Wanted = {}
        for share in shares:
            key = f"cluster-{share.cluster}"
            backend = self.cluster_backend(share)
            out[f"{key}-backend"] = (
                self._wrap(("cluster", share.cluster, "backend"), backend, gwo.ACCEPTED),
                gwo.ACCEPTED,
            )
            name = hop.cluster_backend_name(self.namespace, self.name, share.cluster)
            grant = self._grant(name, None)
            out[f"{key}-grant"] = (
                self._wrap(("cluster", share.cluster, "grant"), grant, gwo.EXISTS),
                gwo.EXISTS,
            )
            out[f"{key}-route"] = (self.workload_route(share), gwo.ROUTE)
        return out

    def cluster_backend(self, share: ClusterShare) -> Resource:
        """The Envoy Gateway Backend to one cluster's Gateway, in the system namespace."""
        name = hop.cluster_backend_name(self.namespace, self.name, share.cluster)
        meta = self._meta(name, None, c.SYSTEM_NAMESPACE)
        meta["labels"][c.LABEL_CLUSTER] = label_value(share.cluster)
        return {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "Backend",
            "metadata": meta,
            "spec": {"endpoints": [_endpoint(share.upstream)], "tls": hop_tls(share.cluster)},
        }

    def cluster_refs(self, shares: Sequence[ClusterShare]) -> list[dict[str, Any]]:
        """One weighted backendRef per cluster, with no filter of its own: Envoy Gateway
        then builds one Envoy cluster whose hosts are the clusters' Gateways, which
        retries and health checks move between."""
        return [
            _backend_ref(
                hop.cluster_backend_name(self.namespace, self.name, s.cluster),
                s.weight,
                [],
                c.SYSTEM_NAMESPACE,
            )
            for s in shares
        ]

    def workload_route_name(self) -> str:
        """The service's route on a cluster (replica routes' names end in a hash)."""
        return objects.dns_label(f"{self.name}-modelservice")

    def workload_route(self, share: ClusterShare) -> Resource:
        """The service's HTTPRoute on one cluster's Gateway: requests carrying its Host go
        to the cluster's Ready replicas' entries, weighted as the fleet weighs them."""
        refs = []
        for m in share.members:
            spec = m.endpoint.spec
            assert spec is not None and spec.backend_ref is not None
            refs.append(spec.backend_ref.manifest(m.weight))
        route = {
            "apiVersion": c.GATEWAY_API_VERSION,
            "kind": "HTTPRoute",
            "metadata": self._meta(self.workload_route_name()),
            "spec": {
                "parentRefs": [
                    {
                        "group": c.GATEWAY_GROUP,
                        "kind": "Gateway",
                        "name": share.gateway.name,
                        "namespace": share.gateway.namespace,
                    }
                ],
                "hostnames": [self.service_host()],
                "rules": [
                    {
                        "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                        "backendRefs": refs,
                    }
                ],
            },
        }
        name = objects.object_name(self.name, "cluster", share.cluster, "route")
        return gwo.wrap(name, self.namespace, share.provider_config, route, gwo.ROUTE, self.labels)

    def clusters_route(self, shares: Sequence[ClusterShare]) -> Resource:
        """The service's HTTPRoute when every routed endpoint is on a cluster: its prefix
        stripped, its Host set, one weighted backendRef per cluster."""
        prefix = self.spec.path_prefix(self.namespace, self.name)
        hostnames = [self.spec.host] if self.spec.host else []
        rules = _rules(prefix, "", self.service_host(), self.cluster_refs(shares))
        manifest = self._route_manifest(objects.dns_label(self.name), hostnames, rules)
        return self._wrap(("route",), manifest, gwo.ROUTE)

    def traffic_policy(self, route: str) -> Resource:
        """Health checks, outlier detection and retries on the route to the clusters.

        Active checks ask `HEALTH_PATH` under the service's Host on each cluster's
        Gateway, which the service's route there answers from a Ready engine, so a
        stopped Gateway and a cluster with no Ready replica left both fail them:
        out of the rotation within `UNHEALTHY_AFTER` intervals.
        """
        policy = {
            "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
            "kind": "BackendTrafficPolicy",
            "metadata": self._meta(objects.dns_label(f"{self.name}-clusters")),
            "spec": {
                "targetRefs": [{"group": c.GATEWAY_GROUP, "kind": "HTTPRoute", "name": route}],
                "healthCheck": {
                    "active": {
                        "type": "HTTP",
                        "timeout": HEALTH_TIMEOUT,
                        "interval": HEALTH_INTERVAL,
                        "unhealthyThreshold": UNHEALTHY_AFTER,
                        "healthyThreshold": HEALTHY_AFTER,
                        "http": {
                            "hostname": self.service_host(),
                            "path": HEALTH_PATH,
                            "expectedStatuses": [200],
                        },
                    },
                    "passive": {
                        "consecutiveGatewayErrors": EJECT_AFTER,
                        "interval": HEALTH_INTERVAL,
                        "baseEjectionTime": EJECTION,
                        "maxEjectionPercent": MAX_EJECTED_PERCENT,
                    },
                },
                "retry": {
                    "numRetries": RETRIES,
                    "retryOn": {
                        "triggers": ["connect-failure", "refused-stream", "retriable-status-codes"],
                        "httpStatusCodes": [503],
                    },
                },
            },
        }
        return self._wrap(("clusters", "policy"), policy, gwo.EXISTS)

    def address(self) -> str:
        """Where clients call the service: the gateway's base URL (or host) and prefix."""
        base = str(self.gateway.address or "").rstrip("/")
        if self.spec.host:
            scheme, _, rest = base.partition("://")
            port = rest.partition(":")[2]
            base = f"{scheme}://{self.spec.host}" + (f":{port}" if port else "")
        return base + self.spec.path_prefix(self.namespace, self.name)


def hop_tls(cluster: str) -> dict[str, Any]:
    """Mutual TLS to a cluster's Gateway: verify it by its CA and name, present the fleet's
    client certificate for that cluster, both from the cluster's connection Secret in the
    system namespace, beside the Backend (`api/gateway_hop.py`)."""
    secret = {"group": "", "kind": "Secret", "name": hop.connection_secret(cluster)}
    return {
        "caCertificateRefs": [dict(secret)],
        "sni": hop.server_name(cluster),
        "clientCertificateRef": dict(secret),
    }


def _endpoint(up: Upstream) -> dict[str, Any]:
    """A Backend endpoint for an upstream: its IP address or DNS name, and its port."""
    if up.is_ip:
        return {"ip": {"address": up.host, "port": up.port}}
    return {"fqdn": {"hostname": up.host, "port": up.port}}


def _data_path(key: str) -> str:
    """A field path to `data.<key>`; bracketed when the key holds a dot."""
    return f"data.{key}" if "." not in key else f"data[{key}]"


def _backend_ref(
    name: str, weight: int | None, filters: list[dict[str, Any]], namespace: str | None = None
) -> dict[str, Any]:
    ref: dict[str, Any] = {"group": c.ENVOY_GATEWAY_GROUP, "kind": "Backend", "name": name}
    if namespace is not None:
        ref["namespace"] = namespace
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
