"""The workload cluster's side of the fleet gateway's hop: HTTPS, mutual TLS, replica namespaces.

Composed by the ServingStack, as provider-kubernetes Objects on the cluster:
- cert-manager objects in the Gateway's namespace: a self-signed Issuer that
  signs one CA per cluster, the CA's Issuer, the Gateway's serving certificate
  (for `api.gateway_hop.server_name`) and the fleet gateway's client
  certificate (SAN URI `FLEET_CLIENT_URI`). Every key is generated on the
  cluster; none passes through the function;
- the Gateway's only listener: HTTPS on 443, terminating with the serving
  certificate, accepting HTTPRoutes only from namespaces Modelplane labels
  `app.kubernetes.io/managed-by: modelplane` (every namespace a replica is
  placed in: `compose/replica/workload.namespace`);
- an Envoy Gateway ClientTrafficPolicy on the Gateway requiring a client
  certificate from the cluster's CA carrying the fleet gateway's SAN URI, so
  no request without it reaches a replica (no HTTP listener exists at all).

The client certificate reaches the control plane through the Object that wraps
its Certificate: provider-kubernetes reads `connectionDetails` from the
workload cluster (its Secret's `tls.crt`, `tls.key`, `ca.crt`) and writes them
to that Object's connection Secret (`api.gateway_hop.connection_secret`) in the
ServingStack's namespace, where the fleet gateway's Backends find the client
certificate and the CA that verifies the Gateway. Why this direction: the
cluster already runs cert-manager (the control plane need not), keys are born
where they serve, and the function stays pure (it never reads a value).
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop
from modelplane.api.objects import condition_status
from modelplane.api.serving_stack import ServingStackSpec
from modelplane.compose import readiness
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.objects import Item, wrap
from modelplane.compose.types import Resource

CERT_MANAGER_API_VERSION = "cert-manager.io/v1"
CERT_MANAGER_GROUP = "cert-manager.io"
POLICY_KEY = "gateway-hop-policy"
CLIENT_KEY = "gateway-hop-client-certificate"
_CERTIFICATES = (
    "selfsigned-issuer",
    "ca-certificate",
    "ca-issuer",
    "server-certificate",
    "client-certificate",
)
# The keys of the objects cert-manager serves: each goes before its Release.
CERT_MANAGER_KEYS = tuple(f"gateway-hop-{x}" for x in _CERTIFICATES)


def _policy_accepted(observed: Resource | None) -> bool:
    status = (readiness.wrapped(observed) or {}).get("status")
    ancestors = status.get("ancestors") if isinstance(status, dict) else None
    if not isinstance(ancestors, list) or not ancestors:
        return readiness.object_ready(observed)
    return all(
        isinstance(a, dict) and condition_status({"status": a}, "Accepted") == "True"
        for a in ancestors
    )


# An Envoy Gateway policy is in force once every Gateway it targets accepted it;
# a rejected ClientTrafficPolicy would leave the listener without client checks.
POLICY_ACCEPTED = readiness.register(
    readiness.ReadinessRule(
        "PolicyAccepted",
        {
            "policy": readiness.POLICY_CEL,
            "celQuery": (
                "has(object.status) && has(object.status.ancestors) && "
                "size(object.status.ancestors) > 0 && "
                "object.status.ancestors.all(a, has(a.conditions) && "
                "a.conditions.exists(x, x.type == 'Accepted' && x.status == 'True'))"
            ),
        },
        _policy_accepted,
    )
)


def listener() -> dict[str, Any]:
    """The workload Gateway's one listener: HTTPS, routes only from replica namespaces."""
    return {
        "name": hop.LISTENER,
        "protocol": "HTTPS",
        "port": hop.HTTPS_PORT,
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": hop.SERVER}],
        },
        "allowedRoutes": {
            "namespaces": {
                "from": "Selector",
                "selector": {"matchLabels": {c.LABEL_MANAGED_BY: c.MANAGED_BY}},
            },
            "kinds": [{"group": c.GATEWAY_GROUP, "kind": "HTTPRoute"}],
        },
    }


