"""The selector API the scheduler calls: compile, cache, match, prepare, outcomes."""

from __future__ import annotations

import pytest

from modelplane.dra.cel import (
    CompileError,
    EvaluationError,
    Outcome,
    PreparedDevice,
    compile_selector,
    evaluate,
    prepare_device,
)

H100 = {
    "name": "gpu",
    "claim": "DRA",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "count": 8,
    "attributes": {
        "architecture": {"string": "Hopper"},
        "gpu.nvidia.com/productName": {"string": "H100"},
        "cudaCores": {"int": 16896},
        "mig": {"bool": False},
        "driverVersion": {"version": "550.54.15"},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}

A100 = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "attributes": {"architecture": {"string": "Ampere"}},
    "capacity": {"memory": {"value": "40Gi"}},
}

TYPICAL = (
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0 && '
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"'
)


@pytest.mark.parametrize(
    ("expression", "h100", "a100"),
    [
        (TYPICAL, True, False),
        ('device.driver == "gpu.nvidia.com"', True, True),
        ('device.attributes["gpu.nvidia.com"].productName == "H100"', True, False),
        ('device.attributes["gpu.nvidia.com"].cudaCores > 10000', True, False),
        ("!device.attributes['gpu.nvidia.com'].mig", True, False),
        (
            'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0"))',
            True,
            False,
        ),
        ('device.capacity["gpu.nvidia.com"].memory.isLessThan(quantity("80Gi"))', False, True),
        (
            'cel.bind(g, device.attributes["gpu.nvidia.com"], g.architecture in ["Hopper"])',
            True,
            False,
        ),
        ('"gpu.nvidia.com" in device.attributes', True, True),
    ],
)
def test_selector_matches_like_kubernetes(expression: str, h100: bool, a100: bool) -> None:
    sel = compile_selector(expression)
    assert sel.matches(H100) is h100
    assert sel.matches(A100) is a100


def test_compilation_is_cached_by_text() -> None:
    assert compile_selector(TYPICAL) is compile_selector(TYPICAL)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("1", "must evaluate to bool or the unknown type, not int"),
        ('quantity("1")', "not kubernetes.Quantity"),
        ("device.driver ==", "Syntax error"),
        ("nosuchfunction(1)", "undeclared reference to 'nosuchfunction'"),
        ("device.foo", "undefined field 'foo'"),
        ("device.driver == 1", "found no matching overload for '_==_'"),
        ("true || " * 1400 + "true", "too long"),
    ],
)
def test_compile_errors(expression: str, fragment: str) -> None:
    with pytest.raises(CompileError, match=None) as info:
        compile_selector(expression)
    assert fragment in str(info.value)


def test_evaluation_error_is_a_non_match_never_an_exception() -> None:
    sel = compile_selector('device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"')
    assert sel.matches(H100) is False
    outcome = sel.evaluate(H100)
    assert outcome.value is None
    assert outcome.error


def test_prepared_device_is_reusable_and_equivalent() -> None:
    prepared = prepare_device(H100)
    assert isinstance(prepared, PreparedDevice)
    sel = compile_selector(TYPICAL)
    assert sel.evaluate(prepared) == Outcome(True) == sel.evaluate(H100)
    assert compile_selector('device.driver == "x"').evaluate(prepared) == Outcome(False)


def test_bad_device_version_is_an_evaluation_error_for_every_selector() -> None:
    bad = {"driver": "d.example.com", "attributes": {"v": {"version": "1.0"}}}
    outcome = compile_selector("true").evaluate(bad)
    assert outcome.value is None
    assert outcome.error is not None
    assert outcome.error.startswith("attribute v: parse semantic version")


def test_evaluate_returns_python_values() -> None:
    assert evaluate('quantity("1Gi").isGreaterThan(quantity("1000Mi"))') is True
    assert str(evaluate('quantity("1.5Gi")')) == "1536Mi"
    assert str(evaluate('semver("v1.2", true)')) == "1.2.0"
    assert evaluate("1") == 1
    with pytest.raises(EvaluationError):
        evaluate('quantity("x")')
    with pytest.raises(CompileError):
        evaluate("1 +")


