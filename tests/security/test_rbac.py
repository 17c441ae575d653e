"""Issue 40, RBAC as data: what each persona may write, read from the shipped ClusterRoles.

`package/rbac/roles.yaml` is what a platform applies. A small evaluator of
Kubernetes RBAC rules (apiGroups × resources × verbs, with ClusterRole
aggregation by label) answers, for each persona, which writes the roles allow;
the expected answers are written by hand from docs/security.md's table, not
derived from the generator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "package" / "rbac" / "roles.yaml"
MP = "modelplane.ai"
INFRA = "infrastructure.modelplane.ai"
WRITES = ("create", "update", "patch", "delete")


def _roles() -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(ROLES.read_text(encoding="utf-8")) if d]
    return {d["metadata"]["name"]: d for d in docs}


def _aggregated(roles: dict[str, dict[str, Any]], builtin: str) -> list[dict[str, Any]]:
    """The rules the shipped roles add to Kubernetes' `builtin` role by aggregation."""
    label = f"rbac.authorization.k8s.io/aggregate-to-{builtin}"
    return [
        rule
        for role in roles.values()
        if role["metadata"].get("labels", {}).get(label) == "true"
        for rule in role["rules"]
    ]


def _allows(rules: list[dict[str, Any]], verb: str, group: str, resource: str) -> bool:
    return any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        and (verb in r["verbs"] or "*" in r["verbs"])
        for r in rules
    )


def _writable(rules: list[dict[str, Any]], group: str, resource: str) -> bool:
    return all(_allows(rules, v, group, resource) for v in WRITES)


NAMESPACED = {
    (MP, "modeldeployments"),
    (MP, "modelcaches"),
    (MP, "modelservices"),
    (MP, "modelreplicas"),
    (MP, "modelendpoints"),
    (MP, "fleetquotas"),
    (INFRA, "eksclusters"),
    (INFRA, "gkeclusters"),
    (INFRA, "aksclusters"),
    (INFRA, "servingstacks"),
}
CLUSTER = {(MP, "inferenceclasses"), (MP, "inferenceclusters"), (MP, "inferencegateways")}
ML_TEAM_WRITES = {(MP, "modeldeployments"), (MP, "modelcaches"), (MP, "modelservices")}


def test_the_package_ships_the_personas_roles() -> None:
    assert sorted(_roles()) == [
        "modelplane:aggregate-to-edit",
        "modelplane:aggregate-to-view",
        "modelplane:fleet-view",
        "modelplane:ml-team",
        "modelplane:platform",
    ]


@pytest.mark.parametrize("builtin", ["edit", "admin", "modelplane:ml-team"])
def test_an_ml_team_writes_only_its_deployments_caches_and_services(builtin: str) -> None:
    roles = _roles()
    rules = roles[builtin]["rules"] if builtin in roles else _aggregated(roles, builtin)
    writable = {(g, r) for g, r in NAMESPACED | CLUSTER if _writable(rules, g, r)}
    assert writable == ML_TEAM_WRITES
    for group, resource in NAMESPACED:
        assert _allows(rules, "get", group, resource) and _allows(rules, "list", group, resource)
    # Nothing at all of what the fleet composes or grants: not even a status write.
    for resource in ("modelreplicas", "modelendpoints", "fleetquotas"):
        assert not any(_allows(rules, v, MP, resource) for v in (*WRITES, "deletecollection"))
        assert not _allows(rules, "update", MP, f"{resource}/status")
    assert _allows(rules, "update", MP, "modeldeployments/scale")


def test_view_reads_and_writes_nothing() -> None:
    rules = _aggregated(_roles(), "view")
    for group, resource in NAMESPACED:
        assert _allows(rules, "watch", group, resource)
        assert not any(_allows(rules, v, group, resource) for v in WRITES)


def test_the_platform_writes_every_kind_and_no_role_grants_wildcards() -> None:
    roles = _roles()
    platform = roles["modelplane:platform"]["rules"]
    assert {(g, r) for g, r in NAMESPACED | CLUSTER if _writable(platform, g, r)} == (
        NAMESPACED | CLUSTER
    )
    assert not _aggregated({"p": roles["modelplane:platform"]}, "admin")
    fleet = roles["modelplane:fleet-view"]["rules"]
    assert {(g, r) for g, r in CLUSTER if _allows(fleet, "list", g, r)} == CLUSTER
    for role in roles.values():
        for rule in role["rules"]:
            assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"]


def test_the_roles_are_valid_cluster_roles(oracle: Any) -> None:
    for role in _roles().values():
        assert not oracle.validate(role), role["metadata"]["name"]
    broken = dict(_roles()["modelplane:ml-team"], rules=[{"apiGroups": [MP], "verbz": ["get"]}])
    assert oracle.validate(broken)
