"""Benchmark: `modelplane render -o json` next to its physical floor, in one run.

The floor is the work no render can avoid:

- **start-up**: the command's fixed cost, measured as a render of a folder
  holding a single Namespace (`modelplane render <one-namespace> -o json`);
- **parse**: reading the fleet's YAML with libyaml (`yaml.load_all`,
  `CSafeLoader`), in this process;
- **emit**: writing the render's output as `-o json` does (`json.dumps` with
  indent 2, sorted keys), of the output the render printed, in this process.

For each generated fleet (`bench_render.fleet`, written to a folder first) it
runs the command `modelplane render <folder> -o json` in a fresh process and
reports its CPU time (user + system), the floor's parts and their sum, the
render's ratio to the floor, and the command's peak RSS (the child's own
VmHWM, written as it exits). The quickstart's command is measured alongside,
for the ratio to it. Runs alternate (start-up, quickstart, each fleet, in
turn, `--repeat` times) so every figure sees the same spells of a shared
machine's noise; each figure is the median of its runs.

    .venv/bin/python benchmarks/bench_floor.py [--sizes 200x20,1000x100] [--repeat 5]

Targets: 200 × 20 ≤ 2× its floor, 1,000 × 100 ≤ 3× its floor with a peak
RSS ≤ 400 MiB.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

# The command as the console script runs it, with its own peak RSS written to a
# file as it exits: a child's ru_maxrss would also count its parent's pages
# (it survives fork and exec), so the parent's fleet would inflate it.
_CHILD = """
import atexit, sys
peak_file = sys.argv.pop(1)
def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            open(peak_file, "w").write(line.split()[1])
atexit.register(_peak)
from modelplane.cli.main import main
sys.argv[0] = "modelplane"
main()
"""

TARGETS = {"200x20": 2.0, "1000x100": 3.0}
PEAK_TARGET_MIB = 400


@dataclass
class Runs:
    """The measurements of one spec (a fleet, the quickstart or the start-up render)."""

    spec: str
    folder: Path
    cpu: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    parse: list[float] = field(default_factory=list)
    emit: list[float] = field(default_factory=list)


def is_fleet(spec: str) -> bool:
    """Whether `spec` names a generated fleet (CLUSTERSxDEPLOYMENTS), not a folder."""
    return "x" in spec and spec.replace("x", "").isdigit()


def write_fleet(spec: str, into: Path) -> Path:
    """A folder holding the fleet `spec` (CLUSTERSxDEPLOYMENTS) as one YAML file."""
    from bench_render import fleet

    from modelplane.local.output import dump_yaml

    n, d = (int(x) for x in spec.split("x"))
    folder = into / spec
    folder.mkdir()
    (folder / "fleet.yaml").write_text(dump_yaml(fleet(n, d)), encoding="utf-8")
    return folder


def write_start_up(into: Path) -> Path:
    """A folder holding a single Namespace: its render is the command's fixed cost."""
    folder = into / "start-up"
    folder.mkdir()
    doc = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: start-up\n"
    (folder / "namespace.yaml").write_text(doc, encoding="utf-8")
    return folder


def render(folder: Path, out: Path) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of `modelplane render <folder> -o json > out`."""
    peak = out.with_suffix(".peak")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with out.open("wb") as sink:
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(peak), "render", str(folder), "-o", "json"],
            check=True,
            stdout=sink,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, int(peak.read_text()) / 1024


def parse_cpu(folder: Path) -> float:
    """CPU seconds to parse every YAML file of the folder with libyaml."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))]
    started = time.process_time()
    for text in texts:
        for _ in yaml.load_all(text, Loader=yaml.CSafeLoader):
            pass
    return time.process_time() - started


def emit_cpu(output: Path) -> float:
    """CPU seconds to write the render's output as `-o json` writes it."""
    doc = json.loads(output.read_text(encoding="utf-8"))
    started = time.process_time()
    json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    return time.process_time() - started