@pytest.mark.parametrize(
    "device",
    [
        {"attributes": {1: {"string": "x"}}},
        {"attributes": {"a": {"int": "3"}}},
        {"attributes": {"a": {}}},
        {"attributes": {"a": "x"}},
        {"attributes": ["a"]},
        {"capacity": {"m": {"value": "lots"}}},
        {"capacity": {"m": None}},
        {"driver": {"x": 1}},
    ],
)
def test_malformed_devices_are_errors_never_exceptions(device: dict) -> None:  # type: ignore[type-arg]
    outcome = compile_selector("true").evaluate(device)
    assert outcome.value is None
    assert outcome.error
    assert compile_selector("true").matches(device) is False


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        # Kubernetes types device.capacity values as Quantity, so these fail to compile.
        ('device.capacity["gpu.nvidia.com"].memory.size() > 0', "'size'"),
        ('device.capacity["gpu.nvidia.com"].memory', "not kubernetes.Quantity"),
        ('device.capacity["gpu.nvidia.com"].memory == "80Gi"', "(kubernetes.Quantity, string)"),
        ('device.capacity["gpu.nvidia.com"].memory.exists(x, true)', "not iterable"),
    ],
)
def test_capacity_values_are_typed_as_quantities(expression: str, fragment: str) -> None:
    with pytest.raises(CompileError) as info:
        compile_selector(expression)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("expression", "h100"),
    [
        ('device.capacity["gpu.nvidia.com"].memory == quantity("81920Mi")', True),
        ('device.capacity["gpu.nvidia.com"].memory != quantity("80G")', True),
        ('quantity("40Gi").isLessThan(device.capacity["gpu.nvidia.com"].memory)', True),
        ('sign(device.capacity["gpu.nvidia.com"].memory) == 1', True),
        ('device.capacity["gpu.nvidia.com"].memory.sign() == 1', True),
        ('device.capacity["gpu.nvidia.com"].memory.isInteger()', True),
        ('device.capacity["gpu.nvidia.com"].memory.asInteger() == 85899345920', True),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) == 0', True),
        ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) < 0', False),
        (
            'cel.bind(c, device.capacity["gpu.nvidia.com"], '
            'c.memory.sub(quantity("1Gi")).isGreaterThan(quantity("78Gi")))',
            True,
        ),
        ('device.attributes["gpu.nvidia.com"].driverVersion == semver("550.54.15+x")', True),
        (
            'device.attributes["gpu.nvidia.com"].driverVersion'
            '.compareTo(semver("550.54.15-rc.1")) == 1',
            True,
        ),
        ('device.attributes["gpu.nvidia.com"].driverVersion.major() == 550', True),
        ('!has(device.attributes["mig.example.com"].profile)', True),
        ('device.attributes["mig.example.com"].size() == 0', True),
        ('"mig.example.com" in device.attributes', False),
        ('device.capacity["gpu.nvidia.com"].memory in [quantity("1Gi"), quantity("80Gi")]', True),
        ('quantity("1") in [quantity("1.0"), quantity("1000m")]', True),
        ('semver("1.0.0+build") in [semver("1.0.0")]', True),
        # A dyn operand: value equality between versions, plain (false) across types.
        ('device.attributes["gpu.nvidia.com"].driverVersion != semver("550.54.15+b")', False),
        ('device.attributes["gpu.nvidia.com"].architecture != quantity("1")', True),
        ('device.attributes["gpu.nvidia.com"].cudaCores == quantity("16896")', False),
    ],
)
def test_quantity_and_version_semantics_on_devices(expression: str, h100: bool) -> None:
    outcome = compile_selector(expression).evaluate(H100)
    assert outcome == Outcome(h100)
