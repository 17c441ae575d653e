"""A KServe deployment rendered end to end: only clusters that run KServe get replicas,
the deployment's status says why the others do not, and the replica carries its backend."""

from __future__ import annotations

from pathlib import Path

import yaml

from modelplane.local import ControlPlane, load_paths
from modelplane.local.output import cluster_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kserve" / "single-gpu"

# A second cluster like the example's, but its serving stack does not enable KServe.
PLAIN = """
apiVersion: v1
kind: Secret
metadata: {name: plain-l4-kubeconfig, namespace: modelplane-system}
type: Opaque
data: {kubeconfig: YXBpVmVyc2lvbjogdjEK}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: aaa-plain-l4}
spec:
  source: Existing
  existing: {kubeconfigSecretRef: {namespace: modelplane-system, name: plain-l4-kubeconfig}}
  pools: [{name: l4, className: l4-1x, nodeCount: 8}]
"""


def test_only_kserve_clusters_get_replicas_and_the_status_says_why(tmp_path: Path) -> None:
    (tmp_path / "plain.yaml").write_text(PLAIN)
    docs = load_paths([EXAMPLE, tmp_path])
    for doc in docs:
        if doc.get("kind") == "ModelDeployment":
            doc["spec"]["replicas"] = 3  # the KServe cluster holds two
    result = ControlPlane(docs, simulate=True).run(50)
    dep = result.get("modelplane.ai/v1alpha1", "ModelDeployment", "qwen-0-5b", "ml-team")
    assert dep is not None
    status = dep["status"]
    assert {p["cluster"] for p in status["placements"]} == {"edge-l4"}
    why = {r["cluster"]: r for r in status["unschedulable"]}
    assert why["aaa-plain-l4"]["reason"] == "BackendUnsupported"
    assert "spec.backend KServe" in why["aaa-plain-l4"]["message"]
    agent = "modelplane-inventory"  # the agent's objects and its observed ConfigMap share it
    kinds = {
        (cl, m["kind"])
        for cl, m in cluster_manifests(result)
        if agent not in (m["metadata"]["name"], m["metadata"].get("namespace"))
    }
    assert ("edge-l4", "LLMInferenceService") in kinds
    # Only its ServingStack's inference Gateway (that Gateway's namespace, its
    # certificates and client check) and the InferencePool CRD land there,
    # beside the inventory agent.
    stack = {
        "GatewayClass",
        "Gateway",
        "Namespace",
        "CustomResourceDefinition",
        "Issuer",
        "Certificate",
        "ClientTrafficPolicy",
    }
    assert not [k for k in kinds if k[0] == "aaa-plain-l4" and k[1] not in stack]
    replicas = [o for o in result.composites() if o["kind"] == "ModelReplica"]
    assert len(replicas) == 2 and {r["spec"]["backend"] for r in replicas} == {"KServe"}


def test_the_example_is_a_kserve_deployment() -> None:
    docs = yaml.safe_load_all((EXAMPLE / "deployment.yaml").read_text())
    [dep] = [d for d in docs if d and d.get("kind") == "ModelDeployment"]
    assert dep["spec"]["backend"] == "KServe"
