"""Start `modelplane function serve` for real and call RunFunction over gRPC."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import grpc
import pytest
from crossplane.function.proto.v1.run_function_pb2_grpc import FunctionRunnerServiceStub

from modelplane import __version__
from modelplane.api import constants as c
from modelplane.compose.deployments.model_deployment import (
    CLUSTERS_REQUIREMENT,
    PRIORITIES_REQUIREMENT,
    QUOTAS_REQUIREMENT,
    REPLICAS_REQUIREMENT,
)
from modelplane.crossplane.convert import dict_to_struct, struct_to_dict


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def address() -> str:
    return f"127.0.0.1:{_free_port()}"


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fn") / "server.log"


@pytest.fixture(scope="module")
def stub(address: str, log: Path) -> Iterator[FunctionRunnerServiceStub]:
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from modelplane.cli.main import main; main()",
                "function",
                "serve",
                "--insecure",
                "--address",
                address,
                # The message-size defaults are under test, not the deadline: a
                # 2,000-cluster call on a loaded 2-core machine may pass 8 s.
                "--deadline-seconds",
                "120",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    channel = grpc.insecure_channel(address)
    try:
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
        except grpc.FutureTimeoutError:
            pytest.fail(f"function server did not start:\n{Path(log).read_text()}")
        yield FunctionRunnerServiceStub(channel)
    finally:
        channel.close()
        proc.terminate()
        proc.wait(timeout=30)


def test_unknown_kind_over_grpc(stub: FunctionRunnerServiceStub) -> None:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="rt"))
    req.observed.composite.resource.CopyFrom(
        dict_to_struct(
            {"apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g"}}
        )
    )
    rsp = stub.RunFunction(req, timeout=30)
    assert rsp.meta.tag == "rt"
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]
    assert "example.org/v1" in rsp.results[0].message and "Gadget" in rsp.results[0].message


def test_inference_class_over_grpc(stub: FunctionRunnerServiceStub) -> None:
    klass = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": "l4-1x"},
        "spec": {
            "devices": [
                {
                    "name": "gpu",
                    "claim": "DRA",
                    "driver": "gpu.nvidia.com",
                    "deviceClassName": "gpu.nvidia.com",
                    "count": 1,
                }
            ]
        },
    }
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="class"))
    req.observed.composite.resource.CopyFrom(dict_to_struct(klass))
    rsp = stub.RunFunction(req, timeout=30)
    assert [r.severity for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    assert rsp.desired.composite.ready == fnv1.READY_TRUE
    assert struct_to_dict(rsp.desired.composite.resource) == {"status": {"draDevices": 1}}
    assert [(x.type, x.status, x.reason) for x in rsp.conditions] == [
        ("Valid", fnv1.STATUS_CONDITION_TRUE, "Valid")
    ]
    assert dict(rsp.desired.resources) == {}


def test_one_start_up_line_names_address_transport_version_and_limits(
    stub: FunctionRunnerServiceStub, address: str, log: Path
) -> None:
    first = json.loads(log.read_text().splitlines()[0])
    assert first["msg"] == "function-modelplane serving RunFunction"
    assert first["address"] == address and first["transport"] == "insecure"
    assert first["version"] == __version__ and first["sdk_version"] == "0.15.1"
    assert (first["max_recv_message_mb"], first["max_send_message_mb"]) == (64, 64)
    assert first["level"] == "info"


GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}
CLASS_DEVICES = {
    "h100-8x": [
        {**GPU, "count": 8, "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}}},
        {"name": "fabric", "claim": "Synthetic", "driver": "fabric.modelplane.ai",
         "attributes": {"type": {"string": "InfiniBand"}}},
    ],
    "a100-4x": [{**GPU, "count": 4, "capacity": {"memory": {"value": "40Gi"}}}],
    "l40s-2x": [{**GPU, "count": 2, "attributes": {"architecture": {"string": "Ada"}}}],
    "l4-1x": [{**GPU, "count": 1, "capacity": {"memory": {"value": "23034Mi"}}}],
}  # fmt: skip


def fleet_request(clusters: int) -> fnv1.RunFunctionRequest:
    """A ModelDeployment over `clusters` InferenceClusters of 8 pools, as Crossplane sends it."""
    pools = [
        {"name": f"{klass}-{j}", "className": klass, "nodes": 2, "devices": devices}
        for klass, devices in CLASS_DEVICES.items()
        for j in range(2)
    ]
    template = dict_to_struct(
        {
            "apiVersion": c.API_VERSION,
            "kind": "InferenceCluster",
            "metadata": {"name": "", "labels": {"region": "eu-west-1", "tier": "premium"}},
            "spec": {"source": "Existing", "pools": [
                {"name": p["name"], "className": p["className"], "nodeCount": 2} for p in pools
            ]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "gpuPools": pools},
        }
    )  # fmt: skip
    gpu = {"name": "gpu", "count": 4, "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}]}
    engine = {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}}
    deployment = {
        "apiVersion": c.API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": "llama", "namespace": "team-a", "uid": "u-1"},
        "spec": {
            "replicas": 40,
            "clusterSelector": {"matchLabels": {"region": "eu-west-1"}},
            "nodeSelector": {"devices": [gpu]},
            "workers": {"count": 1, "template": engine},
        },
    }
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="fleet"))
    req.observed.composite.resource.CopyFrom(dict_to_struct(deployment))
    items = req.required_resources[CLUSTERS_REQUIREMENT].items
    for i in range(clusters):
        # Copying one message and renaming it is fast; building 2,000 is not.
        item = items.add().resource
        item.CopyFrom(template)
        item.fields["metadata"].struct_value.fields["name"].string_value = f"cluster-{i:04d}"
    req.required_resources[REPLICAS_REQUIREMENT].SetInParent()
    req.required_resources[QUOTAS_REQUIREMENT].SetInParent()
    req.required_resources[PRIORITIES_REQUIREMENT].SetInParent()
    return req


def test_a_model_deployment_over_2000_clusters_is_served(stub: FunctionRunnerServiceStub) -> None:
    req = fleet_request(2000)
    # Larger than the SDK's default limit (4 MiB): only the raised default lets it in.
    assert req.ByteSize() > 4 * 1024 * 1024
    rsp = stub.RunFunction(req, timeout=60)
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    assert ("Scheduled", fnv1.STATUS_CONDITION_TRUE) in [(x.type, x.status) for x in rsp.conditions]
    status = struct_to_dict(rsp.desired.composite.resource)["status"]
    placed = {p["cluster"] for p in status["placements"]}
    # One replica per cluster while clusters are free: spread first (SPEC §3.6).
    assert len(status["placements"]) == 40 and len(placed) == 40
    assert len(rsp.desired.resources) == 40
