"""Benchmark: how tightly the fleet scheduler packs a seeded stream of deployments.

A fleet of 20 InferenceClusters × 3 pools × 4 nodes of 8 GPUs (1,920 GPUs)
takes a seeded stream of ModelDeployments, one at a time. Every deployment is
scheduled with `schedule()` against the fleet and every replica placed before
it (Ready, as the composer would have created them, oldest first); its
replicas join the fleet when all of them are placed. The first deployment the
scheduler cannot place in full is the *first rejection*. Two stream shapes:

- `uniform` (the default): three H100 pools per cluster; each deployment asks
  for 1–3 replicas of one worker holding 1, 2, 4 or 8 GPUs of any kind
  (uniform draws), until the first rejection;
- `mixed` (issue 46): two H100 pools (architecture Hopper) and one pool of
  8 L4s per node per cluster; 400 deployments of 1–4 replicas of 1, 2, 4 or
  8 GPUs drawn 4:3:2:1 (small sizes more often), half selecting Hopper GPUs by
  attribute, half any GPU with at least 16 GiB of memory.

Where the replicas land on nodes is decided here, not by the scheduler's own
ledger: each pool is replayed node by node as its cluster's scheduler would run
the replicas (in creation order; BinPack: the fullest node that fits, Spread:
the emptiest), so a replica the scheduler promised that no node can take is
counted as *overcommitted* rather than trusted. Per seed we report:

- **allocated**: % of the fleet's GPUs held when the first rejection comes;
- **stranded**: GPUs free on partly used nodes of the pools the rejected
  deployment could use, at that moment (free GPUs a large replica cannot use
  because small ones hold part of their node), as a count and as % of those
  pools' GPUs — whole free nodes are not stranded;
- **nodes used** by the first 60 deployments of the stream, beside its floor
  (their GPUs ÷ 8, rounded up);
- the deployments placed, and any overcommitted replicas (must be 0).

`--fragments` also lists, per seed, the first rejected deployment and every
matching pool with a partly used node, node by node: where the stranded GPUs
are (under `--ab`, for both schedulers).

`--bound` (mixed shape) prints, per seed, what the stream alone allows at a
first rejection, whatever the placement (`bounds`): every deployment before
it is placed in full, so the GPUs allocated and free there are the stream's;
a rejected deployment of k replicas of g GPUs leaves at most (k - 1) * g // 8
whole free nodes in its pools, so every other free GPU of those pools is
stranded. From the first deployment a rejection at which allocates 97% (under
`--ab`, and no earlier than the baseline's first rejection: an earlier one
allocates less) to the first one no placement can take, each line gives that least stranded
count against the stranded target (under `--ab`, also the baseline's share).
A Hopper-only deployment counts only the H100 pools, so its least count
depends on how many free GPUs the L4 pools hold; it is given both ways: any
placement (the L4s holding all they can) and with every free GPU on an H100,
as once the any-GPU deployments have filled the L4s. A line "over" for every
deployment shows the target out of reach on that stream.

    .venv/bin/python benchmarks/bench_placement.py [--seeds 1,2,3] [--packing Spread]
        [--shape uniform|mixed] [--max-replicas 3] [--ab [--baseline REF]] [--fragments]
        [--bound]

`--packing` is every cluster's `spec.scheduling.packing`: Spread (the
default, as for a cluster on the default kube-scheduler; the harder case, since
each small worker its cluster runs takes an empty node while one is left),
BinPack, or `mixed` (even clusters Spread, odd BinPack); `--max-replicas` the
largest replica count of the uniform stream (3). Targets: allocated ≥ 97% and
stranded ≤ 1% on every seed.

`--ab` runs the same streams through the previous release's scheduler in the
same run and prints a table, old beside new, with their ratio: `git archive
REF modelplane` of this repository unpacked into a temporary directory and
this file run there as a worker (`PYTHONPATH`). REF is `--baseline`, by default
`BASELINE` below (main of 2026-11-23, the week before issue 46). Under `--ab`
each seed must also allocate at least as much as the baseline and strand no
more GPUs. The table also shows the current scheduler stopped where the
baseline first rejected (as many deployments placed) and its stranded GPUs in
the pools the baseline's rejected deployment could use: a scheduler that packs
further meets its own first rejection with the fleet fuller and nearly every
free GPU in a fragment, so only this column compares the two at one moment.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import label_value
from modelplane.scheduling import schedule

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
TOTAL = CLUSTERS * POOLS * NODES * GPUS


L4 = [
    {
        "name": "gpu",
        "claim": "DRA",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": GPUS,
        "attributes": {
            "productName": {"string": "NVIDIA L4"},
            "architecture": {"string": "Ada Lovelace"},
        },
        "capacity": {"memory": {"value": "23034Mi"}},
    }
]
HOPPER = [dict(H100[0], attributes={**H100[0]["attributes"], "architecture": {"string": "Hopper"}})]
HOPPER_GPU = 'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
GPU_16GI = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0'
# The mixed shape: two H100 pools and one L4 pool per cluster; 1-4 replicas of
# 1, 2, 4 or 8 GPUs, the small sizes drawn more often; half Hopper, half any GPU.
MIXED_POOLS = (("h100-a", HOPPER), ("h100-b", HOPPER), ("l4", L4))
MIXED_WEIGHTS = (4, 3, 2, 1)
MIXED_REPLICAS = 4
MIXED_COUNT = 400
# The previous release's scheduler for --ab: main as of 2026-11-23 20:13 UTC, the
# last commit of the week before (no best-fit fill, no by-age Spread ledger, no
# cost or quota rules). Main of 2026-11-22 predates `spec.scheduling.packing`:
# it charges every pool best-fit, so on Spread clusters it promises replicas
# no node can take (about 50 overcommitted per mixed stream) and is no yardstick.
BASELINE = "e6647d320f4af64f5b6d2f4603e05a3955a8db13"


@dataclass(frozen=True)
class Demand:
    """One deployment of a stream: its replicas, GPUs per replica and device selector."""

    replicas: int
    gpus: int
    cel: str = ANY_GPU


def packing_of(i: int, packing: str) -> str:
    """Cluster i's packing under the `--packing` choice."""
    if packing == "mixed":
        return "Spread" if i % 2 == 0 else "BinPack"
    return packing


