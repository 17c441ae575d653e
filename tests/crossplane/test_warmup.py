"""A worker warms up before its first call: the synthetic call takes the whole fleet path."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.crossplane import FunctionRunner, warmup
from modelplane.crossplane.convert import struct_to_dict
from modelplane.crossplane.pool import WorkerPool

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads  # the worker processes import it by this name


def test_the_synthetic_call_schedules_and_composes_every_replica() -> None:
    rsp = FunctionRunner(log_errors=False).run(warmup.request())
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    scheduled = {c.type: c for c in rsp.conditions}["Scheduled"]
    assert scheduled.status == fnv1.STATUS_CONDITION_TRUE
    replicas = [struct_to_dict(r.resource) for r in rsp.desired.resources.values()]
    assert sorted(r["kind"] for r in replicas) == ["ModelReplica"] * 3
    # The CEL selectors were compiled and evaluated: they reach the replicas.
    selectors = replicas[0]["spec"]["deviceRequests"][0]["selectors"]
    assert [s["cel"] for s in selectors] == [s["cel"] for s in warmup._SELECTORS]


def test_a_worker_is_warm_and_has_forgotten_the_warm_up_when_it_takes_its_first_call() -> None:
    pool = WorkerPool(workloads.state, workers=1, deadline=60, warmup=warmup.warm_up)
    cold = WorkerPool(workloads.state, workers=1, deadline=60)
    try:
        warm_state = json.loads(asyncio.run(pool.call(b"")))
        cold_state = json.loads(asyncio.run(cold.call(b"")))
    finally:
        pool.close()
        cold.close()
    # It decoded the synthetic objects (misses), then dropped them.
    assert warm_state["cached"] == 0 and warm_state["misses"] > 0
    assert warm_state["frozen"] > 0
    assert cold_state == {"cached": 0, "misses": 0, "frozen": 0}
