"""Envoy Gateway's own translator (`egctl experimental translate`) as the routing oracle.

`inputs` gathers, from a render, what Envoy Gateway would read on one cluster:
the Gateway API and Envoy Gateway objects the Objects on that cluster's provider
config wrap, the Services and Namespaces routes resolve against, and the
Secrets they name. Secrets whose values a real cluster would hold (the hop's
certificates, a credential) get real PEM material minted here, so the
translator checks them as it would live ones. `translate` runs egctl over
them and returns the resources with the status Envoy Gateway sets, and xDS.
"""

from __future__ import annotations

import base64
import datetime
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop

# What Envoy Gateway reads, by (group, kind).
KINDS = {
    ("gateway.networking.k8s.io", "GatewayClass"),
    ("gateway.networking.k8s.io", "Gateway"),
    ("gateway.networking.k8s.io", "HTTPRoute"),
    ("gateway.networking.k8s.io", "ReferenceGrant"),
    ("gateway.envoyproxy.io", "EnvoyProxy"),
    ("gateway.envoyproxy.io", "Backend"),
    ("gateway.envoyproxy.io", "HTTPRouteFilter"),
    ("gateway.envoyproxy.io", "ClientTrafficPolicy"),
    ("gateway.envoyproxy.io", "SecurityPolicy"),
    ("gateway.envoyproxy.io", "BackendTrafficPolicy"),
    ("", "Service"),
    ("", "Namespace"),
    ("", "Secret"),
}
# The version whose translator is the oracle (modelplane/dev/parts/versions.toml).
EGCTL_ENV = "MODELPLANE_EGCTL"
Obj = dict[str, Any]


def _group(obj: Mapping[str, Any]) -> str:
    api = str(obj.get("apiVersion", ""))
    return api.rsplit("/", 1)[0] if "/" in api else ""


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass
class Pki:
    """One CA per cluster and its leaves, minted once per test run."""

    cas: dict[str, tuple[ec.EllipticCurvePrivateKey, x509.Certificate]] = field(
        default_factory=dict
    )

    def ca(self, cluster: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        """The cluster's CA (key, certificate)."""
        if cluster not in self.cas:
            key = ec.generate_private_key(ec.SECP256R1())
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster} hop CA")])
            now = datetime.datetime.now(datetime.UTC)
            cert = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=30))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .sign(key, hashes.SHA256())
            )
            self.cas[cluster] = (key, cert)
        return self.cas[cluster]

    def ca_pem(self, cluster: str) -> bytes:
        """The cluster's CA certificate as PEM."""
        return self.ca(cluster)[1].public_bytes(serialization.Encoding.PEM)

    def leaf(
        self, cluster: str, *, dns: str | None = None, uri: str | None = None
    ) -> dict[str, bytes]:
        """A leaf certificate of the cluster's CA: tls.crt, tls.key, ca.crt."""
        ca_key, ca_cert = self.ca(cluster)
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        sans: list[x509.GeneralName] = []
        if dns:
            sans.append(x509.DNSName(dns))
        if uri:
            sans.append(x509.UniformResourceIdentifier(uri))
        usage = ExtendedKeyUsageOID.SERVER_AUTH if dns else ExtendedKeyUsageOID.CLIENT_AUTH
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns or "client")]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(ca_key, hashes.SHA256())
        )
        return {
            "tls.crt": cert.public_bytes(serialization.Encoding.PEM),
            "tls.key": _pem_key(key),
            "ca.crt": self.ca_pem(cluster),
        }