def pools_of(shape: str) -> tuple[tuple[str, list[Obj]], ...]:
    """Each cluster's pools (name, devices) in `shape`."""
    if shape == "mixed":
        return MIXED_POOLS
    return tuple((f"pool-{p}", H100) for p in range(POOLS))


def fleet(packing: str, shape: str = "uniform") -> list[Obj]:
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
                    {"name": name, "className": "gpu-8x", "nodes": NODES, "devices": devices}
                    for name, devices in pools_of(shape)
                ],
            },
        }
        for i in range(CLUSTERS)
    ]


def stream(seed: int, count: int, max_replicas: int = MAX_REPLICAS) -> list[Demand]:
    """The seeded uniform stream: 1..max_replicas replicas of 1, 2, 4 or 8 GPUs, any GPU."""
    rng = random.Random(seed)
    return [Demand(rng.randint(1, max_replicas), rng.choice(SIZES)) for _ in range(count)]


def mixed_stream(seed: int, count: int = MIXED_COUNT) -> list[Demand]:
    """The seeded mixed stream: small sizes likelier, half Hopper-only, half any GPU >= 16Gi."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        replicas = rng.randint(1, MIXED_REPLICAS)
        (gpus,) = rng.choices(SIZES, weights=MIXED_WEIGHTS)
        out.append(Demand(replicas, gpus, HOPPER_GPU if rng.random() < 0.5 else GPU_16GI))
    return out


def deployment(n: int, demand: Demand) -> Obj:
    """Deployment n of the stream."""
    device = {"name": "gpu", "count": demand.gpus, "selectors": [{"cel": demand.cel}]}
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": f"dep-{n:04d}", "namespace": "bench"},
        "spec": {
            "replicas": demand.replicas,
            "nodeSelector": {"devices": [device]},
            "workers": {"count": 1, "template": ENGINE},
        },
    }


def replicas_of(dep: Obj, result: Any, clock: int) -> list[Obj]:
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

    def fragments(self, pools: set[str] | None = None) -> list[str]:
        """Each pool (of `pools`, else every pool) with a partly used node: its
        nodes' free GPUs, as `cluster/pool [free, ...]`."""
        return [
            f"{cluster}/{pool} {nodes}"
            for (cluster, pool), nodes in sorted(self.free.items())
            if (pools is None or pool in pools) and any(0 < f < GPUS for f in nodes)
        ]

    def stranded(self, pools: set[str] | None = None) -> int:
        """Free GPUs on partly used nodes (of the pools named in `pools`, else of all)."""
        return sum(
            f
            for (_, pool), nodes in self.free.items()
            if pools is None or pool in pools
            for f in nodes
            if 0 < f < GPUS
        )


