"""Entry point of the composition-function server (`modelplane function serve`).

The server itself is the SDK's (`crossplane.function.cli.run`): the same gRPC
runtime, mTLS loading, message-size options and logging as every function
built from Crossplane's function template. Modelplane adds only what the SDK
has no notion of: a pool of worker processes with a per-call deadline.
"""

from __future__ import annotations

import importlib.metadata
import math
import os
from pathlib import Path
from typing import cast

import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
from crossplane.function import cli as sdkcli
from crossplane.function import logging

from modelplane import __version__
from modelplane.crossplane.pool import WorkerPool
from modelplane.crossplane.servicer import FunctionRunner, run_serialized, utc_now
from modelplane.crossplane.warmup import warm_up

DEFAULT_ADDRESS = sdkcli.DEFAULT_ADDRESS

DEFAULT_MAX_MESSAGE_MB = 64
"""Default gRPC message limit in MiB (both directions).

Sized from `benchmarks/bench_request.py`: a ModelDeployment request over 5,000
InferenceClusters of 8 pools each (plus 1,250 other replicas) is about 23 MiB,
so 64 MiB leaves room for clusters that publish more devices, labels and
conditions. The SDK's own default, 4 MiB, rejects about 870 such clusters.
"""

DEFAULT_DEADLINE_SECONDS = 8.0
"""Per-call deadline. Crossplane's function runner gives a call 10 s; answering
with a fatal result before then tells the operator which composite overran,
where a timeout on Crossplane's side would only say the call failed."""

WORKER_MEMORY_BYTES = 512 * 1024 * 1024
"""Memory to budget per worker process: a 5,000-cluster call peaks near it."""

CGROUP = Path("/sys/fs/cgroup")
"""Where a container's cgroup v2 limits are read (its CPU quota and memory limit)."""


def available_cpus(cgroup: Path = CGROUP) -> int:
    """CPUs this process may use: those it may run on, fewer when its cgroup's quota says so."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13: affinity-aware
    if count is not None:
        cpus = count() or 1
    elif hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpus(cgroup / "cpu.max")
    return max(1, min(cpus, quota) if quota is not None else cpus)


def default_workers(cgroup: Path = CGROUP) -> int:
    """Worker processes when `--workers` is not given: one per available CPU, at least two.

    At least two, so one slow call never holds up the next even on one CPU
    (the operating system shares it); no more than the container's memory
    limit holds at `WORKER_MEMORY_BYTES` each, since a container without a
    CPU limit sees every CPU of its node.
    """
    workers = max(2, available_cpus(cgroup))
    memory = _cgroup_number(cgroup / "memory.max")
    if memory is not None:
        workers = min(workers, max(2, memory // WORKER_MEMORY_BYTES))
    return workers


def _cgroup_cpus(path: Path) -> int | None:
    # cpu.max is "<quota> <period>" in microseconds, or "max <period>".
    try:
        fields = path.read_text().split()
    except OSError:
        return None
    if len(fields) != 2 or not fields[0].isdigit() or not fields[1].isdigit():
        return None
    quota, period = int(fields[0]), int(fields[1])
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def _cgroup_number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def serve(
    address: str = DEFAULT_ADDRESS,
    *,
    insecure: bool = False,
    tls_certs_dir: str | None = None,
    debug: bool = False,
    max_recv_message_mb: int = DEFAULT_MAX_MESSAGE_MB,
    max_send_message_mb: int | None = None,
    workers: int | None = None,
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
    metrics_port: int = 0,
    metrics_address: str | None = None,
) -> None:
    """Serve RunFunction over gRPC until terminated (mTLS unless `insecure`).

    `workers` defaults to `default_workers()`. With `metrics_port`, Prometheus
    metrics are served there too (mutual TLS with the server's certificates;
    loopback when `insecure`).
    """
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    workers = default_workers() if workers is None else workers
    send_mb = max_recv_message_mb if max_send_message_mb is None else max_send_message_mb
    pool = WorkerPool(
        run_serialized, workers=workers, deadline=deadline_seconds, debug=debug, warmup=warm_up
    )
    metrics = None
    if metrics_port:
        from modelplane.crossplane.metrics import FunctionMetrics, serve_metrics

        metrics = FunctionMetrics()
        certs = None if insecure else tls_certs_dir
        serve_metrics(metrics, metrics_port, metrics_address, certs)
    logging.get_logger().info(
        "function-modelplane serving RunFunction",
        address=address,
        transport="insecure" if insecure else f"mTLS ({tls_certs_dir})",
        version=__version__,
        sdk_version=importlib.metadata.version("crossplane-function-sdk-python"),
        max_recv_message_mb=max_recv_message_mb,
        max_send_message_mb=send_mb,
        workers=workers,
        deadline_seconds=deadline_seconds,
        metrics_port=metrics_port or None,
    )
    try:
        sdkcli.run(
            # The runner has the servicer's one method; gRPC needs no more.
            cast(
                grpcv1.FunctionRunnerServiceServicer,
                FunctionRunner(pool=pool, metrics=metrics, clock=utc_now, record_once=True),
            ),
            debug=debug,
            address=address,
            # The SDK would add a TLS port and an insecure one on the same
            # address; --insecure means the certificates are ignored.
            tls_certs_dir=None if insecure else tls_certs_dir,
            insecure=insecure,
            max_recv_message_size=max_recv_message_mb,
            max_send_message_size=send_mb,
        )
    finally:
        pool.close()
