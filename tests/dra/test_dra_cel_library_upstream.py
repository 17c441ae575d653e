"""Tables mirrored from k8s.io/apiserver/pkg/cel/library quantity_test.go and semver_test.go.

Each row is (expression, expected value) or (expression, expected error fragment);
expected outcomes are the upstream test's. Rows for functions Kubernetes added after
1.34 (quantity mul/div/divInt) are left out.
"""

from __future__ import annotations

import re

import pytest

from modelplane.dra.cel import CompileError, EvaluationError, evaluate
from modelplane.dra.quantity import parse_quantity
from modelplane.dra.semver import parse_semver

QUANTITY_VALUES = [
    ('quantity("12Mi")', parse_quantity("12Mi")),
    ('isQuantity("20")', True),
    ('isQuantity("20M")', True),
    ('isQuantity("20Mi")', True),
    ('isQuantity("20Mo")', False),
    ('isQuantity("10Mm")', False),
    ('quantity("200M") == quantity("200M")', True),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', True),
    (
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
        'quantity("0.002G") == quantity("2000k")',
        True,
    ),
    ('quantity("200M") == quantity("0.3G")', False),
    ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    ('quantity("50M").isLessThan(quantity("100M"))', True),
    ('quantity("100M").isLessThan(quantity("50M"))', False),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    ('quantity("200M").compareTo(quantity("0.2G"))', 0),
    ('quantity("50M").compareTo(quantity("50Mi"))', -1),
    ('quantity("50Mi").compareTo(quantity("50M"))', 1),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ('quantity("50k").sub(20) == quantity("49980")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("50k").asInteger()', 50000),
    ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("50").isInteger()', True),
    ('quantity("50.703k").asApproximateFloat()', 50703.0),
    # From the library's documentation examples (quantity.go).
    ('quantity("50000000G").isInteger()', True),
    ('quantity("50k").isInteger()', True),
    ('quantity("50k").asInteger() == 50000', True),
    ('quantity("50k").sub(20000).asApproximateFloat() == 30000.0', True),
    ('quantity("50k").add(20) == quantity("50020")', True),
    ('quantity("50k").sub(20000) == quantity("30k")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    ('quantity("100M").isLessThan(quantity("50M"))', False),
    ('isQuantity("1.3G")', True),
    ('isQuantity("1.3Gi")', True),
    ('isQuantity("1,3G")', False),
    ('isQuantity("10000k")', True),
    ('isQuantity("200K")', False),
    ('isQuantity("Three")', False),
    # The library's doc also lists isQuantity('Mi') == false, but the parser it calls
    # (ParseQuantity: an empty numerator counts as 0) accepts "Mi" as zero; no test
    # pins the doc's claim, so neither do we.
]

QUANTITY_RUNTIME_ERRORS = [
    ('quantity("10Mo")', "quantities must match the regular expression.*"),
    ('quantity("10Mm")', "unable to parse quantity's suffix"),
    (
        'quantity("9999999999999999999999999999999999999G").asInteger()',
        "cannot convert value to integer",
    ),
    ('quantity("200K")', ".+"),
    ('quantity("Three")', ".+"),
]

QUANTITY_COMPILE_ERRORS = [
    ("isQuantity([1, 2, 3])", "found no matching overload for 'isQuantity' applied to.*"),
]

SEMVER_VALUES = [
    ('semver("1.2.3")', parse_semver("1.2.3")),
    ('isSemver("1.2.3-beta.1+build.1")', True),
    ('isSemver("")', False),
    ('isSemver("v1.0.0")', False),
    ('isSemver(" 1.0.0")', False),
    ('isSemver("1. 0.0")', False),
    ('isSemver("1.0.0 ")', False),
    ('isSemver("01.01.01")', False),
    ('isSemver("1")', False),
    ('isSemver("1.1")', False),
    ('isSemver("", true)', False),
    ('isSemver(" 1.0.0", true)', False),
    ('isSemver("1. 0.0", true)', False),
    ('isSemver("1.0.0 ", true)', False),
    ('isSemver("v1.0.0", true)', True),
    ('isSemver("01.01.01", true)', True),
    ('isSemver("1", true)', True),
    ('isSemver("1.1", true)', True),
    ('semver("v01.01", true) == semver("1.1.0")', True),
    ('semver("1.2.3") == semver("1.2.3")', True),
    ('semver("1.2.3") == semver("1.0.0")', False),
    ('semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ('semver("1.2.3").compareTo(semver("1.2.3"))', 0),
    ('semver("1.0.0").compareTo(semver("1.2.3"))', -1),
    ('semver("1.2.3").compareTo(semver("1.0.0"))', 1),
    ('semver("1.2.3").major()', 1),
    ('semver("1.2.3").minor()', 2),
    ('semver("1.2.3").patch()', 3),
    # Documentation examples (semverlib.go).
    ('semver("v1.0.0", true) == semver("1.0.0")', True),
    ('semver("1.0", true) == semver("1.0.0")', True),
    ('semver("01.01.01", true) == semver("1.1.1")', True),
    ('isSemver("hello")', False),
    ('isSemver("v1.0")', False),
    ('isSemver("v1.0", true)', True),
]

SEMVER_RUNTIME_ERRORS = [
    ('semver("v1.0")', "No Major.Minor.Patch elements found"),
    ('semver("200K")', ".+"),
    ('semver("Three")', ".+"),
]

SEMVER_COMPILE_ERRORS = [
    ("isSemver([1, 2, 3])", "found no matching overload for 'isSemver' applied to.*"),
]


@pytest.mark.parametrize(("expression", "expect"), QUANTITY_VALUES + SEMVER_VALUES)
def test_value(expression: str, expect: object) -> None:
    got = evaluate(expression)
    assert type(got) is type(expect)
    assert got == expect


@pytest.mark.parametrize(("expression", "pattern"), QUANTITY_RUNTIME_ERRORS + SEMVER_RUNTIME_ERRORS)
def test_runtime_error(expression: str, pattern: str) -> None:
    with pytest.raises(EvaluationError) as info:
        evaluate(expression)
    assert re.search(pattern, str(info.value))


@pytest.mark.parametrize(("expression", "pattern"), QUANTITY_COMPILE_ERRORS + SEMVER_COMPILE_ERRORS)
def test_compile_error(expression: str, pattern: str) -> None:
    with pytest.raises(CompileError) as info:
        evaluate(expression)
    assert re.search(pattern, str(info.value))
