"""Property fuzzing of the DRA layer with hypothesis: hostile selectors, quantities,
versions and devices raise only the documented errors, and no evaluation is slow.

Documented errors: `QuantityError` (parse_quantity), `SemverError` (parse_semver),
`CompileError` (compile_selector, evaluate), `EvaluationError` (evaluate); `prepare_device`
and `Selector.evaluate`/`matches` never raise. Anything else escaping is a bug, and so is
a single evaluation over 100 ms (one selector must not stall a reconcile).

Bounded: each test draws `MODELPLANE_FUZZ_EXAMPLES` examples (default below); under
CI=true the hypothesis profile derandomizes them (tests/conftest.py), so CI is repeatable.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.dra import (
    CompileError,
    EvaluationError,
    Outcome,
    QuantityError,
    Selector,
    SemverError,
    compile_selector,
    device_errors,
    evaluate,
    parse_quantity,
    parse_semver,
    prepare_device,
)

EXAMPLES = int(os.environ.get("MODELPLANE_FUZZ_EXAMPLES", "250"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None)

# The bound on one evaluation. It is checked against the CPU time of this
# process (time.process_time), not wall-clock time: on a loaded 2-core machine the
# process may wait for a core for a long while, which wall-clock time would count and
# CPU time does not. An evaluation here takes microseconds to a few milliseconds of CPU,
# so 100 ms is a margin of well over 10x, while a backtracking regex (the bug this
# guards against) takes seconds to minutes on the patterns drawn below.
EVALUATION_BUDGET_SECONDS = 0.100

# -- strategies -----------------------------------------------------------------------

DIGITS = st.text("0123456789", min_size=1, max_size=30)
# Numbers around and far beyond every limit: int64/uint64, MAX_DIGITS, Python's 4,300.
LONG_NUMBER = st.sampled_from([19, 20, 21, 999, 1000, 1001, 4300, 4301, 5000]).flatmap(
    lambda n: st.sampled_from(["9", "1", "0"]).map(lambda d: d * n)
)
NUMBER = DIGITS | LONG_NUMBER
SUFFIX = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
) | st.builds(lambda e, n: e + n, st.sampled_from(["e", "E", "e+", "e-"]), NUMBER)


@st.composite
def quantity_text(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    fraction = draw(st.none() | NUMBER | st.just(""))
    text = sign + draw(NUMBER) + ("" if fraction is None else "." + fraction) + draw(SUFFIX)
    return text


QUANTITY = quantity_text() | st.text("0123456789.+-eEinumkKMGTPx ", max_size=16)

IDENTIFIER = st.sampled_from(["0", "01", "1", "rc", "a-1", "-", "", "x.y"]) | NUMBER


@st.composite
def version_text(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(["", "v"])) + ".".join(
        draw(st.lists(NUMBER, min_size=1, max_size=4))
    )
    if draw(st.booleans()):
        text += "-" + ".".join(draw(st.lists(IDENTIFIER, min_size=1, max_size=3)))
    if draw(st.booleans()):
        text += "+" + ".".join(draw(st.lists(IDENTIFIER, min_size=1, max_size=2)))
    return text


VERSION = version_text() | st.text("0123456789.+-abrcv ", max_size=16)

# Regexes that make a backtracking engine take exponential time on "aaa…a!", valid
# RE2 syntax, and patterns RE2 refuses (look-around, back-references, bad syntax).
PATTERN = st.sampled_from(
    [
        "(a+)+$",
        "(a|a)*$",
        "(a|aa)+$",
        "^(a+)+b",
        "(a*)*b",
        "(.*a){20}",
        "(x+x+)+y",
        "[0-9]+",
        "^$",
        "",
        "(?i)A+",
        "\\\\w+",
        "(?<=a)b",
        "(a)\\\\1",
        "(",
        "a{1001}",
        "[z-a]",
    ]
)
SUBJECT = st.builds(
    lambda n, tail: "a" * n + tail,
    # 20 to 24 "a"s: a backtracking engine then takes 0.1 to 2 s (enough to fail this
    # test rather than hang it), RE2 microseconds.
    st.sampled_from([20, 22, 24]) | st.integers(0, 24),
    st.sampled_from(["", "!", "b", "x" * 30 + "!"]),
)

ATOMS = [
    "device.driver",
    'device.attributes["gpu.nvidia.com"].architecture',
    'device.attributes["gpu.nvidia.com"].index',
    'device.attributes["gpu.nvidia.com"].driverVersion',
    'device.attributes["other.example.com"].x',
    'device.capacity["gpu.nvidia.com"].memory',
    "device.allowMultipleAllocations",
    "true",
    "1",
    "-1",
    "2.5",
    '"Hopper"',
    "[1, 2]",
    "{'a': 1}",
]


def _literal(text: str) -> str:
    return text.replace("\\", "").replace('"', "")


LEAF = (
    st.sampled_from(ATOMS)
    | st.builds(lambda q: f'quantity("{_literal(q)}")', QUANTITY)
    | st.builds(lambda q: f'isQuantity("{_literal(q)}")', QUANTITY)
    | st.builds(lambda v: f'semver("{_literal(v)}")', VERSION)
    | st.builds(lambda v: f'semver("{_literal(v)}", true)', VERSION)
    | st.builds(lambda v: f'isSemver("{_literal(v)}")', VERSION)
    | st.builds(lambda s, p: f'"{s}".find("{p}") == ""', SUBJECT, PATTERN)
    | st.builds(lambda s, p: f'"{s}".findAll("{p}").size() > 0', SUBJECT, PATTERN)
    | st.builds(lambda s, p: f'"{s}".matches("{p}")', SUBJECT, PATTERN)
)
TEMPLATES = [
    "{a}.compareTo({b}) >= 0",
    "{a}.isGreaterThan({b})",
    "{a}.isLessThan({b})",
    "{a}.add({b}).sub({b}).isInteger()",
    "{a}.asInteger() > 0",
    "{a}.major() == 1",
    "{a} == {b}",
    "{a} != {b}",
    "{a} in [{b}, {a}]",
    "({a}) && ({b})",
    "({a}) || !({b})",
    "[{a}, {b}].exists(x, x == {a})",
    "cel.bind(x, {a}, x == {b})",
    "{a}.size() < 3",
]


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda t, a, b: t.format(a=a, b=b), st.sampled_from(TEMPLATES), children, children
    )


@st.composite
def _with_noise(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    text = draw(base)
    i = draw(st.integers(0, len(text)))
    return text[:i] + draw(st.text("()[]{}.,?:!\"'\\ $@#a1_", max_size=3)) + text[i:]


EXPRESSION = st.recursive(LEAF, _combine, max_leaves=6)
SELECTOR = EXPRESSION | _with_noise(EXPRESSION)


@st.composite
def device(draw: st.DrawFn) -> dict[str, Any]:
    """A device in the InferenceClass wire form, its values drawn hostile."""
    attributes: dict[str, Any] = {"architecture": {"string": "Hopper"}}
    attributes["driverVersion"] = {"version": draw(VERSION)}
    attributes["index"] = {"int": draw(st.integers(-(2**70), 2**70))}
    if draw(st.booleans()):
        attributes["other.example.com/x"] = draw(
            st.sampled_from([{"bool": True}, {"string": 5}, {"int": "7"}, {}, "bare"])
        )
    return {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "attributes": attributes,
        "capacity": {"memory": {"value": draw(QUANTITY)}},
    }


FIXED_DEVICE = prepare_device(
    {
        "driver": "gpu.nvidia.com",
        "attributes": {
            "architecture": {"string": "Hopper"},
            "index": {"int": 3},
            "driverVersion": {"version": "570.124.6"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
)

# -- helpers --------------------------------------------------------------------------


def _only(call: Callable[[], object], *allowed: type[Exception]) -> None:
    with contextlib.suppress(*allowed):
        call()


def _timed(call: Callable[[], Any]) -> Any:
    """Run one evaluation and hold it to the budget (CPU time; see the comment above)."""
    start = time.process_time()
    result = call()
    spent = time.process_time() - start
    assert spent < EVALUATION_BUDGET_SECONDS, f"one evaluation took {spent * 1000:.0f} ms"
    return result


def _check_selector(selector: Selector, prepared: Any) -> None:
    outcome = _timed(lambda: selector.evaluate(prepared))
    assert isinstance(outcome, Outcome)
    assert (outcome.value is None) != (outcome.error is None)
    matched = _timed(lambda: selector.matches(prepared))
    assert matched is (outcome.value is True)


# -- properties -----------------------------------------------------------------------


@FUZZ
@given(QUANTITY)
def test_quantities_raise_only_quantity_error(text: str) -> None:
    _only(lambda: parse_quantity(text), QuantityError)


@FUZZ
@given(VERSION, st.booleans())
def test_versions_raise_only_semver_error(text: str, normalize: bool) -> None:
    _only(lambda: parse_semver(text, normalize), SemverError)


@FUZZ
@given(SELECTOR)
def test_selectors_compile_or_fail_cleanly_and_evaluate_fast(expression: str) -> None:
    try:
        selector = compile_selector(expression)
    except CompileError:
        pass
    else:
        _check_selector(selector, FIXED_DEVICE)
    try:
        evaluate(expression, FIXED_DEVICE)  # compiles (cached from here on)
    except (CompileError, EvaluationError):
        return
    _only(lambda: _timed(lambda: evaluate(expression, FIXED_DEVICE)), EvaluationError)


@FUZZ
@given(SUBJECT, PATTERN, st.sampled_from(['find("{}") == ""', 'findAll("{}").size() > 0']))
def test_regexes_evaluate_fast_or_fail_cleanly(subject: str, pattern: str, call: str) -> None:
    selector = compile_selector(f'"{subject}".' + call.format(pattern))
    outcome = _timed(lambda: selector.evaluate(FIXED_DEVICE))
    if outcome.error is not None:
        assert outcome.error.startswith("error parsing regexp: ")


@FUZZ
@given(device(), SELECTOR)
def test_hostile_devices_are_non_matches_never_crashes(
    raw_device: dict[str, Any], expression: str
) -> None:
    prepared = prepare_device(raw_device)
    # The class check and selector evaluation read devices the same way.
    assert (device_errors(raw_device) == []) == (prepared.error is None)
    try:
        selector = compile_selector(expression)
    except CompileError:
        return
    _check_selector(selector, prepared)
    if prepared.error is not None:
        assert selector.matches(raw_device) is False
