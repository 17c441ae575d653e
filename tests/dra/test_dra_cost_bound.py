"""Pathological expressions are stopped and reported: never a hang, never unbounded memory.

Two mechanisms: the engine stops an evaluation after a fixed budget of comprehension
iterations (an EvaluationError, so the selector is a non-match), and a static estimate
rejects at compile time what would build huge values without iterating (a CompileError,
as Kubernetes' API validation rejects selectors whose estimated cost is too high).
"""

from __future__ import annotations

import pytest

from modelplane.dra.cel import CompileError, EvaluationError, compile_selector, evaluate

BIG = "[" + ",".join(str(i) for i in range(1000)) + "]"
MID = "[" + ",".join(str(i) for i in range(100)) + "]"
DEVICE = {"driver": "d.example.com", "attributes": {"s": {"string": "abc"}}}


def _doubling(levels: int) -> str:
    """Nested cel.bind doubling a 16-byte string `levels` times."""
    body = f"a{levels}.size() > 0"
    for i in range(levels, 0, -1):
        body = f"cel.bind(a{i}, a{i - 1} + a{i - 1}, {body})"
    return f"cel.bind(a0, 'xxxxxxxxxxxxxxxx', {body})"


@pytest.mark.parametrize(
    "expression",
    [
        f"{BIG}.all(x, {BIG}.all(y, x + y >= 0))",
        f"{MID}.exists(x, {MID}.exists(y, {MID}.exists(z, x + y + z < 0)))",
        f"{BIG}.map(x, {BIG}.map(y, 'xxxx')).size() > 0",
        f"{BIG}.filter(x, {BIG}.filter(y, y == x).size() > 1).size() > 0",
    ],
)
def test_nested_comprehensions_are_stopped_at_run_time(expression: str) -> None:
    sel = compile_selector(expression)
    outcome = sel.evaluate(DEVICE)
    assert outcome.value is None
    assert outcome.error is not None
    assert "budget" in outcome.error
    assert sel.matches(DEVICE) is False
    with pytest.raises(EvaluationError):
        evaluate(expression, DEVICE)


@pytest.mark.parametrize(
    "expression",
    [
        _doubling(24),
        "cel.bind(s, " + "'ab'" + ".replace('a', 'aaaaaaaaaa')" * 8 + ", s.size() > 0)",
        f"cel.bind(s, {_doubling(18).replace('a18.size() > 0', 'a18')}, "
        f"{BIG}.all(x, s.contains('y')))",
    ],
)
def test_explosive_values_are_rejected_before_evaluation(expression: str) -> None:
    with pytest.raises(CompileError) as info:
        compile_selector(expression)
    assert "too complex" in str(info.value)


def test_moderate_growth_still_compiles_and_runs() -> None:
    assert evaluate(_doubling(10)) is True
    assert evaluate(f"{BIG}.map(x, x * 2).size() == 1000") is True


def test_expression_length_limit() -> None:
    padding = " " * (10 * 1024 - len("true"))
    assert compile_selector("true" + padding).matches({}) is True
    with pytest.raises(CompileError) as info:
        compile_selector("true" + padding + " ")
    assert "too long" in str(info.value)
