"""Reach a live control plane from a kubeconfig file, with the stdlib client of `modelplane.kube`.

Only what a kubeconfig states statically is understood: the server, its CA
(`certificate-authority` or `-data`), and a bearer token (`token`, `tokenFile`)
or a client certificate (`client-certificate`/`client-key` or their `-data`).
Credential plugins (`exec`, `auth-provider`) would mean running a program the
file names, which modelplane never does; TLS verification cannot be turned off.
Relative file paths are read relative to the kubeconfig's folder, as kubectl does.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modelplane.kube.client import KubeClient, KubeError


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says which entry and what to change."""


@dataclass(frozen=True)
class ConfiguredClient(KubeClient):
    """A KubeClient with a kubeconfig's credentials: an inline token and a prepared TLS context."""

    token: str | None = field(default=None, repr=False)
    tls: ssl.SSLContext | None = field(default=None, repr=False, compare=False)
    context_name: str = ""

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = super()._headers(content_type)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _context(self) -> ssl.SSLContext | None:
        return self.tls if self.server.startswith("https://") else None


def _named(doc: Mapping[str, Any], section: str, name: str) -> dict[str, Any]:
    """The `section` entry called `name` (its inner mapping), or a KubeconfigError."""
    for entry in doc.get(section + "s") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            inner = entry.get(section)
            if isinstance(inner, dict):
                return inner
    raise KubeconfigError(f"{section} {name!r} is not defined in the kubeconfig")


def _context(doc: Mapping[str, Any], wanted: str | None) -> tuple[str, dict[str, Any]]:
    name = wanted or doc.get("current-context")
    if not name:
        raise KubeconfigError("the kubeconfig sets no current-context: pass --context NAME")
    known = [e.get("name") for e in doc.get("contexts") or [] if isinstance(e, dict)]
    if name not in known:
        listed = ", ".join(str(k) for k in known) or "none"
        raise KubeconfigError(f"context {name!r} is not in the kubeconfig (contexts: {listed})")
    return str(name), _named(doc, "context", str(name))


def _decoded(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as err:
        raise KubeconfigError(f"{what} is not valid base64: {err}") from None


def _file(base: Path, value: Any) -> str:
    path = Path(str(value)).expanduser()
    return str(path if path.is_absolute() else base / path)


def _tls(base: Path, cluster: Mapping[str, Any], user: Mapping[str, Any]) -> ssl.SSLContext:
    """The TLS context: the cluster's CA (or the system's) and the user's client certificate."""
    if cluster.get("insecure-skip-tls-verify"):
        raise KubeconfigError(
            "insecure-skip-tls-verify is not supported: give the cluster's CA "
            "(certificate-authority or certificate-authority-data)"
        )
    try:
        if "certificate-authority-data" in cluster:
            data = _decoded(cluster["certificate-authority-data"], "certificate-authority-data")
            context = ssl.create_default_context(cadata=data.decode(errors="replace"))
        elif "certificate-authority" in cluster:
            context = ssl.create_default_context(
                cafile=_file(base, cluster["certificate-authority"])
            )
        else:
            context = ssl.create_default_context()
        _client_certificate(base, user, context)
    except (OSError, ssl.SSLError) as err:
        raise KubeconfigError(f"cannot load the kubeconfig's certificates: {err}") from None
    return context


def _client_certificate(base: Path, user: Mapping[str, Any], context: ssl.SSLContext) -> None:
    if "client-certificate-data" in user or "client-key-data" in user:
        cert = _decoded(user.get("client-certificate-data", ""), "client-certificate-data")
        key = _decoded(user.get("client-key-data", ""), "client-key-data")
        # ssl loads a certificate chain only from files: a private folder, removed at once.
        with tempfile.TemporaryDirectory(prefix="modelplane-") as folder:
            cert_file, key_file = Path(folder, "client.crt"), Path(folder, "client.key")
            for path, data in ((cert_file, cert), (key_file, key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
            context.load_cert_chain(str(cert_file), str(key_file))
    elif "client-certificate" in user:
        context.load_cert_chain(
            _file(base, user["client-certificate"]), _file(base, user.get("client-key", ""))
        )


def _refuse_plugins(user: Mapping[str, Any], name: str) -> None:
    for key in ("exec", "auth-provider", "username"):
        if key in user:
            raise KubeconfigError(
                f"user {name!r} authenticates with {key!r}, which modelplane does not run: "
                "use a kubeconfig with a token or a client certificate"
            )


def load_kubeconfig(path: Path, context: str | None = None) -> ConfiguredClient:
    """A client for the API server of `context` (the current context when None) in `path`.

    Raises KubeconfigError when the file cannot be read or names what is not supported.
    """
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {err}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path} is not a kubeconfig (no mapping)")
    name, ctx = _context(doc, context)
    cluster = _named(doc, "cluster", str(ctx.get("cluster") or ""))
    user_name = str(ctx.get("user") or "")
    user = _named(doc, "user", user_name) if user_name else {}
    _refuse_plugins(user, user_name)
    server = str(cluster.get("server") or "")
    if not server:
        raise KubeconfigError(f"cluster {ctx.get('cluster')!r} has no server")
    base = path.resolve().parent
    token_file = _file(base, user["tokenFile"]) if "tokenFile" in user else None
    tls = _tls(base, cluster, user) if server.startswith("https://") else None
    token = str(user["token"]) if user.get("token") else None
    try:
        return ConfiguredClient(server, token_file=token_file, token=token, tls=tls,
                                context_name=name)  # fmt: skip
    except KubeError as err:
        raise KubeconfigError(str(err)) from None
