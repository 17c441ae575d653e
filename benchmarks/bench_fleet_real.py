"""Benchmark: a fleet of many InferenceClusters on the real local stack, all Ready.

One `modelplane dev` fleet (etcd, the control plane's API server, Crossplane,
provider-kubernetes, the function) and a few workload API servers. A workload
API server costs about 1.2 GB with its controllers (kube-apiserver alone
0.7 GB), so 50 of them do not fit a 23 GB machine: the InferenceClusters share
`--servers` of them, round robin, each cluster with a node pool of its own
(`p<i>`, `--nodes` one-L4 kwok nodes labelled with it). An InferenceCluster
reads only its own pools from its server's inventory summary, and its
replicas' Pods select their pool's nodes, so clusters sharing a server never
see each other's capacity.

For each size (`--sizes`, 10, 25 and 50 by default) the fleet grows to that
many InferenceClusters (each Ready before the deployments come), then
`--per-cluster` ModelDeployments of one replica each are applied to each
cluster (a `clusterSelector` on the cluster's index) and timed until every one
is Ready, then deleted and waited for. Per size it prints:

- seconds from the first apply until every deployment is Ready;
- per Ready replica: API writes (every API server's `apiserver_request_total`,
  verbs that write), function calls (Crossplane's `function_run_function_request_total`),
  Crossplane reconciles of Modelplane's kinds, and the function's CPU seconds
  (its process and workers, from /proc);
- Crossplane's reconcile rate over the wait and its work queues' deepest sum
  (`workqueue_depth`, sampled every poll);
- the mean size of a ModelDeployment's request (`modelplane_function_request_bytes`):
  every deployment's call carries the whole fleet;
- etcd's keys and database size, and every process's peak resident memory
  (VmHWM), the largest first.

    .venv/bin/python benchmarks/bench_fleet_real.py [--sizes 10,25,50] [--servers 5]
        [--nodes 2] [--per-cluster 2] [--dir D] [--keep]

Needs Go (the parts); takes tens of minutes; not part of `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bench_time_to_ready import _scrape, _sum, counters, crossplane_page, function_page  # noqa: E402
from e2e import manifests as m  # noqa: E402
from e2e.harness import World  # noqa: E402

from modelplane.dev.fleet import Fleet, State  # noqa: E402
from modelplane.dev.kubeapi import condition, wait  # noqa: E402
from modelplane.dev.nodes import ClusterNodes, PoolNodes, class_devices  # noqa: E402

CLASS = "fleet-l4"
NS = "fleet-bench"
INDEX = "bench.modelplane.ai/fleet-index"
TICKS = os.sysconf("SC_CLK_TCK")
# Not `World.settle`: the fleet runs its own player, and the harness playing it
# again every second added its lists to the load this measures.
POLL_SECONDS = 2.0


def server_of(index: int, servers: int) -> str:
    """The workload API server cluster `index` (from 1) shares."""
    return f"wl-{(index - 1) % servers + 1}"


def fleet_nodes(clusters: int, servers: int, nodes: int) -> list[ClusterNodes]:
    """Every cluster's pool, on the server it shares."""
    devices = class_devices(m.inference_class(CLASS))
    pools: dict[str, list[PoolNodes]] = {}
    for i in range(1, clusters + 1):
        pools.setdefault(server_of(i, servers), []).append(PoolNodes(f"p{i}", nodes, devices))
    return [ClusterNodes(server, tuple(p)) for server, p in sorted(pools.items())]


def cluster_doc(world: World, index: int, servers: int, nodes: int) -> dict[str, Any]:
    """InferenceCluster `fleet-<index>`: its own pool on a shared workload API server."""
    pool = {"name": f"p{index}", "className": CLASS, "nodeCount": nodes}
    server = server_of(index, servers)
    doc = m.inference_cluster(f"fleet-{index}", world.secret_ref(server), CLASS, pools=[pool])
    doc["metadata"]["labels"] = {INDEX: str(index)}
    return doc


def deployment_doc(index: int, n: int) -> dict[str, Any]:
    """Deployment `d<index>-<n>`: one replica, on cluster `index` only."""
    doc = m.deployment(f"d{index}-{n}", NS, replicas=1)
    doc["spec"]["clusterSelector"] = {"matchLabels": {INDEX: str(index)}}
    return doc


def ready_count(world: World, kind: str, namespace: str = "") -> int:
    """How many objects of a Modelplane kind are Ready."""
    items = world.cp.list(m.API, kind, namespace)
    return sum(1 for obj in items if condition(obj, "Ready") == "True")


