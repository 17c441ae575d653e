"""How a ModelService's routing changes without sending a request where nothing answers.

Crossplane applies a composite's desired state in no particular order, and Envoy
Gateway translates what it finds when it finds it: a route that names a Backend
created in the same round may be translated before the Backend is accepted, and a
Backend deleted in the round its route stops naming it may be gone while the old
route still sends requests to it. So each change makes before it breaks, one round
apart, read from what is observed:

- **the move from 0.1.0** (endpoint by endpoint → one route per cluster) happens in
  one step, once every endpoint on a cluster names its replica's entry and every
  cluster's objects are observed ready; what 0.1.0 made is kept afterwards, unused,
  so that a rollback routes at once;
- **a cluster joins** a route that already serves once its Backend, grant and route
  there are observed ready;
- **a cluster leaves**: its Backend, grant and route stay while the route as last
  observed still names its Backend.

"Ready" for a cluster's Backend is special: Envoy Gateway judges a Backend (sets
its `Accepted` condition) only once a route names it, since it reads no Backend
that no route refers to. A Backend no route names yet can never read Accepted,
so a move or a join waits only until it is applied and not refused
(`may_route`), and the service's readiness does not wait on one Envoy Gateway
has not judged yet (`unjudged`); one it refused (`Accepted=False`) is waited on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from modelplane.api.objects import condition_status
from modelplane.compose.common import as_desired
from modelplane.compose.routing import gateway_objects as gwo
from modelplane.compose.routing.service_objects import (
    CLUSTERS_ROUTE_KEY,
    POLICY_KEY,
    ROUTE_KEY,
    ClusterShare,
    Selected,
    Wanted,
)
from modelplane.compose.types import ComposeInput

CLUSTER_PARTS = ("backend", "grant", "route")


def may_route(inp: ComposeInput, objects: Wanted) -> bool:
    """Whether a route that serves may name one cluster's objects (or the move's): each
    observed and meeting its readiness rule, but a cluster's Backend, which Envoy Gateway
    judges only once a route names it, applied and not refused."""
    for key, (_, rule) in objects.items():
        obj = inp.observed.get(key)
        if _cluster_of(key, "backend") is None:
            if not gwo.observed(rule, obj):
                return False
        elif _judged(obj) in (NOT_APPLIED, "False"):
            return False
    return True


def unjudged(inp: ComposeInput, keys: Iterable[str]) -> frozenset[str]:
    """The cluster Backends among `keys` Envoy Gateway has not judged yet: applied, with
    no `Accepted` condition. It judges one when a route first names it, so the service's
    readiness does not wait on them; one it refused reads `Accepted=False` and is."""
    return frozenset(
        key
        for key in keys
        if _cluster_of(key, "backend") is not None and _judged(inp.observed.get(key)) is None
    )


NOT_APPLIED = "NotApplied"


def _judged(obj: Mapping[str, Any] | None) -> str | None:
    """A Backend Object's `Accepted` status as last observed ("True", "False"), None when
    applied but not judged yet, `NOT_APPLIED` when the provider reports no manifest."""
    manifest = gwo.wrapped_status(obj)
    return NOT_APPLIED if manifest is None else condition_status(manifest, "Accepted")


def before_the_move(
    inp: ComposeInput, routed: Sequence[Selected], shares: Sequence[ClusterShare], prepared: Wanted
) -> bool:
    """Whether the service still routes its endpoints on clusters one by one this round.

    Only a service that did so (an endpoint on a cluster has its own Backend observed)
    and has not moved yet (its traffic policy, composed from the move on, is not
    observed) waits: until each of its endpoints on a cluster names its replica's
    entry and every cluster's Backend, grant and route may be routed to (`may_route`).
    """
    on_clusters = [s for s in routed if s.endpoint.spec and s.endpoint.spec.cluster]
    legacy = any(f"backend-{s.endpoint.name}" in inp.observed for s in on_clusters)
    if not legacy or POLICY_KEY in inp.observed:
        return False
    members = {m.endpoint.name for share in shares for m in share.members}
    if not all(s.endpoint.name in members for s in on_clusters):
        return True
    return not may_route(inp, prepared)


def kept_for_rollback(inp: ComposeInput, before: Wanted, wanted: Wanted) -> Wanted:
    """What the service composed before its move to its clusters (`before`: per-endpoint
    Backends, grants, second-hop routes) and still observes, kept as it is while its
    endpoints are routed.

    No route of the service's Host reaches them; they are kept so that a rollback
    to a release that routes endpoint by endpoint finds them accepted and routes at
    once, with no round of not-Ready.
    """
    return {k: v for k, v in before.items() if k in inp.observed and k not in wanted}


def route_refs(inp: ComposeInput) -> frozenset[str]:
    """The backends the service's routes name, as last observed on the control plane
    (every name of every rule's backendRefs); nothing observed, nothing named."""
    names: set[str] = set()
    for key in (ROUTE_KEY, CLUSTERS_ROUTE_KEY):
        manifest = gwo.wrapped_status(inp.observed.get(key))
        for rule in _items(_get(manifest, "spec"), "rules"):
            for ref in _items(rule, "backendRefs"):
                if isinstance(ref.get("name"), str):
                    names.add(ref["name"])
    return frozenset(names)


def joining(
    inp: ComposeInput,
    shares: Sequence[ClusterShare],
    objects: Mapping[str, Wanted],
    refs: frozenset[str],
) -> list[ClusterShare]:
    """The clusters not routed yet whose objects (`objects`, by cluster) may not be routed
    to yet (`may_route`): they stay out of a route that serves, which would otherwise send
    their share of requests to a Gateway that does not know the service yet."""
    return [
        share
        for share in shares
        if _backend_name(objects[share.cluster]) not in refs
        and not may_route(inp, objects[share.cluster])
    ]


def leaving(inp: ComposeInput, wanted: Wanted, refs: frozenset[str]) -> Wanted:
    """The observed objects of clusters the service no longer routes to whose Backend
    the route as last observed still names: kept as observed until the route without
    them is."""
    out: Wanted = {}
    for key, obj in sorted(inp.observed.items()):
        cluster = _cluster_of(key, "backend")
        if cluster is None or key in wanted:
            continue
        manifest = gwo.wrapped_manifest(obj)
        if manifest is None or _get(manifest, "metadata").get("name") not in refs:
            continue
        for part in CLUSTER_PARTS:
            sibling = f"cluster-{cluster}-{part}"
            if sibling in inp.observed and sibling not in wanted:
                out[sibling] = (as_desired(inp.observed[sibling]), gwo.EXISTS)
    return out


def _cluster_of(key: str, part: str) -> str | None:
    """The cluster of a composed-resource key `cluster-<cluster>-<part>`, if it is one."""
    prefix, suffix = "cluster-", f"-{part}"
    if key.startswith(prefix) and key.endswith(suffix) and len(key) > len(prefix + suffix):
        return key[len(prefix) : -len(suffix)]
    return None


def _backend_name(objects: Wanted) -> str | None:
    """The name of the Backend among one cluster's objects."""
    for key, (resource, _) in objects.items():
        if _cluster_of(key, "backend") is not None:
            manifest = gwo.wrapped_manifest(resource)
            name = _get(manifest, "metadata").get("name")
            return name if isinstance(name, str) else None
    return None


def _get(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _items(obj: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = obj.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
