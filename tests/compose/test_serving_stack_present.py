"""A brownfield cluster: components it already runs (`servingStack.present`) are not
installed by the stack, but required and checked by their CRDs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from modelplane.api.serving_stack import read_serving_stack
from modelplane.compose.clusters.infra import present_releases, workload_usages
from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput, ComposeResult

COMPONENTS = ("CertManager", "EnvoyGateway", "NodeFeatureDiscovery")
# Written by hand: the stack's Release each component would have, and the CRDs that
# show a running one.
RELEASE = {
    "CertManager": "release-cert-manager",
    "EnvoyGateway": "release-envoy-gateway",
    "NodeFeatureDiscovery": "release-node-feature-discovery",
}
CRDS = {
    "CertManager": ["certificates.cert-manager.io", "issuers.cert-manager.io"],
    "EnvoyGateway": [
        "clienttrafficpolicies.gateway.envoyproxy.io",
        "envoyproxies.gateway.envoyproxy.io",
    ],
    "NodeFeatureDiscovery": ["nodefeaturerules.nfd.k8s-sigs.io"],
}
SUBSETS = [s for n in range(len(COMPONENTS) + 1) for s in itertools.combinations(COMPONENTS, n)]


def _stack(present: tuple[str, ...], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"clusterName": "edge", "providerConfigName": "modelplane-edge", **spec}
    if present:
        body["present"] = list(present)
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "edge", "namespace": "modelplane-system"},
        "spec": body,
    }


def _compose(composite: dict[str, Any], observed: dict[str, Any] | None = None) -> ComposeResult:
    return compose(ComposeInput(composite, observed or {}))


def _crds(res: ComposeResult) -> list[str]:
    """The CRDs observed (never written) by the stack's Objects."""
    out = []
    for d in res.desired.values():
        spec = d.resource.get("spec") or {}
        manifest = (spec.get("forProvider") or {}).get("manifest") or {}
        observe_only = spec.get("managementPolicies") == ["Observe"]
        if manifest.get("kind") == "CustomResourceDefinition" and observe_only:
            out.append(manifest["metadata"]["name"])
    return sorted(out)


@pytest.mark.parametrize("present", SUBSETS, ids=lambda s: "+".join(s) or "none")
def test_a_present_component_is_checked_not_installed(present: tuple[str, ...]) -> None:
    res = _compose(_stack(present, kserve=True))
    releases = {k for k, d in res.desired.items() if d.resource["kind"] == "Release"}
    for component in COMPONENTS:
        assert (RELEASE[component] in releases) == (component not in present), component
    assert _crds(res) == sorted(crd for c in present for crd in CRDS[c])
    # No Usage names a Release the stack does not compose.
    names = {d.resource["metadata"]["name"] for d in res.desired.values()}
    for d in res.desired.values():
        if d.resource["kind"] == "Usage":
            assert d.resource["spec"]["of"]["resourceRef"]["name"] in names, d.resource


def _all_ready(res: ComposeResult) -> dict[str, Any]:
    """Everything composed observed Ready, the Gateway programmed and the policy accepted."""
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    observed = {k: {**d.resource, "status": dict(ready)} for k, d in res.desired.items()}
    gateway = {"status": {"conditions": [{"type": "Programmed", "status": "True"}]}}
    observed["gateway"]["status"] = {"atProvider": {"manifest": gateway}, **ready}
    policy = {"status": {"ancestors": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}}
    observed["gateway-hop-policy"]["status"] = {"atProvider": {"manifest": policy}, **ready}
    return observed


def _ready_condition(res: ComposeResult) -> tuple[str, str, str]:
    (cond,) = [x for x in res.conditions if x.type == "ServingStackReady"]
    return cond.status, str(cond.reason), cond.message


def test_a_component_marked_present_but_missing_holds_the_stack_naming_it() -> None:
    composite = _stack(("CertManager", "EnvoyGateway"))
    observed = _all_ready(_compose(composite))
    assert _ready_condition(_compose(composite, observed))[:2] == ("True", "Ready")
    # cert-manager's Issuer CRD is not on the cluster (the Observe-only Object finds nothing).
    del observed["present-issuers-cert-manager-io"]
    res = _compose(composite, observed)
    status, reason, message = _ready_condition(res)
    assert (status, reason) == ("False", "ComponentMissing")
    assert message.startswith(
        "marked present in spec.servingStack.present but not found on the cluster: "
        "CertManager (CRD issuers.cert-manager.io)"
    )
    assert "EnvoyGateway" not in message
    assert res.status["present"] == [
        {"name": "CertManager", "found": False, "missing": ["issuers.cert-manager.io"]},
        {"name": "EnvoyGateway", "found": True},
    ]
    assert res.ready == "False"
    assert read_serving_stack({"status": res.status}) is not None


def test_a_replica_uses_no_release_of_a_component_the_cluster_runs() -> None:
    cluster = {"spec": {"servingStack": {"present": ["EnvoyGateway", "Bogus", 3]}}}
    absent = present_releases(cluster)
    assert absent == frozenset({"envoy-gateway"})
    with_stack = workload_usages("ml", "edge", {"edge-chat-0": "Deployment"})
    without = workload_usages("ml", "edge", {"edge-chat-0": "Deployment"}, absent)
    assert {k for k in with_stack if k.endswith("envoy-gateway")} != set()
    assert set(with_stack) - set(without) == {k for k in with_stack if k.endswith("envoy-gateway")}
    assert present_releases({"spec": {"servingStack": {"present": "EnvoyGateway"}}}) == frozenset()


def _observed_only(res: ComposeResult) -> list[tuple[str, str]]:
    """(kind, name) of every object the stack's Objects observe (never write)."""
    out = []
    for d in res.desired.values():
        spec = d.resource.get("spec") or {}
        if spec.get("managementPolicies") == ["Observe"]:
            manifest = spec["forProvider"]["manifest"]
            out.append((manifest["kind"], manifest["metadata"]["name"]))
    return sorted(out)


def test_dynamo_is_checked_by_its_crd_and_namespace_and_never_installed() -> None:
    res = _compose(_stack((), dynamoNamespace="dynamo-system"))
    assert _observed_only(res) == [
        ("CustomResourceDefinition", "dynamographdeployments.nvidia.com"),
        ("Namespace", "dynamo-system"),
    ]
    charts = {
        d.resource["spec"]["forProvider"]["chart"]["name"]
        for d in res.desired.values()
        if d.resource["kind"] == "Release"
    }
    assert not {c for c in charts if "dynamo" in c or "grove" in c}
    # Without Dynamo, nothing of it is observed.
    assert _observed_only(_compose(_stack(()))) == []


def test_dynamo_missing_holds_the_stack_and_says_the_platform_team_installs_it() -> None:
    composite = _stack(("CertManager",), dynamoNamespace="dynamo-system")
    observed = _all_ready(_compose(composite))
    status, reason, message = _ready_condition(_compose(composite, observed))
    assert (status, reason) == ("True", "Ready")
    assert message.endswith("present and found: CertManager, Dynamo")
    del observed["present-namespace-dynamo-system"]
    res = _compose(composite, observed)
    status, reason, message = _ready_condition(res)
    assert (status, reason) == ("False", "ComponentMissing")
    assert message == (
        "Dynamo (spec.servingStack.dynamo.present) not found on the cluster: "
        "namespace dynamo-system; its platform team installs Dynamo, the stack does not"
    )
    assert res.status["present"] == [
        {"name": "CertManager", "found": True},
        {"name": "Dynamo", "found": False, "missing": ["namespace dynamo-system"]},
    ]
    assert res.ready == "False"
