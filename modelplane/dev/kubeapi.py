"""A small dynamic Kubernetes client for the local fleet: any kind, by discovery.

Built on `modelplane.kube.KubeClient` (stdlib HTTP, bearer token, CA file).
Objects are addressed by apiVersion and kind; discovery maps a kind to its
resource and scope, and is read again when a kind is new to it (CRDs appear
while the fleet comes up).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import yaml

from modelplane.kube.client import KubeClient, KubeError

T = TypeVar("T")
FIELD_MANAGER = "modelplane-dev"


class NotReadyError(Exception):
    """A wait ran out of time; the message says what was awaited and what was last seen."""


@dataclass(frozen=True)
class Kubeconfig:
    """One cluster's address and credentials, as written into its kubeconfig file."""

    name: str
    server: str
    ca_file: Path
    token_file: Path

    def text(self) -> str:
        """The kubeconfig YAML (CA embedded by path, the token inline)."""
        token = self.token_file.read_text().strip()
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": self.name,
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": "admin", "user": {"token": token}}],
            "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}],
            "current-context": self.name,
        }
        return yaml.safe_dump(doc, sort_keys=False)

    def portable_text(self) -> str:
        """The kubeconfig with the CA inlined, for a Secret read by another process."""
        doc = yaml.safe_load(self.text())
        cluster = doc["clusters"][0]["cluster"]
        del cluster["certificate-authority"]
        cluster["certificate-authority-data"] = base64.b64encode(self.ca_file.read_bytes()).decode()
        return yaml.safe_dump(doc, sort_keys=False)


@dataclass
class Api:
    """Apply, read, list, delete and wait on one API server."""

    config: Kubeconfig
    timeout: float = 30.0
    _resources: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)

    @property
    def client(self) -> KubeClient:
        """The underlying HTTP client."""
        return KubeClient(
            self.config.server, str(self.config.token_file), str(self.config.ca_file), self.timeout
        )

    def request(
        self, method: str, path: str, body: Any = None, content_type: str | None = None
    ) -> dict[str, Any]:
        """One call; body is JSON-encoded when given."""
        data = None if body is None else json.dumps(body).encode()
        ctype = content_type or ("application/json" if body is not None else None)
        return self.client.request(method, path, data, ctype)

    # --- discovery -------------------------------------------------------------

    def _discover(self, api_version: str) -> None:
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        for r in self.request("GET", base).get("resources") or []:
            if "/" not in r["name"]:
                self._resources[(api_version, r["kind"])] = (r["name"], bool(r["namespaced"]))

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of a kind; KubeError when the server does not serve it."""
        key = (api_version, kind)
        if key not in self._resources:
            try:
                self._discover(api_version)
            except KubeError as err:
                if err.code != 404:
                    raise
        if key not in self._resources:
            raise KubeError(f"{kind}.{api_version} is not served", 404)
        return self._resources[key]

    def path(self, api_version: str, kind: str, name: str = "", namespace: str = "") -> str:
        """The REST path of a collection (no name) or of one object."""
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{plural}"
        return base + (f"/{quote(name, safe='')}" if name else "")

    def _obj_path(self, obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        return self.path(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", ""))

    # --- verbs -------------------------------------------------------------------

    def apply(self, obj: Mapping[str, Any], manager: str = FIELD_MANAGER) -> dict[str, Any]:
        """Server-side apply one object (forcing ownership of the fields it names)."""
        return self.client.apply(self._obj_path(obj), obj, manager)

    def apply_all(self, objs: Iterable[Mapping[str, Any]], manager: str = FIELD_MANAGER) -> None:
        """Apply objects in order."""
        for obj in objs:
            self.apply(obj, manager)

    def get(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        """One object, or None when it (or its kind) does not exist."""
        try:
            return self.request("GET", self.path(api_version, kind, name, namespace))
        except KubeError as err:
            if err.code == 404:
                return None
            raise

    def list(
        self, api_version: str, kind: str, namespace: str = "", selector: str = ""
    ) -> list[dict[str, Any]]:
        """Every object of a kind (in a namespace, matching a selector); [] when not served."""
        try:
            path = self.path(api_version, kind, namespace=namespace)
        except KubeError as err:
            if err.code == 404:
                return []
            raise
        query = {"labelSelector": selector} if selector else {}
        items = self.client.list_all(path, **query)
        # A LIST's items leave out their apiVersion and kind; callers use them.
        return [{"apiVersion": api_version, "kind": kind, **item} for item in items]

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> bool:
        """Delete one object (background propagation); False when it was not there."""
        try:
            path = self.path(api_version, kind, name, namespace)
            self.request("DELETE", path, {"propagationPolicy": "Background"})
        except KubeError as err:
            if err.code == 404:
                return False
            raise
        return True

    def merge_status(self, obj: Mapping[str, Any], status: Mapping[str, Any]) -> dict[str, Any]:
        """Merge-patch an object's status subresource, at the version read (409 if it moved).

        A merge patch replaces lists whole, so a patch computed from a stale read
        must not land: the resourceVersion makes the server refuse it.
        """
        body: dict[str, Any] = {"status": status}
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if version:
            body["metadata"] = {"resourceVersion": version}
        return self.client.merge_patch(self._obj_path(obj) + "/status", body)

    def healthy(self) -> bool:
        """True once the server serves the `default` Namespace its bootstrap creates."""
        try:
            self.client.request("GET", "/api/v1/namespaces/default")
        except KubeError:
            return False
        return True


def condition(obj: Mapping[str, Any] | None, kind: str) -> str:
    """The status ("True", "False", "Unknown") of a condition, "" when absent."""
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return str(c.get("status", ""))
    return ""


def wait(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 1.0) -> T:
    """Call probe until it returns something other than None (errors count as not yet)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            got = probe()
            if got is not None:
                return got
        except KubeError as err:
            last = err
        if time.monotonic() >= deadline:
            detail = f" (last error: {last})" if last else ""
            raise NotReadyError(f"timed out after {timeout:.0f} s waiting for {what}{detail}")
        time.sleep(interval)
