"""Table tests: the ModelDeployment composer, with the scheduler's answer scripted.

Each case gives a ComposeInput and the ScheduleResult the scheduler returns,
and spells out the expected ComposeResult by hand: ModelReplica manifests,
status, conditions, events and requirements. The scheduler itself is tested
on its own; end-to-end checks with the real one live in
test_model_deployment_e2e.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api.model_deployment import ModelDeploymentSpec, ModelDeploymentStatus
from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.compose.deployments import model_deployment as md
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    ConditionOut,
    DesiredResource,
    EventOut,
    Requirement,
)
from modelplane.scheduling.framework import ScheduleInput
from modelplane.scheduling.types import (
    ClusterVerdict,
    DeviceVerdict,
    PlannedReplica,
    PoolVerdict,
    RequestVerdict,
    RoleAssignment,
    ScheduleResult,
    SelectorVerdict,
)

API = "modelplane.ai/v1alpha1"
CEL = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
TEMPLATE: dict[str, Any] = {
    "metadata": {
        "labels": {
            "app": "chat",
            "team": "nlp",
            "modelplane.ai/cluster": "spoofed",
            "modelplane.ai/deployment": "spoofed",
        }
    },
    "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]},
}
NODE_SELECTOR = {"devices": [{"name": "gpu", "count": 1, "selectors": [{"cel": CEL}]}]}


def deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "replicas": 2,
        "nodeSelector": copy.deepcopy(NODE_SELECTOR),
        "workers": {"template": copy.deepcopy(TEMPLATE)},
        # Crossplane v2 bookkeeping: the composer must ignore it.
        "crossplane": {"compositionRef": {"name": "modeldeployments.modelplane.ai"}},
    }
    base.update(spec)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "chat", "namespace": "team-a", "generation": 3},
        "spec": base,
    }


# What the composed replica's workers look like once defaults are written out.
WORKERS = {
    "count": 1,
    "topology": {"tensor": 1, "pipeline": 1, "data": 1, "dataLocal": 1},
    "template": TEMPLATE,
}
GPU_REQUEST = ResolvedDeviceRequest(
    name="gpu", device_class_name="gpu.nvidia.com", count=1, selectors=[{"cel": CEL}]
)
GPU_REQUEST_WIRE = {
    "name": "gpu",
    "deviceClassName": "gpu.nvidia.com",
    "count": 1,
    "selectors": [{"cel": CEL}],
}
USER_LABELS = {"app": "chat", "team": "nlp"}


def planned(cluster: str, index: int, pool: str = "l4", retained: bool = False) -> PlannedReplica:
    return PlannedReplica(
        cluster=cluster,
        index=index,
        roles=(RoleAssignment("unified", pool, (GPU_REQUEST,), 1),),
        retained=retained,
        name=f"chat-{cluster}{index}",
    )


# The revision of the deployment's template (WORKERS, Native, no caches): a hash,
# written out as the composer must print it.
REVISION = "469a0495c4"
REVISION_CACHED = "af77af514a"  # the same with caches [weights]


def replica(
    cluster: str, index: int, pool: str = "l4", revision: str = REVISION, **extra_spec: Any
) -> dict[str, Any]:
    """The ModelReplica manifest expected for a unified replica, written out in full."""
    spec: dict[str, Any] = {
        "deploymentName": "chat",
        "clusterName": cluster,
        "index": index,
        "nodePoolName": pool,
        "deviceRequests": [GPU_REQUEST_WIRE],
        "workers": WORKERS,
    }
    spec.update(extra_spec)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": f"chat-{cluster}{index}",
            "namespace": "team-a",
            "labels": {
                **USER_LABELS,
                "app.kubernetes.io/managed-by": "modelplane",
                "modelplane.ai/deployment": "chat",
                "modelplane.ai/cluster": cluster,
                "modelplane.ai/replica-index": str(index),
                "modelplane.ai/revision": revision,
            },
            # Crossplane's own, composed with it so Crossplane need not add it.
            "finalizers": ["composite.apiextensions.crossplane.io"],
        },
        "spec": spec,
    }


def observed_replica(cluster: str, index: int, ready: bool) -> dict[str, Any]:
    obj = replica(cluster, index)
    obj["metadata"]["uid"] = f"uid-{cluster}-{index}"
    obj["metadata"]["resourceVersion"] = "42"
    obj["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return obj


def icluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": name},
        "spec": {},
    }


REQUIREMENTS = {
    "inference-clusters": Requirement(
        api_version="modelplane.ai/v1alpha1", kind="InferenceCluster"
    ),
    "model-replicas": Requirement(
        api_version="modelplane.ai/v1alpha1",
        kind="ModelReplica",
        match_labels={"app.kubernetes.io/managed-by": "modelplane"},
    ),
    "fleet-quotas": Requirement(
        api_version="modelplane.ai/v1alpha1", kind="FleetQuota", namespace="team-a"
    ),
    # No PriorityClasses: the deployment names no priority and nothing preempts.
}
CACHE_REQUIREMENT = Requirement(
    api_version="modelplane.ai/v1alpha1",
    kind="ModelCache",
    match_name="weights",
    namespace="team-a",
)
CACHE = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelCache",
    "metadata": {"name": "weights", "namespace": "team-a"},
}
FETCHED = {
    "inference-clusters": [icluster("a"), icluster("b")],
    "model-replicas": [],
    "fleet-quotas": [],
    "priority-classes": [],
}


class Scripted:
    """A scheduler stand-in that records the typed input it was given and returns a fixed plan."""

    def __init__(self, plan: ScheduleResult | Exception) -> None:
        self.plan = plan
        self.calls: list[ScheduleInput] = []

    def __call__(self, inp: ScheduleInput) -> ScheduleResult:
        self.calls.append(inp)
        if isinstance(self.plan, Exception):
            raise self.plan
        return self.plan


NEVER = Scripted(AssertionError("the scheduler must not run"))


def ok_status(placements: list[dict[str, Any]], ready: int) -> dict[str, Any]:
    return {
        "replicas": len(placements),
        "readyReplicas": ready,
        "selector": "modelplane.ai/deployment=chat",
        "placements": placements,
        "unschedulable": [],
        "unschedulableOmitted": 0,
    }


def placement(
    cluster: str, index: int, ready: bool, pool: str = "l4", revision: str = REVISION
) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "index": index,
        "replicaName": f"chat-{cluster}{index}",
        "pools": [{"role": "unified", "pool": pool}],
        "ready": ready,
        "revision": revision,
    }


def test_unresolved_requirements_keep_every_replica_and_ask_for_inputs() -> None:
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    kept = replica("a", 0)  # status, uid and resourceVersion stripped
    for required in ({}, {"inference-clusters": [icluster("a")]}):
        got = md.compose_with(
            ComposeInput(deployment(), observed=observed, required=required), NEVER
        )
        assert got == ComposeResult(
            desired={"replica-a-0": DesiredResource(kept)},
            requirements=REQUIREMENTS,
            ready="False",
        )


def test_cache_requirement_is_added_and_awaited() -> None:
    dep = deployment(caches=[{"name": "weights"}])
    got = md.compose_with(ComposeInput(dep, required=FETCHED), NEVER)
    assert got.requirements == {**REQUIREMENTS, "cache-weights": CACHE_REQUIREMENT}
    assert got.desired == {}
    assert got.fatal is None and got.ready == "False"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"prefill": {"nodeSelector": NODE_SELECTOR, "workers": {"template": TEMPLATE}}},
            "spec: set either nodeSelector and workers (unified) or prefill and decode "
            "(disaggregated), not both",
        ),
        ({"replicas": -1}, "spec.replicas: Input should be greater than or equal to 0"),
        (
            {"workers": {"template": {"spec": {"containers": [{"name": "vllm"}]}}}},
            "spec.workers.template: template must have exactly one container named 'engine', "
            "found 0",
        ),
    ],
)
def test_invalid_spec_keeps_replicas_with_condition_and_warning(
    spec: dict[str, Any], message: str
) -> None:
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    got = md.compose_with(
        ComposeInput(deployment(**spec), observed=observed, required=FETCHED), NEVER
    )
    assert got == ComposeResult(
        desired={"replica-a-0": DesiredResource(replica("a", 0))},
        conditions=[ConditionOut("Scheduled", "False", "InvalidSpec", message)],
        events=[EventOut("Warning", "InvalidSpec", message)],
        ready="False",
    )


def test_all_scheduled_composes_one_replica_each_with_readiness_from_observed() -> None:
    plan = ScheduleResult(
        replicas=(planned("a", 0, retained=True), planned("b", 0)),
        desired=2,
        clusters=(ClusterVerdict("a", True), ClusterVerdict("b", True)),
    )
    sched = Scripted(plan)
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    got = md.compose_with(ComposeInput(deployment(), observed=observed, required=FETCHED), sched)
    assert got == ComposeResult(
        desired={
            "replica-a-0": DesiredResource(replica("a", 0), "True"),
            "replica-b-0": DesiredResource(replica("b", 0), "False"),
        },
        status=ok_status([placement("a", 0, True), placement("b", 0, False)], ready=1),
        conditions=[
            ConditionOut("Scheduled", "True", "AllReplicasScheduled", "placed 2 of 2 replicas"),
            ConditionOut("ReplicasReady", "False", "ReplicasNotReady", "1 of 2 replicas ready"),
        ],
        requirements=REQUIREMENTS,
        ready="False",
    )
    ModelDeploymentStatus.model_validate(got.status)
    # The scheduler sees the spec without Crossplane's bookkeeping, and the
    # deployment's own observed replica even though the fleet listing lags.
    (seen,) = sched.calls
    assert (seen.namespace, seen.name) == ("team-a", "chat")
    assert seen.spec == ModelDeploymentSpec.model_validate(
        {k: v for k, v in deployment()["spec"].items() if k != "crossplane"}
    )
    assert list(seen.clusters) == ["a", "b"]
    assert [x.name for x in seen.replicas] == ["chat-a0"]


def test_every_replica_ready_makes_the_deployment_ready() -> None:
    plan = ScheduleResult(
        replicas=(planned("a", 0, retained=True), planned("a", 1, retained=True)),
        desired=2,
    )
    observed = {
        "replica-a-0": observed_replica("a", 0, ready=True),
        "replica-a-1": observed_replica("a", 1, ready=True),
    }
    got = md.compose_with(
        ComposeInput(deployment(), observed=observed, required=FETCHED), Scripted(plan)
    )
    assert got.ready == "True"
    assert got.status == ok_status([placement("a", 0, True), placement("a", 1, True)], ready=2)
    assert got.conditions[-1] == ConditionOut(
        "ReplicasReady", "True", "AllReplicasReady", "2 of 2 replicas ready"
    )
    assert got.events == []


def test_zero_replicas_is_scheduled_and_ready_and_drops_observed() -> None:
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    got = md.compose_with(
        ComposeInput(deployment(replicas=0), observed=observed, required=FETCHED),
        Scripted(ScheduleResult(replicas=(), desired=0)),
    )
    assert got.desired == {}
    assert got.ready == "True"
    assert got.status == ok_status([], ready=0)
    assert [(x.type, x.status, x.reason) for x in got.conditions] == [
        ("Scheduled", "True", "AllReplicasScheduled"),
        ("ReplicasReady", "True", "AllReplicasReady"),
    ]


@pytest.mark.parametrize(
    ("clusters", "verdicts", "message"),
    [
        ([], (), "placed 0 of 2 replicas: no InferenceCluster exists"),
        (
            [icluster("a")],
            (ClusterVerdict("a", False, "NotSelected", "labels do not match clusterSelector"),),
            "placed 0 of 2 replicas: no InferenceCluster matches spec.clusterSelector",
        ),
    ],
)
def test_no_clusters(
    clusters: list[dict[str, Any]], verdicts: tuple[ClusterVerdict, ...], message: str
) -> None:
    plan = ScheduleResult(replicas=(), desired=2, clusters=verdicts)
    required = {
        "inference-clusters": clusters,
        "model-replicas": [],
        "fleet-quotas": [],
        "priority-classes": [],
    }
    got = md.compose_with(ComposeInput(deployment(), required=required), Scripted(plan))
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "NoClusters", message)
    assert got.events == [EventOut("Warning", "NoClusters", message)]
    assert got.desired == {}
    assert got.ready == "False"
    assert got.status["replicas"] == 0
    assert got.status["unschedulable"] == [
        {"cluster": v.cluster, "reason": v.reason, "message": v.message} for v in verdicts
    ]


def test_invalid_cel_keeps_existing_replicas_and_names_the_field() -> None:
    err = "ERROR: <input>:1:8: undeclared reference to 'devic'"
    plan = ScheduleResult(
        replicas=(planned("a", 0, retained=True),),
        desired=2,
        invalid_selectors=(("spec.nodeSelector.devices[0].selectors[0].cel", err),),
    )
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    got = md.compose_with(
        ComposeInput(deployment(), observed=observed, required=FETCHED), Scripted(plan)
    )
    message = (
        f"spec.nodeSelector.devices[0].selectors[0].cel: {err} "
        "(existing replicas are kept; placed 1 of 2 replicas)"
    )
    assert got.desired == {"replica-a-0": DesiredResource(replica("a", 0), "True")}
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "InvalidNodeSelector", message)
    assert got.events == [EventOut("Warning", "InvalidNodeSelector", message)]
    # Only a spec change fixes it, and a spec change reconciles: no sooner call.
    assert got.recall_seconds is None
    assert got.status["unschedulable"] == []


def test_partial_placement_explains_every_rejecting_cluster() -> None:
    false_selector = SelectorVerdict(CEL, False)
    errored = SelectorVerdict('device.attributes["x"].y > 1', None, "no such key: x")
    plan = ScheduleResult(
        replicas=(planned("a", 0),),
        desired=3,
        clusters=(
            ClusterVerdict(
                "a",
                False,
                "InsufficientCapacity",
                pools=(PoolVerdict("l4", "unified", True, needed_nodes=1, free_nodes=0),),
            ),
            ClusterVerdict(
                "b",
                False,
                "NoMatchingPool",
                pools=(
                    PoolVerdict(
                        "h100",
                        "unified",
                        False,
                        requests=(
                            RequestVerdict(
                                "gpu",
                                False,
                                # The closest miss (a false selector) is reported,
                                # not the error from a selector meant for a GPU.
                                devices=(
                                    DeviceVerdict("nic", False, (errored,)),
                                    DeviceVerdict("gpu", False, (false_selector,)),
                                ),
                                message="no device satisfies every selector",
                            ),
                        ),
                    ),
                ),
            ),
            ClusterVerdict("c", False, "NotSelected", "labels do not match clusterSelector"),
            ClusterVerdict("d", False, "Tainted", "untolerated taint drain=true:NoExecute"),
        ),
    )
    got = md.compose_with(ComposeInput(deployment(replicas=3), required=FETCHED), Scripted(plan))
    b_message = f"pool h100: request gpu: device gpu: selector {CEL!r} is false"
    assert got.status["unschedulable"] == [
        {
            "cluster": "a",
            "reason": "InsufficientCapacity",
            "message": "pool l4: needs 1 nodes, 0 free",
        },
        {"cluster": "b", "reason": "NoMatchingPool", "message": b_message},
        {"cluster": "d", "reason": "Tainted", "message": "untolerated taint drain=true:NoExecute"},
        {"cluster": "c", "reason": "NotSelected", "message": "labels do not match clusterSelector"},
    ]
    # The condition and event summarise by reason; status carries the details.
    message = (
        "placed 1 of 3 replicas: InsufficientCapacity on a; NoMatchingPool on b; "
        "Tainted on d; NotSelected on c (see status.unschedulable)"
    )
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "Partial", message)
    assert got.events == [EventOut("Warning", "Partial", message)]
    assert list(got.desired) == ["replica-a-0"]


def test_nothing_placed_is_insufficient_capacity() -> None:
    plan = ScheduleResult(
        replicas=(),
        desired=1,
        clusters=(ClusterVerdict("a", False, "InsufficientCapacity", "needs 2 nodes, 1 free"),),
    )
    got = md.compose_with(ComposeInput(deployment(replicas=1), required=FETCHED), Scripted(plan))
    message = "placed 0 of 1 replicas: InsufficientCapacity on a (see status.unschedulable)"
    assert got.conditions[0] == ConditionOut("Scheduled", "False", "InsufficientCapacity", message)
    assert got.events == [EventOut("Warning", "InsufficientCapacity", message)]
    # Capacity frees elsewhere, unwatched: called again soon to place it then.
    assert got.recall_seconds == md.RECALL_WHILE_WAITING == 10


def test_unschedulable_is_bounded_in_entries_and_length() -> None:
    long = "x" * 5000
    verdicts = tuple(
        ClusterVerdict(f"c{i:02d}", False, "InsufficientCapacity", long) for i in range(40)
    )
    plan = ScheduleResult(replicas=(), desired=1, clusters=verdicts)
    got = md.compose_with(ComposeInput(deployment(replicas=1), required=FETCHED), Scripted(plan))
    entries = got.status["unschedulable"]
    assert [e["cluster"] for e in entries] == [f"c{i:02d}" for i in range(32)]
    assert {len(e["message"]) for e in entries} == {1024}
    assert entries[0]["message"].endswith("…")
    assert got.status["unschedulableOmitted"] == 8
    assert got.conditions[0].message == (
        "placed 0 of 1 replicas: InsufficientCapacity on c00, c01, c02 and 37 more "
        "(see status.unschedulable)"
    )
    ModelDeploymentStatus.model_validate(got.status)


def test_reserved_and_invalid_user_labels_are_dropped() -> None:
    template = copy.deepcopy(TEMPLATE)
    template["metadata"]["labels"]["bad key!"] = "v"
    template["metadata"]["labels"]["ok"] = "not a valid value"
    dep = deployment(replicas=1, workers={"template": template})
    plan = ScheduleResult(replicas=(planned("a", 0),), desired=1)
    got = md.compose_with(ComposeInput(dep, required=FETCHED), Scripted(plan))
    labels = got.desired["replica-a-0"].resource["metadata"]["labels"]
    assert labels == {
        "app": "chat",
        "team": "nlp",
        "app.kubernetes.io/managed-by": "modelplane",
        "modelplane.ai/deployment": "chat",
        "modelplane.ai/cluster": "a",
        "modelplane.ai/replica-index": "0",
        "modelplane.ai/revision": "99447c9a55",
    }
    assert got.events == [
        EventOut(
            "Warning",
            "InvalidLabel",
            "spec.workers.template.metadata.labels: 'bad key!'='v' is not a valid Kubernetes "
            "label; it is not copied to the replicas",
        ),
        EventOut(
            "Warning",
            "InvalidLabel",
            "spec.workers.template.metadata.labels: 'ok'='not a valid value' is not a valid "
            "Kubernetes label; it is not copied to the replicas",
        ),
    ]


def test_priority_and_caches_reach_the_replica() -> None:
    dep = deployment(replicas=1, priority="inference-high", caches=[{"name": "weights"}])
    plan = ScheduleResult(replicas=(planned("a", 0),), desired=1)
    # The namespace's FleetQuota grants the class (docs/security.md).
    grant = {
        "metadata": {"name": "q", "namespace": "team-a"},
        "spec": {"limits": [{"name": "all", "devices": 8}], "priorityClasses": ["inference-high"]},
    }
    # ... and the class exists: a PriorityClass of that name on the control plane.
    klass = {"metadata": {"name": "inference-high"}, "value": 1000}
    required = {
        **FETCHED,
        "cache-weights": [CACHE],
        "fleet-quotas": [grant],
        "priority-classes": [klass],
    }
    got = md.compose_with(ComposeInput(dep, required=required), Scripted(plan))
    assert got.desired["replica-a-0"].resource == replica(
        "a", 0, priority="inference-high", caches=[{"name": "weights"}], revision=REVISION_CACHED
    )
    assert got.conditions[0] == ConditionOut(
        "CacheResolved", "True", "Resolved", "ModelCache weights found"
    )
    assert got.conditions[1].reason == "AllReplicasScheduled"


def test_missing_cache_holds_new_placements_and_keeps_existing() -> None:
    # The cache hold is the scheduler's CacheFilter: it is told which caches exist
    # and answers with only the kept replica, so status, explain and the composed
    # replicas agree (issue 9).
    dep = deployment(caches=[{"name": "weights"}])
    plan = ScheduleResult(
        replicas=(planned("a", 0, retained=True),),
        desired=2,
        missing_caches=("weights",),
        clusters=(ClusterVerdict("b", False, "WaitingForCache", "held"),),
    )
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    required = {**FETCHED, "cache-weights": []}
    sched = Scripted(plan)
    got = md.compose_with(ComposeInput(dep, observed=observed, required=required), sched)
    assert sched.calls[0].caches == {}
    assert sched.calls[0].missing_caches == ("weights",)
    cache_msg = (
        "spec.caches: ModelCache weights not found in namespace team-a; new replicas are held "
        "until it exists, existing ones are kept"
    )
    assert list(got.desired) == ["replica-a-0"]
    # Adding the cache changes the template; the replica keeps running its own until a
    # replacement of the new one can be placed (make-before-break), none while the cache
    # is missing.
    assert got.desired["replica-a-0"].resource == replica("a", 0)
    assert got.conditions == [
        ConditionOut("CacheResolved", "False", "CacheNotFound", cache_msg),
        ConditionOut(
            "Scheduled",
            "False",
            "WaitingForCache",
            "placed 1 of 2 replicas: 1 new replica(s) held until ModelCache weights exists",
        ),
        ConditionOut("ReplicasReady", "False", "ReplicasNotReady", "1 of 2 replicas ready"),
    ]
    assert got.events == [EventOut("Warning", "CacheNotFound", cache_msg)]
    assert got.status["replicas"] == 1
    assert got.status["unschedulable"] == [
        {"cluster": "b", "reason": "WaitingForCache", "message": "held"}
    ]


def test_disaggregated_replica_carries_both_roles() -> None:
    decode_template = {
        "metadata": {"labels": {"tier": "decode"}},
        "spec": {"containers": [{"name": "engine", "image": "vllm"}]},
    }
    dep = deployment(
        replicas=1,
        nodeSelector=None,
        workers=None,
        prefill={"nodeSelector": NODE_SELECTOR, "workers": {"template": TEMPLATE}},
        decode={
            "nodeSelector": NODE_SELECTOR,
            "workers": {"count": 2, "topology": {"tensor": 8}, "template": decode_template},
        },
    )
    dep["spec"] = {k: v for k, v in dep["spec"].items() if v is not None}
    plan = ScheduleResult(
        replicas=(
            PlannedReplica(
                "a",
                0,
                (
                    RoleAssignment("prefill", "l4", (GPU_REQUEST,), 1),
                    RoleAssignment("decode", "h100", (GPU_REQUEST,), 2),
                ),
                retained=False,
                name="chat-a0",
            ),
        ),
        desired=1,
    )
    got = md.compose_with(ComposeInput(dep, required=FETCHED), Scripted(plan))
    expected = replica("a", 0, revision="907521cadf")
    expected["metadata"]["labels"]["tier"] = "decode"
    expected["spec"] = {
        "deploymentName": "chat",
        "clusterName": "a",
        "index": 0,
        "prefill": {"nodePoolName": "l4", "deviceRequests": [GPU_REQUEST_WIRE], "workers": WORKERS},
        "decode": {
            "nodePoolName": "h100",
            "deviceRequests": [GPU_REQUEST_WIRE],
            "workers": {
                "count": 2,
                "topology": {"tensor": 8, "pipeline": 1, "data": 1, "dataLocal": 1},
                "template": decode_template,
            },
        },
    }
    assert got.desired == {"replica-a-0": DesiredResource(expected, "False")}
    assert got.status["placements"] == [
        {
            "cluster": "a",
            "index": 0,
            "replicaName": "chat-a0",
            "pools": [{"role": "prefill", "pool": "l4"}, {"role": "decode", "pool": "h100"}],
            "ready": False,
            "revision": "907521cadf",
        }
    ]


def test_scheduler_failure_is_fatal_not_an_empty_desired_state() -> None:
    got = md.compose_with(
        ComposeInput(deployment(), required=FETCHED), Scripted(RuntimeError("boom"))
    )
    assert got.fatal == "SchedulerError: scheduling team-a/chat failed: boom"


def test_a_plan_inconsistent_with_the_spec_is_fatal() -> None:
    bad = PlannedReplica(
        "a", 0, (RoleAssignment("prefill", "l4", (GPU_REQUEST,), 1),), retained=False, name="x"
    )
    got = md.compose_with(
        ComposeInput(deployment(), required=FETCHED),
        Scripted(ScheduleResult(replicas=(bad,), desired=2)),
    )
    assert got.fatal is not None and got.fatal.startswith("SchedulerError: replica a/0")


def test_replaced_and_withdrawn_replicas_are_reported() -> None:
    from modelplane.scheduling.types import Withdrawal

    plan = ScheduleResult(
        replicas=(planned("a", 0), planned("b", 0)),
        desired=2,
        replaced=(("chat-c0", "cluster c is drained (NoExecute drain=true)"),),
        withdrawn=(Withdrawal("d", 0, "l4", "pool oversubscribed; older replicas keep it"),),
    )
    got = md.compose_with(ComposeInput(deployment(), required=FETCHED), Scripted(plan))
    assert got.events == [
        EventOut(
            "Normal",
            "ReplicaReplaced",
            "chat-c0: cluster c is drained (NoExecute drain=true)",
        ),
        EventOut(
            "Normal",
            "ReplicaWithdrawn",
            "replica d/0 withdrawn from pool l4: pool oversubscribed; older replicas keep it",
        ),
    ]


def test_other_namespaces_replicas_reach_the_scheduler_once() -> None:
    other = observed_replica("a", 0, ready=True)
    other["metadata"].update(name="other-a0", namespace="team-b")
    mine = observed_replica("a", 0, ready=True)
    mine_observed = copy.deepcopy(mine)
    del mine_observed["metadata"]["namespace"]  # namespace defaults to the deployment's
    sched = Scripted(ScheduleResult(replicas=(), desired=0))
    required = {
        "inference-clusters": [],
        "model-replicas": [mine, other],
        "fleet-quotas": [],
        "priority-classes": [],
    }
    md.compose_with(
        ComposeInput(
            deployment(replicas=0), observed={"replica-a-0": mine_observed}, required=required
        ),
        sched,
    )
    names = [(x.namespace, x.name) for x in sched.calls[0].replicas]
    assert names == [("team-a", "chat-a0"), ("team-b", "other-a0")]


@pytest.mark.parametrize(
    ("verdicts", "reason", "why"),
    [
        # Nothing got as far as the pools: not a capacity problem.
        (
            (
                ClusterVerdict("a", False, "NotReady", "cluster is not Ready"),
                ClusterVerdict("b", False, "Tainted", "untolerated taint drain=true:NoExecute"),
                ClusterVerdict("c", False, "NotSelected", "labels do not match clusterSelector"),
            ),
            "NoClusters",
            "no Ready, selected cluster tolerates this deployment: NotReady on a; Tainted on b; "
            "NotSelected on c (see status.unschedulable)",
        ),
        # One cluster was tried and its pools did not fit: capacity it is.
        (
            (
                ClusterVerdict("a", False, "NotReady", "cluster is not Ready"),
                ClusterVerdict("b", False, "NoMatchingPool", "no pool matches spec.nodeSelector"),
            ),
            "InsufficientCapacity",
            "NotReady on a; NoMatchingPool on b (see status.unschedulable)",
        ),
    ],
)
def test_nothing_placed_without_a_usable_cluster_is_no_clusters(
    verdicts: tuple[ClusterVerdict, ...], reason: str, why: str
) -> None:
    plan = ScheduleResult(replicas=(), desired=2, clusters=verdicts)
    got = md.compose_with(ComposeInput(deployment(), required=FETCHED), Scripted(plan))
    message = f"placed 0 of 2 replicas: {why}"
    assert got.conditions[0] == ConditionOut("Scheduled", "False", reason, message)
    assert got.events == [EventOut("Warning", reason, message)]


def test_a_template_the_replica_composer_cannot_stamp_places_nothing_new() -> None:
    decode_template = {
        "spec": {"containers": [{"name": "engine", "image": "vllm"}], "volumes": {"a": 1}},
    }
    unified_template = copy.deepcopy(TEMPLATE)
    unified_template["spec"]["containers"][0]["ports"] = "8000"
    disaggregated = deployment(
        prefill={"nodeSelector": NODE_SELECTOR, "workers": {"template": TEMPLATE}},
        decode={"nodeSelector": NODE_SELECTOR, "workers": {"template": decode_template}},
    )
    del disaggregated["spec"]["nodeSelector"], disaggregated["spec"]["workers"]
    cases = [
        (
            deployment(workers={"template": unified_template}),
            "spec.workers.template.spec.containers[0].ports: must be a list",
        ),
        (disaggregated, "spec.decode.workers.template.spec.volumes: must be a list"),
    ]
    observed = {"replica-a-0": observed_replica("a", 0, ready=True)}
    for dep, field_error in cases:
        got = md.compose_with(ComposeInput(dep, observed=observed, required=FETCHED), NEVER)
        message = f"{field_error} (no new replicas are placed; existing ones are kept)"
        assert got == ComposeResult(
            desired={"replica-a-0": DesiredResource(replica("a", 0))},
            conditions=[ConditionOut("Scheduled", "False", "InvalidSpec", message)],
            events=[EventOut("Warning", "InvalidSpec", message)],
            ready="False",
        )
