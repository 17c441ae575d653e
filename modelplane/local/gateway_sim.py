"""What a Gateway API implementation (Envoy Gateway) would report, simulated.

A Gateway is Accepted and Programmed with one address: an IPv4 address from
TEST-NET-2 (198.51.100.0/24, RFC 5737, never routable) derived from the
Gateway's namespace and name, so it is stable across renders. A GatewayClass
is Accepted; an HTTPRoute is Accepted with its references resolved by every
parent it names; an Envoy Gateway Backend is Accepted. Everything is derived
from the object itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
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


def gateway_address(namespace: str, name: str) -> str:
    """The simulated address of a Gateway (stable per namespace/name)."""
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return f"198.51.100.{1 + digest[0] % 254}"


def _gateway(manifest: Obj, at: str) -> dict[str, Any]:
    meta = manifest.get("metadata") or {}
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
    ("gateway.networking.k8s.io", "Gateway"): _gateway,
    ("gateway.networking.k8s.io", "GatewayClass"): _gateway_class,
    ("gateway.networking.k8s.io", "HTTPRoute"): _route,
    ("gateway.envoyproxy.io", "Backend"): _backend,
    ("gateway.envoyproxy.io", "ClientTrafficPolicy"): _policy,
}
"""Simulated status per (group, kind) of the gateway resources."""
