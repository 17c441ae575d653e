"""Certificates and keys of a local fleet: one CA signs every serving and client certificate.

Everything listens on 127.0.0.1, so serving certificates name `IP:127.0.0.1`
and `DNS:localhost` (gRPC and Go's TLS verify the IP SAN of `127.0.0.1:port`).
Crossplane core dials the function with mutual TLS and has no insecure mode,
so the function gets a serving certificate and Crossplane a client one, both
under the same CA.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
_PEM = serialization.Encoding.PEM


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


@dataclass(frozen=True)
class CA:
    """A certificate authority: its key and self-signed certificate."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls, cn: str = "modelplane-dev-ca") -> CA:
        """A new CA, valid for a year."""
        key = _key()
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(_name(cn))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    @classmethod
    def load(cls, directory: Path) -> CA:
        """The CA written by `write` into directory."""
        key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory / 'ca.key'}: not an EC key")
        return cls(key, x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes()))

    @property
    def pem(self) -> bytes:
        """The CA certificate as PEM."""
        return self.cert.public_bytes(_PEM)

    def write(self, directory: Path) -> None:
        """Write ca.crt and ca.key (0600) into directory."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "ca.crt").write_bytes(self.pem)
        _write_secret(directory / "ca.key", _key_pem(self.key))

    def issue(self, directory: Path, cn: str, *, server: bool, client: bool) -> None:
        """Write tls.crt, tls.key and ca.crt for one leaf into directory."""
        key = _key()
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [
            ExtendedKeyUsageOID.CLIENT_AUTH
        ] * client
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if server:
            sans: list[x509.GeneralName] = [
                x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            ]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "tls.crt").write_bytes(cert.public_bytes(_PEM))
        _write_secret(directory / "tls.key", _key_pem(key))
        (directory / "ca.crt").write_bytes(self.pem)


def write_signing_key(path: Path) -> None:
    """A private key for an API server to sign and verify ServiceAccount tokens with.

    In the traditional "EC PRIVATE KEY" form: kube-apiserver reads the public
    half from it, and its PEM reader does not take PKCS#8 for that.
    """
    pem = _key().private_bytes(
        _PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    _write_secret(path, pem)


def new_token() -> str:
    """A random bearer token for the fleet's admin user."""
    return secrets.token_urlsafe(32)


def _write_secret(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)


# --- what cert-manager would issue ------------------------------------------------------

_USAGES = {
    "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
}


def _sans(spec: Mapping[str, Any]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [x509.DNSName(str(d)) for d in spec.get("dnsNames") or []]
    names += [x509.UniformResourceIdentifier(str(u)) for u in spec.get("uris") or []]
    names += [x509.IPAddress(ipaddress.ip_address(str(a))) for a in spec.get("ipAddresses") or []]
    return names


def _leaf_name(spec: Mapping[str, Any], fallback: str) -> x509.Name:
    return _name(str(spec.get("commonName") or fallback))


def issue_certificate(
    spec: Mapping[str, Any], signer: CA | None, fallback_cn: str = "certificate"
) -> dict[str, bytes]:
    """The Secret data cert-manager writes for a Certificate spec (tls.crt, tls.key, ca.crt).

    `signer` None is a self-signed Issuer: the certificate signs itself and is
    its own ca.crt. Otherwise the signer's CA signs it and ca.crt is the CA's.
    The key is ECDSA P-256 (what the composed Certificates ask for); SANs,
    `isCA` and the server/client usages follow the spec.
    """
    key = _key()
    subject = _leaf_name(spec, fallback_cn)
    now = datetime.datetime.now(datetime.UTC)
    is_ca = bool(spec.get("isCA"))
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject if signer is None else signer.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    usages = [_USAGES[u] for u in spec.get("usages") or [] if u in _USAGES]
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    sans = _sans(spec)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if is_ca:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
    cert = builder.sign(key if signer is None else signer.key, hashes.SHA256())
    pem = cert.public_bytes(_PEM)
    return {
        "tls.crt": pem,
        "tls.key": _key_pem(key),
        "ca.crt": pem if signer is None else signer.pem,
    }


def ca_from_secret(data: Mapping[str, bytes]) -> CA:
    """The CA a cert-manager CA Issuer signs with, from its Secret's tls.crt and tls.key."""
    key = serialization.load_pem_private_key(data["tls.key"], None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA Secret's tls.key is not an EC key")
    return CA(key, x509.load_pem_x509_certificate(data["tls.crt"]))
