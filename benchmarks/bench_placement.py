"""Benchmark: how tightly the fleet scheduler packs a seeded stream of deployments.

A fleet of 20 InferenceClusters × 3 pools × 4 nodes of 8 GPUs (1,920 GPUs)
takes a seeded stream of ModelDeployments, one at a time, each asking for 1–3
replicas of one worker holding 1, 2, 4 or 8 GPUs (uniform draws). Every
deployment is scheduled with `schedule()` against the fleet and every replica
placed before it (Ready, as the composer would have created them, oldest
first); its replicas join the fleet when all of them are placed. The first
deployment the scheduler cannot place in full is the *first rejection*.

Where the replicas land on nodes is decided here, not by the scheduler's own
ledger: each pool is replayed node by node as its cluster's scheduler would run
the replicas (in creation order; BinPack: the fullest node that fits, Spread:
the emptiest), so a replica the scheduler promised that no node can take is
counted as *overcommitted* rather than trusted. Per seed we report:

- **allocated**: % of the fleet's GPUs held when the first rejection comes;
- **stranded**: GPUs free on partly used nodes at that moment (free GPUs a
  large replica cannot use because small ones hold part of their node), as a
  count and as % of the fleet — whole free nodes are not stranded;
- **nodes used** by the first 60 deployments of the stream, beside its floor
  (their GPUs ÷ 8, rounded up);
- the deployments placed, and any overcommitted replicas (must be 0).

    .venv/bin/python benchmarks/bench_placement.py [--seeds 1,2,3] [--packing Spread]
        [--max-replicas 3]

`--packing` is every cluster's `spec.scheduling.packing`: Spread (the
default, as for a cluster on the default kube-scheduler; the harder case, since
each small worker its cluster runs takes an empty node while one is left),
BinPack, or `mixed` (even clusters Spread, odd BinPack); `--max-replicas` the
largest replica count drawn (3). Targets: allocated ≥ 97% and stranded ≤ 1%
on every seed.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import label_value
from modelplane.scheduling import ScheduleResult, schedule

Obj = dict[str, Any]
CLUSTERS, POOLS, NODES, GPUS = 20, 3, 4, 8
SIZES = (1, 2, 4, 8)
MAX_REPLICAS = 3
WINDOW = 60  # deployments whose node count is reported
ANY_GPU = 'device.driver == "gpu.nvidia.com"'
ENGINE = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}}
H100 = [
    {
        "name": "gpu",
        "claim": "DRA",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": GPUS,
        "attributes": {"productName": {"string": "NVIDIA H100"}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
]
TARGET_ALLOCATED, TARGET_STRANDED = 97.0, 1.0


def packing_of(i: int, packing: str) -> str:
    """Cluster i's packing under the `--packing` choice."""
    if packing == "mixed":
        return "Spread" if i % 2 == 0 else "BinPack"
    return packing


def fleet(packing: str) -> list[Obj]:
    """The 20 clusters, each with three 4-node pools of 8-GPU nodes."""
    return [
        {
            "apiVersion": c.API_VERSION,
            "kind": "InferenceCluster",
            "metadata": {"name": f"cluster-{i:02d}", "labels": {}},
            "spec": {"taints": [], "scheduling": {"packing": packing_of(i, packing)}},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "gpuPools": [
                    {"name": f"pool-{p}", "className": "h100-8x", "nodes": NODES, "devices": H100}
                    for p in range(POOLS)
                ],
            },
        }
        for i in range(CLUSTERS)
    ]


def stream(seed: int, count: int, max_replicas: int = MAX_REPLICAS) -> list[tuple[int, int]]:
    """The seeded stream: (replicas, GPUs per replica) of each deployment."""
    rng = random.Random(seed)
    return [(rng.randint(1, max_replicas), rng.choice(SIZES)) for _ in range(count)]


