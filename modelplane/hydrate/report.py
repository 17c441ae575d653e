"""Report a hydration result into the ConfigMap the control plane observes.

The Job's ServiceAccount may only get and patch that one ConfigMap
(its Role names it), so the write is a JSON merge patch of its `data` through
the in-cluster Kubernetes API: the API server address from the
`KUBERNETES_SERVICE_*` environment, the ServiceAccount token and CA from the
standard mount. Tests point `KubeAPI` at a loopback server.
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from modelplane.api.model_cache import HydrationResult

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
MERGE_PATCH = "application/merge-patch+json"


class ReportError(Exception):
    """The result could not be written; the message names the ConfigMap and the cause."""


@dataclass(frozen=True)
class KubeAPI:
    """Where and how to reach a Kubernetes API server."""

    base_url: str
    token: str | None = None
    ca_file: str | None = None
    timeout: float = 30.0

    @classmethod
    def in_cluster(cls, root: Path = SERVICE_ACCOUNT) -> KubeAPI:
        """The API server a pod reaches with its ServiceAccount."""
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise ReportError("not running in a cluster: KUBERNETES_SERVICE_HOST is not set")
        host = f"[{host}]" if ":" in host else host
        token = (root / "token").read_text(encoding="utf-8").strip()
        return cls(f"https://{host}:{port}", token, str(root / "ca.crt"))

    def _context(self) -> ssl.SSLContext | None:
        if not self.base_url.startswith("https://"):
            return None
        return ssl.create_default_context(cafile=self.ca_file)

    def patch(self, path: str, body: dict[str, object]) -> dict[str, object]:
        """Send a JSON merge patch to `path`; return the object the server returns."""
        headers = {"Content-Type": MERGE_PATCH, "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.base_url.rstrip("/") + path,
            data=json.dumps(body).encode(),
            headers=headers,
            method="PATCH",
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self._context()
            ) as response:
                return dict(json.loads(response.read() or b"{}"))
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:300]
            raise ReportError(f"PATCH {path}: HTTP {err.code} {detail}") from err
        except (OSError, ValueError) as err:
            raise ReportError(f"PATCH {path}: {err}") from err


def configmap_path(namespace: str, name: str) -> str:
    """The API path of a ConfigMap."""
    return f"/api/v1/namespaces/{quote(namespace, safe='')}/configmaps/{quote(name, safe='')}"


def write_result(api: KubeAPI, namespace: str, name: str, result: HydrationResult) -> None:
    """Merge `result` into the ConfigMap's `data` (other keys are left alone)."""
    api.patch(configmap_path(namespace, name), {"data": result.to_data()})
