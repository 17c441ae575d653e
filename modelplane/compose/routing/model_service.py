"""ModelService composer: one weighted OpenAI-compatible route over ModelEndpoints.

Inputs (required): the InferenceGateway `default` (its Gateway, address and the
control plane's provider config), every ModelEndpoint **in the service's own
namespace** (a fetched endpoint of another namespace is ignored, whatever the
control plane returns), and each InferenceCluster those endpoints name in
`spec.cluster` (whether the fleet gateway can reach it: `hops.py`).

An endpoint on a cluster's Gateway is honoured only for the namespace's own
replica paths on that cluster's address, and only while the cluster can take
the fleet gateway's traffic; otherwise it gets weight 0 and says why
(`EndpointsRoutable`, `status.endpoints[].message`, a warning event). The
service stays Ready while another endpoint routes.

Output, as provider-kubernetes Objects in the service's namespace on the
control plane's provider config (names and manifests: `service_objects.py`):
- per selected Ready endpoint, an Envoy Gateway `Backend` (FQDN or IP, TLS with
  the system CA bundle and SNI for https upstreams; for an endpoint on a
  cluster's Gateway, `spec.cluster`, mutual TLS: that cluster's CA and name,
  the fleet's client certificate — that Backend is composed in the system
  namespace beside the certificate's Secret, with a ReferenceGrant that lets
  only this namespace's routes refer to it; the key never leaves that
  namespace);
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
from dataclasses import replace
from typing import Any

from modelplane.api import constants as c
from modelplane.api.gateway_hop import ObservedHop, gateway_address_problem, read_hop
from modelplane.api.inference_cluster import GatewayRef
from modelplane.api.inference_gateway import ObservedGateway, read_gateway
from modelplane.api.model_endpoint import ObservedEndpoint, read_endpoint
from modelplane.api.model_service import (
    WEIGHT_TOTAL,
    ModelServiceSpec,
    ModelServiceStatus,
    ServiceEndpointStatus,
)
from modelplane.api.readers import ObservedInferenceCluster, read_inference_cluster
from modelplane.api.reasons import (
    EndpointsReadyReason,
    EndpointsRoutableReason,
    GatewayReadyReason,
    InputsReadableReason,
    ValidReason,
)
from modelplane.compose import outcome, unreadable
from modelplane.compose import readiness as rd
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.routing import gateway_objects as gwo
from modelplane.compose.routing import hops, weights
from modelplane.compose.routing import service_moves as moves
from modelplane.compose.routing.service_objects import (
    CLUSTERS_ROUTE_KEY,
    POLICY_KEY,
    ROUTE_KEY,
    Builder,
    ClusterShare,
    Selected,
    Wanted,
    clustered,
    upstream_path,
)
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
# Gateway API: an HTTPRoute rule has at most 16 backendRefs.
MAX_BACKENDS = 16


def cluster_requirement(cluster: str) -> str:
    """The requirement name under which an endpoint's InferenceCluster is fetched."""
    return f"cluster-{cluster}"


def plan(
    spec: ModelServiceSpec,
    endpoints: Sequence[ObservedEndpoint],
    namespace: str,
    clusters: Mapping[str, ObservedHop] | None = None,
) -> list[Selected]:
    """Every endpoint of `namespace` some group selects, in name order, with its weight.

    An endpoint the fleet gateway must not or cannot reach (`hops.verdict`)
    is listed with weight 0 and why, like one that is not Ready.
    """
    own = sorted((e for e in endpoints if e.namespace == namespace), key=lambda e: e.name)
    verdicts = {e.name: hops.verdict(e, namespace, clusters) for e in own}
    groups: list[tuple[int, list[str]]] = []
    selected: dict[str, ObservedEndpoint] = {}
    for group in spec.endpoints:
        members = [e for e in own if selector_matches(group.selector, e.labels)]
        selected.update((e.name, e) for e in members)
        # A draining endpoint stays listed at weight 0 (its replica leaves after).
        live = [
            e
            for e in members
            if e.ready and e.spec and not e.spec.draining and verdicts[e.name] is None
        ]
        groups.extend(_cohorts(group.weight, live))
    split = weights.split(groups, WEIGHT_TOTAL)
    return [Selected(e, split.get(name, 0), verdicts[name]) for name, e in sorted(selected.items())]


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
        return _hold_unreadable(inp, result, message)
    endpoints = _last_known(inp, result, endpoints, namespace)
    clusters = _clusters(inp, result, endpoints, namespace)
    if clusters is None:
        return outcome.wait(inp, result, readiness=_ready)
    problems = _unreadable_clusters(inp, endpoints, namespace)
    if problems:
        # Whether such a cluster can take traffic is unknown, not "no": weighing
        # it 0 would withdraw its Backend and grant. Route as before until it reads.
        message = (
            "an InferenceCluster the endpoints name does not read ("
            + "; ".join(problems)
            + "): whether the fleet gateway can reach it cannot be told, so the route and "
            "backends are kept as they are until it reads"
        )
        return _hold_unreadable(inp, result, message)
    selected = plan(spec, endpoints, namespace, clusters)
    _routable(result, selected)
    status = ModelServiceStatus(
        endpoints=[
            ServiceEndpointStatus(
                name=s.endpoint.name,
                weight=s.weight,
                ready=s.ready,
                message=s.refused.text() if s.refused is not None else None,
            )
            for s in selected
        ],
        endpoints_ready=f"{sum(s.ready for s in selected)}/{len(selected)}",
    )
    return _route(inp, result, spec, name, namespace, gateway, selected, status)


