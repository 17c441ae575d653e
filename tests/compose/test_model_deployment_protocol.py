"""The ModelDeployment composer through the function protocol, as Crossplane calls it.

Crossplane first calls without the required resources, then again with them
fetched, and acts only on the last answer. The first answer must therefore ask
for them without deleting anything: no fatal result (it would carry no
requirements) and every observed replica kept in desired state.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import json_format

from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, struct_to_dict
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
API = "modelplane.ai/v1alpha1"


@functools.cache
def spread_fleet() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The spread example's deployment (as loaded) and its clusters once they publish pools."""
    objects = load_paths([str(ROOT / "examples" / "scheduling" / "spread")])
    deployment = next(o for o in objects if o["kind"] == "ModelDeployment")
    store = ControlPlane(objects).run().store
    return deployment, store.list(API, "InferenceCluster", None, None)


def call(
    composite: dict[str, Any],
    observed: dict[str, dict[str, Any]] | None = None,
    required: dict[str, list[dict[str, Any]]] | None = None,
) -> fnv1.RunFunctionResponse:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    for name, obj in (observed or {}).items():
        req.observed.resources[name].resource.CopyFrom(dict_to_struct(obj))
    for name, items in (required or {}).items():
        req.required_resources[name].items.extend(
            fnv1.Resource(resource=dict_to_struct(i)) for i in items
        )
    return asyncio.run(FunctionRunner().RunFunction(req, None))


def test_first_call_asks_for_inputs_and_keeps_replicas() -> None:
    deployment, _ = spread_fleet()
    existing = {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {"name": "chat-04c28b1dbe", "namespace": "ml-team", "uid": "u1"},
        "spec": {"deploymentName": "chat", "clusterName": "us-east", "index": 0},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    rsp = call(deployment, observed={"replica-us-east-0": existing})
    assert [r.severity for r in rsp.results] == []
    assert json_format.MessageToDict(rsp.requirements) == {
        "resources": {
            "inference-clusters": {
                "apiVersion": API,
                "kind": "InferenceCluster",
                "matchLabels": {},
            },
            "model-replicas": {
                "apiVersion": API,
                "kind": "ModelReplica",
                "matchLabels": {"labels": {"app.kubernetes.io/managed-by": "modelplane"}},
            },
            "fleet-quotas": {
                "apiVersion": API,
                "kind": "FleetQuota",
                "matchLabels": {},
                "namespace": "ml-team",
            },
            # No priority named and nothing preempted yet: PriorityClasses are not read.
        }
    }
    kept = struct_to_dict(rsp.desired.resources["replica-us-east-0"].resource)
    assert kept == {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {"name": "chat-04c28b1dbe", "namespace": "ml-team"},
        "spec": {"deploymentName": "chat", "clusterName": "us-east", "index": 0},
    }


def test_second_call_places_every_replica() -> None:
    deployment, clusters = spread_fleet()
    rsp = call(
        deployment,
        required={
            "inference-clusters": clusters,
            "model-replicas": [],
            "fleet-quotas": [],
            "priority-classes": [],
        },
    )
    assert [r.severity for r in rsp.results] == []
    desired = {
        k: struct_to_dict(v.resource)["metadata"]["name"] for k, v in rsp.desired.resources.items()
    }
    assert desired == {
        "replica-eu-west-0": "chat-b02eae7e9a",
        "replica-us-east-0": "chat-04c28b1dbe",
        "replica-us-west-0": "chat-4451afc719",
    }
    status = struct_to_dict(rsp.desired.composite.resource)["status"]
    assert (status["replicas"], status["readyReplicas"]) == (3, 0)
    assert {(c.type, c.reason) for c in rsp.conditions} == {
        ("Scheduled", "AllReplicasScheduled"),
        ("ReplicasReady", "ReplicasNotReady"),
    }
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


PRIORITY_CLASSES = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "matchLabels": {},
}


def _asks_for_priorities(composite: dict, fleet: list[dict]) -> bool:
    clusters = spread_fleet()[1]
    rsp = call(
        composite,
        required={"inference-clusters": clusters, "model-replicas": fleet, "fleet-quotas": []},
    )
    asked = json_format.MessageToDict(rsp.requirements)["resources"]
    return asked.get("priority-classes") == PRIORITY_CLASSES


def test_priority_classes_are_read_only_when_priority_can_matter() -> None:
    deployment, _ = spread_fleet()
    preempting = {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {"name": "urgent-1", "namespace": "other", "uid": "u9"},
        "spec": {
            "deploymentName": "urgent",
            "clusterName": "us-east",
            "index": 0,
            "preempts": [{"namespace": "ml-team", "name": "chat-04c28b1dbe"}],
        },
    }
    quiet = {**preempting, "spec": {**preempting["spec"], "preempts": []}}
    with_priority = {**deployment, "spec": {**deployment["spec"], "priority": "critical"}}
    assert not _asks_for_priorities(deployment, [])
    assert not _asks_for_priorities(deployment, [quiet])
    # A victim must check its preemptor's priority; a preemptor reads its own.
    assert _asks_for_priorities(deployment, [preempting])
    assert _asks_for_priorities(with_priority, [])
