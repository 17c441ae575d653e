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

from typing import Final

from modelplane.api.objects import dns_label

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
