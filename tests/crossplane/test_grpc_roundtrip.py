"""Start `modelplane function serve` for real and call RunFunction over gRPC."""

from __future__ import annotations

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

from modelplane.crossplane.convert import dict_to_struct, struct_to_dict


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FunctionRunnerServiceStub]:
    address = f"127.0.0.1:{_free_port()}"
    log = tmp_path_factory.mktemp("fn") / "server.log"
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
