"""Benchmark: `modelplane render` of generated fleets against the quickstart.

Fleets of 20, 200 and 1,000 InferenceClusters (2–4 pools each over the four
InferenceClasses of `bench_scheduler.py`) with 20 and 100 ModelDeployments of
1–9 replicas, rendered to a fixed point by the embedded control plane, each
in a fresh process (so peak RSS is that render's own). For each we report the
wall and CPU time, the rounds, the function calls made and skipped, the time
spent per phase — decode (objects → what composers read: read-only dicts),
encode (composer results → what the engine applies; protobuf under a runner),
schedule, compose (composers, scheduling excluded) — and the peak RSS, with
the CPU time as a ratio of `examples/quickstart` measured in the same run (CPU
time: the machine may be shared; it is what the render costs on a core of its
own). The render's CPU time is the control plane's alone (objects loaded,
interpreter warm); "CLI CPU" is the whole `modelplane render <folder> -o yaml`
command (start-up, loading, validation, output), each fleet written to a
folder first, the least CPU time of `--repeat` runs (default 3) taken in turn
with the quickstart's, with its own ratio to the same command on the quickstart.

    .venv/bin/python benchmarks/bench_render.py [--sizes 20x20,200x20,1000x100] [--no-command]
        [--repeat N] [--floor 200x20,1000x100 | --no-floor]

Then, in the same run, `bench_floor.py`: `modelplane render -o json` of the
`--floor` fleets next to their physical floor (start-up, parsing the input
with libyaml, writing the output as JSON), medians of `--repeat` runs, with
the peak RSS.

Targets: 200 clusters × 20 deployments ≤ 8× the quickstart; ≤ 2× its floor,
and 1,000 × 100 ≤ 3× its floor with a peak RSS ≤ 400 MiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_scheduler import CLASSES, ENGINE, REGIONS  # noqa: E402

API = "modelplane.ai/v1alpha1"
SYSTEM = "modelplane-system"
KUBECONFIG = (
    "YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCmNsdXN0ZXJzOiBbXQpjb250ZXh0czogW10KdXNlcnM6IFtdCg=="
)
SELECTORS = {
    "h100-8x-ib": 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")',
    "a100-4x": 'device.attributes["gpu.nvidia.com"].architecture == "Ampere"',
    "l40s-2x": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "l4-1x": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"',
}


def inference_class(name: str) -> dict[str, Any]:
    """One of the four node recipes."""
    return {
        "apiVersion": API,
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {"devices": CLASSES[name]},
    }


def cluster(i: int) -> list[dict[str, Any]]:
    """Cluster i and its kubeconfig Secret: 2–4 pools of rotating classes."""
    name = f"cluster-{i:04d}"
    names = list(CLASSES)
    pools = [
        {"name": f"pool-{k}", "className": names[(i + k) % 4], "nodeCount": 1 + (i * 7 + k) % 4}
        for k in range(2 + i % 3)
    ]
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-kubeconfig", "namespace": SYSTEM},
        "type": "Opaque",
        "data": {"kubeconfig": KUBECONFIG},
    }
    spec: dict[str, Any] = {
        "source": "Existing",
        "existing": {
            "kubeconfigSecretRef": {
                "namespace": SYSTEM,
                "name": f"{name}-kubeconfig",
                "key": "kubeconfig",
            }
        },
        "pools": pools,
        "gateway": {"address": f"{name}.inference.example.com"},
    }
    labels = {"region": REGIONS[i % 4], "tier": "premium" if i % 3 else "standard"}
    return [
        secret,
        {
            "apiVersion": API,
            "kind": "InferenceCluster",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        },
    ]


def deployment(j: int) -> dict[str, Any]:
    """Deployment j: 1–9 replicas of one GPU of a class, some limited to a region."""
    klass = list(CLASSES)[j % 4]
    spec: dict[str, Any] = {
        "replicas": 1 + (j * 5) % 9,
        "nodeSelector": {
            "devices": [{"name": "gpu", "count": 1, "selectors": [{"cel": SELECTORS[klass]}]}]
        },
        "workers": {"count": 1, "template": ENGINE},
    }
    if j % 3 == 0:
        spec["clusterSelector"] = {"matchLabels": {"region": REGIONS[j % 4]}}
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": f"model-{j:03d}", "namespace": "ml-team"},
        "spec": spec,
    }


def fleet(clusters: int, deployments: int) -> list[dict[str, Any]]:
    """Every object of a generated fleet, as `modelplane render` would load them."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}},
    ]
    objects += [inference_class(name) for name in CLASSES]
    for i in range(clusters):
        objects += cluster(i)
    objects += [deployment(j) for j in range(deployments)]
    return objects