def _clusters(
    inp: ComposeInput, result: ComposeResult, endpoints: Sequence[ObservedEndpoint], namespace: str
) -> dict[str, ObservedHop] | None:
    """The hop state of every cluster the namespace's endpoints name; None until fetched.

    Each is required by name, so a service whose endpoints name no cluster
    (external providers) reads none.
    """
    names = _cluster_names(endpoints, namespace)
    for cluster in names:
        result.requirements[cluster_requirement(cluster)] = Requirement(
            api_version=c.API_VERSION, kind="InferenceCluster", match_name=cluster
        )
    if not all(inp.fetched(cluster_requirement(n)) for n in names):
        result.condition(
            c.CONDITION_ENDPOINTS_ROUTABLE,
            None,
            EndpointsRoutableReason.ROUTABLE,
            "waiting for the InferenceClusters the endpoints name: " + ", ".join(names),
        )
        return None
    found = [read_hop(o) for n in names for o in inp.required.get(cluster_requirement(n)) or []]
    return {h.name: h for h in found if h is not None}


def _hold_unreadable(inp: ComposeInput, result: ComposeResult, message: str) -> ComposeResult:
    """Keep the route and backends as observed: an input they depend on does not read."""
    return outcome.hold(
        inp,
        result,
        c.CONDITION_INPUTS_READABLE,
        InputsReadableReason.UNREADABLE,
        message,
        readiness=_ready,
    )


def _cluster_names(endpoints: Sequence[ObservedEndpoint], namespace: str) -> list[str]:
    """The clusters the namespace's endpoints name, sorted."""
    return sorted(
        {
            e.spec.cluster
            for e in endpoints
            if e.namespace == namespace and e.spec and e.spec.cluster
        }
    )


def _unreadable_clusters(
    inp: ComposeInput, endpoints: Sequence[ObservedEndpoint], namespace: str
) -> list[str]:
    """What does not read in each fetched InferenceCluster the endpoints name.

    Its name, its status and conditions, and its gateway address are what the
    hop verdict reads; a malformed one is unknown, never a cluster that is gone.
    """
    out = []
    for name in _cluster_names(endpoints, namespace):
        for obj in inp.required.get(cluster_requirement(name)) or []:
            problem = _hop_problem(obj)
            if problem is not None:
                out.append(f"InferenceCluster {name}: {problem}")
    return out


