"""The workload Gateway's hop: HTTPS only, client certificates from the fleet, replica namespaces.

Expected manifests are written out by hand; the schema oracle validates each.
"""

from __future__ import annotations

from typing import Any

from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput, ComposeResult


def _stack(**spec: Any) -> dict[str, Any]:
    body = {"clusterName": "us-east", "providerConfigName": "modelplane-us-east", **spec}
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "us-east", "namespace": "modelplane-system"},
        "spec": body,
    }


def _compose(observed: dict[str, Any] | None = None) -> ComposeResult:
    return compose(ComposeInput(_stack(cloud="GKE"), observed or {}))


def _manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    manifest: dict[str, Any] = res.desired[key].resource["spec"]["forProvider"]["manifest"]
    return manifest


ISSUER_REF_CA = {"group": "cert-manager.io", "kind": "Issuer", "name": "modelplane-hop-ca"}
KEY = {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}


def test_the_gateway_listens_only_on_https_for_replica_namespaces() -> None:
    gateway = _manifest(_compose(), "gateway")
    assert gateway["spec"]["listeners"] == [
        {
            "name": "https",
            "protocol": "HTTPS",
            "port": 443,
            "tls": {
                "mode": "Terminate",
                "certificateRefs": [
                    {"group": "", "kind": "Secret", "name": "modelplane-hop-server"}
                ],
            },
            "allowedRoutes": {
                "namespaces": {
                    "from": "Selector",
                    "selector": {"matchLabels": {"app.kubernetes.io/managed-by": "modelplane"}},
                },
                "kinds": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}],
            },
        }
    ]


def test_replica_namespaces_carry_the_label_the_gateway_selects() -> None:
    # The selector above must match what the replica composer labels its namespace with.
    from modelplane.compose.replica import workload

    class Ctx:
        namespace = "ml-team"
        pod_security = "baseline"

    labels = workload.namespace(Ctx())["metadata"]["labels"]  # type: ignore[arg-type]
    assert labels["app.kubernetes.io/managed-by"] == "modelplane"


def test_the_client_traffic_policy_requires_the_fleet_gateways_certificate() -> None:
    assert _manifest(_compose(), "gateway-hop-policy") == {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "ClientTrafficPolicy",
        "metadata": {"name": "modelplane-hop-clients", "namespace": "modelplane-system"},
        "spec": {
            "targetRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "name": "modelplane-inference",
                }
            ],
            "tls": {
                "clientValidation": {
                    "mode": "RequireAndVerify",
                    "caCertificateRefs": [
                        {"group": "", "kind": "Secret", "name": "modelplane-hop-ca"}
                    ],
                    "subjectAltNames": {
                        "uris": [{"type": "Exact", "value": "spiffe://modelplane.ai/fleet-gateway"}]
                    },
                }
            },
        },
    }


def test_certificates_form_one_ca_per_cluster() -> None:
    res = _compose()
    ns = "modelplane-system"
    assert _manifest(res, "gateway-hop-selfsigned-issuer")["spec"] == {"selfSigned": {}}
    assert _manifest(res, "gateway-hop-ca-certificate") == {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "modelplane-hop-ca", "namespace": ns},
        "spec": {
            "isCA": True,
            "commonName": "modelplane gateway hop CA",
            "secretName": "modelplane-hop-ca",
            "duration": "87600h",
            "privateKey": KEY,
            "issuerRef": {
                "group": "cert-manager.io",
                "kind": "Issuer",
                "name": "modelplane-hop-selfsigned",
            },
        },
    }
    assert _manifest(res, "gateway-hop-ca-issuer")["spec"] == {
        "ca": {"secretName": "modelplane-hop-ca"}
    }
    assert _manifest(res, "gateway-hop-server-certificate")["spec"] == {
        "secretName": "modelplane-hop-server",
        "dnsNames": ["us-east.gateway.modelplane.internal"],
        "usages": ["server auth", "digital signature"],
        "privateKey": KEY,
        "issuerRef": ISSUER_REF_CA,
    }
    assert _manifest(res, "gateway-hop-client-certificate")["spec"] == {
        "secretName": "modelplane-hop-client",
        "uris": ["spiffe://modelplane.ai/fleet-gateway"],
        "usages": ["client auth", "digital signature"],
        "privateKey": KEY,
        "issuerRef": ISSUER_REF_CA,
    }