@dataclass
class Outcome:
    """One seed's figures."""

    seed: int
    placed: int = 0
    allocated: int = 0
    stranded: int = 0
    matching: int = 0  # GPUs of the pools the first rejected deployment could use
    window_nodes: int = 0
    window_floor: int = 0  # the fewest nodes that GPU count fits on
    overcommitted: int = 0
    rejected: tuple[int, int] | None = None
    rejected_cel: str = ""  # the first rejected deployment's device selector
    fragments: list[str] = field(default_factory=list)  # `Nodes.fragments` at that moment


def demands(shape: str, seed: int, max_replicas: int) -> list[Demand]:
    """The stream `shape` draws from `seed`."""
    if shape == "mixed":
        return mixed_stream(seed)
    return stream(seed, 2000, max_replicas)


def matching_pools(shape: str, cel: str) -> set[str]:
    """The pools of every cluster a deployment selecting `cel` can use."""
    return {name for name, devices in pools_of(shape) if cel != HOPPER_GPU or devices is HOPPER}


def schedule_once(dep: Obj, clusters: list[Obj], observed: list[Obj]) -> Any:
    """`schedule()` of whichever release is imported (explain_all came later)."""
    if "explain_all" in inspect.signature(schedule).parameters:
        return schedule(dep, clusters, observed, explain_all=False)
    return schedule(dep, clusters, observed)


