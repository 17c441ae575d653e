"""Benchmark: a function worker's first and later fleet-wide call against the SDK's floor.

The request of `bench_request.py` (one ModelDeployment of 100 replicas over N
InferenceClusters of 8 pools, plus N/4 replicas of other deployments), every
object with a uid and a resourceVersion as Crossplane sends them. In one run:

- the SDK's floor: parsing the serialized request and decoding the composite
  and every required object with the SDK's `struct_to_dict` (what any Python
  function built on the SDK does before its own work), CPU time;
- the call in a fresh worker process of the server's `WorkerPool` (started
  and warmed up as `modelplane function serve` starts them): its first call
  (cold: nothing of the fleet decoded yet) and its second (warm: the same
  object versions), CPU time in the worker and wall time through the pool,
  each against the floor;
- a small tenant's wait: two cold N-cluster calls of one tenant sent to a
  pool of two workers, then a small call of another tenant (a ModelDeployment
  over two clusters); its wall time beyond the same call alone, with the
  fairness rule and without it (every call treated as small: first come,
  first served, the pool before the rule).

Medians over `--repeat` runs (a fresh pool per run for the cold figures).

    .venv/bin/python benchmarks/bench_cold.py [--clusters 5000] [--repeat 5]

Targets: first call ≤ 3× the floor, warm ≤ 1.5×; a small call never waits
behind more than one big one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import struct
import time

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from bench_decode import versioned
from bench_request import request
from crossplane.function.resource import struct_to_dict as sdk_struct_to_dict

from modelplane.crossplane import warmup
from modelplane.crossplane.function import default_workers
from modelplane.crossplane.pool import WorkerPool
from modelplane.crossplane.servicer import run_serialized, tenant_of

MIB = 1024 * 1024
_CPU = struct.Struct("!d")


def timed_run(data: bytes) -> bytes:
    """What the measured workers run: the function, with its CPU time in front of the answer."""
    started = time.process_time()
    answer = run_serialized(data)
    return _CPU.pack(time.process_time() - started) + answer


def answered(reply: bytes) -> tuple[float, fnv1.RunFunctionResponse]:
    """(worker CPU seconds, response) of a `timed_run` reply."""
    return _CPU.unpack_from(reply)[0], fnv1.RunFunctionResponse.FromString(reply[_CPU.size :])


def sdk_floor(data: bytes) -> float:
    """CPU seconds to parse `data` and decode its objects with the SDK's `struct_to_dict`."""
    gc.collect()
    started = time.process_time()
    req = fnv1.RunFunctionRequest.FromString(data)
    decoded = {
        "composite": sdk_struct_to_dict(req.observed.composite.resource),
        "required": {
            name: [sdk_struct_to_dict(item.resource) for item in found.items]
            for name, found in req.required_resources.items()
        },
    }
    elapsed = time.process_time() - started
    del decoded, req
    return elapsed


def pool(workers: int, fair: bool = True) -> WorkerPool:
    """A pool started as `function serve` starts it; without `fair`, no call counts as big."""
    return WorkerPool(
        timed_run,
        workers=workers,
        deadline=600,
        warmup=warmup.warm_up,
        **({} if fair else {"big_call_bytes": 1 << 62}),
    )


def first_and_second(data: bytes, tenant: str) -> tuple[float, float, float, float]:
    """(cold CPU, cold wall, warm CPU, warm wall) of two calls to a fresh worker."""
    p = pool(1)
    try:
        out = []
        for _ in range(2):
            started = time.perf_counter()
            cpu, rsp = answered(asyncio.run(p.call(data, tenant)))
            out += [cpu, time.perf_counter() - started]
            fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
            assert not fatal and len(rsp.desired.resources) == 100, fatal
    finally:
        p.close()
    return out[0], out[1], out[2], out[3]


async def _small_during_two_bigs(p: WorkerPool, big: bytes, small: bytes) -> tuple[float, float]:
    bigs = [asyncio.create_task(p.call(big, "team-a")) for _ in range(2)]
    await asyncio.sleep(0.3)  # both big calls are with the pool before the small one comes
    started = time.perf_counter()
    await p.call(small, "warm-up")
    during = time.perf_counter() - started
    busy = not all(t.done() for t in bigs)
    await asyncio.gather(*bigs)
    started = time.perf_counter()
    await p.call(small, "warm-up")
    alone = time.perf_counter() - started
    assert busy, "the big calls ended before the small one was answered: use more clusters"
    return during, alone


def small_wait(big: bytes, small: bytes, fair: bool) -> tuple[float, float]:
    """(wall time of the small call while two big calls run, wall time of it alone)."""
    p = pool(2, fair)
    try:
        return asyncio.run(_small_during_two_bigs(p, big, small))
    finally:
        p.close()


def measure(n: int, repeat: int) -> None:
    """Print the cold and warm call against the floor, and the small tenant's wait, at `n`."""
    req = versioned(request(n))
    data = req.SerializeToString()
    tenant = tenant_of(req)
    del req
    floor = statistics.median(sdk_floor(data) for _ in range(repeat))
    runs = [first_and_second(data, tenant) for _ in range(repeat)]
    cold_cpu, cold_wall, warm_cpu, warm_wall = (
        statistics.median(r[i] for r in runs) for i in range(4)
    )
    print(
        f"{n} clusters, request {len(data) / MIB:.1f} MiB; medians of {repeat}, CPU seconds "
        f"(the machine may be shared)"
    )
    print(f"  SDK floor (parse + struct_to_dict of every object):   {floor:6.3f} s")
    print(
        f"  first call of a fresh worker (cold):  CPU {cold_cpu:6.3f} s = {cold_cpu / floor:4.2f}× "
        f"the floor (target ≤ 3×); wall through the pool {cold_wall:6.3f} s"
    )
    print(
        f"  second call (warm):                   CPU {warm_cpu:6.3f} s = {warm_cpu / floor:4.2f}× "
        f"the floor (target ≤ 1.5×); wall through the pool {warm_wall:6.3f} s"
    )
    small = warmup.request().SerializeToString()
    for fair in (True, False):
        waits = [small_wait(data, small, fair) for _ in range(max(1, repeat // 2))]
        during = statistics.median(w[0] for w in waits)
        alone = statistics.median(w[1] for w in waits)
        label = "with the fairness rule" if fair else "first come, first served"
        print(
            f"  small tenant's call while two cold {n}-cluster calls of one tenant run on 2 "
            f"workers, {label}: {during:6.3f} s wall, {during - alone:6.3f} s more than alone "
            f"({alone:5.3f} s)"
        )


def main() -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[5000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"function serve's default workers here: {default_workers()}")
    for n in args.clusters:
        measure(n, args.repeat)


if __name__ == "__main__":
    main()
