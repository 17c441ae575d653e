"""The RBAC docs/install.md gives provider-kubernetes is what the package composes.

Every example folder is rendered twice (providers simulated, so late objects such
as a Ready cache's appear, and not simulated, so early ones such as a hydrating
cache's credentials Secret copy appear); every provider-kubernetes Object is
read for the kind it manages, through which provider config, and with which
management policies. Verbs follow from the policies (Observe: get, list, watch;
Create: create; Update: update, patch; Delete: delete; `*`: all). The Roles and
ClusterRoles composed onto workload clusters add what they grant: Kubernetes
lets an identity grant only permissions it holds itself.

Two identities, one per kind of provider config:

- `modelplane-workloads`: the kubeconfig identity of every workload cluster's
  ClusterProviderConfig (one per InferenceCluster);
- `modelplane-control-plane`: provider-kubernetes' own service account on the
  control plane (`InjectedIdentity`), which the InferenceGateway and every
  ModelService compose through.

`python tests/docs/test_install_rbac.py` prints both ClusterRoles, the text
install.md holds.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "docs" / "install.md"
CONTROL_PLANE_CONFIG = "modelplane-control-plane"  # InferenceGateway's provider configs
ROLES = {"workloads": "modelplane-workloads", "control-plane": "modelplane-control-plane"}
ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
POLICY_VERBS = {
    "Observe": ("get", "list", "watch"),
    "Create": ("create",),
    "Update": ("update", "patch"),
    "Delete": ("delete",),
    "LateInitialize": (),  # writes the managed resource's spec, not the cluster's object
    "*": ALL_VERBS,
}
# (apiGroup, resource) -> verbs
Grants = dict[tuple[str, str], set[str]]


def plural(kind: str) -> str:
    """The resource name of a kind, by the API server's rule for the kinds composed."""
    lower = kind.lower()
    if lower.endswith(("s", "sh", "ch", "x")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def example_folders() -> list[Path]:
    """Every example scenario: a folder holding manifests directly."""
    return sorted({p.parent for p in (ROOT / "examples").rglob("*.yaml")})


def _objects(folder: Path) -> Iterable[Mapping[str, Any]]:
    inputs = load_paths([str(folder)])
    for simulate in (True, False):
        yield from ControlPlane(inputs, simulate=simulate).run().store.objects()


def _add(grants: Grants, group: str, resource: str, verbs: Iterable[str]) -> None:
    grants.setdefault((group, resource), set()).update(verbs)


def _role_grants(grants: Grants, manifest: Mapping[str, Any]) -> None:
    """What a composed Role or ClusterRole grants, which its creator must hold."""
    for rule in manifest.get("rules") or []:
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                _add(grants, group, resource, rule.get("verbs") or [])


@cache
def composed_grants() -> dict[str, Grants]:
    """Per identity (`workloads`, `control-plane`), the permissions the package needs."""
    found: dict[str, Grants] = {"workloads": {}, "control-plane": {}}
    for folder in example_folders():
        for obj in _objects(folder):
            if obj.get("kind") != "Object" or not str(obj.get("apiVersion", "")).startswith(
                "kubernetes.m.crossplane.io/"
            ):
                continue
            spec = obj["spec"]
            manifest = spec["forProvider"]["manifest"]
            config = (spec.get("providerConfigRef") or {}).get("name")
            grants = found["control-plane" if config == CONTROL_PLANE_CONFIG else "workloads"]
            verbs = {v for p in spec.get("managementPolicies") or ["*"] for v in POLICY_VERBS[p]}
            _add(grants, _group(manifest["apiVersion"]), plural(manifest["kind"]), verbs)
            if manifest["kind"] in ("Role", "ClusterRole"):
                _role_grants(grants, manifest)
    return found


def rules(grants: Grants) -> list[dict[str, Any]]:
    """RBAC rules for `grants`: one per (apiGroup, verbs), resources sorted."""
    by_verbs: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, resource), verbs in sorted(grants.items()):
        ordered = tuple(v for v in ALL_VERBS if v in verbs) + tuple(sorted(verbs - set(ALL_VERBS)))
        by_verbs[(group, ordered)].append(resource)
    return [
        {"apiGroups": [group], "resources": resources, "verbs": list(verbs)}
        for (group, verbs), resources in sorted(by_verbs.items())
    ]


def cluster_role(identity: str) -> dict[str, Any]:
    """The ClusterRole install.md gives one identity."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLES[identity]},
        "rules": rules(composed_grants()[identity]),
    }


def _flat(role: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role.get("rules") or []
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _documented(name: str) -> dict[str, Any]:
    text = INSTALL.read_text(encoding="utf-8")
    docs = [
        d
        for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
        for d in yaml.safe_load_all(block)
        if d
    ]
    (role,) = [d for d in docs if d.get("kind") == "ClusterRole" and d["metadata"]["name"] == name]
    return role


def test_the_examples_compose_the_kinds_a_workload_cluster_is_known_to_receive() -> None:
    # The derivation reading nothing would make the comparison below vacuous.
    workloads = composed_grants()["workloads"]
    for needed in [
        ("apps", "deployments"),
        ("", "persistentvolumeclaims"),
        ("batch", "jobs"),
        ("", "configmaps"),
        ("", "secrets"),
        ("gateway.networking.k8s.io", "gateways"),
        ("inference.networking.k8s.io", "inferencepools"),
        ("serving.kserve.io", "llminferenceservices"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets"),
        ("rbac.authorization.k8s.io", "clusterroles"),
    ]:
        assert needed in workloads, needed
    assert ("gateway.envoyproxy.io", "backends") in composed_grants()["control-plane"]


def test_install_guide_rbac_is_what_the_package_composes() -> None:
    for identity, name in ROLES.items():
        documented, derived = _flat(_documented(name)), _flat(cluster_role(identity))
        assert documented == derived, (
            f"{name}: missing {sorted(derived - documented)}, "
            f"not composed {sorted(documented - derived)}; "
            "regenerate with `python tests/docs/test_install_rbac.py`"
        )


def test_plural() -> None:
    assert [plural(k) for k in ("Deployment", "GatewayClass", "Policy", "Gateway")] == [
        "deployments",
        "gatewayclasses",
        "policies",
        "gateways",
    ]


def cluster_role_text(identity: str) -> str:
    """`cluster_role` as install.md writes it: one flow-style line per field of a rule."""

    def flow(items: list[str]) -> str:
        return "[" + ", ".join(i if i else f'"{i}"' for i in items) + "]"

    role = cluster_role(identity)
    lines = [
        f"apiVersion: {role['apiVersion']}",
        f"kind: {role['kind']}",
        "metadata:",
        f"  name: {role['metadata']['name']}",
        "rules:",
    ]
    for rule in role["rules"]:
        lines += [
            f"- apiGroups: {flow(rule['apiGroups'])}",
            f"  resources: {flow(rule['resources'])}",
            f"  verbs: {flow(rule['verbs'])}",
        ]
    return "\n".join(lines) + "\n"


def test_the_printed_text_is_the_role() -> None:
    for identity in ROLES:
        assert yaml.safe_load(cluster_role_text(identity)) == cluster_role(identity)


if __name__ == "__main__":
    print("\n".join(cluster_role_text(i) for i in ROLES), end="")
