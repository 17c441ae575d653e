"""examples/workloads/*: rendered through the whole pipeline (ModelDeployment →
scheduler → ModelReplica → workload cluster), each workload cluster receives the
manifests SPEC §4–5 call for, valid against the schema oracles."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from modelplane.local import ControlPlane, load_paths
from modelplane.local.output import cluster_manifests

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples" / "workloads"

BASE = {"Namespace": 1, "ResourceClaimTemplate": 1, "Service": 1, "HTTPRoute": 1}
EXPECTED: dict[str, tuple[str, dict[str, int]]] = {
    "single-gpu": ("edge-l4", {**BASE, "Deployment": 1}),
    "multi-node": ("train-h100", {**BASE, "LeaderWorkerSet": 1}),
    "disaggregated": (
        "pd-west",
        {
            "Namespace": 1,
            "Deployment": 3,  # prefill, decode, the endpoint picker
            "ResourceClaimTemplate": 2,
            "Service": 3,
            "HTTPRoute": 1,
            "InferencePool": 1,
            "ConfigMap": 1,
            "ServiceAccount": 1,
            "Role": 1,
            "RoleBinding": 1,
        },
    ),
    # With `install: true` the stack also sends the queues the pods name (KAI: the
    # parent and one leaf) and the two PriorityClasses the example declares.
    "kai": (
        "kai-east",
        {**BASE, "LeaderWorkerSet": 1, "PodGroup": 1, "Queue": 2, "PriorityClass": 2},
    ),
    "volcano": (
        "volcano-east",
        {**BASE, "LeaderWorkerSet": 1, "PodGroup": 1, "Queue": 1, "PriorityClass": 2},
    ),
    "kueue": (
        "kueue-east",
        {
            **BASE,
            "LeaderWorkerSet": 1,
            "ResourceFlavor": 1,
            "ClusterQueue": 1,
            "LocalQueue": 1,
            "PriorityClass": 2,
        },
    ),
    # NVIDIA Dynamo on a KAI cluster: three replicas (two aggregated, one
    # disaggregated), a DynamoGraphDeployment, KAI PodGroup and route each, a claim
    # template per role (4); the leaf and parent Queues; the Observe-only checks of
    # Dynamo's CRD and namespace (dynamo-system) beside the team's namespace, which
    # each of the three replicas composes.
    "dynamo": (
        "dynamo-east",
        {
            "Namespace": 4,
            "ResourceClaimTemplate": 4,
            "HTTPRoute": 3,
            "DynamoGraphDeployment": 3,
            "PodGroup": 3,
            "Queue": 2,
            "CustomResourceDefinition": 1,
        },
    ),
}
# Clusters of an example that get none of its replicas (they cannot run them):
# only their own stack and inventory agent.
BYSTANDERS = {"dynamo": "native-west"}

# The stack's inference Gateway (its class, its namespace), the InferencePool CRD,
# and the Gateway's hop (gateway_hop.py): two Issuers, the CA's, the Gateway's and
# the fleet's Certificates, the client check.
STACK = {
    "Namespace": 1,
    "GatewayClass": 1,
    "Gateway": 1,
    "CustomResourceDefinition": 1,
    "Issuer": 2,
    "Certificate": 3,
    "ClientTrafficPolicy": 1,
}
# The inventory agent (its namespace, account, RBAC, Deployment) and the
# Observe-only Object of the ConfigMap it writes (a manifest naming it, never applied).
AGENT = {
    "Namespace": 1,
    "ServiceAccount": 1,
    "ClusterRole": 1,
    "ClusterRoleBinding": 1,
    "Role": 1,
    "RoleBinding": 1,
    "Deployment": 1,
    "ConfigMap": 1,
}
AGENT_LABEL = ("app.kubernetes.io/name", "modelplane-inventory")

_RENDERED: dict[str, list[tuple[str, dict[str, Any]]]] = {}


def rendered(example: str) -> list[tuple[str, dict[str, Any]]]:
    if example not in _RENDERED:
        result = ControlPlane(load_paths([EXAMPLES / example]), simulate=True).run(50)
        _RENDERED[example] = cluster_manifests(result)
    return _RENDERED[example]


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_cluster_receives_the_serving_manifests(example: str) -> None:
    cluster, kinds = EXPECTED[example]
    manifests = rendered(example)
    bystander = BYSTANDERS.get(example)
    assert {c for c, _ in manifests} == {cluster, *([bystander] if bystander else [])}
    # Beside the replica's manifests, the cluster's ServingStack sends its
    # inference Gateway (with its GatewayClass and namespace) and inventory agent.
    assert Counter(str(m["kind"]) for c, m in manifests if c == cluster) == Counter(
        kinds
    ) + Counter(STACK) + Counter(AGENT)
    if bystander:
        sent = Counter(str(m["kind"]) for c, m in manifests if c == bystander)
        assert sent == Counter(STACK) + Counter(AGENT)


def _replica_manifests(example: str) -> list[dict[str, Any]]:
    """The manifests of the example's replicas (not the agent's nor the observed inventory)."""
    out = []
    for _, m in rendered(example):
        labels = (m.get("metadata") or {}).get("labels") or {}
        if labels.get(AGENT_LABEL[0]) != AGENT_LABEL[1] and m["kind"] != "ConfigMap":
            out.append(m)
    return out


def _pods(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest["kind"] == "Deployment":
        return [manifest["spec"]["template"]]
    if manifest["kind"] == "LeaderWorkerSet":
        lwt = manifest["spec"]["leaderWorkerTemplate"]
        return [lwt["leaderTemplate"], lwt["workerTemplate"]]
    if manifest["kind"] == "DynamoGraphDeployment":
        # Each service's pod as Dynamo's operator builds it: extraPodSpec, its
        # mainContainer as the main container.
        pods = []
        for service in manifest["spec"]["services"].values():
            extra = dict(service["extraPodSpec"])
            main = extra.pop("mainContainer")
            spec = {**extra, "containers": [main, *extra.get("containers", [])]}
            pods.append({"metadata": service.get("extraPodMetadata", {}), "spec": spec})
        return pods
    return []


def test_kai_acceptance() -> None:
    # priority production-critical on a kai-scheduler cluster whose defaultLabels
    # queue pods by namespace: every pod carries all three.
    manifests = _replica_manifests("kai")
    pods = [p for m in manifests for p in _pods(m)]
    assert len(pods) == 2
    group = next(m for m in manifests if m["kind"] == "PodGroup")
    for pod in pods:
        assert pod["spec"]["priorityClassName"] == "production-critical"
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "ml-team-prod"
        assert pod["metadata"]["annotations"]["pod-group-name"] == group["metadata"]["name"]
    assert group["spec"] == {
        "minMember": 2,
        "queue": "ml-team-prod",
        "priorityClassName": "production-critical",
    }
    # What the pods name exists on the cluster: the queue (a leaf of the stack's
    # parent queue) and the PriorityClass.
    names = {(m["kind"], m["metadata"]["name"]): m for m in manifests}
    assert names[("Queue", "ml-team-prod")]["spec"]["parentQueue"] == "modelplane"
    assert ("PriorityClass", "production-critical") in names


def test_multi_node_runs_vllm_on_ray() -> None:
    lws = next(m for _, m in rendered("multi-node") if m["kind"] == "LeaderWorkerSet")
    lwt = lws["spec"]["leaderWorkerTemplate"]
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    worker = lwt["workerTemplate"]["spec"]["containers"][0]
    assert lwt["size"] == 2
    assert "ray start --head" in leader["command"][2]
    assert leader["args"][-3:] == [
        "--tensor-parallel-size=8",
        "--pipeline-parallel-size=2",
        "--distributed-executor-backend=ray",
    ]
    assert "--address=" in worker["command"][2] and "--block" in worker["command"][2]


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_no_gpu_resource_anywhere(example: str) -> None:
    pods = [pod for _, manifest in rendered(example) for pod in _pods(manifest)]
    assert pods, f"{example} renders no pod template"
    for pod in pods:
        assert pod["spec"]["containers"]
        for ctr in pod["spec"]["containers"]:
            res = ctr.get("resources") or {}
            assert "nvidia.com/gpu" not in {**res.get("limits", {}), **res.get("requests", {})}


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_conformance(example: str, oracle: Any) -> None:
    manifests = list(rendered(example))
    assert manifests, f"{example} renders nothing"
    for cluster, manifest in manifests:
        issues = oracle.validate(manifest)
        assert not issues, f"{cluster} {manifest['kind']}: {[(i.path, i.message) for i in issues]}"