def measure(specs: list[str], repeat: int) -> tuple[Runs, dict[str, Runs]]:
    """Every spec's runs and the start-up's, taken in turn `repeat` times."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        start = Runs("start-up", write_start_up(where))
        runs = {
            spec: Runs(spec, write_fleet(spec, where) if is_fleet(spec) else ROOT / spec)
            for spec in specs
        }
        for _ in range(repeat):
            for r in (start, *runs.values()):
                out = where / f"{r.folder.name}.json"
                cpu, rss = render(r.folder, out)
                r.cpu.append(cpu)
                r.rss_mib.append(rss)
                r.parse.append(parse_cpu(r.folder))
                r.emit.append(emit_cpu(out))
                out.unlink()
        return start, runs


def rows(start: Runs, runs: dict[str, Runs]) -> list[dict[str, Any]]:
    """One row per spec: medians of the render and of the floor's parts, and the ratios."""
    up = statistics.median(start.cpu)
    qs = next((r for r in runs.values() if not is_fleet(r.spec)), None)
    out = []
    for r in runs.values():
        cpu, parse, emit = (statistics.median(x) for x in (r.cpu, r.parse, r.emit))
        floor = up + parse + emit
        out.append(
            {
                "fleet": r.spec,
                "render": cpu,
                "start_up": up,
                "parse": parse,
                "emit": emit,
                "floor": floor,
                "x_floor": cpu / floor,
                "x_quickstart": cpu / statistics.median(qs.cpu) if qs else float("nan"),
                "rss_mib": max(r.rss_mib),
                "target": TARGETS.get(r.spec),
            }
        )
    return out


def table(found: list[dict[str, Any]]) -> Iterator[str]:
    """The rows as a fixed-width table, each ratio with its target when it has one."""
    yield (
        f"{'fleet':>20} {'render s':>8} {'start-up':>8} {'parse':>6} {'emit':>6} "
        f"{'floor s':>7} {'× floor':>7} {'target':>6} {'× qs':>5} {'RSS MiB':>8}"
    )
    for r in found:
        target = f"≤{r['target']:.0f}×" if r["target"] else ""
        yield (
            f"{r['fleet']:>20} {r['render']:>8.2f} {r['start_up']:>8.2f} {r['parse']:>6.2f} "
            f"{r['emit']:>6.2f} {r['floor']:>7.2f} {r['x_floor']:>7.2f} {target:>6} "
            f"{r['x_quickstart']:>5.1f} {r['rss_mib']:>8.0f}"
        )


def verdicts(found: list[dict[str, Any]]) -> Iterator[str]:
    """One line per target: met or not."""
    for r in found:
        if r["target"]:
            ok = r["x_floor"] <= r["target"]
            yield f"{r['fleet']}: {r['x_floor']:.2f}× floor (target ≤ {r['target']:.0f}×): " + (
                "met" if ok else "MISSED"
            )
        if r["fleet"] == "1000x100":
            ok = r["rss_mib"] <= PEAK_TARGET_MIB
            yield f"{r['fleet']}: peak {r['rss_mib']:.0f} MiB (target ≤ {PEAK_TARGET_MIB}): " + (
                "met" if ok else "MISSED"
            )


def run(sizes: list[str], repeat: int) -> list[dict[str, Any]]:
    """Measure the quickstart and the fleets against the floor; the rows."""
    start, runs = measure(["examples/quickstart", *sizes], repeat)
    return rows(start, runs)


def main() -> None:
    """Measure and print the table and the targets."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="200x20,1000x100", help="CLUSTERSxDEPLOYMENTS, ...")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    found = run(args.sizes.split(","), args.repeat)
    if args.json:
        print(json.dumps(found, indent=2))
        return
    print("\n".join(table(found)))
    print("\n".join(verdicts(found)))
    print(f"(CPU seconds, medians of {args.repeat} runs)")


if __name__ == "__main__":
    main()
