"""examples/workloads/dynamo rendered end to end: the Dynamo deployments land only on the
cluster that declares Dynamo present, each replica as one DynamoGraphDeployment there,
and the cluster without Dynamo receives none of it and is named as refused."""

from __future__ import annotations

from pathlib import Path

from modelplane.local import ControlPlane, load_paths
from modelplane.local.engine import RenderResult
from modelplane.local.output import cluster_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workloads" / "dynamo"


def _render(replicas: int | None = None) -> RenderResult:
    docs = load_paths([EXAMPLE])
    for doc in docs:
        if doc.get("kind") == "ModelDeployment" and replicas is not None:
            doc["spec"]["replicas"] = replicas  # more than dynamo-east holds
    return ControlPlane(docs, simulate=True).run(50)


def test_only_the_dynamo_cluster_receives_dynamo_graphs() -> None:
    result = _render()
    sent = list(cluster_manifests(result))
    graphs = sorted(
        (cl, m["metadata"]["name"]) for cl, m in sent if m["kind"] == "DynamoGraphDeployment"
    )
    assert [cl for cl, _ in graphs] == ["dynamo-east"] * 3
    # native-west gets nothing of the team's replicas: no namespace, claim or route.
    assert not [
        m for cl, m in sent if cl == "native-west" and m["metadata"].get("namespace") == "ml-team"
    ]
    replicas = [o for o in result.composites() if o["kind"] == "ModelReplica"]
    assert (
        sorted(
            (r["spec"]["clusterName"], r["spec"]["backend"], r["spec"]["framework"])
            for r in replicas
        )
        == [("dynamo-east", "Dynamo", "vllm")] * 3
    )
    assert all(r["status"]["conditions"] for r in replicas)
    ready = {
        r["metadata"]["name"]: {c["type"]: c["status"] for c in r["status"]["conditions"]}
        for r in replicas
    }
    assert all(c["WorkloadReady"] == "True" for c in ready.values()), ready
    disaggregated = next(
        m
        for _, m in sent
        if m["kind"] == "DynamoGraphDeployment" and m["metadata"]["name"].startswith("llama-pd-")
    )
    services = sorted(disaggregated["spec"]["services"])
    assert services == ["DecodeWorker", "Frontend", "PrefillWorker"]


def test_the_stack_found_the_dynamo_its_platform_team_installed() -> None:
    result = _render()
    stacks = {o["metadata"]["name"]: o for o in result.composites() if o["kind"] == "ServingStack"}
    assert stacks["dynamo-east"]["status"]["present"] == [{"name": "Dynamo", "found": True}]
    assert "present" not in stacks["native-west"]["status"]


def test_replicas_that_fit_nowhere_name_the_cluster_without_dynamo() -> None:
    result = _render(replicas=12)
    for name in ("qwen-agg", "llama-pd"):
        dep = result.get("modelplane.ai/v1alpha1", "ModelDeployment", name, "ml-team")
        assert dep is not None
        status = dep["status"]
        assert {p["cluster"] for p in status["placements"]} == {"dynamo-east"}
        why = {r["cluster"]: r for r in status["unschedulable"]}
        assert why["native-west"]["reason"] == "BackendUnsupported"
        assert why["native-west"]["message"] == (
            "spec.backend Dynamo: the cluster does not run it "
            "(spec.servingStack.dynamo.present is not true)"
        )