def _pids(state: State) -> dict[str, int]:
    return {name: proc.pid for name, proc in state.procs.items() if proc.alive()}


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and its live children (the function's workers)."""
    total = 0.0
    for p in [pid, *_children(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def peak_memory(state: State) -> list[tuple[str, float]]:
    """Each fleet process's peak resident memory in MB, the largest first."""
    out = []
    for name, pid in _pids(state).items():
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("VmHWM:"):
                out.append((name, int(line.split()[1]) / 1024))
    return sorted(out, key=lambda t: -t[1])


def queue_depth(state: State) -> float:
    """The sum of Crossplane's work queues' depths now."""
    return _sum(crossplane_page(state), "workqueue_depth", lambda _lb: True)


def request_bytes(state: State) -> tuple[float, float]:
    """(sum, count) of the ModelDeployment requests' sizes the function saw."""
    text = function_page(state)
    keep = lambda lb: lb.get("kind") == "ModelDeployment"  # noqa: E731
    got = [
        _sum(text, f"modelplane_function_request_bytes_{part}", keep) for part in ("sum", "count")
    ]
    return got[0], got[1]


def etcd_size(state: State) -> tuple[float, float]:
    """etcd's key count and database size in MB."""
    text = _scrape(f"http://127.0.0.1:{state.ports['etcd-client']}/metrics", None, None)
    keys = _sum(text, "etcd_debugging_mvcc_keys_total", lambda _lb: True)
    size = _sum(text, "etcd_mvcc_db_total_size_in_bytes", lambda _lb: True)
    return keys, size / 1e6


def grow(world: World, clusters: int, args: argparse.Namespace) -> float:
    """Create clusters up to `clusters` and wait until all are Ready; seconds taken."""
    started = time.monotonic()
    have = {o["metadata"]["name"] for o in world.cp.list(m.API, "InferenceCluster")}
    for i in range(1, clusters + 1):
        if f"fleet-{i}" not in have:
            world.apply([cluster_doc(world, i, args.servers, args.nodes)])
    wait(
        f"{clusters} InferenceClusters Ready",
        lambda: True if ready_count(world, "InferenceCluster") >= clusters else None,
        600,
        POLL_SECONDS,
    )
    return time.monotonic() - started


def measure(world: World, clusters: int, args: argparse.Namespace) -> dict[str, float]:
    """Apply every deployment of a size, wait until all are Ready; the work it cost."""
    state = world.state
    function = _pids(state)["function"]
    deployments = clusters * args.per_cluster
    before, cpu0, bytes0 = counters(state), cpu_seconds(function), request_bytes(state)
    started = time.monotonic()
    for n in range(1, args.per_cluster + 1):
        world.apply([deployment_doc(i, n) for i in range(1, clusters + 1)])
    deepest = 0.0

    def all_ready() -> bool | None:
        nonlocal deepest
        # kubeapi.wait retries only the API's errors; a missed scrape skips one sample.
        with contextlib.suppress(OSError):
            deepest = max(deepest, queue_depth(state))
        return True if ready_count(world, "ModelDeployment", NS) >= deployments else None

    wait(f"{deployments} deployments Ready", all_ready, args.timeout, POLL_SECONDS)
    elapsed = time.monotonic() - started
    after, cpu1, bytes1 = counters(state), cpu_seconds(function), request_bytes(state)
    calls = bytes1[1] - bytes0[1]
    keys, size = etcd_size(state)
    out = {
        "seconds": elapsed,
        "reconciles a second": (after["reconciles"] - before["reconciles"]) / elapsed,
        "deepest queue": deepest,
        "deployment request KB": (bytes1[0] - bytes0[0]) / calls / 1e3 if calls else 0.0,
        "etcd keys": keys,
        "etcd MB": size,
    }
    for key in ("API writes", "function calls", "reconciles"):
        out[f"{key} / replica"] = (after[key] - before[key]) / deployments
    out["function CPU s / replica"] = (cpu1 - cpu0) / deployments
    return out


def clear(world: World) -> None:
    """Delete every deployment and wait until they and their replicas are gone."""
    for md in world.cp.list(m.API, "ModelDeployment", NS):
        world.cp.delete(m.API, "ModelDeployment", md["metadata"]["name"], NS)

    def gone() -> bool | None:
        left = world.cp.list(m.API, "ModelDeployment", NS) or world.cp.list(
            m.API, "ModelReplica", NS
        )
        return None if left else True

    wait("deployments gone", gone, 600, POLL_SECONDS)


COLUMNS = (
    "seconds",
    "API writes / replica",
    "function calls / replica",
    "reconciles / replica",
    "function CPU s / replica",
    "reconciles a second",
    "deepest queue",
    "deployment request KB",
    "etcd keys",
    "etcd MB",
)


def main() -> None:
    """Bring the fleet up once, measure each size in turn, print a table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path(".modelplane-bench-fleet"))
    ap.add_argument("--keep", action="store_true", help="Leave the fleet running.")
    ap.add_argument("--sizes", default="10,25,50")
    ap.add_argument("--servers", type=int, default=5, help="Workload API servers shared.")
    ap.add_argument("--nodes", type=int, default=2, help="One-L4 nodes per cluster.")
    ap.add_argument("--per-cluster", type=int, default=2, help="Deployments per cluster.")
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    say = lambda msg: print(f"[dev up] {msg}", file=sys.stderr)  # noqa: E731
    fleet = Fleet(args.dir, say)
    started = time.monotonic()
    fleet.up(clusters=args.servers, nodes=fleet_nodes(max(sizes), args.servers, args.nodes))
    print(f"dev up ({args.servers} workload API servers): {time.monotonic() - started:.1f} s")
    world = World(State.load(fleet.directory), started)
    for api in world.workloads.values():
        world.apply(m.platform_gateway(), api)
    world.apply([m.inference_class(CLASS), m.namespace(NS)])
    print("| clusters | deployments | clusters Ready (s) | " + " | ".join(COLUMNS) + " |")
    print("|---:" * (len(COLUMNS) + 3) + "|")
    for size in sizes:
        grown = grow(world, size, args)
        got = measure(world, size, args)
        cells = " | ".join(f"{got[k]:.1f}" if got[k] < 1e4 else f"{got[k]:,.0f}" for k in COLUMNS)
        print(f"| {size} | {size * args.per_cluster} | {grown:.1f} | {cells} |", flush=True)
        clear(world)
    print("\npeak resident memory (MB), the largest 15:")
    for name, mb in peak_memory(world.state)[:15]:
        print(f"  {name}: {mb:.0f}")
    if not args.keep:
        fleet.down()


if __name__ == "__main__":
    main()
