"""Composers run in worker processes: no call holds up another, each has a deadline.

The pool is driven through a real gRPC server (grpc.aio, in this process) whose
event loop also carries the client, so a blocked loop would block the test.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
import grpc
import pytest

from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, struct_to_dict
from modelplane.crossplane.pool import WorkerPool
from modelplane.crossplane.servicer import tenant_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads  # the worker processes import it by this name

T = TypeVar("T")
Stub = grpcv1.FunctionRunnerServiceStub


def composite(kind: str, name: str, namespace: str | None = None, **annotations: str) -> Any:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = annotations
    obj: dict[str, Any] = {"apiVersion": "modelplane.ai/v1alpha1", "kind": kind}
    obj["metadata"] = metadata
    if kind == "InferenceClass":
        obj["spec"] = {
            "devices": [
                {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}
            ]
        }
    return obj


def request(obj: dict[str, Any], tag: str, **desired: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    req.observed.composite.resource.CopyFrom(dict_to_struct(obj))
    for name, resource in desired.items():
        req.desired.resources[name].resource.CopyFrom(dict_to_struct(resource))
    return req


def fatal(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


def serve(pool: WorkerPool, scenario: Callable[[Stub], Awaitable[T]]) -> T:
    """Run `scenario` against a gRPC server whose runner uses `pool`."""

    async def main() -> T:
        server = grpc.aio.server()
        grpcv1.add_FunctionRunnerServiceServicer_to_server(FunctionRunner(pool=pool), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await scenario(Stub(channel))
        finally:
            await server.stop(None)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    p = WorkerPool(workloads.handle, workers=2, deadline=120)
    yield p
    p.close()


def test_a_slow_call_does_not_hold_up_a_normal_one_sent_after_it(
    pool: WorkerPool, tmp_path: Path
) -> None:
    # The slow call holds the GIL of its worker until the marker exists, and the
    # marker is written only once the normal call has answered: if the normal
    # call waited behind the slow one, neither would ever answer before the
    # slow call's own give-up, and the order below would be reversed.
    marker = tmp_path / "release"
    slow = composite("InferenceClass", "slow-h100", **{workloads.MARKER: str(marker)})
    normal = composite("InferenceClass", "l4-1x")
    finished: list[str] = []

    async def scenario(stub: Stub) -> tuple[Any, Any]:
        async def call(obj: dict[str, Any], after: float) -> Any:
            await asyncio.sleep(after)
            rsp = await stub.RunFunction(request(obj, obj["metadata"]["name"]), timeout=90)
            finished.append(rsp.meta.tag)
            return rsp

        slow_call = asyncio.create_task(call(slow, 0))
        normal_rsp = await call(normal, 0.3)
        assert not slow_call.done()
        marker.touch()
        return normal_rsp, await slow_call

    normal_rsp, slow_rsp = serve(pool, scenario)
    assert finished == ["l4-1x", "slow-h100"]
    for rsp in (normal_rsp, slow_rsp):
        assert fatal(rsp) == []
        assert struct_to_dict(rsp.desired.composite.resource) == {"status": {"draDevices": 1}}


def test_a_call_past_its_deadline_is_fatal_naming_the_composite_and_keeps_everything() -> None:
    pool = WorkerPool(workloads.handle, workers=1, deadline=1.0)
    kept = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-an-earlier-step"}}
    hang = request(composite("ModelDeployment", "hang-llama", "team-a"), "hang", prior=kept)
    after = request(composite("InferenceClass", "l4-1x"), "after")

    async def scenario(stub: Stub) -> tuple[Any, Any]:
        return await stub.RunFunction(hang, timeout=60), await stub.RunFunction(after, timeout=60)

    try:
        hung, next_rsp = serve(pool, scenario)
    finally:
        pool.close()
    assert hung.meta.tag == "hang"
    [message] = fatal(hung)
    assert "ModelDeployment team-a/hang-llama" in message
    assert "did not finish within 1s" in message and "--deadline-seconds" in message
    # No desired state of ours: only what earlier pipeline steps desired.
    assert list(hung.desired.resources) == ["prior"]
    assert not hung.conditions and not hung.requirements.resources
    assert not hung.desired.composite.HasField("resource")
    # The overrunning worker was replaced: the next call is served.
    assert fatal(next_rsp) == [] and next_rsp.meta.tag == "after"


def test_a_worker_that_dies_is_a_fatal_result_and_is_replaced(pool: WorkerPool) -> None:
    crash = request(composite("InferenceCluster", "crash-eu-west"), "crash")
    after = request(composite("InferenceClass", "l4-1x"), "after")

    async def scenario(stub: Stub) -> list[Any]:
        return [await stub.RunFunction(r, timeout=60) for r in (crash, after, after)]

    crashed, *rest = serve(pool, scenario)
    [message] = fatal(crashed)
    assert "InferenceCluster crash-eu-west" in message and "worker process died" in message
    assert [fatal(r) for r in rest] == [[], []]


def test_pool_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(workloads.handle, workers=0)
    with pytest.raises(ValueError, match="positive"):
        WorkerPool(workloads.handle, deadline=0)


def test_two_big_calls_of_one_tenant_leave_a_worker_to_a_small_tenant(tmp_path: Path) -> None:
    # Both big calls hold their worker's GIL until the marker exists, and the
    # marker is written only once the small call has answered: first come,
    # first served would give the two big calls both workers, and the small
    # call would answer only after the big calls' own give-up, last.
    pool = WorkerPool(workloads.handle, workers=2, deadline=120, big_call_bytes=64 * 1024)
    marker = tmp_path / "release"
    padding = "x" * (100 * 1024)
    bigs = [
        composite("ModelDeployment", f"slow-{i}", "team-a", **{workloads.MARKER: str(marker)})
        for i in (1, 2)
    ]
    for obj in bigs:
        obj["metadata"]["annotations"]["padding"] = padding
    small = composite("InferenceClass", "l4-1x")
    finished: list[str] = []

    async def scenario(stub: Stub) -> Any:
        async def call(obj: dict[str, Any], after: float) -> Any:
            await asyncio.sleep(after)
            rsp = await stub.RunFunction(request(obj, obj["metadata"]["name"]), timeout=90)
            finished.append(rsp.meta.tag)
            return rsp

        big_calls = [asyncio.create_task(call(obj, 0)) for obj in bigs]
        small_rsp = await call(small, 0.3)
        assert not any(task.done() for task in big_calls)
        marker.touch()
        await asyncio.gather(*big_calls)
        return small_rsp

    try:
        small_rsp = serve(pool, scenario)
    finally:
        pool.close()
    assert finished[0] == "l4-1x" and sorted(finished[1:]) == ["slow-1", "slow-2"]
    assert fatal(small_rsp) == []


@pytest.mark.parametrize(
    ("metadata", "tenant"),
    [
        ({"name": "llama", "namespace": "team-a"}, "team-a"),
        ({"name": "eu-west"}, "eu-west"),
        ({"name": "eu-west", "namespace": ""}, "eu-west"),
        ({"namespace": 3}, ""),
        ({}, ""),
        (None, ""),
    ],
)
def test_the_tenant_is_the_namespace_or_the_name_of_a_cluster_scoped_composite(
    metadata: dict[str, Any] | None, tenant: str
) -> None:
    obj: dict[str, Any] = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelDeployment"}
    if metadata is not None:
        obj["metadata"] = metadata
    assert tenant_of(request(obj, "t")) == tenant
    assert tenant_of(fnv1.RunFunctionRequest()) == ""


def test_a_call_that_gives_up_while_waiting_leaves_the_pool_serving() -> None:
    pool = WorkerPool(workloads.state, workers=1, deadline=60)

    async def scenario() -> bytes:
        first = pool._fair.arrive("team-a", big=False)
        worker = await pool._acquire(first)  # holds the only worker
        waiting = asyncio.create_task(pool.call(b"", "team-b"))
        await asyncio.sleep(0.05)
        assert not waiting.done() and len(pool._fair.waiting) == 1
        waiting.cancel()
        # The worker frees in the same instant, before the cancelled call has
        # left the queue: it must go to the next call, not to the cancelled one.
        pool._release(first, worker)
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert pool._fair.waiting == [] and pool._fair.running == []
        return await pool.call(b"", "team-c")

    try:
        answer = asyncio.run(scenario())
    finally:
        pool.close()
    assert b"cached" in answer
