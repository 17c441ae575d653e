"""InferencePool support: a cluster that turns it off gets neither the CRD nor Envoy AI
Gateway, and never receives a disaggregated replica (BackendUnsupported, naming the setting)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput
from modelplane.local import ControlPlane, load_paths
from modelplane.local.output import cluster_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "disaggregated"
SETTING = "spec.servingStack.inferencePool.enabled"


def _stack(**spec: Any) -> dict[str, Any]:
    body = {"clusterName": "east", "providerConfigName": "modelplane-east", **spec}
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "east", "namespace": "modelplane-system"},
        "spec": body,
    }


def test_a_stack_without_inference_pools_installs_neither_crd_nor_ai_gateway() -> None:
    res = compose(ComposeInput(_stack(inferencePool=False), {}))
    charts = {
        d.resource["spec"]["forProvider"]["chart"]["name"]
        for d in res.desired.values()
        if d.resource["kind"] == "Release"
    }
    assert "ai-gateway-helm" not in charts and "ai-gateway-crds-helm" not in charts
    assert "gateway-helm" in charts
    assert "inference-pool-crd" not in res.desired
    envoy = res.desired["release-envoy-gateway"].resource["spec"]["forProvider"]
    assert "values" not in envoy  # no extension server to hand pools to


def _fleet_with_a_cluster_without_pools() -> list[dict[str, Any]]:
    docs = load_paths([EXAMPLE])
    (cluster,) = [d for d in docs if d.get("kind") == "InferenceCluster"]
    # The same cluster again, first by name, but serving no InferencePool.
    other = copy.deepcopy(cluster)
    other["metadata"]["name"] = "aaa-no-pools"
    other["spec"]["servingStack"] = {"inferencePool": {"enabled": False}}
    other["spec"]["gateway"] = {"address": "aaa.inference.example.com"}
    docs.append(other)
    for doc in docs:
        if doc.get("kind") == "ModelDeployment":
            doc["spec"]["replicas"] = 40  # more than pd-west holds
    return docs


def test_a_disaggregated_replica_never_lands_where_pools_are_not_served() -> None:
    result = ControlPlane(_fleet_with_a_cluster_without_pools(), simulate=True).run(50)
    (dep,) = [o for o in result.composites() if o["kind"] == "ModelDeployment"]
    status = dep["status"]
    assert {p["cluster"] for p in status["placements"]} == {"pd-west"}
    why = {r["cluster"]: r for r in status["unschedulable"]}
    assert why["aaa-no-pools"]["reason"] == "BackendUnsupported"
    assert SETTING in why["aaa-no-pools"]["message"]
    assert "InferencePool" in why["aaa-no-pools"]["message"]
    # And the cluster that turned it off received no InferencePool CRD.
    crds = {cl for cl, m in cluster_manifests(result) if m["kind"] == "CustomResourceDefinition"}
    assert crds == {"pd-west"}