def _secret(namespace: str, name: str, data: Mapping[str, bytes], type_: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": type_,
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def wrapped_by_config(objects: Iterable[Mapping[str, Any]]) -> dict[str, list[Obj]]:
    """The manifests provider-kubernetes Objects wrap, per provider config name."""
    out: dict[str, list[Obj]] = {}
    for obj in objects:
        if obj.get("kind") != "Object" or not _group(obj).startswith("kubernetes."):
            continue
        spec = obj.get("spec") or {}
        manifest = (spec.get("forProvider") or {}).get("manifest")
        config = str((spec.get("providerConfigRef") or {}).get("name") or "")
        if isinstance(manifest, dict):
            out.setdefault(config, []).append(dict(manifest))
    return out


def _real_secrets(manifests: list[Obj], store: list[Obj], pki: Pki) -> list[Obj]:
    """Every Secret the gateway objects name, with the values a live cluster would hold.

    The inputs' own Secrets (credentials) as given; a Secret copy with the value
    provider-kubernetes would patch in (a credential); the cluster's connection
    Secret a hop Backend names (in the system namespace, beside it) with a client
    certificate and CA of the cluster its SNI names.
    """
    out: dict[tuple[str, str], Obj] = {}
    for s in store:
        meta = s.get("metadata") or {}
        if s.get("kind") == "Secret" and s.get("apiVersion") == "v1" and s.get("data"):
            out[(str(meta.get("namespace")), str(meta.get("name")))] = dict(s)
    for m in (m for m in manifests if m.get("kind") == "Secret"):
        key = (m["metadata"]["namespace"], m["metadata"]["name"])
        if key not in out:
            out[key] = _secret(*key, {c.ENVOY_CREDENTIAL_KEY: b"Bearer test-token"}, "Opaque")
    for m in manifests:
        tls = (m.get("spec") or {}).get("tls") or {} if m.get("kind") == "Backend" else {}
        ref = tls.get("clientCertificateRef")
        if ref:
            cluster = str(tls["sni"]).removesuffix(f".{hop.SERVER_DOMAIN}")
            key = (m["metadata"]["namespace"], ref["name"])
            leaf = pki.leaf(cluster, uri=hop.FLEET_CLIENT_URI)
            out[key] = _secret(*key, leaf, "kubernetes.io/tls")
    return list(out.values())


def control_plane_inputs(objects: list[Obj], pki: Pki) -> list[Obj]:
    """What Envoy Gateway on the control plane reads after a render."""
    manifests = wrapped_by_config(objects).get(c.CONTROL_PLANE_PROVIDER_CONFIG, [])
    out = [m for m in manifests if (_group(m), m.get("kind")) in KINDS and m["kind"] != "Secret"]
    out += _real_secrets(manifests, objects, pki)
    for gw in (m for m in manifests if m.get("kind") == "Gateway"):
        for listener in gw["spec"]["listeners"]:
            for ref in (listener.get("tls") or {}).get("certificateRefs") or []:
                ns = ref.get("namespace") or gw["metadata"]["namespace"]
                leaf = pki.leaf("control-plane", dns="inference.example.com")
                out.append(_secret(ns, ref["name"], leaf, "kubernetes.io/tls"))
    return _with_namespaces(out)


def cluster_inputs(objects: list[Obj], config: str, cluster: str, pki: Pki) -> list[Obj]:
    """What Envoy Gateway on one workload cluster reads after a render."""
    manifests = wrapped_by_config(objects).get(config, [])
    out = [
        _with_cluster_ip(m, i)
        for i, m in enumerate(manifests)
        if (_group(m), m.get("kind")) in KINDS
    ]
    ns = next(m for m in manifests if m.get("kind") == "Gateway")["metadata"]["namespace"]
    # What cert-manager writes from the cluster's Certificates.
    out.append(_secret(ns, hop.CA, {"ca.crt": pki.ca_pem(cluster)}, "kubernetes.io/tls"))
    server = pki.leaf(cluster, dns=hop.server_name(cluster))
    out.append(_secret(ns, hop.SERVER, server, "kubernetes.io/tls"))
    return _with_namespaces(out)


def _with_cluster_ip(manifest: Obj, index: int) -> Obj:
    """A Service as the API server returns it: with the cluster IP it allocated."""
    if manifest.get("kind") != "Service" or (manifest.get("spec") or {}).get("clusterIP"):
        return manifest
    spec = {**manifest.get("spec", {}), "clusterIP": f"10.96.{index // 250}.{index % 250 + 1}"}
    return {**manifest, "spec": spec}


def _with_namespaces(objs: list[Obj]) -> list[Obj]:
    have = {o["metadata"]["name"] for o in objs if o.get("kind") == "Namespace"}
    for o in list(objs):
        ns = (o.get("metadata") or {}).get("namespace")
        if ns and ns not in have:
            have.add(ns)
            objs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    return objs


def egctl() -> str | None:
    """The egctl binary: $MODELPLANE_EGCTL, the parts cache, or PATH; None if none."""
    if os.environ.get(EGCTL_ENV):
        return os.environ[EGCTL_ENV]
    try:
        from modelplane.dev import parts

        part = parts.parts()["egctl"]
        if shutil.which("go") and parts.is_built(part):
            return str(parts.part_dir(part) / "bin" / "egctl")
    except (KeyError, parts.PartsError):
        pass
    return shutil.which("egctl")


def translate(binary: str, objs: list[Obj], workdir: Path) -> list[Obj]:
    """Run `egctl experimental translate` over objs: resources with status, then xDS."""
    path = workdir / "input.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    done = subprocess.run(
        [
            binary,
            "experimental",
            "translate",
            "--from",
            "gateway-api",
            "--to",
            "gateway-api,xds",
            "--type",
            "all",
            "--output",
            "yaml",
            "--file",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]
