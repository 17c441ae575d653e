"""ServingStack installs the inventory agent: hand-written expected manifests, least privilege."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane import __version__
from modelplane.api.xrd import DEFAULT_FUNCTION_PACKAGE
from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput, ComposeResult
from tests.compose.test_serving_stack import _stack

LABELS = {
    "app.kubernetes.io/name": "modelplane-inventory",
    "app.kubernetes.io/managed-by": "modelplane",
}
META_NS = {"name": "modelplane-inventory", "namespace": "modelplane-system", "labels": LABELS}
META = {"name": "modelplane-inventory", "labels": LABELS}
SUBJECTS = [
    {"kind": "ServiceAccount", "name": "modelplane-inventory", "namespace": "modelplane-system"}
]

# composition key → (control-plane Object name, wrapped manifest), written by hand.
EXPECTED: dict[str, tuple[str, dict[str, Any]]] = {
    "inventory-namespace": (
        "us-east-inventory-namespace",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "modelplane-system"}},
    ),
    "inventory-service-account": (
        "us-east-inventory-sa",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": META_NS},
    ),
    "inventory-cluster-role": (
        "us-east-inventory-cluster-role",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": META,
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "pods"],
                    "verbs": ["get", "list", "watch"],
                },
                {
                    "apiGroups": ["resource.k8s.io"],
                    "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch"],
                },
            ],
        },
    ),
    "inventory-cluster-role-binding": (
        "us-east-inventory-cluster-role-binding",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": META,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "modelplane-inventory",
            },
            "subjects": SUBJECTS,
        },
    ),
    "inventory-role": (
        "us-east-inventory-role",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": META_NS,
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "resourceNames": ["modelplane-inventory"],
                    "verbs": ["get", "create", "patch"],
                }
            ],
        },
    ),
    "inventory-role-binding": (
        "us-east-inventory-role-binding",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": META_NS,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "modelplane-inventory",
            },
            "subjects": SUBJECTS,
        },
    ),
    "inventory-agent": (
        "us-east-inventory-agent",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": META_NS,
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"app.kubernetes.io/name": "modelplane-inventory"}},
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {
                        "serviceAccountName": "modelplane-inventory",
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65532,
                            "runAsGroup": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "agent",
                                "image": "xpkg.crossplane.io/modelplane/function-modelplane:v"
                                + __version__,
                                "command": ["modelplane", "inventory"],
                                "args": ["--interval=60s", "--grace=10m"],
                                "resources": {
                                    "requests": {"cpu": "10m", "memory": "96Mi"},
                                    "limits": {"cpu": "250m", "memory": "256Mi"},
                                },
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                            }
                        ],
                    },
                },
            },
        },
    ),
}


def _compose(composite: dict[str, Any]) -> ComposeResult:
    return compose(ComposeInput(composite, {}))


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_the_agents_objects_written_by_hand(key: str) -> None:
    res = _compose(_stack(inventory={"unschedulableAfter": "10m"}))
    name, manifest = EXPECTED[key]
    spec: dict[str, Any] = {
        "forProvider": {"manifest": manifest},
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "modelplane-us-east"},
        "readiness": (
            {
                "policy": "DeriveFromCelQuery",
                "celQuery": res.desired[key].resource["spec"]["readiness"]["celQuery"],
            }
            if key == "inventory-agent"
            else {"policy": "SuccessfulCreate"}
        ),
    }
    if key == "inventory-agent":
        # Its readiness reads the Deployment's status: watched, not polled.
        spec["watch"] = True
    if key == "inventory-namespace":
        # Shared with whatever else lands in modelplane-system: never deleted with the stack.
        spec["managementPolicies"] = ["Observe", "Create", "Update", "LateInitialize"]
    assert res.desired[key].resource == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": name,
            "namespace": "modelplane-system",
            "labels": {
                "modelplane.ai/cluster": "us-east",
                "modelplane.ai/component": "inventory-agent",
                "app.kubernetes.io/managed-by": "modelplane",
            },
            "annotations": {"crossplane.io/external-name": name},
            "finalizers": ["finalizer.managedresource.crossplane.io"],
        },
        "spec": spec,
    }


def test_the_agent_deployment_is_ready_when_rolled_out() -> None:
    res = _compose(_stack())
    readiness = res.desired["inventory-agent"].resource["spec"]["readiness"]
    assert readiness["policy"] == "DeriveFromCelQuery"
    assert "object.status.availableReplicas" in readiness["celQuery"]


def test_the_image_is_the_function_packages_own() -> None:
    deployment = EXPECTED["inventory-agent"][1]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"{DEFAULT_FUNCTION_PACKAGE}:v{__version__}"


def test_engine_metrics_turn_on_the_scraper() -> None:
    res = _compose(_stack(inventory={"unschedulableAfter": "10m", "engineMetrics": True}))
    wrapped = res.desired["inventory-agent"].resource["spec"]["forProvider"]["manifest"]
    (agent,) = wrapped["spec"]["template"]["spec"]["containers"]
    assert agent["args"] == ["--interval=60s", "--grace=10m", "--engine-metrics"]


def test_disabled_inventory_installs_nothing() -> None:
    res = _compose(_stack(inventory={"enabled": False}))
    assert not [k for k in res.desired if k.startswith("inventory")]


def test_the_agent_does_not_gate_the_stacks_readiness() -> None:
    # ServingStackReady is about the releases and the Gateway (unchanged); the
    # agent reports through HardwareDrift on the InferenceCluster.
    res = _compose(_stack())
    status, reason, _ = next(
        (x.status, x.reason, x.message) for x in res.conditions if x.type == "ServingStackReady"
    )
    assert (status, reason) == ("False", "ReleaseNotReady")


@pytest.mark.parametrize("bad", ["5 minutes", "1d", "$(rm -rf /)", ""])
def test_the_grace_period_is_validated(bad: str) -> None:
    res = _compose(_stack(inventory={"unschedulableAfter": bad}))
    (cond,) = [x for x in res.conditions if x.type == "Valid"]
    assert (cond.status, cond.reason) == ("False", "InvalidSpec")
    assert "spec.inventory.unschedulableAfter" in cond.message


def test_the_manifests_pass_the_schema_oracles(oracle: Any) -> None:
    assert EXPECTED
    for _, manifest in EXPECTED.values():
        issues = oracle.validate(manifest)
        assert not issues, [(i.path, i.message) for i in issues]