def test_the_client_certificate_reaches_the_control_plane_only_as_connection_details() -> None:
    obj = _compose().desired["gateway-hop-client-certificate"].resource
    assert obj["spec"]["writeConnectionSecretToRef"] == {"name": "us-east-gateway-hop"}
    assert obj["spec"]["connectionDetails"] == [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": "modelplane-hop-client",
            "namespace": "modelplane-system",
            "fieldPath": f"data[{key}]",
            "toConnectionSecretKey": key,
        }
        for key in ("tls.crt", "tls.key", "ca.crt")
    ]
    # No composed manifest carries certificate material.
    for desired in _compose().desired.values():
        assert "BEGIN" not in str(desired.resource)


def test_hop_objects_pass_the_schema_oracle(oracle: Any) -> None:
    res = _compose()
    keys = [k for k in res.desired if k.startswith("gateway-hop-") or k == "gateway"]
    assert len(keys) == 7
    for key in keys:
        assert [str(i) for i in oracle.validate(res.desired[key].resource)] == [], key
        assert [str(i) for i in oracle.validate(_manifest(res, key))] == [], key


def _ready_observed(res: ComposeResult) -> dict[str, Any]:
    """Every desired resource observed Ready, its wrapped object with `status`."""
    out = {}
    for key, desired in res.desired.items():
        obj = {**desired.resource, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        manifest = desired.resource.get("spec", {}).get("forProvider", {}).get("manifest")
        if isinstance(manifest, dict):
            status: dict[str, Any] = {
                "conditions": [
                    {"type": t, "status": "True"} for t in ("Ready", "Programmed", "Available")
                ]
            }
            obj["status"]["atProvider"] = {"manifest": {**manifest, "status": status}}
        out[key] = obj
    return out


def test_the_stack_is_not_ready_while_the_client_check_is_not_in_force() -> None:
    observed = _ready_observed(_compose())
    rejected = {"conditions": [{"type": "Accepted", "status": "False", "reason": "Invalid"}]}
    policy = observed["gateway-hop-policy"]
    policy["status"]["atProvider"]["manifest"]["status"] = {"ancestors": [rejected]}
    res = _compose(observed)
    (cond,) = [x for x in res.conditions if x.type == "ServingStackReady"]
    assert cond.status == "False"
    assert "client certificate check is not in force" in cond.message
    assert res.desired["gateway-hop-policy"].ready == "False"
    accepted = {"conditions": [{"type": "Accepted", "status": "True"}]}
    policy["status"]["atProvider"]["manifest"]["status"] = {"ancestors": [accepted]}
    res = _compose(observed)
    (cond,) = [x for x in res.conditions if x.type == "ServingStackReady"]
    assert cond.status == "True", cond.message


def test_cert_manager_outlives_every_hop_certificate_and_issuer() -> None:
    res = _compose()
    users = [
        "us-east-gateway-hop-selfsigned-issuer",
        "us-east-gateway-hop-ca-certificate",
        "us-east-gateway-hop-ca-issuer",
        "us-east-gateway-hop-server-certificate",
        "us-east-gateway-hop-client-certificate",
    ]
    found = [
        d.resource["spec"]["by"]["resourceRef"]["name"]
        for d in res.desired.values()
        if d.resource["kind"] == "Usage"
        and d.resource["spec"]["of"]["resourceRef"] == {"name": "us-east-cert-manager"}
        and d.resource["spec"]["by"]["kind"] == "Object"
    ]
    assert sorted(found) == sorted(users)
    # Each names an Object the stack composes.
    names = {d.resource["metadata"]["name"] for d in res.desired.values()}
    assert set(users) <= names


def test_envoy_gateway_outlives_the_client_check() -> None:
    usage = _compose().desired["usage-gateway-hop-policy-uses-envoy-gateway"].resource
    assert usage["spec"]["of"]["resourceRef"] == {"name": "us-east-envoy-gateway"}
    assert usage["spec"]["by"]["resourceRef"] == {"name": "us-east-gateway-hop-policy"}
