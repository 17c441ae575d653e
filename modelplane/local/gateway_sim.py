"""What a Gateway API implementation (Envoy Gateway) would report, simulated.

A Gateway is Accepted and Programmed with one address: an IPv4 address from
the documentation ranges (RFC 5737, never routable), chosen from the cluster it
runs on (the provider config its Object reaches) and the Gateway's namespace
and name, so it is stable across renders. Two Gateways never share an address,
whatever their names: every cluster's Gateway is its own load balancer, and
two clusters that looked like one would hide a routing mistake. The address
derived from the name is taken unless another Gateway already holds it; then
the next free one (`allocate`). A GatewayClass
is Accepted; an HTTPRoute is Accepted with its references resolved by every
parent it names; an Envoy Gateway Backend is Accepted once a route names it
(`simulate.named_backends`: Envoy Gateway reads no other, so one no route names
has no status). Everything else is derived from the object itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Container
from typing import Any

Obj = dict[str, Any]
CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"


def _condition(type_: str, reason: str, at: str, generation: int = 1) -> dict[str, Any]:
    return {
        "type": type_,
        "status": "True",
        "reason": reason,
        "message": "",
        "lastTransitionTime": at,
        "observedGeneration": generation,
    }


# RFC 5737's three documentation networks, host addresses 1-254 of each.
_NETWORKS = ("198.51.100", "203.0.113", "192.0.2")
ADDRESSES = tuple(f"{net}.{host}" for net in _NETWORKS for host in range(1, 255))


def gateway_address(namespace: str, name: str, cluster: str = "") -> str:
    """The address a Gateway prefers: derived from its cluster and namespace/name."""
    digest = hashlib.sha256(f"{cluster}/{namespace}/{name}".encode()).digest()
    return ADDRESSES[int.from_bytes(digest[:4], "big") % len(ADDRESSES)]


def allocate(preferred: str, current: str | None, taken: Container[str]) -> str:
    """The Gateway's address: the one it has while no other holds it, else the
    preferred one, else the next free one after it."""
    if current is not None and current not in taken:
        return current
    start = ADDRESSES.index(preferred)
    for i in range(len(ADDRESSES)):
        candidate = ADDRESSES[(start + i) % len(ADDRESSES)]
        if candidate not in taken:
            return candidate
    return preferred  # more Gateways than documentation addresses: shared, as a last resort


def gateway_status(manifest: Obj, at: str, address: str | None = None) -> dict[str, Any]:
    """A Gateway's status: Accepted, Programmed, `address` (its preferred one if None)."""
    meta = manifest.get("metadata") or {}
    if address is None:
        address = gateway_address(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return {
        "addresses": [{"type": "IPAddress", "value": address}],
        "conditions": [
            _condition("Accepted", "Accepted", at),
            _condition("Programmed", "Programmed", at),
        ],
    }


def _gateway_class(manifest: Obj, at: str) -> dict[str, Any]:
    return {"conditions": [_condition("Accepted", "Accepted", at)]}


def _route(manifest: Obj, at: str) -> dict[str, Any]:
    parents = []
    for ref in (manifest.get("spec") or {}).get("parentRefs") or []:
        if not isinstance(ref, dict):
            continue
        parents.append(
            {
                "parentRef": dict(ref),
                "controllerName": CONTROLLER,
                "conditions": [
                    _condition("Accepted", "Accepted", at),
                    _condition("ResolvedRefs", "ResolvedRefs", at),
                ],
            }
        )
    return {"parents": parents}


def _backend(manifest: Obj, at: str) -> dict[str, Any]:
    return {"conditions": [_condition("Accepted", "Accepted", at)]}


def _policy(manifest: Obj, at: str) -> dict[str, Any]:
    """An Envoy Gateway policy accepted by every Gateway it targets (`status.ancestors`)."""
    spec = manifest.get("spec") or {}
    namespace = (manifest.get("metadata") or {}).get("namespace")
    ancestors = []
    for ref in spec.get("targetRefs") or []:
        if isinstance(ref, dict):
            ancestor = {**ref, "namespace": ref.get("namespace") or namespace}
            ancestors.append(
                {
                    "ancestorRef": ancestor,
                    "controllerName": CONTROLLER,
                    "conditions": [_condition("Accepted", "Accepted", at)],
                }
            )
    return {"ancestors": ancestors}


GATEWAY_STATUS: dict[tuple[str, str], Callable[[Obj, str], dict[str, Any]]] = {
    ("gateway.networking.k8s.io", "Gateway"): gateway_status,
    ("gateway.networking.k8s.io", "GatewayClass"): _gateway_class,
    ("gateway.networking.k8s.io", "HTTPRoute"): _route,
    ("gateway.envoyproxy.io", "Backend"): _backend,
    ("gateway.envoyproxy.io", "ClientTrafficPolicy"): _policy,
}
"""Simulated status per (group, kind) of the gateway resources."""