def deployment(n: int, replicas: int, gpus: int) -> Obj:
    """Deployment n of the stream."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": f"dep-{n:04d}", "namespace": "bench"},
        "spec": {
            "replicas": replicas,
            "nodeSelector": {
                "devices": [{"name": "gpu", "count": gpus, "selectors": [{"cel": ANY_GPU}]}]
            },
            "workers": {"count": 1, "template": ENGINE},
        },
    }


def replicas_of(dep: Obj, result: ScheduleResult, clock: int) -> list[Obj]:
    """The Ready ModelReplicas a composer would create from `result`, created at `clock`."""
    name = dep["metadata"]["name"]
    out = []
    for p in result.replicas:
        (role,) = p.roles
        out.append(
            {
                "apiVersion": c.API_VERSION,
                "kind": "ModelReplica",
                "metadata": {
                    "name": p.name,
                    "namespace": "bench",
                    "creationTimestamp": f"2026-01-01T{clock // 3600:02d}:{clock // 60 % 60:02d}:"
                    f"{clock % 60:02d}Z",
                    "labels": {
                        c.LABEL_DEPLOYMENT: label_value(name),
                        c.LABEL_CLUSTER: label_value(p.cluster),
                        c.LABEL_REPLICA_INDEX: str(p.index),
                    },
                },
                "spec": {
                    "deploymentName": name,
                    "clusterName": p.cluster,
                    "index": p.index,
                    "nodePoolName": role.pool,
                    "deviceRequests": [d.to_dict() for d in role.device_requests],
                    "workers": dep["spec"]["workers"],
                },
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            }
        )
    return out


@dataclass
class Nodes:
    """Free GPUs per node of every pool, replayed as each cluster's scheduler runs pods."""

    free: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    overcommitted: int = 0

    def run(self, cluster: str, pool: str, gpus: int, spread: bool) -> None:
        """One single-node worker of `gpus` GPUs onto the node its cluster would pick."""
        nodes = self.free.setdefault((cluster, pool), [GPUS] * NODES)
        fitting = [i for i, f in enumerate(nodes) if f >= gpus]
        if not fitting:
            self.overcommitted += 1
            return
        # Spread: the emptiest node; BinPack: the fullest; ties to the lowest node.
        pick = min(fitting, key=lambda i: (-nodes[i] if spread else nodes[i], i))
        nodes[pick] -= gpus

    def used(self) -> int:
        """Nodes holding at least one worker."""
        return sum(f < GPUS for nodes in self.free.values() for f in nodes)

    def stranded(self) -> int:
        """Free GPUs on partly used nodes."""
        return sum(f for nodes in self.free.values() for f in nodes if 0 < f < GPUS)


@dataclass
class Outcome:
    """One seed's figures."""

    seed: int
    placed: int = 0
    allocated: int = 0
    stranded: int = 0
    window_nodes: int = 0
    window_floor: int = 0  # the fewest nodes that GPU count fits on
    overcommitted: int = 0
    rejected: tuple[int, int] | None = None


def run(seed: int, packing: str, max_replicas: int = MAX_REPLICAS, limit: int = 2000) -> Outcome:
    """Feed seed's stream to the scheduler until its first rejection."""
    clusters = fleet(packing)
    spread = {
        cl["metadata"]["name"]: packing_of(i, packing) == "Spread" for i, cl in enumerate(clusters)
    }
    nodes = Nodes()
    observed: list[Obj] = []
    out = Outcome(seed)
    for n, (count, gpus) in enumerate(stream(seed, limit, max_replicas)):
        if n == WINDOW:
            out.window_nodes, out.window_floor = nodes.used(), -(-out.allocated // GPUS)
        dep = deployment(n, count, gpus)
        result = schedule(dep, clusters, observed, explain_all=False)
        if len(result.replicas) < count:
            out.rejected = (count, gpus)
            break
        new = replicas_of(dep, result, n)
        # The cluster runs replicas created together by name.
        for r in sorted(new, key=lambda r: r["metadata"]["name"]):
            cl, pool = r["spec"]["clusterName"], r["spec"]["nodePoolName"]
            nodes.run(cl, pool, gpus, spread[cl])
        observed.extend(new)
        out.placed += 1
        out.allocated += count * gpus
    if out.window_nodes == 0:
        out.window_nodes, out.window_floor = nodes.used(), -(-out.allocated // GPUS)
    out.stranded = nodes.stranded()
    out.overcommitted = nodes.overcommitted
    return out


def main(argv: list[str] | None = None) -> int:
    """Run every seed, print one line each; exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--packing", default="Spread", choices=["Spread", "BinPack", "mixed"])
    parser.add_argument("--max-replicas", type=int, default=MAX_REPLICAS)
    args = parser.parse_args(argv)
    total = CLUSTERS * POOLS * NODES * GPUS
    print(
        f"fleet: {CLUSTERS} clusters x {POOLS} pools x {NODES} nodes x {GPUS} GPUs = {total}"
        f" GPUs; packing {args.packing}"
    )
    ok = True
    for seed in (int(s) for s in args.seeds.split(",")):
        o = run(seed, args.packing, args.max_replicas)
        alloc = 100.0 * o.allocated / total
        strand = 100.0 * o.stranded / total
        met = alloc >= TARGET_ALLOCATED and strand <= TARGET_STRANDED and not o.overcommitted
        ok = ok and met
        rejected = "none" if o.rejected is None else f"{o.rejected[0]}x{o.rejected[1]} GPUs"
        print(
            f"seed {seed}: allocated {alloc:5.1f}% ({o.allocated}/{total}) before the first "
            f"rejection ({rejected}, after {o.placed} deployments); stranded {o.stranded} GPUs "
            f"({strand:.1f}%); nodes used by the first {WINDOW}: {o.window_nodes} "
            f"(floor {o.window_floor}); "
            f"overcommitted {o.overcommitted}; {'ok' if met else 'MISSED'}"
        )
    print(f"targets: allocated >= {TARGET_ALLOCATED:.0f}%, stranded <= {TARGET_STRANDED:.0f}%")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