def _hop_problem(obj: Mapping[str, Any]) -> str | None:
    """What is wrong with the fields of `obj` the hop verdict reads, naming the field."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return f"metadata.name {unreadable.shown(name)}, not a name"
    problem = unreadable.conditions_problem(obj)
    if problem is not None:
        return problem
    return gateway_address_problem(obj)


def _routable(result: ComposeResult, selected: Sequence[Selected]) -> None:
    """`EndpointsRoutable`, and a warning event per endpoint the gateway will not reach."""
    verdicts = [s.refused for s in selected if s.refused is not None]
    if not verdicts:
        result.condition(
            c.CONDITION_ENDPOINTS_ROUTABLE,
            True,
            EndpointsRoutableReason.ROUTABLE,
            "every selected endpoint may be reached by the fleet gateway",
        )
        return
    refused = [v for v in verdicts if v.reason == EndpointsRoutableReason.REFUSED]
    reason = EndpointsRoutableReason.REFUSED if refused else EndpointsRoutableReason.UNREACHABLE
    text = "; ".join(v.text() for v in verdicts)
    result.condition(
        c.CONDITION_ENDPOINTS_ROUTABLE, False, reason, f"weight 0 (no traffic): {text}"
    )
    for v in verdicts:
        result.warn(v.reason, f"ModelEndpoint {v.text()}; it gets weight 0")


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
            routed = f"backend-{e.name}" in inp.observed or (
                e.spec.backend_ref is not None
                and f"cluster-{e.spec.cluster}-backend" in inp.observed
            )
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
    builder = Builder(spec, name, namespace, gateway)
    found = _wanted(inp, builder, routed, gateway)
    if isinstance(found, str):
        return outcome.hold(
            inp,
            result,
            c.CONDITION_ENDPOINTS_READY,
            EndpointsReadyReason.CONFLICTING_UPSTREAM_PATHS,
            found,
            readiness=_ready,
        )
    wanted, preparing, late = found
    _emit(inp, result, wanted, preparing)
    _endpoints_condition(result, selected, routed, late)
    status.endpoints = [_joining(e, late) for e in status.endpoints or []]
    status.address = builder.address()
    result.status = status.to_dict()
    return result


def _joining(e: ServiceEndpointStatus, late: Mapping[str, str]) -> ServiceEndpointStatus:
    """An endpoint's status as its route carries it: one whose cluster joins later has
    no traffic yet (weight 0), and says so."""
    if e.name not in late:
        return e
    cluster = late[e.name]
    message = f"joining: no traffic until cluster {cluster!r}'s Backend, grant and route are ready"
    return e.model_copy(update={"weight": 0, "message": message})


def _wanted(
    inp: ComposeInput, builder: Builder, routed: Sequence[Selected], gateway: ObservedGateway
) -> tuple[Wanted, frozenset[str], dict[str, str]] | str:
    """What the service composes for its routed endpoints, with the keys of what it does
    not wait on (see `_emit`) and the endpoints whose cluster joins later (by name, their
    cluster), or why it cannot route.

    Endpoints on clusters go through the service's route on each cluster. Every
    change to which clusters the route names makes before it breaks
    (`service_moves`): the move from 0.1.0's routes in one step, a cluster joining
    once its objects are ready, a cluster leaving before its objects go.
    """
    shares = cluster_shares(routed, _targets(inp, routed))
    by_cluster = {share.cluster: builder.cluster_objects([share]) for share in shares}
    prepared = {k: v for objects in by_cluster.values() for k, v in objects.items()}
    if moves.before_the_move(inp, routed, shares, prepared):
        before = _routes(builder, routed, (), gateway)
        if isinstance(before, str):
            return before
        return {**before, **prepared}, frozenset(prepared), {}
    refs = moves.route_refs(inp)
    waiting = moves.joining(inp, shares, by_cluster, refs)
    late = {m.endpoint.name: share.cluster for share in waiting for m in share.members}
    now = [s for s in routed if s.endpoint.name not in late]
    if not refs or not now:
        # Nothing served yet, or nothing else to serve: route everything now.
        now, waiting, late = list(routed), [], {}
    joined = [share for share in shares if share not in waiting]
    wanted = _routes(builder, now, joined, gateway)
    if isinstance(wanted, str):
        return wanted
    wanted.update(prepared)
    kept = _kept(inp, builder, routed, gateway, wanted, refs)
    wanted.update(kept)
    if joined:
        route = CLUSTERS_ROUTE_KEY if CLUSTERS_ROUTE_KEY in wanted else ROUTE_KEY
        target = wanted[route][0]["spec"]["forProvider"]["manifest"]["metadata"]["name"]
        wanted[POLICY_KEY] = (builder.traffic_policy(target), gwo.EXISTS)
    # The policy tunes a route that answers without it: the service does not wait on it.
    aside = {*kept, POLICY_KEY, *(k for share in waiting for k in by_cluster[share.cluster])}
    return wanted, frozenset(aside) | moves.unjudged(inp, wanted), late


def _kept(
    inp: ComposeInput,
    builder: Builder,
    routed: Sequence[Selected],
    gateway: ObservedGateway,
    wanted: Wanted,
    refs: frozenset[str],
) -> Wanted:
    """What the service keeps beside its routes: 0.1.0's per-endpoint objects for a
    rollback, and the objects of clusters leaving that the route still names."""
    kept: Wanted = {}
    if any(f"backend-{s.endpoint.name}" in inp.observed for s in routed):
        before = _routes(builder, routed, (), gateway)
        if not isinstance(before, str):
            kept.update(moves.kept_for_rollback(inp, before, wanted))
    kept.update(moves.leaving(inp, {**wanted, **kept}, refs))
    return kept


def _routes(
    builder: Builder,
    routed: Sequence[Selected],
    shares: Sequence[ClusterShare],
    gateway: ObservedGateway,
) -> Wanted | str:
    """The route(s) and per-endpoint objects that reach `routed`, those in `shares`
    through their clusters, or why the gateway cannot."""
    through = {m.endpoint.name for share in shares for m in share.members}
    single = [s for s in routed if s.endpoint.name not in through]
    paths = sorted({upstream_path(s) for s in single})
    if not single:
        return {ROUTE_KEY: (builder.clusters_route(shares), gwo.ROUTE)}
    if len(paths) == 1 and not shares:
        wanted = builder.backends(single)
        wanted[ROUTE_KEY] = (builder.route(single, paths[0]), gwo.ROUTE)
        return wanted
    if gateway.internal_address:
        return builder.two_hop(single, gateway.internal_address, shares)
    return (
        "Ready endpoints disagree on their upstream path prefix ("
        + ", ".join(f"{s.endpoint.name}: {upstream_path(s) or '/'}" for s in single)
        + (", and the service's clusters" if shares else "")
        + "); that needs the two-hop route through the gateway's plain-HTTP listener, "
        "and the InferenceGateway publishes no status.internalAddress: add an HTTP "
        "listener, or give the endpoints one spec.rewritePath"
    )


def _targets(inp: ComposeInput, routed: Sequence[Selected]) -> dict[str, ObservedInferenceCluster]:
    """The InferenceClusters the routed endpoints name, as fetched for their hop verdicts."""
    out = {}
    for s in routed:
        cluster = s.endpoint.spec.cluster if s.endpoint.spec is not None else None
        if cluster is None or cluster in out:
            continue
        for obj in inp.required.get(cluster_requirement(cluster)) or []:
            found = read_inference_cluster(obj)
            if found is not None and found.name == cluster:
                out[cluster] = found
    return out


def cluster_shares(
    routed: Sequence[Selected], targets: Mapping[str, ObservedInferenceCluster]
) -> list[ClusterShare]:
    """The routed endpoints reached through the service's own route on their cluster,
    by cluster (name order).

    That takes the replica's entry (`spec.backendRef`) and the cluster's provider
    config; an endpoint without either is routed on its own, as before.
    """
    members: dict[str, list[Selected]] = {}
    for s in routed:
        spec = s.endpoint.spec
        target = targets.get(spec.cluster or "") if spec is not None else None
        if clustered(s) and target is not None and target.provider_config_name:
            members.setdefault(target.name, []).append(s)
    return [
        ClusterShare(
            cluster=cluster,
            provider_config=str(targets[cluster].provider_config_name),
            gateway=targets[cluster].gateway or GatewayRef(),
            members=tuple(found),
        )
        for cluster, found in sorted(members.items())
    ]


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
    result: ComposeResult,
    selected: Sequence[Selected],
    routed: Sequence[Selected],
    late: Mapping[str, str],
) -> None:
    table = ", ".join(
        f"{s.endpoint.name}={s.weight}" for s in routed if s.endpoint.name not in late
    )
    waiting = [s.endpoint.name for s in selected if not s.ready and s.refused is None]
    unroutable = [s.endpoint.name for s in selected if s.refused is not None]
    if waiting or unroutable or late:
        notes = [f"not Ready (no traffic): {', '.join(waiting)}"] if waiting else []
        if late:
            notes.append(
                "joining (no traffic until their cluster's objects are ready): "
                + ", ".join(f"{name} on {cluster}" for name, cluster in sorted(late.items()))
            )
        if unroutable:
            notes.append(
                f"not routable (no traffic, see EndpointsRoutable): {', '.join(unroutable)}"
            )
        reason = EndpointsReadyReason.SOME_ENDPOINTS_NOT_READY
        if not waiting and not unroutable:
            reason = EndpointsReadyReason.ENDPOINTS_JOINING
        result.condition(
            c.CONDITION_ENDPOINTS_READY, True, reason, f"routing to {table}; " + "; ".join(notes)
        )
    else:
        result.condition(
            c.CONDITION_ENDPOINTS_READY,
            True,
            EndpointsReadyReason.ALL_ENDPOINTS_READY,
            f"routing to {table}",
        )


def _emit(
    inp: ComposeInput, result: ComposeResult, wanted: Wanted, preparing: frozenset[str]
) -> None:
    all_ready = True
    for key, (resource, rule) in wanted.items():
        ok = gwo.observed(rule, inp.observed.get(key))
        # What is made ready ahead of the route that will use it, what no route
        # uses and what only tunes a route show their own readiness; the service's
        # requests do not wait on them.
        all_ready = all_ready and (ok or key in preparing)
        result.desired[key] = DesiredResource(resource, "True" if ok else "False")
    result.ready = "True" if all_ready else "False"


def _ready(obj: Resource) -> bool:
    """Readiness of a kept Object: the rule it declared."""
    return rd.observed_ready(obj)
