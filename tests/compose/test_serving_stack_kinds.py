"""The serving stack's queues, PriorityClasses and InferencePool CRD: hand-written expected
objects, names that match what the replicas' pods carry, and the CRD as released upstream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from oracles import CONFORMANCE

from modelplane.api.inference_cluster import SchedulingConfig
from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.clusters.stack.inference_pool_crd import TEXT
from modelplane.compose.replica import schedulers
from modelplane.compose.replica.templates import TemplateVars
from modelplane.compose.types import ComposeInput, ComposeResult


def _stack(**spec: Any) -> dict[str, Any]:
    body = {"clusterName": "east", "providerConfigName": "modelplane-east", **spec}
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "east", "namespace": "modelplane-system"},
        "spec": body,
    }


def _replica(namespace: str, deployment: str, cluster: str = "east") -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": f"{deployment}-0",
            "namespace": namespace,
            "labels": {"modelplane.ai/cluster": cluster},
        },
        "spec": {
            "deploymentName": deployment,
            "clusterName": cluster,
            "index": 0,
            "roles": [],
        },
    }


def _compose(composite: dict[str, Any], replicas: list[dict[str, Any]] | None) -> ComposeResult:
    required = {} if replicas is None else {"replicas": replicas}
    return compose(ComposeInput(composite, {}, required))


def _manifests(res: ComposeResult, kinds: set[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for key, d in res.desired.items():
        manifest = d.resource["spec"].get("forProvider", {}).get("manifest", {})
        if manifest.get("kind") in kinds:
            out[key] = manifest
    return out


UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
KAI_SPEC = {"queues": [{"system": "KAI", "template": "{{ .Namespace }}"}], "gpuScheduler": "KAI"}


def test_kai_gets_a_parent_queue_and_a_leaf_per_namespace_its_replicas_name() -> None:
    replicas = [_replica("team-a", "llama"), _replica("team-a", "qwen"), _replica("team-b", "x")]
    res = _compose(_stack(**KAI_SPEC), replicas)
    assert res.requirements["replicas"].match_labels == {"modelplane.ai/cluster": "east"}
    resources = {"gpu": UNLIMITED, "cpu": UNLIMITED, "memory": UNLIMITED}
    assert _manifests(res, {"Queue"}) == {
        "kai-parent-queue": {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "modelplane"},
            "spec": {"resources": resources},
        },
        "kai-queue-team-a": {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "team-a"},
            "spec": {"resources": resources, "parentQueue": "modelplane"},
        },
        "kai-queue-team-b": {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "team-b"},
            "spec": {"resources": resources, "parentQueue": "modelplane"},
        },
    }
    # Each queue goes before the KAI release that serves it.
    usages = {
        (u["spec"]["by"]["resourceRef"]["name"], u["spec"]["of"]["resourceRef"]["name"])
        for u in (d.resource for d in res.desired.values())
        if u["kind"] == "Usage"
    }
    assert ("east-kai-queue-team-a", "east-kai-scheduler") in usages
    assert ("east-kai-parent-queue", "east-kai-scheduler") in usages


def test_kueue_gets_its_cluster_queue_and_a_local_queue_in_each_replica_namespace() -> None:
    spec = {"queues": [{"system": "Kueue", "template": "{{ .Namespace }}-gpus"}], "kueue": True}
    res = _compose(_stack(**spec), [_replica("ml", "llama")])
    kinds = {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
    assert _manifests(res, kinds) == {
        "kueue-resource-flavor": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "modelplane"},
        },
        "kueue-cluster-queue": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "modelplane"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [
                            {
                                "name": "modelplane",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "1000000"},
                                    {"name": "memory", "nominalQuota": "1000Ti"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        "kueue-local-queue-ml-ml-gpus": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "ml-gpus", "namespace": "ml"},
            "spec": {"clusterQueue": "modelplane"},
        },
    }


def test_priority_classes_are_created_as_declared() -> None:
    pcs = [
        {"name": "critical", "value": 100000, "description": "never preempted"},
        {"name": "standard", "value": 10, "preemptionPolicy": "Never"},
    ]
    res = _compose(_stack(priorityClasses=pcs), None)
    assert "replicas" not in res.requirements  # no queues: nothing to fetch
    assert _manifests(res, {"PriorityClass"}) == {
        "priority-class-critical": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "critical"},
            "value": 100000,
            "description": "never preempted",
        },
        "priority-class-standard": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "standard"},
            "value": 10,
            "preemptionPolicy": "Never",
        },
    }


def test_a_queue_is_kept_until_the_replicas_are_fetched_and_an_invalid_name_is_skipped() -> None:
    first = _compose(_stack(**KAI_SPEC), [_replica("team-a", "llama")])
    observed = {k: d.resource for k, d in first.desired.items()}
    res = compose(ComposeInput(_stack(**KAI_SPEC), observed, {}))
    assert "kai-queue-team-a" in res.desired  # not fetched yet: kept
    # A template that renders to an invalid label value names no queue.
    bad = {"queues": [{"system": "KAI", "template": "{{ .Name }}."}], "gpuScheduler": "KAI"}
    res = _compose(_stack(**bad), [_replica("team-a", "llama")])
    assert set(_manifests(res, {"Queue"})) == {"kai-parent-queue"}


SCHEDULING = [
    pytest.param(
        {"schedulerName": "kai-scheduler", "defaultLabels": {"kai.scheduler/queue": "{{ .Name }}"}},
        "kai-queue-llama",
        id="kai",
    ),
    pytest.param(
        {"schedulerName": "kai-scheduler", "defaultLabels": {"runai/queue": "q-{{ .Namespace }}"}},
        "kai-queue-q-ml",
        id="kai-legacy-label",
    ),
    pytest.param(
        {
            "schedulerName": "volcano",
            "defaultAnnotations": {
                "scheduling.volcano.sh/queue-name": "{{ .Cluster }}-{{ .Name }}"
            },
        },
        "volcano-queue-east-llama",
        id="volcano",
    ),
]


@pytest.mark.parametrize(("scheduling", "key"), SCHEDULING)
def test_the_stack_makes_the_queue_the_replicas_pods_name(
    scheduling: dict[str, Any], key: str
) -> None:
    cfg = SchedulingConfig.model_validate(scheduling)
    plan, errors = schedulers.plan(cfg, None, TemplateVars("ml", "llama", "east"), "pg")
    assert errors == [] and plan.queue is not None
    queues = [q.to_dict() for q in cfg.queue_templates()]
    system = {"kai-scheduler": "KAI", "volcano": "Volcano"}[cfg.scheduler_name or ""]
    res = _compose(_stack(queues=queues, gpuScheduler=system), [_replica("ml", "llama")])
    queue = _manifests(res, {"Queue"})[key]
    assert queue["metadata"]["name"] == plan.queue


def test_the_kueue_local_queue_is_the_label_the_replicas_workloads_carry() -> None:
    cfg = SchedulingConfig.model_validate(
        {"defaultLabels": {"kueue.x-k8s.io/queue-name": "{{ .Namespace }}-{{ .Name }}"}}
    )
    plan, _ = schedulers.plan(cfg, None, TemplateVars("ml", "llama", "east"), "pg")
    queues = [q.to_dict() for q in cfg.queue_templates()]
    res = _compose(_stack(queues=queues, kueue=True), [_replica("ml", "llama")])
    (local,) = _manifests(res, {"LocalQueue"}).values()
    assert local["metadata"] == {
        "name": plan.workload_labels["kueue.x-k8s.io/queue-name"],
        "namespace": "ml",
    }


def test_every_queue_object_passes_the_oracles(oracle: Any) -> None:
    spec = {
        "queues": [
            {"system": "Volcano", "template": "{{ .Namespace }}"},
            {"system": "Kueue", "template": "{{ .Namespace }}"},
        ],
        "gpuScheduler": "Volcano",
        "kueue": True,
        "priorityClasses": [{"name": "p", "value": 1, "preemptionPolicy": "Never"}],
    }
    desired = _compose(_stack(**spec), [_replica("ml", "a")]).desired
    kai = _compose(_stack(**KAI_SPEC), [_replica("ml", "a")]).desired
    checked = 0
    for key, d in [*desired.items(), *kai.items()]:
        assert [str(i) for i in oracle.validate(d.resource)] == [], key
        checked += 1
    assert checked > 20


def test_the_inference_pool_crd_is_the_v1_6_0_release_file_byte_for_byte() -> None:
    stored = (
        CONFORMANCE
        / "crds"
        / "gateway-api-inference-extension"
        / "inference.networking.k8s.io_inferencepools.yaml"
    )
    if not Path(stored).is_file():
        pytest.skip("schema oracles not found at ../shared/conformance")
    assert stored.read_text(encoding="utf-8") == TEXT
