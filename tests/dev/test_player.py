"""What the fleet plays for cert-manager: real certificates, issued as its Issuers would."""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from modelplane.dev import pki, player
from modelplane.kube.client import KubeError


class FakeApi:
    """Just enough of kubeapi.Api: objects by (kind, namespace, name); POST creates."""

    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs = {
            (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs
        }

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Any:
        return self.objs.get((kind, namespace, name))

    def path(self, api_version: str, kind: str, name: str = "", namespace: str = "") -> str:
        return f"{kind}/{namespace}"

    def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        key = (body["kind"], body["metadata"]["namespace"], body["metadata"]["name"])
        if method == "POST" and key in self.objs:
            raise KubeError("exists", 409)
        self.objs[key] = body
        return body


NS = "modelplane-system"


def _issuer(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Issuer", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def _certificate(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Certificate", "metadata": {"name": name, "namespace": NS}, "spec": spec}


CA_CERT = _certificate(
    "hop-ca",
    {
        "isCA": True,
        "commonName": "hop CA",
        "secretName": "hop-ca",
        "issuerRef": {"kind": "Issuer", "name": "selfsigned"},
    },
)
CLIENT = _certificate(
    "hop-client",
    {
        "secretName": "hop-client",
        "issuerRef": {"kind": "Issuer", "name": "hop-ca"},
        "uris": ["spiffe://modelplane.ai/fleet-gateway"],
        "usages": ["client auth", "digital signature"],
    },
)
SERVER = _certificate(
    "hop-server",
    {
        "secretName": "hop-server",
        "issuerRef": {"kind": "Issuer", "name": "hop-ca"},
        "dnsNames": ["eu-west.gateway.modelplane.internal"],
        "usages": ["server auth", "digital signature"],
    },
)


def _cert(api: FakeApi, secret: str, key: str = "tls.crt") -> x509.Certificate:
    data = api.objs[("Secret", NS, secret)]["data"][key]
    return x509.load_pem_x509_certificate(base64.b64decode(data))


def _fleet() -> tuple[FakeApi, player.Player]:
    api = FakeApi(
        [
            _issuer("selfsigned", {"selfSigned": {}}),
            _issuer("hop-ca", {"ca": {"secretName": "hop-ca"}}),
            CA_CERT,
            CLIENT,
            SERVER,
        ]
    )
    return api, player.Player([api])  # type: ignore[list-item]


def test_a_ca_issuer_signs_only_once_its_ca_exists_and_leaves_verify_against_it() -> None:
    api, play = _fleet()
    assert play.issue(api, CLIENT) is False  # type: ignore[arg-type]  # no CA yet
    assert play.issue(api, CA_CERT) is True  # type: ignore[arg-type]
    assert play.issue(api, CLIENT) is True  # type: ignore[arg-type]
    assert play.issue(api, SERVER) is True  # type: ignore[arg-type]
    ca = _cert(api, "hop-ca")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert _cert(api, "hop-ca", "ca.crt") == ca  # self-signed: its own CA
    for name, usage in (("hop-client", "client"), ("hop-server", "server")):
        leaf = _cert(api, name)
        leaf.verify_directly_issued_by(ca)
        assert _cert(api, name, "ca.crt") == ca
        eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        wanted = (
            ExtendedKeyUsageOID.CLIENT_AUTH
            if usage == "client"
            else ExtendedKeyUsageOID.SERVER_AUTH
        )
        assert list(eku) == [wanted]
    sans = _cert(api, "hop-client").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert sans.value.get_values_for_type(x509.UniformResourceIdentifier) == [
        "spiffe://modelplane.ai/fleet-gateway"
    ]
    server_sans = _cert(api, "hop-server").extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert server_sans.value.get_values_for_type(x509.DNSName) == [
        "eu-west.gateway.modelplane.internal"
    ]


def test_a_secret_is_issued_again_only_when_its_certificate_or_ca_changed() -> None:
    api, play = _fleet()
    assert play.issue(api, CA_CERT) is True  # type: ignore[arg-type]
    assert play.issue(api, SERVER) is True  # type: ignore[arg-type]
    first = api.objs[("Secret", NS, "hop-server")]["data"]["tls.key"]
    assert play.issue(api, SERVER) is False  # type: ignore[arg-type]
    assert api.objs[("Secret", NS, "hop-server")]["data"]["tls.key"] == first
    # Another cluster's name: the server certificate is issued for it.
    renamed = _certificate(
        "hop-server", {**SERVER["spec"], "dnsNames": ["other.gateway.modelplane.internal"]}
    )
    assert play.issue(api, renamed) is True  # type: ignore[arg-type]
    sans = _cert(api, "hop-server").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert sans.value.get_values_for_type(x509.DNSName) == ["other.gateway.modelplane.internal"]


def test_an_unknown_issuer_signs_nothing() -> None:
    api, play = _fleet()
    orphan = _certificate("x", {"secretName": "x", "issuerRef": {"name": "missing"}})
    assert play.issue(api, orphan) is False  # type: ignore[arg-type]
    assert ("Secret", NS, "x") not in api.objs


def test_the_ca_of_a_ca_issuer_is_read_back_from_its_secret() -> None:
    files = pki.issue_certificate({"isCA": True, "commonName": "c"}, None)
    ca = pki.ca_from_secret(files)
    leaf = pki.issue_certificate({"dnsNames": ["a.example"]}, ca)
    x509.load_pem_x509_certificate(leaf["tls.crt"]).verify_directly_issued_by(ca.cert)


def test_what_is_played_is_settled_once_it_has_its_status() -> None:
    release = {"kind": "Release", "spec": {"forProvider": {"chart": {"version": "v1.9.0"}}}}
    assert not player.settled("Release", release)
    status = player.release_status(release, "2026-11-29T06:00:00Z")
    assert status["atProvider"]["version"] == "v1.9.0"
    assert player.settled("Release", {**release, "status": status})
