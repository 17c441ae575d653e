"""Benchmark: a ModelDeployment call over a fleet, cold against cached decoding.

The request of `bench_request.py` (one ModelDeployment of 100 replicas over N
InferenceClusters of 8 pools, plus N/4 replicas of other deployments), with
every object carrying a uid and a resourceVersion as an API server sends them.
Per fleet size it reports, in one run:

- decoding the request into the composer input (`to_input`) cold (an empty
  decode cache) and cached (every object's version seen before), and the same
  for objects without a resourceVersion (keyed by a digest of their content,
  as the embedded control plane sends them);
- the whole call (`FunctionRunner.run`: decode, schedule, compose, encode),
  cold and cached, and cached / cold;
- in a fresh process per size: the peak RSS after a cold and a cached call,
  and what the cache holds (objects, serialized MiB).

    .venv/bin/python benchmarks/bench_decode.py [--clusters 1000 5000] [--repeat 3]

Target: a cached call over 1,000 unchanged clusters costs ≤ 25% of a cold one.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from bench_request import request

from modelplane.crossplane import FunctionRunner, convert
from modelplane.crossplane.convert import DecodeCache, to_input

MIB = 1024 * 1024


def versioned(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionRequest:
    """`req` with a uid and resourceVersion on every required object, as Crossplane sends."""
    out = fnv1.RunFunctionRequest()
    out.CopyFrom(req)
    for name, resources in out.required_resources.items():
        for i, item in enumerate(resources.items):
            meta = item.resource.fields["metadata"].struct_value
            meta.fields["uid"].string_value = f"{name}-{i}"
            meta.fields["resourceVersion"].string_value = "1"
    return out


def cpu(fn: Callable[[], Any], repeat: int, setup: Callable[[], Any] = lambda: None) -> float:
    """Minimum process CPU seconds of `fn` over `repeat` runs, `setup` run before each."""
    best = float("inf")
    for _ in range(repeat):
        setup()
        gc.collect()
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def measure(n: int, repeat: int) -> None:
    """Print cold and cached decode and call times over `n` clusters."""
    plain = request(n)
    req = versioned(plain)
    for label, r in (("uid+resourceVersion", req), ("content digest", plain)):
        cache = DecodeCache()

        def decode(r: fnv1.RunFunctionRequest = r, cache: DecodeCache = cache) -> None:
            to_input(r, cache)

        cold = cpu(decode, repeat, setup=cache.clear)
        decode()
        warm = cpu(decode, repeat)
        print(
            f"{n:>6} clusters  decode ({label:<19}): cold {cold * 1000:7.1f} ms  "
            f"cached {warm * 1000:7.1f} ms  ({warm / cold:5.1%})"
        )
    runner = FunctionRunner(log_errors=False)
    cold = cpu(lambda: runner.run(req), repeat, setup=convert.DECODE_CACHE.clear)
    runner.run(req)
    warm = cpu(lambda: runner.run(req), repeat)
    print(
        f"{n:>6} clusters  ModelDeployment call:          cold {cold * 1000:7.1f} ms  "
        f"cached {warm * 1000:7.1f} ms  ({warm / cold:5.1%})"
    )


def rss(n: int, cache: bool) -> dict[str, float]:
    """Peak RSS (MiB) of this process after a cold then a cached call over `n` clusters.

    Without `cache`, the cache is bounded to 0 bytes: the same calls, nothing kept.
    """
    if not cache:
        convert.DECODE_CACHE.max_bytes = 0
    req = versioned(request(n))
    runner = FunctionRunner(log_errors=False)
    built = peak_rss_mib()
    runner.run(req)
    cold = peak_rss_mib()
    runner.run(req)
    warm = peak_rss_mib()
    size = req.ByteSize() / MIB
    del req
    gc.collect()
    return {
        "held": rss_mib(),
        "request_mib": size,
        "built": built,
        "cold": cold,
        "cached": warm,
        "entries": len(convert.DECODE_CACHE),
        "cache_mib": convert.DECODE_CACHE.bytes / MIB,
    }


def rss_mib(field: str = "VmRSS") -> float:
    """A memory figure of this process from /proc/self/status, in MiB (0 when unavailable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB (Linux's VmHWM; ru_maxrss elsewhere).

    ru_maxrss alone would not do on Linux: it survives fork and exec, so a
    child would report its parent's peak.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Run every fleet size and print the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rss", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-cache", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss:
        print(json.dumps(rss(args.rss, not args.no_cache)))
        return
    for n in args.clusters:
        measure(n, args.repeat)
    for n in args.clusters:
        for flags in ([], ["--no-cache"]):
            out = subprocess.run(
                [sys.executable, __file__, "--rss", str(n), *flags],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(out.stdout)
            print(
                f"{n:>6} clusters{' (no cache)' if flags else ''}: request "
                f"{r['request_mib']:.1f} MiB; peak RSS: request built {r['built']:.0f} MiB, "
                f"after a cold call {r['cold']:.0f} MiB, after a second call {r['cached']:.0f} "
                f"MiB, after the request is freed {r['held']:.0f} MiB; cache {r['entries']} "
                f"objects, {r['cache_mib']:.1f} MiB serialized "
                f"(bound {convert.DEFAULT_DECODE_CACHE_BYTES / MIB:.0f} MiB)"
            )


if __name__ == "__main__":
    main()