class Phases:
    """CPU seconds spent per phase, accumulated by wrapping the functions that do the work."""

    def __init__(self) -> None:
        """Start every phase at zero."""
        self.seconds = {"decode": 0.0, "encode": 0.0, "schedule": 0.0, "compose": 0.0}
        self._inside_schedule = 0.0

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, with its time added to `phase`."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] += time.process_time() - started

        return timed


def instrument(phases: Phases) -> None:
    """Wrap decode, encode, schedule and every composer where the engine and function call them."""
    from modelplane.compose import registry
    from modelplane.compose.deployments import model_deployment
    from modelplane.crossplane import convert, servicer
    from modelplane.local import fetch, pipeline

    # In-process calls (the default) copy results through `as_json`; calls
    # through a runner use Structs both ways.
    pipeline.as_json = phases.wrap("encode", pipeline.as_json)
    fetch.dict_to_struct = phases.wrap("encode", fetch.dict_to_struct)
    pipeline.struct_to_dict = phases.wrap("decode", pipeline.struct_to_dict)
    convert.dict_to_struct = phases.wrap("encode", convert.dict_to_struct)
    convert.to_input = phases.wrap("decode", convert.to_input)
    servicer.convert = convert
    model_deployment.schedule_input = phases.wrap("schedule", model_deployment.schedule_input)
    lookup = registry.composer_for

    def composer_for(api_version: str, kind: str) -> Any:
        composer = lookup(api_version, kind)
        return None if composer is None else phases.wrap("compose", composer)

    registry.composer_for = composer_for


def warm_composers() -> None:
    """Import every composer's module before the clock starts, as the interpreter is warm
    for the rest: the registry imports them on first use (`compose/registry.py`), which
    would put their imports (about 0.1 s, a CRD's YAML parsed among them) in the render's
    time, where releases that imported them up front did not."""
    from modelplane.compose import registry

    for _kind, where in registry.COMPOSERS.values():
        registry.load(where)


def run_one(spec: str) -> dict[str, Any]:
    """Render one fleet (`CLUSTERSxDEPLOYMENTS`, or a path) in this process and measure it."""
    import gc

    from modelplane.cli.main import GC_THRESHOLDS
    from modelplane.local import ControlPlane, load_paths

    gc.set_threshold(*GC_THRESHOLDS)  # as the `modelplane` command runs
    phases = Phases()
    instrument(phases)
    if "x" in spec and spec.replace("x", "").isdigit():
        n, d = (int(x) for x in spec.split("x"))
        objects = fleet(n, d)
    else:
        objects = load_paths([str(ROOT / spec)])
    warm_composers()
    started, cpu = time.perf_counter(), time.process_time()
    plane = ControlPlane(objects)
    result = plane.run(max_rounds=50)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    phases.seconds["compose"] -= phases.seconds["schedule"]
    replicas = sum(1 for o in result.store.objects() if o["kind"] == "ModelReplica")
    return {
        "fleet": spec,
        "objects": len(objects),
        "replicas": replicas,
        "wall": wall,
        "cpu": cpu,
        "rounds": result.rounds,
        "calls": getattr(plane, "calls", 0),
        "skipped": getattr(plane, "skipped", 0),
        "phases": phases.seconds,
        "rss_mib": peak_rss_mib(),
    }


