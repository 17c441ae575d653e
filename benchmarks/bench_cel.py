"""Selector throughput: modelplane.dra.cel (cel-expr-python) against cel-python.

Evaluates typical DRA selectors over 10,000 distinct devices, end to end from the
InferenceClass device dicts (conversion included), first with `modelplane.dra.cel`, then
with cel-python's interpreter in a throwaway virtualenv (cel-python is never a project
dependency), and prints evaluations per second and the ratio.

    .venv/bin/python benchmarks/bench_cel.py [--devices N] [--celpy-venv DIR]

The cel-python side gets the same Kubernetes quantity semantics (our pure-Python
`quantity.py`, loaded by path) and the same device-to-activation mapping, and both sides
must agree on every result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SELECTORS = [
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0 && '
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper" && '
    'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("79Gi"))',
]

# Each engine runs every scenario twice over the same devices: the first pass pays for
# warming caches (parsed quantities/versions), the second is the steady state a scheduler
# re-evaluating the same pools on every reconcile sees.
PASSES = 2

ARCHITECTURES = ["Hopper", "Ampere", "Ada", "Blackwell"]
MEMORIES = ["16Gi", "24Gi", "40Gi", "48Gi", "80Gi", "94Gi", "141Gi", "192Gi", "40960Mi"]


def make_devices(n: int) -> list[dict[str, Any]]:
    """n distinct devices in the InferenceClass wire form (deterministic)."""
    devices = []
    for i in range(n):
        devices.append(
            {
                "name": f"gpu-{i}",
                "claim": "DRA",
                "driver": "gpu.nvidia.com",
                "deviceClassName": "gpu.nvidia.com",
                "count": 1 + i % 8,
                "attributes": {
                    "architecture": {"string": ARCHITECTURES[i % len(ARCHITECTURES)]},
                    "gpu.nvidia.com/productName": {"string": f"GPU-{i % 13}"},
                    "index": {"int": i},
                    "driverVersion": {"version": f"5{i % 10}0.{i % 97}.{i % 31}"},
                },
                "capacity": {"memory": {"value": MEMORIES[(i * 7) % len(MEMORIES)]}},
            }
        )
    return devices


def bench_ours(devices: list[dict[str, Any]], texts: list[str]) -> tuple[list[float], list[bool]]:
    """Evaluations per second and results, end to end from the dicts."""
    sys.path.insert(0, str(ROOT))
    from modelplane.dra.cel import compile_selector, prepare_device

    selectors = [compile_selector(s) for s in texts]
    rates: list[float] = []
    for _ in range(PASSES):
        results: list[bool] = []
        start = time.perf_counter()
        for device in devices:
            prepared = prepare_device(device)
            for sel in selectors:
                results.append(sel.matches(prepared))
        rates.append(len(results) / (time.perf_counter() - start))
    return rates, results


CELPY_CHILD = textwrap.dedent(
    """
    import importlib.util, json, sys, time
    import celpy
    from celpy import celtypes

    spec = importlib.util.spec_from_file_location("mpq", sys.argv[1])
    mpq = importlib.util.module_from_spec(spec)
    sys.modules["mpq"] = mpq
    spec.loader.exec_module(mpq)

    class Quantity(celtypes.StringType):
        pass

    def quantity(s):
        q = Quantity(str(s))
        q.q = mpq.parse_quantity(str(s))
        return q

    functions = {
        "quantity": quantity,
        "compareTo": lambda a, b: celtypes.IntType(a.q.cmp(b.q)),
        "isGreaterThan": lambda a, b: celtypes.BoolType(a.q.cmp(b.q) == 1),
        "isLessThan": lambda a, b: celtypes.BoolType(a.q.cmp(b.q) == -1),
    }

    def split(name, driver):
        return name.split("/", 1) if "/" in name else (driver, name)

    def activation(dev):
        driver = dev["driver"]
        attrs, caps = {}, {}
        for name, a in dev.get("attributes", {}).items():
            domain, ident = split(name, driver)
            for kind in ("int", "bool", "string", "version"):
                if a.get(kind) is not None:
                    attrs.setdefault(domain, {})[ident] = a[kind]
                    break
        for name, c in dev.get("capacity", {}).items():
            domain, ident = split(name, driver)
            caps.setdefault(domain, {})[ident] = quantity(c["value"])
        S = celtypes.StringType
        capacity = celtypes.MapType(
            {S(d): celtypes.MapType({S(k): v for k, v in m.items()}) for d, m in caps.items()}
        )
        device = celtypes.MapType({
            S("driver"): S(driver),
            S("attributes"): celpy.json_to_cel(attrs),
            S("capacity"): capacity,
        })
        return {"device": device}

    payload = json.load(sys.stdin)
    env = celpy.Environment()
    programs = [env.program(env.compile(s), functions=functions) for s in payload["selectors"]]
    rates = []
    for _ in range(payload["passes"]):
        results = []
        start = time.perf_counter()
        for dev in payload["devices"]:
            act = activation(dev)
            for p in programs:
                results.append(bool(p.evaluate(act)))
        rates.append(len(results) / (time.perf_counter() - start))
    json.dump({"rates": rates, "results": results}, sys.stdout)
    """
)


def celpy_python(venv: Path) -> str:
    """A Python with cel-python installed in `venv` (created when missing)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    probe = subprocess.run([str(python), "-c", "import celpy"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "cel-python==0.5.0"],
            check=True,
        )
    return str(python)


def bench_celpy(
    devices: list[dict[str, Any]], texts: list[str], python: str
) -> tuple[list[float], list[bool]]:
    """Evaluations per second and results with cel-python, in its own interpreter."""
    payload = json.dumps({"selectors": texts, "devices": devices, "passes": PASSES})
    quantity_py = str(ROOT / "modelplane" / "dra" / "quantity.py")
    out = subprocess.run(
        [python, "-c", CELPY_CHILD, quantity_py],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    data = json.loads(out.stdout)
    return [float(r) for r in data["rates"]], [bool(x) for x in data["results"]]


def main() -> None:
    """Run both engines and print throughput and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--celpy-venv", type=Path, default=None)
    args = parser.parse_args()

    devices = make_devices(args.devices)
    with tempfile.TemporaryDirectory(prefix="celpy-bench-") as scratch:
        python = celpy_python(args.celpy_venv or Path(scratch))
        run(devices, python)


def run(devices: list[dict[str, Any]], python: str) -> None:
    """Benchmark both engines on the scenarios and print the table."""
    print(f"{len(devices)} distinct devices, end to end from the device dicts")
    for label, texts in (
        ("the typical selector, one evaluation per device", SELECTORS[:1]),
        ("two selectors per device (device prepared once)", SELECTORS),
    ):
        ours, our_results = bench_ours(devices, texts)
        theirs, their_results = bench_celpy(devices, texts, python)
        if our_results != their_results:
            raise SystemExit("the two engines disagree on at least one selector result")
        print(f"{label}:")
        for i, phase in enumerate(("first pass (cold caches)", "second pass (warm)")):
            print(f"  {phase}:")
            print(f"    modelplane.dra.cel (cel-expr-python): {ours[i]:10,.0f} evaluations/s")
            print(f"    cel-python 0.5.0 (interpreter):       {theirs[i]:10,.0f} evaluations/s")
            print(f"    ratio: {ours[i] / theirs[i]:.1f}x")


if __name__ == "__main__":
    main()
