"""Which of a ModelService's endpoints the fleet gateway may send traffic to.

An endpoint with `spec.cluster` is reached through that cluster's Gateway under
the fleet's identity (`api/gateway_hop.py`): the workload Gateway trusts any
request carrying the fleet's client certificate, whatever path it names. So
the service honours such an endpoint only when its upstream is one of its own
namespace's replica paths (`/<namespace>/<deployment>/<index>`, the path a
ModelReplica's route serves, `compose/replica/workload.route_path`) on that
cluster's published gateway address; anything else is *refused*.

An endpoint that passes can still be one the fleet gateway cannot reach: its
cluster is not found, publishes no gateway address, does not answer
(`Reachable=False`), runs a serving stack Modelplane does not install
(`spec.servingStack.enabled: false`: no client certificate is minted for it),
or its hop Gateway is not Programmed. Such an endpoint is *unreachable*.

Either gets weight 0 and is named, with the field and the reason, in the
service's `EndpointsRoutable` condition, its `status.endpoints[].message` and
a warning event. Pure: it reads only the endpoints and the clusters' hop state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.api.gateway_hop import ObservedHop
from modelplane.api.model_endpoint import ObservedEndpoint, parse_url
from modelplane.api.reasons import EndpointsRoutableReason

# One path segment a replica path is made of: a namespace, a deployment name
# or an index. No `.`/`..` segment, no empty segment, no percent-encoding: a
# path that a gateway could normalise into another namespace's never passes.
_SEGMENT = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True)
class Verdict:
    """Why an endpoint receives no traffic: the field at fault and what is wrong."""

    endpoint: str
    reason: EndpointsRoutableReason
    field: str
    message: str

    def text(self) -> str:
        """The verdict as one sentence naming the endpoint and the field."""
        return f"{self.endpoint}: {self.field}: {self.message}"


def verdict(
    e: ObservedEndpoint, namespace: str, clusters: Mapping[str, ObservedHop] | None
) -> Verdict | None:
    """Why the fleet gateway must not send `e` traffic, or None when it may.

    `clusters` is None while the InferenceClusters have not been read: only
    the endpoint's own spec is judged then.
    """
    if e.spec is None or e.spec.cluster is None:
        return None
    refused = _foreign_path(e, namespace)
    if refused is not None or clusters is None:
        return refused
    hop = clusters.get(e.spec.cluster)
    if hop is None:
        why = f"InferenceCluster {e.spec.cluster!r} not found"
        return Verdict(e.name, EndpointsRoutableReason.UNREACHABLE, "spec.cluster", why)
    return _foreign_host(e, hop) or _unreachable(e.name, hop)


def _foreign_path(e: ObservedEndpoint, namespace: str) -> Verdict | None:
    """Refused unless the upstream path is a replica path of the endpoint's namespace."""
    assert e.spec is not None
    field = "spec.rewritePath" if e.spec.rewrite_path is not None else "spec.url"
    path = e.spec.upstream_path()
    segments = path.split("/")[1:]
    if len(segments) >= 2 and segments[0] == namespace and all(map(_SEGMENT.match, segments)):
        return None
    why = (
        f"upstream path {path or '/'!r} on cluster {e.spec.cluster!r} is not a replica path "
        f"of namespace {namespace!r} (/{namespace}/<deployment>/<index>): the fleet gateway "
        "reaches a cluster's Gateway only for the namespace's own replicas"
    )
    return Verdict(e.name, EndpointsRoutableReason.REFUSED, field, why)


def _foreign_host(e: ObservedEndpoint, hop: ObservedHop) -> Verdict | None:
    """Refused unless the URL's host is the cluster's published gateway address."""
    assert e.spec is not None
    if hop.gateway_address is None:
        why = f"InferenceCluster {hop.name!r} publishes no gateway address yet"
        return Verdict(e.name, EndpointsRoutableReason.UNREACHABLE, "spec.cluster", why)
    host = e.spec.upstream().host
    if host == gateway_host(hop.gateway_address):
        return None
    why = (
        f"host {host!r} is not InferenceCluster {hop.name!r}'s gateway address "
        f"{hop.gateway_address!r}"
    )
    return Verdict(e.name, EndpointsRoutableReason.REFUSED, "spec.url", why)


def gateway_host(address: str) -> str | None:
    """The host of a cluster's published gateway address (a URL or a bare host)."""
    try:
        return parse_url(address if "://" in address else f"https://{address}").host
    except ValueError:
        return None


def _unreachable(endpoint: str, hop: ObservedHop) -> Verdict | None:
    """Unreachable when the cluster cannot take the fleet gateway's traffic now."""
    why = None
    if hop.reachable is False:
        why = f"InferenceCluster {hop.name!r} is not Reachable"
    elif hop.stack_disabled:
        why = (
            f"no hop credentials for InferenceCluster {hop.name!r}: its "
            "spec.servingStack.enabled is false, so Modelplane mints no client certificate "
            "for its Gateway"
        )
    elif hop.gateway_not_programmed is not None:
        why = (
            f"InferenceCluster {hop.name!r}'s hop Gateway is not Programmed "
            f"({hop.gateway_not_programmed})"
        )
    if why is None:
        return None
    return Verdict(endpoint, EndpointsRoutableReason.UNREACHABLE, "spec.cluster", why)
