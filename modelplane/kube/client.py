"""A minimal Kubernetes API client for the programs that run in a workload cluster (stdlib only).

It does what they need and nothing else: paginated LISTs (`limit` and
`continue`) and server-side apply (`application/apply-patch+yaml`, a field
manager and `force`) for the inventory agent, a JSON merge patch for the
hydration Job's result. In a pod it reaches the API server the standard way —
`KUBERNETES_SERVICE_HOST`/`_PORT`, the ServiceAccount token (re-read on every
request, because projected tokens rotate) and the cluster CA. Plain `http://`
is accepted only for a loopback server, so tests can run a real HTTP server on
127.0.0.1 without TLS. A redirect is followed with the token only to the
same scheme, host and port: another host, or plain http, never receives it.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
PAGE_SIZE = 500
MAX_PAGES = 1000  # a runaway `continue` chain ends as an error, not a hang
DETAIL_MAX = 300


class KubeError(Exception):
    """An API call failed; the message names the method, path and cause.

    `code` is the HTTP status when the server answered, so callers can tell
    "not found" (404) or "conflict" (409) from a failure to reach it.
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port defaulted: what the token is bound to."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class _SameOriginCredentials(urllib.request.HTTPRedirectHandler):
    """Follow a redirect, but carry the bearer token only to the origin it was given for."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        """The redirected request, without Authorization when it leaves the origin."""
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(req.full_url) != _origin(new.full_url):
            for name in [n for n in new.headers if n.lower() == "authorization"]:
                new.remove_header(name)
        return new


@dataclass(frozen=True)
class KubeClient:
    """Where the API server is and how to authenticate to it."""

    server: str
    token_file: str | None = None
    ca_file: str | None = None
    timeout: float = 30.0

    def __post_init__(self) -> None:
        """Refuse plain HTTP to anything but a loopback server."""
        parts = urlsplit(self.server)
        if parts.scheme == "http" and parts.hostname not in LOOPBACK:
            raise KubeError(f"{self.server}: plain http is only allowed for a loopback server")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise KubeError(f"{self.server}: not an http(s) URL")

    @classmethod
    def in_cluster(
        cls, env: Mapping[str, str] = os.environ, root: Path = SERVICE_ACCOUNT
    ) -> KubeClient:
        """The API server a pod reaches with its ServiceAccount."""
        host = env.get("KUBERNETES_SERVICE_HOST")
        port = env.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise KubeError("not running in a cluster: KUBERNETES_SERVICE_HOST is not set")
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", str(root / "token"), str(root / "ca.crt"))

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.token_file:
            try:
                token = Path(self.token_file).read_text(encoding="utf-8").strip()
            except OSError as err:
                raise KubeError(f"cannot read the token file {self.token_file}: {err}") from err
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _context(self) -> ssl.SSLContext | None:
        if not self.server.startswith("https://"):
            return None
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as err:
            raise KubeError(f"cannot load the CA file {self.ca_file}: {err}") from err

    def request(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> dict[str, Any]:
        """One API call; the decoded JSON object the server answers."""
        request = urllib.request.Request(
            self.server.rstrip("/") + path,
            data=body,
            headers=self._headers(content_type),
            method=method,
        )
        where = f"{method} {path.split('?', 1)[0]}"
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=self._context()), _SameOriginCredentials
        )
        try:
            with opener.open(request, timeout=self.timeout) as response:
                decoded = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:DETAIL_MAX]
            raise KubeError(f"{where}: HTTP {err.code}: {detail}", err.code) from err
        except (OSError, ValueError) as err:
            raise KubeError(f"{where}: {err}") from err
        if not isinstance(decoded, dict):
            raise KubeError(f"{where}: the answer is not a JSON object")
        return decoded

    def list_all(self, path: str, **query: str) -> list[dict[str, Any]]:
        """Every item of a LIST, page by page (`limit`/`continue`)."""
        items: list[dict[str, Any]] = []
        token = ""
        for _ in range(MAX_PAGES):
            params = {**query, "limit": str(PAGE_SIZE)}
            if token:
                params["continue"] = token
            page = self.request("GET", f"{path}?{urlencode(params)}")
            items += [i for i in page.get("items") or [] if isinstance(i, dict)]
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items
        raise KubeError(f"GET {path}: more than {MAX_PAGES} pages")

    def apply(self, path: str, manifest: Mapping[str, Any], field_manager: str) -> dict[str, Any]:
        """Server-side apply `manifest` at `path`, taking ownership of its fields (force)."""
        query = urlencode({"fieldManager": field_manager, "force": "true"})
        # JSON is YAML: the apply-patch+yaml content type accepts it as is.
        body = json.dumps(manifest, sort_keys=True).encode()
        return self.request("PATCH", f"{path}?{query}", body, APPLY_PATCH)

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Send a JSON merge patch to `path` (keys it does not name are left alone)."""
        return self.request("PATCH", path, json.dumps(body).encode(), MERGE_PATCH)


def configmap_path(namespace: str, name: str) -> str:
    """The API path of one ConfigMap."""
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/{quote(name, safe='')}"