def measure(spec: str) -> dict[str, Any]:
    """Render in a fresh interpreter, so that peak RSS and caches are that render's own."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", spec], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout))


def commands_cpu(specs: list[str], repeat: int) -> dict[str, float]:
    """The least CPU time of `repeat` runs of the command per spec, the specs taken in
    turn (quickstart, fleet, quickstart, …) so that every spec sees the same spells of
    a shared machine's noise, which only ever adds time."""
    best = dict.fromkeys(specs, float("inf"))
    for _ in range(repeat):
        for spec in specs:
            best[spec] = min(best[spec], command_cpu(spec))
    return best


def command_cpu(spec: str) -> float:
    """CPU seconds of `modelplane render <folder> -o yaml` for a fleet (written to a folder
    first) or an example folder: what a user's render costs, start-up and output included."""
    from modelplane.local.output import dump_yaml

    with tempfile.TemporaryDirectory() as tmp:
        folder = ROOT / spec
        if "x" in spec and spec.replace("x", "").isdigit():
            n, d = (int(x) for x in spec.split("x"))
            folder = Path(tmp)
            (folder / "fleet.yaml").write_text(dump_yaml(fleet(n, d)), encoding="utf-8")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [str(Path(sys.executable).parent / "modelplane"), "render", str(folder), "-o", "yaml"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def table(rows: list[dict[str, Any]]) -> Iterator[str]:
    """The results as a fixed-width table, ratios against the first row."""
    base, cli = rows[0]["cpu"], rows[0]["cli_cpu"]
    yield (
        f"{'fleet':>20} {'objects':>7} {'replicas':>8} {'wall s':>8} {'CPU s':>7} {'× qs':>6} "
        f"{'CLI CPU':>7} {'× qs':>6} "
        f"{'rounds':>6} "
        f"{'calls':>6} {'skipped':>7} {'decode':>7} {'encode':>7} {'sched':>7} {'compose':>7} "
        f"{'RSS MiB':>8}"
    )
    for r in rows:
        p = r["phases"]
        yield (
            f"{r['fleet']:>20} {r['objects']:>7} {r['replicas']:>8} {r['wall']:>8.2f} "
            f"{r['cpu']:>7.2f} {r['cpu'] / base:>6.1f} "
            f"{r['cli_cpu']:>7.2f} {r['cli_cpu'] / cli:>6.1f} {r['rounds']:>6} {r['calls']:>6} "
            f"{r['skipped']:>7} "
            f"{p['decode']:>7.2f} {p['encode']:>7.2f} {p['schedule']:>7.2f} {p['compose']:>7.2f} "
            f"{r['rss_mib']:>8.0f}"
        )


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
    """Run every fleet, each in its own process, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument(
        "--sizes",
        default="20x20,200x20,1000x20,20x100,200x100,1000x100",
        help="comma-separated CLUSTERSxDEPLOYMENTS fleets",
    )
    parser.add_argument(
        "--no-command",
        action="store_true",
        help="skip the `modelplane render` command runs (its YAML output is slow on large fleets)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="run the `modelplane render` commands this many times in turn, keeping the least "
        "CPU time of each",
    )
    parser.add_argument(
        "--floor",
        default="200x20,1000x100",
        help="comma-separated fleets to measure against the render's floor (bench_floor.py)",
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the floor comparison")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return
    specs = ["examples/quickstart", *args.sizes.split(",")]
    rows = []
    for spec in specs:
        rows.append(measure(spec))
        print(f"  {spec}: {rows[-1]['wall']:.1f}s", file=sys.stderr, flush=True)
    cli = commands_cpu(specs, args.repeat) if not args.no_command else {}
    for row in rows:
        row["cli_cpu"] = cli.get(row["fleet"], float("nan"))
    print("\n".join(table(rows)))
    if not args.no_floor:
        import bench_floor

        found = bench_floor.run(args.floor.split(","), args.repeat)
        print()
        print("\n".join(bench_floor.table(found)))
        print("\n".join(bench_floor.verdicts(found)))


if __name__ == "__main__":
    main()