def run(
    seed: int,
    packing: str,
    max_replicas: int = MAX_REPLICAS,
    shape: str = "uniform",
    stop: tuple[int, str] | None = None,
) -> Outcome:
    """Feed seed's stream to the scheduler until its first rejection.

    With `stop` (deployments, selector), stop after that many deployments
    instead and count stranded GPUs in the pools that selector matches.
    """
    clusters = fleet(packing, shape)
    spread = {
        cl["metadata"]["name"]: packing_of(i, packing) == "Spread" for i, cl in enumerate(clusters)
    }
    nodes = Nodes()
    observed: list[Obj] = []
    out = Outcome(seed)
    pools: set[str] | None = None
    for n, demand in enumerate(demands(shape, seed, max_replicas)):
        if stop is not None and n == stop[0]:
            pools = matching_pools(shape, stop[1])
            break
        if n == WINDOW:
            out.window_nodes, out.window_floor = nodes.used(), -(-out.allocated // GPUS)
        dep = deployment(n, demand)
        result = schedule_once(dep, clusters, observed)
        if len(result.replicas) < demand.replicas:
            out.rejected, out.rejected_cel = (demand.replicas, demand.gpus), demand.cel
            pools = matching_pools(shape, demand.cel)
            break
        new = replicas_of(dep, result, n)
        # The cluster runs replicas created together by name.
        for r in sorted(new, key=lambda r: r["metadata"]["name"]):
            cl, pool = r["spec"]["clusterName"], r["spec"]["nodePoolName"]
            nodes.run(cl, pool, demand.gpus, spread[cl])
        observed.extend(new)
        out.placed += 1
        out.allocated += demand.replicas * demand.gpus
    if out.window_nodes == 0:
        out.window_nodes, out.window_floor = nodes.used(), -(-out.allocated // GPUS)
    out.stranded = nodes.stranded(pools)
    out.fragments = nodes.fragments(pools)
    out.matching = CLUSTERS * NODES * GPUS * len(pools or pools_of(shape))
    out.overcommitted = nodes.overcommitted
    return out


@dataclass(frozen=True)
class Bound:
    """What the stream alone says of a first rejection at deployment `n`, whatever
    the placement: the GPUs allocated and free then, and the fewest free GPUs the
    rejected deployment's matching pools must then hold on partly used nodes."""

    n: int
    demand: Demand
    allocated: int
    free: int
    matching: int  # GPUs of the pools the deployment could use
    stranded: int | None  # None: no placement can reject it here
    l4_full: bool = False  # Hopper only, and the stream has filled the L4s' GPUs
    stranded_l4_full: int | None = None  # `stranded` with every free GPU on an H100


def bounds(seed: int, start: int) -> list[Bound]:
    """For each deployment of the mixed stream from `start` to the first one no
    placement could take, the least stranded GPUs at a rejection there.

    Every deployment before the first rejection is placed in full, so the GPUs
    allocated and free at a rejection of deployment n are fixed by the stream.
    A rejected deployment of k replicas of g GPUs leaves fewer than k places of
    g GPUs in its pools: at most (k - 1) * g // 8 whole free nodes, every other
    free GPU on a partly used node; with g = 1 it needs fewer than k free GPUs.
    A Hopper-only deployment counts the H100 pools alone, which hold at least
    the free GPUs the L4 pools cannot (and all of them once the L4s are full).
    """
    hopper_gpus = CLUSTERS * NODES * GPUS * 2
    l4_gpus = CLUSTERS * NODES * GPUS
    allocated = hopper = any_gpu = 0
    out = []
    for n, d in enumerate(mixed_stream(seed)):
        need, hopper_only = d.replicas * d.gpus, d.cel == HOPPER_GPU
        free = TOTAL - allocated
        # Any-GPU replicas past the L4s' GPUs hold H100s.
        room = hopper_gpus - hopper - max(0, any_gpu - l4_gpus) if hopper_only else free
        forced = need > room
        if n >= start or forced:
            least = max(0, free - l4_gpus) if hopper_only else free
            matching = hopper_gpus if hopper_only else TOTAL
            full = hopper_only and any_gpu >= l4_gpus
            out.append(
                Bound(n, d, allocated, free, matching, _least(least, d), full, _least(free, d))
            )
        if forced:
            break
        allocated += need
        hopper, any_gpu = hopper + need * hopper_only, any_gpu + need * (not hopper_only)
    return out


def first_at(seed: int, percent: float) -> int:
    """The first deployment of the mixed stream a rejection at which allocates `percent`."""
    allocated = 0
    for n, d in enumerate(mixed_stream(seed)):
        if 100 * allocated / TOTAL >= percent:
            return n
        allocated += d.replicas * d.gpus
    return MIXED_COUNT


def _least(free: int, d: Demand) -> int | None:
    """Stranded GPUs at least when `free` GPUs of the pools are left and `d` does not
    fit: the ones that are not on the whole free nodes `d` leaves; None when `free`
    GPUs always take `d` (1-GPU replicas fit any free GPU)."""
    if d.gpus == 1 and free >= d.replicas:
        return None
    whole = min((d.replicas - 1) * d.gpus // GPUS, free // GPUS)
    return free - GPUS * whole


def bound_window(seed: int, baseline: Outcome | None) -> tuple[int, float]:
    """Where `print_bounds` starts and its stranded target: from the first rejection
    allocating the target and (under `--ab`) no earlier than the baseline's first
    rejection (an earlier one allocates less), then also holding the baseline's
    stranded share."""
    start = first_at(seed, TARGET_ALLOCATED)
    if baseline is None:
        return start, TARGET_STRANDED
    target = min(TARGET_STRANDED, round(figures(baseline)[1], 1))
    return max(start, baseline.placed), target


def print_bounds(seed: int, start: int, target: float) -> None:
    """The seed's `bounds` from `start`, each against the stranded target (% of the
    matching pools)."""
    print(f"seed {seed}: stranded at a first rejection, at least (any placement):")
    for b in bounds(seed, start):
        kind = "Hopper" if b.demand.cel == HOPPER_GPU else "any GPU"
        head = (
            f"  n={b.n} {b.demand.replicas}x{b.demand.gpus} GPUs, {kind}: allocated "
            f"{100 * b.allocated / TOTAL:.1f}%, {b.free} free;"
        )
        print(f"{head} {_judged(b.stranded, b.matching, target)}", end="")
        if b.l4_full:
            print(f"; with the L4s full, {_judged(b.stranded_l4_full, b.matching, target)}")
        else:
            print()


def _judged(stranded: int | None, matching: int, target: float) -> str:
    """A bound against the target: `>= N (P%), over|within T%`."""
    if stranded is None:
        return "cannot be rejected"
    share = 100 * stranded / matching
    verdict = "over" if round(share, 1) > target else "within"
    return f">= {stranded} ({share:.2f}% of {matching}), {verdict} {target:.1f}%"


def baseline_outcomes(ref: str, args: argparse.Namespace) -> dict[int, Outcome]:
    """Run this benchmark's worker over the scheduler of `ref`, unpacked by `git archive`."""
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="bench-placement-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", ref, "modelplane"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        worker = [
            sys.executable,
            __file__,
            "--worker",
            f"--seeds={args.seeds}",
            f"--packing={args.packing}",
            f"--shape={args.shape}",
            f"--max-replicas={args.max_replicas}",
        ]
        env = {**os.environ, "PYTHONPATH": tmp}
        text = subprocess.run(worker, env=env, check=True, capture_output=True, text=True).stdout
    outcomes = [Outcome(**json.loads(line)) for line in text.splitlines()]
    return {o.seed: o for o in outcomes}


def figures(o: Outcome) -> tuple[float, float]:
    """Allocated % of the fleet and stranded % of the matching pools' GPUs."""
    return 100.0 * o.allocated / TOTAL, 100.0 * o.stranded / o.matching


def met(o: Outcome) -> bool:
    """Whether one seed's outcome meets the targets."""
    alloc, strand = figures(o)
    return alloc >= TARGET_ALLOCATED and strand <= TARGET_STRANDED and not o.overcommitted


def describe(o: Outcome) -> str:
    """One seed's line."""
    alloc, strand = figures(o)
    rejected = "none" if o.rejected is None else f"{o.rejected[0]}x{o.rejected[1]} GPUs"
    return (
        f"seed {o.seed}: allocated {alloc:5.1f}% ({o.allocated}/{TOTAL}) before the first "
        f"rejection ({rejected}, after {o.placed} deployments); stranded {o.stranded} GPUs "
        f"({strand:.1f}% of the matching pools' {o.matching}); nodes used by the first "
        f"{WINDOW}: {o.window_nodes} (floor {o.window_floor}); "
        f"overcommitted {o.overcommitted}; {'ok' if met(o) else 'MISSED'}"
    )


def compare(new: Outcome, old: Outcome, same: Outcome) -> tuple[str, bool]:
    """One seed's A/B row, and whether the current scheduler is at least as good:
    as much allocated, no larger a share of the matching pools stranded.

    `same` is the current scheduler stopped where the baseline first rejected
    (as many deployments placed, the same pools counted): a scheduler that
    packs further meets its own rejection with the fleet fuller, its free GPUs
    all in fragments, so this column compares the two at one moment.
    """
    (na, ns), (oa, os_) = figures(new), figures(old)
    at_old = 100.0 * same.stranded / old.matching
    # Stranded as a share of the pools the rejected deployment could use: the
    # two runs may first reject deployments of different kinds.
    good = na >= oa and round(ns, 1) <= round(os_, 1)
    row = (
        f"| {new.seed} | {oa:5.1f}% | {na:5.1f}% | {na / oa:5.3f} | {old.stranded} ({os_:.1f}%) "
        f"| {new.stranded} ({ns:.1f}%) | {same.stranded} ({at_old:.1f}%) "
        f"| {old.overcommitted} / {new.overcommitted} "
        f"| {'ok' if good and met(new) else 'MISSED'} |"
    )
    return row, good


def print_fragments(o: Outcome, label: str) -> None:
    """The seed's first rejected deployment and the free GPUs per node of the matching
    pools with a partly used node at that moment (what `stranded` counts)."""
    kind = "Hopper" if o.rejected_cel == HOPPER_GPU else "any GPU"
    rejected = "none" if o.rejected is None else f"{o.rejected[0]}x{o.rejected[1]} GPUs, {kind}"
    print(f"{label}seed {o.seed}: first rejection {rejected}; partly used pools:")
    for line in o.fragments:
        print(f"  {line}")


def print_ab(outcomes: list[Outcome], old: dict[int, Outcome], args: argparse.Namespace) -> bool:
    """The A/B table, a row per seed (`compare`); whether every seed is at least as good."""
    print(f"baseline {args.baseline}")
    print(
        "| seed | allocated: old | new | new/old | stranded: old | new "
        "| new at old's rejection | overcommitted | |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ok = True
    for o in outcomes:
        was = old[o.seed]
        stop = None if was.rejected is None else (was.placed, was.rejected_cel)
        same = run(o.seed, args.packing, args.max_replicas, args.shape, stop)
        row, good = compare(o, was, same)
        ok = ok and good
        print(row)
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run every seed, print one line each (or an A/B table); exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--packing", default="Spread", choices=["Spread", "BinPack", "mixed"])
    parser.add_argument("--shape", default="uniform", choices=["uniform", "mixed"])
    parser.add_argument("--max-replicas", type=int, default=MAX_REPLICAS)
    parser.add_argument("--ab", action="store_true", help="run the baseline beside this tree")
    parser.add_argument("--baseline", default=BASELINE, help="git ref of the A/B baseline")
    parser.add_argument(
        "--fragments",
        action="store_true",
        help="also list the matching pools' partly used nodes at each first rejection",
    )
    parser.add_argument(
        "--bound",
        action="store_true",
        help="mixed shape: also print, per seed, the least stranded GPUs any placement "
        "could leave at a first rejection from the baseline's (else 97%%) on",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.worker:
        for seed in seeds:
            print(json.dumps(asdict(run(seed, args.packing, args.max_replicas, args.shape))))
        return 0
    print(
        f"fleet: {CLUSTERS} clusters x {POOLS} pools x {NODES} nodes x {GPUS} GPUs = {TOTAL}"
        f" GPUs; shape {args.shape}; packing {args.packing}"
    )
    outcomes = [run(seed, args.packing, args.max_replicas, args.shape) for seed in seeds]
    ok = all(met(o) for o in outcomes)
    old: dict[int, Outcome] = {}
    if not args.ab:
        for o in outcomes:
            print(describe(o))
    else:
        old = baseline_outcomes(args.baseline, args)
        ok = print_ab(outcomes, old, args) and ok
    if args.fragments:
        for o in outcomes:
            print_fragments(o, "" if not args.ab else "new ")
            if args.ab:
                print_fragments(old[o.seed], "old ")
    if args.bound and args.shape == "mixed":
        for o in outcomes:
            print_bounds(o.seed, *bound_window(o.seed, old.get(o.seed)))
    print(
        f"targets: allocated >= {TARGET_ALLOCATED:.0f}%, stranded <= {TARGET_STRANDED:.0f}%"
        + (", each at least as good as the baseline" if args.ab else "")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
