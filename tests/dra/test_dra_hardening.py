"""Hostile input to the DRA layer: regexes run on RE2, numbers of any length are refused
with the documented error types, devices are validated by the conversions selectors use.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.dra import (
    CompileError,
    EvaluationError,
    QuantityError,
    SemverError,
    compile_selector,
    device_errors,
    evaluate,
    parse_quantity,
    parse_semver,
    prepare_device,
)
from modelplane.dra.quantity import MAX_DIGITS

LONG = "9" * 5000
CATASTROPHIC = '"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!".find("(a+)+$") == ""'


def test_find_with_a_backtracking_pattern_is_answered() -> None:
    # With a backtracking engine this takes minutes (doubling per "a"); RE2 is linear.
    # Speed is measured in the fuzz test's deadline and in benchmarks, not asserted here.
    assert evaluate(CATASTROPHIC) is True
    assert evaluate('"aaaa!aa".find("(a+)+$")') == "aa"


# Go's regexp.FindString / FindAllString results, which Kubernetes returns.
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('"abc 123 def 4567".find("[0-9]+")', "123"),
        ('"abc".find("[0-9]+")', ""),
        ('"héllo".find("l+")', "ll"),
        ('"abc 123 def 4567".findAll("[0-9]+")', ["123", "4567"]),
        ('"abc 123 def 4567".findAll("[0-9]+", 1)', ["123"]),
        ('"abc 123 def 4567".findAll("[0-9]+", 0)', []),
        ('"abc 123 def 4567".findAll("[0-9]+", -1)', ["123", "4567"]),
        # Empty matches: none directly after a match (Python's re differs here).
        ('"baaac".findAll("a*")', ["", "aaa", ""]),
        ('"xyz".findAll("x*")', ["x", "", ""]),
        ('"ab".findAll("")', ["", "", ""]),
        ('"wörld".findAll(".")', ["w", "ö", "r", "l", "d"]),
        # Leftmost-first (Perl) alternation, not leftmost-longest.
        ('"abcd".find("a|ab")', "a"),
        # Perl classes and RE2 syntax.
        ('"a1_b".findAll("\\\\w")', ["a", "1", "_", "b"]),
        ('"GPU-H100".find("(?i)h[0-9]+")', "H100"),
    ],
)
def test_find_and_find_all_have_go_semantics(expression: str, expected: object) -> None:
    assert evaluate(expression) == expected


@pytest.mark.parametrize(
    "pattern",
    [
        "(?<=a)b",  # look-behind: not RE2
        "(a)\\\\1",  # back-reference: not RE2
        "(",
        "a{1001}",  # over RE2's repeat limit
    ],
)
def test_an_invalid_re2_pattern_is_an_evaluation_error(pattern: str) -> None:
    expression = f'"ab".find("{pattern}") == ""'
    selector = compile_selector(expression)
    outcome = selector.evaluate({"driver": "d.example.com"})
    assert outcome.value is None
    assert outcome.error is not None and "error parsing regexp" in outcome.error
    assert selector.matches({"driver": "d.example.com"}) is False
    with pytest.raises(EvaluationError, match="error parsing regexp"):
        evaluate(f'"ab".findAll("{pattern}")')


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: parse_quantity(LONG), QuantityError),
        (lambda: parse_quantity("0." + LONG), QuantityError),
        (lambda: parse_quantity(LONG + "Ki"), QuantityError),
        (lambda: parse_quantity("1e" + LONG), QuantityError),
        (lambda: parse_quantity("9" * (MAX_DIGITS + 1)), QuantityError),
        (lambda: parse_semver(LONG + ".0.0"), SemverError),
        (lambda: parse_semver("1.0." + LONG), SemverError),
        (lambda: parse_semver("1.0.0-" + LONG), SemverError),
        (lambda: parse_semver("v" + LONG, True), SemverError),
    ],
)
def test_numbers_of_any_length_raise_the_documented_error(
    call: Callable[[], object], error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        call()
    assert len(str(info.value)) < 200  # readable: the number is not echoed whole


def test_lengths_upstream_accepts_still_parse() -> None:
    assert parse_quantity("9" * MAX_DIGITS) > parse_quantity("1e998")
    # Leading zeros do not count (Go's ParseInt/ParseUint accept them).
    assert parse_quantity("0" * 5000 + "1") == parse_quantity("1")
    assert parse_quantity("1e" + "0" * 5000 + "3") == parse_quantity("1k")
    assert str(parse_semver("v1." + "0" * 5000 + "2", True)) == "1.2.0"


@pytest.mark.parametrize(
    "literal",
    [f'quantity("{LONG}")', f'semver("1.0.{LONG}")', f'semver("{LONG}", true)'],
)
def test_a_literal_refused_for_its_length_is_a_compile_error(literal: str) -> None:
    selector = f'device.capacity["d.example.com"].memory.compareTo({literal}) >= 0'
    if "semver" in literal:
        selector = f'device.attributes["d.example.com"].v.isGreaterThan({literal})'
    with pytest.raises(CompileError, match=r"literal: .*(too many digits|out of range)"):
        compile_selector(selector)
    with pytest.raises(CompileError):
        evaluate(literal)


def test_other_invalid_literals_stay_evaluation_errors_as_upstream() -> None:
    with pytest.raises(EvaluationError, match=r"No Major\.Minor\.Patch"):
        evaluate('semver("v1.0")')
    with pytest.raises(EvaluationError):
        evaluate('quantity("1.5.5")')


def test_devices_with_long_numbers_are_non_matches_with_a_reason() -> None:
    device = {
        "driver": "d.example.com",
        "attributes": {"v": {"version": f"1.0.{LONG}"}, "i": {"int": 10**30}},
        "capacity": {"memory": {"value": LONG}},
    }
    assert prepare_device(device).error == (
        'attribute v: parse semantic version: strconv.ParseUint: parsing "'
        + "9" * 32
        + '"... (5000 characters): value out of range'
    )
    assert [(f, n) for f, n, _ in device_errors(device)] == [
        ("attributes", "v"),
        ("attributes", "i"),
        ("capacity", "memory"),
    ]
    assert compile_selector("true").matches(device) is False


def test_device_errors_agree_with_prepare_device() -> None:
    good = {
        "driver": "d.example.com",
        "attributes": {"v": {"version": "570.124.6"}, "i": {"int": -(2**63)}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
    assert device_errors(good) == []
    assert prepare_device(good).error is None
    bad = {"driver": "d.example.com", "attributes": {"driverVersion": {"version": "570.124.06"}}}
    assert device_errors(bad) == [
        (
            "attributes",
            "driverVersion",
            'parse semantic version: Patch number must not contain leading zeroes "06"',
        )
    ]
    assert prepare_device(bad).error == (
        "attribute driverVersion: parse semantic version: Patch number must not contain "
        'leading zeroes "06"'
    )


def _cel_eval(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["cel", "eval", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.output


def test_cli_answers_the_backtracking_find() -> None:
    assert _cel_eval(CATASTROPHIC) == (0, "true\n")


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            f'quantity("{LONG}").sign() == 1',
            "Error: compilation failed: quantity literal: quantity has too many digits "
            f"(at most {MAX_DIGITS} are accepted)\n",
        ),
        (
            f'semver("{LONG}.0.0").major() == 1',
            'Error: compilation failed: semver literal: strconv.ParseUint: parsing "'
            + "9" * 32
            + '"... (5000 characters): value out of range\n',
        ),
    ],
)
def test_cli_gives_a_clear_error_for_a_5000_digit_literal(expression: str, message: str) -> None:
    assert _cel_eval(expression) == (1, message)


def test_cli_gives_a_clear_error_for_a_5000_digit_device_value(tmp_path: Path) -> None:
    device = tmp_path / "device.yaml"
    device.write_text(f'driver: d.example.com\ncapacity: {{memory: {{value: "{LONG}"}}}}\n')
    code, output = _cel_eval("true", "--device", str(device))
    assert code == 1
    assert output == (
        f"error: capacity memory: quantity has too many digits (at most {MAX_DIGITS} are "
        "accepted)\n"
    )


def test_cli_refuses_a_device_file_with_a_5000_digit_yaml_integer(tmp_path: Path) -> None:
    device = tmp_path / "device.yaml"
    device.write_text(f"driver: d.example.com\nattributes: {{i: {{int: {LONG}}}}}\n")
    code, output = _cel_eval("true", "--device", str(device))
    assert code == 1
    assert output == (
        f"Error: cannot read {device}: Exceeds the limit (4300 digits) for integer string "
        "conversion: value has 5000 digits\n"
    )
