"""Fuzzing the public API: only CompileError / EvaluationError / QuantityError / SemverError.

Generated quantities, versions and selector strings (grammar fragments mixed with random
characters) go through `parse_quantity`, `parse_semver`, `compile_selector`,
`Selector.evaluate/matches` and `evaluate`. CI runs a small budget; set
MODELPLANE_FUZZ_CASES=100000 for the full run.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable

from modelplane.dra.cel import (
    CompileError,
    EvaluationError,
    Outcome,
    compile_selector,
    evaluate,
    prepare_device,
)
from modelplane.dra.quantity import QuantityError, parse_quantity
from modelplane.dra.semver import SemverError, parse_semver

CASES = int(os.environ.get("MODELPLANE_FUZZ_CASES", "3000"))

QUANTITY_CHARS = "0123456789.+-eEinumkKMGTP" + "xX ,_aZ"
VERSION_CHARS = "0123456789.+-abcrv" + " _!~"
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

ATOMS = [
    "device",
    "device.driver",
    "device.attributes",
    "device.capacity",
    'device.attributes["gpu.nvidia.com"]',
    'device.capacity["gpu.nvidia.com"]',
    'device.attributes["gpu.nvidia.com"].architecture',
    'device.attributes["gpu.nvidia.com"].index',
    'device.attributes["gpu.nvidia.com"].driverVersion',
    'device.capacity["gpu.nvidia.com"].memory',
    'device.attributes["other.example.com"].x',
    "device.allowMultipleAllocations",
    "true",
    "false",
    "null",
    "0",
    "-1",
    "9223372036854775807",
    "1u",
    "2.5",
    '"Hopper"',
    "'a,b'",
    "b'x'",
    "[1, 2, 3]",
    "{'a': 1}",
    "[]",
]
CALLS = [
    'quantity("{q}")',
    'isQuantity("{q}")',
    'semver("{v}")',
    'semver("{v}", true)',
    'isSemver("{v}")',
    "{a}.compareTo({b})",
    "{a}.isGreaterThan({b})",
    "{a}.isLessThan({b})",
    "{a}.add({b})",
    "{a}.sub({b})",
    "{a}.sign()",
    "{a}.isInteger()",
    "{a}.asInteger()",
    "{a}.asApproximateFloat()",
    "{a}.major()",
    "{a}.size()",
    "{a}.matches({b})",
    "{a}.find({b})",
    "{a}.findAll({b})",
    "{a}.split({b})",
    "{a}.lowerAscii()",
    "{a}.exists(x, {b})",
    "{a}.all(x, {b})",
    "{a}.map(x, {b})",
    "{a}.filter(x, {b})",
    "cel.bind(x, {a}, {b})",
    "has({a}.x)",
    "{a}[?{b}].orValue({a})",
    "optional.of({a}).hasValue()",
    "{a} in {b}",
    "{a}[{b}]",
]
OPERATORS = ["==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%"]
NOISE = "()[]{}.,?:!\"'\\ $@#abc123_"

DEVICE = {
    "name": "gpu",
    "claim": "DRA",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "attributes": {
        "architecture": {"string": "Hopper"},
        "index": {"int": 3},
        "driverVersion": {"version": "550.54.15"},
        "mig": {"bool": False},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}


def gen_quantity(r: random.Random) -> str:
    if r.random() < 0.3:
        return "".join(r.choice(QUANTITY_CHARS) for _ in range(r.randint(0, 12)))
    sign = r.choice(["", "", "-", "+"])
    whole = str(r.randint(0, 10 ** r.randint(0, 25)))
    frac = "." + str(r.randint(0, 10 ** r.randint(0, 12))) if r.random() < 0.4 else ""
    if r.random() < 0.2:
        suffix = r.choice("eE") + str(
            r.randint(-(2**33), 2**33) if r.random() < 0.1 else r.randint(-40, 40)
        )
    else:
        suffix = r.choice(SUFFIXES)
    return sign + whole + frac + suffix


def gen_version(r: random.Random) -> str:
    if r.random() < 0.3:
        return "".join(r.choice(VERSION_CHARS) for _ in range(r.randint(0, 14)))
    parts = [str(r.randint(0, 10 ** r.randint(0, 21))) for _ in range(r.randint(1, 4))]
    text = r.choice(["", "v"]) + ".".join(parts)
    if r.random() < 0.3:
        text += "-" + ".".join(r.choice(["alpha", "1", "01", "rc-1", "", "x.y"]) for _ in range(2))
    if r.random() < 0.2:
        text += "+" + r.choice(["build", "1.2", "", "!"])
    return text


def gen_expr(r: random.Random, depth: int = 0) -> str:
    roll = r.random()
    if depth > 3 or roll < 0.3:
        return r.choice(ATOMS)
    if roll < 0.6:
        template = r.choice(CALLS)
        return template.format(
            q=gen_quantity(r).replace('"', ""),
            v=gen_version(r).replace('"', ""),
            a=gen_expr(r, depth + 1),
            b=gen_expr(r, depth + 1),
        )
    if roll < 0.85:
        return f"({gen_expr(r, depth + 1)} {r.choice(OPERATORS)} {gen_expr(r, depth + 1)})"
    if roll < 0.92:
        return "!" + gen_expr(r, depth + 1)
    base = gen_expr(r, depth + 1)
    i = r.randint(0, len(base))
    return base[:i] + "".join(r.choice(NOISE) for _ in range(r.randint(1, 3))) + base[i:]


def _expect_only(fn: Callable[[], object], *allowed: type[BaseException]) -> None:
    with contextlib.suppress(*allowed):
        fn()


def run_fuzz(cases: int, seed: int = 20251122) -> dict[str, int]:
    """Run `cases` generated inputs of each kind; return counts of outcomes."""
    r = random.Random(seed)
    prepared = prepare_device(DEVICE)
    counts = {"quantities": 0, "versions": 0, "selectors": 0, "compiled": 0, "matched": 0}
    for _ in range(cases):
        q = gen_quantity(r)
        _expect_only(lambda q=q: parse_quantity(q), QuantityError)
        counts["quantities"] += 1
        v = gen_version(r)
        _expect_only(lambda v=v: parse_semver(v), SemverError)
        _expect_only(lambda v=v: parse_semver(v, True), SemverError)
        counts["versions"] += 1
        expr = gen_expr(r)
        counts["selectors"] += 1
        try:
            sel = compile_selector(expr)
        except CompileError:
            pass
        else:
            counts["compiled"] += 1
            outcome = sel.evaluate(prepared)
            assert isinstance(outcome, Outcome)
            assert (outcome.value is None) != (outcome.error is None)
            matched = sel.matches(DEVICE)
            assert matched is (outcome.value is True)
            counts["matched"] += int(matched)
        _expect_only(lambda e=expr: evaluate(e, prepared), CompileError, EvaluationError)
    return counts


def test_fuzz_public_api() -> None:
    counts = run_fuzz(CASES)
    assert counts["selectors"] == CASES
    # The generator must reach evaluation, not only produce syntax errors.
    assert counts["compiled"] > CASES // 10
    assert counts["matched"] > 0
