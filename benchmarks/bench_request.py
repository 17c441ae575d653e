"""Benchmark: the size of a fleet-wide ModelDeployment request and the time to answer it.

One ModelDeployment of 100 replicas over N InferenceClusters of 8 pools each
(4 InferenceClasses, the fleet of `bench_scheduler.py`) plus N/4 replicas of
other deployments, sent as Crossplane sends them: required resources of one
RunFunctionRequest. Per fleet size it prints

- the request's size in bytes (and per cluster), the gRPC receive limit in MiB
  that holds it, and the response's size;
- `schedule()` alone on the decoded objects, and the whole function inline
  (`FunctionRunner.run`: decode, schedule, compose, encode), each as CPU time
  (what the call costs on a core of its own) and wall time, also per cluster;
- the wall time of the function through the server's worker pool (serialize,
  pipe to a worker process, answer back).

    .venv/bin/python benchmarks/bench_request.py [--clusters 1000 5000] [--repeat 3]

The default `--max-recv-message-size` of `modelplane function serve` is sized
from the 5,000-cluster figure (see modelplane/crossplane/function.py).
`bench_cold.py` measures a worker's first and later call against the SDK's
floor, and a small tenant's wait while two fleet-wide calls run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import time
from collections.abc import Callable
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from bench_scheduler import DEPLOYMENT, cluster, other_replica

from modelplane.compose.deployments.model_deployment import (
    CLUSTERS_REQUIREMENT,
    QUOTAS_REQUIREMENT,
    REPLICAS_REQUIREMENT,
)
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, to_input
from modelplane.crossplane.pool import WorkerPool
from modelplane.crossplane.servicer import run_serialized
from modelplane.scheduling import schedule

MIB = 1024 * 1024
SDK_DEFAULT_MIB = 4


def request(clusters: int) -> fnv1.RunFunctionRequest:
    """The RunFunctionRequest Crossplane sends once the requirements are fetched."""
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.CopyFrom(dict_to_struct(DEPLOYMENT))
    found = req.required_resources[CLUSTERS_REQUIREMENT].items
    for i in range(clusters):
        found.add().resource.CopyFrom(dict_to_struct(cluster(i)))
    others = req.required_resources[REPLICAS_REQUIREMENT].items
    for i in range(clusters // 4):
        others.add().resource.CopyFrom(dict_to_struct(other_replica(i, clusters)))
    req.required_resources[QUOTAS_REQUIREMENT].SetInParent()  # fetched: the namespace has none
    return req


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(min wall time, min CPU time of this process) of `fn` over `repeat` runs, and its result.

    CPU time is what a call costs on a core of its own, whatever else the
    machine runs; wall time is what a caller waits here and now.
    """
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), out


def measure(n: int, repeat: int, pool: WorkerPool | None) -> None:
    """Print the figures for a fleet of `n` clusters."""
    req = request(n)
    size = req.ByteSize()
    inp = to_input(req)
    clusters, replicas = inp.required[CLUSTERS_REQUIREMENT], inp.required[REPLICAS_REQUIREMENT]
    t_sched, c_sched, _ = timed(lambda: schedule(inp.composite, clusters, replicas), repeat)
    runner = FunctionRunner()
    t_fn, c_fn, rsp = timed(lambda: runner.run(req), repeat)
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    print(
        f"{n:5d} clusters × 8 pools: request {size:,} bytes ({size / n:,.0f} per cluster, "
        f"{size / MIB:.1f} MiB, needs --max-recv-message-size ≥ {math.ceil(size / MIB)}); "
        f"response {rsp.ByteSize():,} bytes{'; FATAL ' + fatal[0] if fatal else ''}"
    )
    print(
        f"      schedule CPU {c_sched:5.2f} s ({c_sched / n * 1e3:.2f} ms/cluster), "
        f"wall {t_sched:5.2f} s; function inline CPU {c_fn:5.2f} s "
        f"({c_fn / n * 1e3:.2f} ms/cluster), wall {t_fn:5.2f} s"
    )
    if pool is not None:
        data = req.SerializeToString()
        t_pool, _, _ = timed(lambda: asyncio.run(pool.call(data)), repeat)
        print(
            f"      function through the worker pool: wall {t_pool:5.2f} s "
            f"({t_pool / n * 1e3:.2f} ms/cluster; inline wall {t_fn:5.2f} s)"
        )


def main() -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-pool", action="store_true", help="skip the worker-pool figures")
    args = parser.parse_args()
    pool = None if args.no_pool else WorkerPool(run_serialized, workers=1, deadline=600)
    try:
        for n in args.clusters:
            measure(n, args.repeat, pool)
    finally:
        if pool is not None:
            pool.close()
    per_cluster = request(100).ByteSize() / 100
    print(
        f"the SDK's default {SDK_DEFAULT_MIB} MiB limit holds about "
        f"{int(SDK_DEFAULT_MIB * MIB / per_cluster):,} clusters of this shape"
    )


if __name__ == "__main__":
    main()
