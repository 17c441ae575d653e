"""Over every example's render: no workload Gateway listens without authentication.

A workload cluster's Gateway is what the Objects on a workload cluster's
provider config wrap (not the control plane's). Each of its listeners must
terminate TLS, take routes only from selected namespaces, and be covered by an
Envoy Gateway ClientTrafficPolicy that requires and verifies a client
certificate against a CA (any weaker mode lets a client without one through).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = sorted({p.parent for p in (ROOT / "examples").rglob("*.yaml")})
Obj = dict[str, Any]


@cache
def _workload_manifests(folder: Path) -> dict[str, list[Obj]]:
    """Per workload provider config, the manifests its Objects wrap."""
    out: dict[str, list[Obj]] = {}
    for obj in ControlPlane(load_paths([str(folder)])).run().store.objects():
        if obj.get("kind") != "Object":
            continue
        config = str(obj["spec"].get("providerConfigRef", {}).get("name"))
        manifest = obj["spec"].get("forProvider", {}).get("manifest")
        if config != c.CONTROL_PLANE_PROVIDER_CONFIG and isinstance(manifest, dict):
            out.setdefault(config, []).append(manifest)
    return out


def _client_check(policies: list[Obj], gateway: Obj, listener: str) -> Obj | None:
    """The client validation of a policy on this Gateway (or this listener), if any."""
    for policy in policies:
        if policy["metadata"]["namespace"] != gateway["metadata"]["namespace"]:
            continue
        for ref in policy["spec"].get("targetRefs") or []:
            named = ref.get("kind") == "Gateway" and ref.get("name") == gateway["metadata"]["name"]
            if named and ref.get("sectionName") in (None, listener):
                validation = (policy["spec"].get("tls") or {}).get("clientValidation")
                return validation if isinstance(validation, dict) else None
    return None


def _open_listeners(manifests: list[Obj]) -> list[str]:
    """Every listener of a workload Gateway a client without the fleet's certificate passes."""
    policies = [m for m in manifests if m["kind"] == "ClientTrafficPolicy"]
    found = []
    for gw in (m for m in manifests if m["kind"] == "Gateway"):
        for listener in gw["spec"]["listeners"]:
            where = f"{gw['metadata']['name']}/{listener['name']}"
            tls = listener.get("tls") or {}
            if listener["protocol"] != "HTTPS" or tls.get("mode") != "Terminate":
                found.append(f"{where}: {listener['protocol']} without TLS termination")
                continue
            check = _client_check(policies, gw, listener["name"])
            if (
                check is None
                or not check.get("caCertificateRefs")
                or check.get("optional") is True
                or check.get("mode", "RequireAndVerify") != "RequireAndVerify"
            ):
                found.append(f"{where}: no client certificate required ({check})")
            if listener["allowedRoutes"]["namespaces"].get("from") != "Selector":
                found.append(f"{where}: routes from {listener['allowedRoutes']['namespaces']}")
    return found


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: str(f.relative_to(ROOT / "examples")))
def test_no_workload_gateway_listens_without_authentication(folder: Path) -> None:
    for config, manifests in _workload_manifests(folder).items():
        assert _open_listeners(manifests) == [], config


def test_the_check_sees_gateways_and_would_catch_an_open_listener() -> None:
    gateways = [
        m
        for f in FOLDERS
        for manifests in _workload_manifests(f).values()
        for m in manifests
        if m["kind"] == "Gateway"
    ]
    assert len(gateways) >= 10
    manifests = next(iter(_workload_manifests(ROOT / "examples" / "routing").values()))
    gateway = next(m for m in manifests if m["kind"] == "Gateway")
    plain = {
        **gateway,
        "spec": {
            **gateway["spec"],
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": 80,
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                }
            ],
        },
    }
    assert _open_listeners([plain]) == ["modelplane-inference/http: HTTP without TLS termination"]
    unchecked = [m for m in manifests if m["kind"] != "ClientTrafficPolicy"]
    assert _open_listeners(unchecked) == [
        "modelplane-inference/https: no client certificate required (None)"
    ]
