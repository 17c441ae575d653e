"""The hop from the fleet gateway to a workload cluster's Gateway: its names and identities.

The workload cluster's cert-manager mints one CA per cluster; that CA signs the
Gateway's serving certificate (for `server_name(cluster)`) and the client
certificate the fleet gateway presents (SAN URI `FLEET_CLIENT_URI`). The
client certificate's Secret reaches the control plane as the connection Secret
of the Object that wraps its Certificate (`connection_secret(cluster)` in the
ServingStack's namespace: keys `tls.crt`, `tls.key`, `ca.crt`), so neither the
function nor any composed manifest ever holds a key. The ServingStack composes
the cluster side (`compose/clusters/gateway_hop.py`), a ModelService the fleet
side (`compose/routing/model_service.py`); both name things only through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from modelplane.api import constants as c
from modelplane.api.objects import condition, dns_label
from modelplane.api.reasons import ServingStackReadyReason

# The Gateway's certificate names no address (the load balancer's is not known
# when it is issued, and may change): a fixed name per cluster, sent as SNI and
# verified by the fleet gateway.
SERVER_DOMAIN: Final = "gateway.modelplane.internal"
# The only client identity a workload Gateway accepts (its SAN URI).
FLEET_CLIENT_URI: Final = "spiffe://modelplane.ai/fleet-gateway"

# On the workload cluster, in the Gateway's namespace: Issuers, Certificates and
# the Secrets cert-manager writes share these names.
SELF_SIGNED_ISSUER: Final = "modelplane-hop-selfsigned"
CA: Final = "modelplane-hop-ca"
SERVER: Final = "modelplane-hop-server"
CLIENT: Final = "modelplane-hop-client"
CLIENT_POLICY: Final = "modelplane-hop-clients"
HTTPS_PORT: Final = 443
LISTENER: Final = "https"

# Keys of the client certificate's Secret (cert-manager's, copied as they are).
CERT_KEY: Final = "tls.crt"
PRIVATE_KEY: Final = "tls.key"
CA_KEY: Final = "ca.crt"


def server_name(cluster: str) -> str:
    """The DNS name the cluster's Gateway certificate is issued for (SNI and SAN)."""
    return f"{dns_label(cluster)}.{SERVER_DOMAIN}"


def connection_secret(cluster: str) -> str:
    """The control-plane Secret holding the fleet's client certificate for `cluster`."""
    return dns_label(f"{cluster}-gateway-hop")


def backend_name(namespace: str, service: str, endpoint: str) -> str:
    """The name, in the system namespace, of the Backend through which `namespace`'s
    ModelService `service` reaches `endpoint` on a cluster's Gateway.

    The namespace is part of the hashed name (a dot cannot occur in a namespace),
    so no two namespaces ever share one, nor can one name another's.
    """
    return dns_label(f"{namespace}.{service}-{endpoint}")


def cluster_backend_name(namespace: str, service: str, cluster: str) -> str:
    """The name, in the system namespace, of the Backend through which `namespace`'s
    ModelService `service` reaches every endpoint it routes to on `cluster`'s Gateway
    (a slash cannot occur in an endpoint's name, so this never names an endpoint's)."""
    return dns_label(f"{namespace}.{service}/{cluster}")


def service_host(namespace: str, service: str) -> str:
    """The Host a ModelService's requests carry on the hop to a cluster's Gateway, where
    the service's own route matches it (three labels before `c.HOP_DOMAIN`, where an
    endpoint's second-hop hostname has two, so the two never meet)."""
    return f"{dns_label(service)}.{namespace}.service.{c.HOP_DOMAIN}"


@dataclass(frozen=True)
class ObservedHop:
    """What the fleet gateway needs to know of a cluster before sending it traffic.

    Read from the InferenceCluster's status alone (`read_hop`): its published
    gateway address, its `Reachable` condition, and its `ServingStackReady`
    condition, whose reason says whether Modelplane runs the stack (and so
    mints the client certificate) and whether the hop Gateway is Programmed.
    """

    name: str
    gateway_address: str | None
    reachable: bool | None  # None: the condition is absent or Unknown
    stack_disabled: bool  # spec.servingStack.enabled false: no client certificate is minted
    gateway_not_programmed: str | None  # the condition's message while it is not Programmed


def read_hop(obj: Mapping[str, Any]) -> ObservedHop | None:
    """The tolerant reading of an InferenceCluster's hop state; None without a name."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    status = obj.get("status")
    address = status.get("gatewayAddress") if isinstance(status, Mapping) else None
    reach = condition(obj, c.CONDITION_REACHABLE)
    reach_status = reach.get("status") if reach is not None else None
    stack = condition(obj, c.CONDITION_SERVING_STACK_READY) or {}
    reason = stack.get("reason")
    not_programmed = None
    if stack.get("status") == "False" and reason == ServingStackReadyReason.GATEWAY_NOT_PROGRAMMED:
        not_programmed = str(stack.get("message") or "the Gateway is not Programmed")
    return ObservedHop(
        name=name,
        gateway_address=address if isinstance(address, str) and address else None,
        reachable={"True": True, "False": False}.get(str(reach_status)),
        stack_disabled=reason == ServingStackReadyReason.DISABLED,
        gateway_not_programmed=not_programmed,
    )


def gateway_address_problem(obj: Mapping[str, Any]) -> str | None:
    """What is wrong with an InferenceCluster's published gateway address, naming the
    field; None when it is absent or a string (a status that is not an object is the
    conditions reader's to report)."""
    status = obj.get("status")
    address = status.get("gatewayAddress") if isinstance(status, Mapping) else None
    if address is None or isinstance(address, str):
        return None
    if isinstance(address, bool):
        kind = "a boolean"
    elif isinstance(address, int | float):
        kind = "a number"
    else:
        kind = "a list" if isinstance(address, list) else "an object"
    return f"status.gatewayAddress is {kind}, not a string"