def _cert_manager(kind: str, name: str, namespace: str, spec: dict[str, Any]) -> Resource:
    return {
        "apiVersion": CERT_MANAGER_API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _issuer_ref(name: str) -> dict[str, str]:
    return {"group": CERT_MANAGER_GROUP, "kind": "Issuer", "name": name}


_KEY = {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}


def _certificates(cluster: str, ns: str) -> list[tuple[str, Resource]]:
    """(key suffix, manifest) of the issuers and certificates, in issuing order."""
    ca = {
        "isCA": True,
        "commonName": "modelplane gateway hop CA",
        "secretName": hop.CA,
        # A long-lived CA: the fleet's copy of it follows through the client
        # certificate's Secret, which cert-manager rewrites only on renewal.
        "duration": "87600h",
        "privateKey": dict(_KEY),
        "issuerRef": _issuer_ref(hop.SELF_SIGNED_ISSUER),
    }
    server = {
        "secretName": hop.SERVER,
        "dnsNames": [hop.server_name(cluster)],
        "usages": ["server auth", "digital signature"],
        "privateKey": dict(_KEY),
        "issuerRef": _issuer_ref(hop.CA),
    }
    client = {
        "secretName": hop.CLIENT,
        "uris": [hop.FLEET_CLIENT_URI],
        "usages": ["client auth", "digital signature"],
        "privateKey": dict(_KEY),
        "issuerRef": _issuer_ref(hop.CA),
    }
    return [
        (
            "selfsigned-issuer",
            _cert_manager("Issuer", hop.SELF_SIGNED_ISSUER, ns, {"selfSigned": {}}),
        ),
        ("ca-certificate", _cert_manager("Certificate", hop.CA, ns, ca)),
        ("ca-issuer", _cert_manager("Issuer", hop.CA, ns, {"ca": {"secretName": hop.CA}})),
        ("server-certificate", _cert_manager("Certificate", hop.SERVER, ns, server)),
        ("client-certificate", _cert_manager("Certificate", hop.CLIENT, ns, client)),
    ]


def client_policy(spec: ServingStackSpec) -> Resource:
    """The ClientTrafficPolicy: only the fleet gateway's certificate from this cluster's CA."""
    gw = spec.gateway
    return {
        "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
        "kind": "ClientTrafficPolicy",
        "metadata": {"name": hop.CLIENT_POLICY, "namespace": gw.namespace},
        "spec": {
            "targetRefs": [{"group": c.GATEWAY_GROUP, "kind": "Gateway", "name": gw.name}],
            "tls": {
                "clientValidation": {
                    # The default, said: a connection without a valid certificate is refused.
                    "mode": "RequireAndVerify",
                    "caCertificateRefs": [{"group": "", "kind": "Secret", "name": hop.CA}],
                    "subjectAltNames": {"uris": [{"type": "Exact", "value": hop.FLEET_CLIENT_URI}]},
                }
            },
        },
    }


def _connection(cluster: str, ns: str) -> dict[str, Any]:
    """What provider-kubernetes copies from the client certificate's Secret to the control plane."""
    return {
        "writeConnectionSecretToRef": {"name": hop.connection_secret(cluster)},
        "connectionDetails": [
            {
                "apiVersion": c.CORE_API_VERSION,
                "kind": "Secret",
                "name": hop.CLIENT,
                "namespace": ns,
                "fieldPath": f"data[{key}]",
                "toConnectionSecretKey": key,
            }
            for key in (hop.CERT_KEY, hop.PRIVATE_KEY, hop.CA_KEY)
        ],
    }


def objects(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    """Every hop object of one cluster, wrapped as Objects in the stack's namespace."""
    cluster, pc, ns = spec.cluster_name, spec.provider_config_name, spec.gateway.namespace
    obj_labels = labels(cluster, "gateway-hop")
    out: dict[str, Resource] = {}
    for suffix, manifest in _certificates(cluster, ns):
        key = f"gateway-hop-{suffix}"
        what = f"{manifest['kind']} {ns}/{manifest['metadata']['name']}"
        item = Item(key, resource_name(cluster, key), manifest, readiness.READY_CONDITION, what)
        out[key] = wrap(item, namespace, pc, obj_labels)
    out[CLIENT_KEY]["spec"].update(_connection(cluster, ns))
    policy = Item(
        POLICY_KEY,
        resource_name(cluster, POLICY_KEY),
        client_policy(spec),
        POLICY_ACCEPTED,
        f"ClientTrafficPolicy {ns}/{hop.CLIENT_POLICY}",
    )
    out[POLICY_KEY] = wrap(policy, namespace, pc, obj_labels)
    return out
