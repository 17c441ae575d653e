"""The Dynamo serving backend: what one replica's DynamoGraphDeployment carries (pool pin,
tolerations, claims, cache, multi-node, disaggregation, scheduler stamping), the route to
Dynamo's frontend, and readiness read from the graph's status.

Expected values are written by hand from the mapping in `backends/dynamo.py`'s
docstring and Dynamo's CRD (`nvidia.com/v1alpha1`), not computed by the code.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from replicas import NAME, cluster, cond, manifest, observed_from, ready_caches, replica

from modelplane.compose.replica.backends import dynamo
from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput, ComposeResult

ABSENT = object()
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
KAI = {
    "schedulerName": "kai-scheduler",
    "defaultLabels": {"kai.scheduler/queue": "{{ .Namespace }}"},
}
ENGINE = {"name": "engine", "image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.7.0"}
REQUEST = {
    "name": "gpu",
    "deviceClassName": "gpu.nvidia.com",
    "count": 1,
    "selectors": [{"cel": "device.driver == 'gpu.nvidia.com'"}],
}


def _workers(count: int = 1, topology: dict[str, int] | None = None, **engine: Any) -> Any:
    out: dict[str, Any] = {
        "count": count,
        "template": {"spec": {"containers": [{**ENGINE, **engine}]}},
    }
    if topology:
        out["topology"] = topology
    return out


def _unified(**spec: Any) -> dict[str, Any]:
    return replica(backend="Dynamo", framework="vllm", workers=_workers(), **spec)


def _disaggregated(**spec: Any) -> dict[str, Any]:
    xr = replica(backend="Dynamo", framework="sglang", **spec)
    for name in ("nodePoolName", "deviceRequests", "workers"):
        xr["spec"].pop(name)
    xr["spec"]["prefill"] = {
        "nodePoolName": "l4",
        "deviceRequests": [REQUEST],
        "workers": _workers(count=2),
    }
    xr["spec"]["decode"] = {
        "nodePoolName": "h100",
        "deviceRequests": [{**REQUEST, "count": 4}],
        "workers": _workers(topology={"tensor": 4}),
    }
    return xr


def _run(xr: dict[str, Any], cl: dict[str, Any] | None = None, **kw: Any) -> ComposeResult:
    cl = cl or cluster()
    if xr["spec"].get("prefill"):
        cl["spec"]["pools"] = [{"name": "l4", "className": "l4"}, {"name": "h100"}]
    required = {
        "cluster": [cl],
        "deployment": _placed(xr),
        **ready_caches(xr),
    }
    return compose(ComposeInput(composite=xr, required=required, **kw))


def _placed(xr: dict[str, Any]) -> list[dict[str, Any]]:
    from replicas import placed_by

    return placed_by(xr)


def _graph(res: ComposeResult) -> dict[str, Any]:
    return manifest(res, "dynamographdeployment")


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return ABSENT
        obj = obj[part]
    return obj


W = ("spec", "services", "Worker")
POD = (*W, "extraPodSpec")
MAIN = (*POD, "mainContainer")

# (case, replica, cluster scheduling, path in the graph, expected) — the mapping, row by row.
MAPPING: list[tuple[str, dict[str, Any], dict[str, Any] | None, tuple[str, ...], Any]] = [
    ("framework", _unified(), None, ("spec", "backendFramework"), "vllm"),
    ("worker is a Dynamo worker", _unified(), None, (*W, "componentType"), "worker"),
    ("unified has no sub-role", _unified(), None, (*W, "subComponentType"), ABSENT),
    ("pool pin", _unified(), None, (*POD, "nodeSelector"), {"modelplane.ai/pool": "l4"}),
    ("GPU toleration", _unified(), None, (*POD, "tolerations"), [GPU_TOLERATION]),
    (
        "engine claims the devices",
        _unified(),
        None,
        (*MAIN, "resources"),
        {"claims": [{"name": "devices"}]},
    ),
    ("no Dynamo GPU count", _unified(), None, (*W, "resources"), ABSENT),
    ("Dynamo names the main container", _unified(), None, (*MAIN, "name"), ABSENT),
    ("engine image", _unified(), None, (*MAIN, "image"), ENGINE["image"]),
    ("Modelplane's probe is taken off", _unified(), None, (*MAIN, "readinessProbe"), ABSENT),
    ("Modelplane's port is taken off", _unified(), None, (*MAIN, "ports"), ABSENT),
    (
        "workers.count",
        replica(backend="Dynamo", framework="vllm", workers=_workers(count=3)),
        None,
        (*W, "replicas"),
        3,
    ),
    ("single node: no multinode", _unified(), None, (*W, "multinode"), ABSENT),
    (
        "multi-node",
        replica(
            backend="Dynamo",
            framework="vllm",
            workers=_workers(topology={"tensor": 8, "pipeline": 2}),
        ),
        None,
        (*W, "multinode"),
        {"nodeCount": 2},
    ),
    (
        "multi-node: no Ray bootstrap",
        replica(backend="Dynamo", framework="vllm", workers=_workers(topology={"pipeline": 2})),
        None,
        (*MAIN, "command"),
        ABSENT,
    ),
    ("one GPU: Dynamo's shared memory", _unified(), None, (*W, "sharedMemory"), ABSENT),
    (
        "tensor 2: Modelplane's /dev/shm, Dynamo's off",
        replica(backend="Dynamo", framework="vllm", workers=_workers(topology={"tensor": 2})),
        None,
        (*W, "sharedMemory"),
        {"disabled": True},
    ),
    ("KAI scheduler name", _unified(), KAI, (*POD, "schedulerName"), "kai-scheduler"),
    (
        "KAI queue label",
        _unified(),
        KAI,
        (*W, "extraPodMetadata", "labels", "kai.scheduler/queue"),
        "team-a",
    ),
    (
        "KAI gang annotation",
        _unified(),
        KAI,
        (*W, "extraPodMetadata", "annotations", "pod-group-name"),
        NAME,
    ),
    ("no KAI: default scheduler", _unified(), None, (*POD, "schedulerName"), ABSENT),
    (
        "pod labels",
        _unified(),
        None,
        (*W, "extraPodMetadata", "labels"),
        {
            "app.kubernetes.io/managed-by": "modelplane",
            "modelplane.ai/deployment": "llama",
            "modelplane.ai/cluster": "east",
            "modelplane.ai/replica-index": "0",
            "modelplane.ai/replica": NAME,
            "modelplane.ai/role": "unified",
        },
    ),
    (
        "the frontend",
        _unified(),
        None,
        ("spec", "services", "Frontend"),
        {
            "componentType": "frontend",
            "replicas": 1,
            "extraPodMetadata": {
                "labels": {
                    "app.kubernetes.io/managed-by": "modelplane",
                    "modelplane.ai/deployment": "llama",
                    "modelplane.ai/cluster": "east",
                    "modelplane.ai/replica-index": "0",
                    "modelplane.ai/replica": NAME,
                    "modelplane.ai/role": "frontend",
                }
            },
            "extraPodSpec": {"mainContainer": {"image": ENGINE["image"]}},
        },
    ),
    (
        "cache volume",
        _unified(caches=[{"name": "llama-cache"}]),
        None,
        (*POD, "volumes"),
        [
            {
                "name": "model-cache",
                "persistentVolumeClaim": {"claimName": "llama-cache", "readOnly": True},
            },
            {"name": "engine-scratch", "emptyDir": {}},
        ],
    ),
    (
        "cache mount",
        _unified(caches=[{"name": "llama-cache"}]),
        None,
        (*MAIN, "volumeMounts"),
        [
            # The folder the cache's Job publishes, as for the native backend.
            {
                "name": "model-cache",
                "mountPath": "/mnt/models",
                "readOnly": True,
                "subPath": "model",
            },
            {"name": "engine-scratch", "mountPath": "/var/cache/modelplane"},
        ],
    ),
    (
        "a vLLM engine naming no model serves the cache",
        _unified(caches=[{"name": "llama-cache"}]),
        None,
        (*MAIN, "args"),
        ["--model=/mnt/models"],
    ),
    ("disaggregated services", _disaggregated(), None, ("spec", "services", "Worker"), ABSENT),
    (
        "prefill worker",
        _disaggregated(),
        None,
        ("spec", "services", "PrefillWorker", "subComponentType"),
        "prefill",
    ),
    (
        "decode worker",
        _disaggregated(),
        None,
        ("spec", "services", "DecodeWorker", "subComponentType"),
        "decode",
    ),
    ("prefill count", _disaggregated(), None, ("spec", "services", "PrefillWorker", "replicas"), 2),
    (
        "prefill pool pin",
        _disaggregated(),
        None,
        ("spec", "services", "PrefillWorker", "extraPodSpec", "nodeSelector"),
        {"modelplane.ai/pool": "l4"},
    ),
    (
        "decode pool pin",
        _disaggregated(),
        None,
        ("spec", "services", "DecodeWorker", "extraPodSpec", "nodeSelector"),
        {"modelplane.ai/pool": "h100"},
    ),
    ("disaggregated framework", _disaggregated(), None, ("spec", "backendFramework"), "sglang"),
]


@pytest.mark.parametrize(
    ("xr", "scheduling", "path", "want"),
    [row[1:] for row in MAPPING],
    ids=[row[0] for row in MAPPING],
)
def test_the_mapping(
    xr: dict[str, Any], scheduling: dict[str, Any] | None, path: tuple[str, ...], want: Any
) -> None:
    res = _run(copy.deepcopy(xr), cluster(scheduling))
    assert res.fatal is None
    assert _at(_graph(res), path) == want


def test_beside_namespace_and_route_the_cluster_gets_the_graph_and_its_claims() -> None:
    res = _run(_unified())
    [claims] = [k for k in res.desired if k.startswith("unified-claims-")]
    assert sorted(res.desired) == sorted(["namespace", "dynamographdeployment", claims, "route"])
    graph = _graph(res)
    assert (graph["apiVersion"], graph["kind"]) == ("nvidia.com/v1alpha1", "DynamoGraphDeployment")
    assert graph["metadata"]["name"] == NAME and graph["metadata"]["namespace"] == "team-a"
    assert sorted(graph["spec"]["services"]) == ["Frontend", "Worker"]
    # The pod claims exactly the template composed beside the graph.
    template = manifest(res, claims)
    assert template["kind"] == "ResourceClaimTemplate"
    assert _at(graph, (*POD, "resourceClaims")) == [
        {"name": "devices", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {
            "name": "gpu",
            "exactly": {
                "deviceClassName": "gpu.nvidia.com",
                "allocationMode": "ExactCount",
                "count": 1,
                "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            },
        }
    ]


def test_a_disaggregated_replica_gives_each_role_its_own_claims_and_one_frontend() -> None:
    res = _run(_disaggregated())
    graph = _graph(res)
    assert sorted(graph["spec"]["services"]) == ["DecodeWorker", "Frontend", "PrefillWorker"]
    # Dynamo's frontend routes prefill → decode: no InferencePool, no picker.
    kinds = sorted(manifest(res, k)["kind"] for k in res.desired)
    assert kinds == [
        "DynamoGraphDeployment",
        "HTTPRoute",
        "Namespace",
        "ResourceClaimTemplate",
        "ResourceClaimTemplate",
    ]
    for role, service in (("prefill", "PrefillWorker"), ("decode", "DecodeWorker")):
        [key] = [k for k in res.desired if k.startswith(f"{role}-claims-")]
        name = manifest(res, key)["metadata"]["name"]
        assert name.startswith(f"{NAME}-{role}-")
        pod = graph["spec"]["services"][service]["extraPodSpec"]
        assert pod["resourceClaims"] == [{"name": "devices", "resourceClaimTemplateName": name}]
        assert pod["tolerations"] == [GPU_TOLERATION]
    counts = [
        r["exactly"]["count"]
        for k in res.desired
        if "-claims-" in k
        for r in manifest(res, k)["spec"]["spec"]["devices"]["requests"]
    ]
    assert sorted(counts) == [1, 4]


def test_the_route_enters_dynamos_frontend_service() -> None:
    for xr in (_unified(), _disaggregated()):
        res = _run(xr)
        refs = manifest(res, "route")["spec"]["rules"][0]["backendRefs"]
        assert refs == [{"name": f"{NAME}-frontend", "port": 8000}]


def test_the_kai_gang_counts_every_worker_pod_not_the_frontend() -> None:
    xr = _disaggregated()
    xr["spec"]["decode"]["workers"] = _workers(topology={"tensor": 8, "pipeline": 2})
    res = _run(xr, cluster(KAI))
    # prefill 2 × 1 node + decode 1 × 2 nodes; the frontend holds no device.
    assert manifest(res, "podgroup")["spec"]["minMember"] == 4
    frontend = _graph(res)["spec"]["services"]["Frontend"]
    assert "annotations" not in frontend["extraPodMetadata"]


def test_a_sidecar_stays_beside_dynamos_main_container() -> None:
    sidecar = {"name": "log-shipper", "image": "busybox:1.37"}
    xr = _unified()
    xr["spec"]["workers"]["template"]["spec"]["containers"].append(sidecar)
    pod = _at(_graph(_run(xr)), POD)
    assert pod["containers"] == [sidecar]


def test_a_replica_without_a_framework_is_refused_naming_the_field() -> None:
    xr = _unified()
    del xr["spec"]["framework"]
    res = _run(xr)
    status, reason, message = cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert "spec.framework" in message and "vllm, sglang, trtllm" in message
    assert "dynamographdeployment" not in res.desired


# --- readiness ---------------------------------------------------------------------------

READY_TRUE = {"type": "Ready", "status": "True", "reason": "AllReady", "message": ""}
# (case, the graph's status, Ready?, does the CEL query evaluate without error?)
READINESS: list[tuple[str, Any, bool, bool]] = [
    ("Ready and successful", {"state": "successful", "conditions": [READY_TRUE]}, True, True),
    ("Ready, no state reported", {"conditions": [READY_TRUE]}, True, True),
    ("Ready but still pending", {"state": "pending", "conditions": [READY_TRUE]}, False, True),
    ("failed", {"state": "failed", "conditions": [{**READY_TRUE, "status": "False"}]}, False, True),
    (
        "Ready False",
        {"state": "successful", "conditions": [{**READY_TRUE, "status": "False"}]},
        False,
        True,
    ),
    ("Ready Unknown", {"conditions": [{**READY_TRUE, "status": "Unknown"}]}, False, True),
    ("another condition only", {"conditions": [{**READY_TRUE, "type": "Available"}]}, False, True),
    ("no conditions", {"state": "successful"}, False, True),
    ("no status", None, False, True),
    ("status not an object", "Ready", False, False),
    ("conditions not a list", {"state": "successful", "conditions": "Ready"}, False, False),
    ("state not a string", {"state": 1, "conditions": [READY_TRUE]}, False, False),
    ("state null", {"state": None, "conditions": [READY_TRUE]}, False, False),
]


@pytest.mark.parametrize(
    ("status", "ready", "evaluates"), [r[1:] for r in READINESS], ids=[r[0] for r in READINESS]
)
def test_readiness_reads_the_graphs_status(status: Any, ready: bool, evaluates: bool) -> None:
    graph: dict[str, Any] = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment"}
    if status is not None:
        graph["status"] = status
    assert dynamo.graph_ready(graph) is ready
    # The Object Crossplane reads: the wrapped graph decides, even if the Object says Ready.
    observed = {
        "status": {
            "atProvider": {"manifest": graph},
            "conditions": [{"type": "Ready", "status": "True"}],
        }
    }
    assert dynamo.READY.reads(observed) is ready
    # provider-kubernetes evaluates the Object's CEL query on the cluster: the same verdict,
    # or an evaluation error (which it reports as not ready) for a malformed status.
    from cel_expr_python import cel
    from google.protobuf import descriptor_pool

    env = cel.NewEnv(descriptor_pool.Default(), variables={"object": cel.Type.DYN})
    query = env.compile(dynamo.READY.wire()["celQuery"])
    try:
        verdict = query.eval(env.Activation({"object": graph})).value()
    except Exception:  # the CEL library raises its own error types
        verdict = "error"
    if evaluates:
        assert verdict is ready
    else:
        assert verdict is not True


def test_before_the_provider_reports_the_graph_its_objects_ready_condition_decides() -> None:
    for object_ready, want in (("True", True), ("False", False)):
        observed = {"status": {"conditions": [{"type": "Ready", "status": object_ready}]}}
        assert dynamo.READY.reads(observed) is want


def test_the_replica_is_ready_once_the_graph_is() -> None:
    east = cluster(gatewayAddress="http://east.example.com")
    first = _run(_unified(), east)
    observed: dict[str, Any] = observed_from(first, available=None)
    graph = observed["dynamographdeployment"]["status"]["atProvider"]["manifest"]
    graph["status"] = {"state": "pending", "conditions": [{**READY_TRUE, "status": "False"}]}
    res = _run(_unified(), east, observed=observed)
    assert res.desired["dynamographdeployment"].ready == "False" and res.ready == "False"
    assert cond(res, "WorkloadReady")[:2] == ("False", "WorkloadNotAvailable")
    graph["status"] = {"state": "successful", "conditions": [READY_TRUE]}
    res = _run(_unified(), east, observed=observed)
    assert res.desired["dynamographdeployment"].ready == "True" and res.ready == "True"
    assert cond(res, "WorkloadReady")[:2] == ("True", "Available")
    assert res.status["endpoint"] == "http://east.example.com/team-a/llama/0"
    # The Object declares the rule, so a held replica reads it back the same way.
    declared = observed["dynamographdeployment"]["spec"]["readiness"]
    assert declared == dynamo.READY.wire()


def test_every_graph_validates_against_dynamos_crd(oracle: Any) -> None:
    shapes = [
        _unified(),
        _unified(caches=[{"name": "llama-cache"}]),
        replica(
            backend="Dynamo",
            framework="trtllm",
            workers=_workers(topology={"tensor": 8, "pipeline": 2}),
        ),
        _disaggregated(),
    ]
    for xr in shapes:
        res = _run(xr, cluster(KAI))
        for key, desired in res.desired.items():
            issues = oracle.validate(desired.resource)
            assert not issues, f"{key}: {[(i.path, i.message) for i in issues]}"


def test_the_oracle_rejects_a_graph_dynamo_would_refuse(oracle: Any) -> None:
    # Guards the conformance test above against passing vacuously.
    res = _run(_unified())
    obj = copy.deepcopy(res.desired["dynamographdeployment"].resource)
    obj["spec"]["forProvider"]["manifest"]["spec"]["backendFramework"] = "llamacpp"
    assert oracle.validate(obj)
    obj = copy.deepcopy(res.desired["dynamographdeployment"].resource)
    obj["spec"]["forProvider"]["manifest"]["spec"]["services"]["Worker"]["multinode"] = {
        "nodeCount": 1  # Dynamo's minimum is 2
    }
    assert oracle.validate(obj)
