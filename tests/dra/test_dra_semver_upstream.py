"""Tables mirrored from github.com/blang/semver/v4 semver_test.go (expected values are blang's)."""

from __future__ import annotations

import pytest

from modelplane.dra.semver import PreRelease, Semver, SemverError, parse_semver


def s(text: str) -> PreRelease:
    return PreRelease(None, text)


def n(num: int) -> PreRelease:
    return PreRelease(num, str(num))


def v(major: int, minor: int, patch: int, pre: tuple = (), build: tuple = ()) -> Semver:  # type: ignore[type-arg]
    return Semver(major, minor, patch, tuple(pre), tuple(build))


FORMAT_TESTS = [
    (v(1, 2, 3), "1.2.3"),
    (v(0, 0, 1), "0.0.1"),
    (v(0, 0, 1, (s("alpha"), s("preview")), ("123", "456")), "0.0.1-alpha.preview+123.456"),
    (v(1, 2, 3, (s("alpha"), n(1)), ("123", "456")), "1.2.3-alpha.1+123.456"),
    (v(1, 2, 3, (s("alpha"), n(1))), "1.2.3-alpha.1"),
    (v(1, 2, 3, (), ("123", "456")), "1.2.3+123.456"),
    (v(1, 2, 3, (s("alpha"), s("b-eta")), ("123", "b-uild")), "1.2.3-alpha.b-eta+123.b-uild"),
    (v(1, 2, 3, (), ("123", "b-uild")), "1.2.3+123.b-uild"),
    (v(1, 2, 3, (s("alpha"), s("b-eta"))), "1.2.3-alpha.b-eta"),
]


@pytest.mark.parametrize(("version", "text"), FORMAT_TESTS)
def test_stringer_and_parse(version: Semver, text: str) -> None:
    assert str(version) == text
    parsed = parse_semver(text)
    assert parsed.cmp(version) == 0
    assert str(parsed) == text


# The tolerant table, restricted to what Kubernetes' normalize mode accepts: it is
# ParseTolerant without whitespace trimming, so "\t1.2.3 " stays invalid.
TOLERANT_TESTS = [
    (v(1, 2, 3), "v1.2.3"),
    (v(1, 2, 0, (s("alpha"),)), "1.2.0-alpha"),
    (v(1, 2, 0), "1.2.00"),
    (v(1, 2, 3), "01.02.03"),
    (v(0, 0, 3), "00.0.03"),
    (v(0, 0, 3), "000.0.03"),
    (v(1, 2, 0), "1.2"),
    (v(1, 0, 0), "1"),
]


@pytest.mark.parametrize(("version", "text"), TOLERANT_TESTS)
def test_normalize(version: Semver, text: str) -> None:
    assert parse_semver(text, normalize=True).cmp(version) == 0


@pytest.mark.parametrize("text", ["\t1.2.3 ", "1.0+abc", "1.0-rc.1"])
def test_normalize_rejects(text: str) -> None:
    with pytest.raises(SemverError):
        parse_semver(text, normalize=True)


COMPARE_TESTS = [
    (v(1, 0, 0), v(1, 0, 0), 0),
    (v(2, 0, 0), v(1, 0, 0), 1),
    (v(0, 1, 0), v(0, 1, 0), 0),
    (v(0, 2, 0), v(0, 1, 0), 1),
    (v(0, 0, 1), v(0, 0, 1), 0),
    (v(0, 0, 2), v(0, 0, 1), 1),
    (v(1, 2, 3), v(1, 2, 3), 0),
    (v(2, 2, 4), v(1, 2, 4), 1),
    (v(1, 3, 3), v(1, 2, 3), 1),
    (v(1, 2, 4), v(1, 2, 3), 1),
    (v(1, 0, 0), v(2, 0, 0), -1),
    (v(2, 0, 0), v(2, 1, 0), -1),
    (v(2, 1, 0), v(2, 1, 1), -1),
    (v(1, 0, 0), v(1, 0, 0, (s("alpha"),)), 1),
    (v(1, 0, 0, (s("alpha"),)), v(1, 0, 0, (s("alpha"), n(1))), -1),
    (v(1, 0, 0, (s("alpha"), n(1))), v(1, 0, 0, (s("alpha"), s("beta"))), -1),
    (v(1, 0, 0, (s("alpha"), s("beta"))), v(1, 0, 0, (s("beta"),)), -1),
    (v(1, 0, 0, (s("beta"),)), v(1, 0, 0, (s("beta"), n(2))), -1),
    (v(1, 0, 0, (s("beta"), n(2))), v(1, 0, 0, (s("beta"), n(11))), -1),
    (v(1, 0, 0, (s("beta"), n(11))), v(1, 0, 0, (s("rc"), n(1))), -1),
    (v(1, 0, 0, (s("rc"), n(1))), v(1, 0, 0), -1),
    (v(1, 0, 0, (), ("1", "2", "3")), v(1, 0, 0), 0),
]


@pytest.mark.parametrize(("a", "b", "expect"), COMPARE_TESTS)
def test_compare(a: Semver, b: Semver, expect: int) -> None:
    assert a.cmp(b) == expect
    assert b.cmp(a) == -expect
    ka, kb = a.order_key(), b.order_key()
    assert (ka > kb) - (ka < kb) == expect


WRONG_FORMAT = [
    "",
    ".",
    "1.",
    ".1",
    "a.b.c",
    "1.a.b",
    "1.1.a",
    "1.a.1",
    "a.1.1",
    "..",
    "1..",
    "1.1.",
    "1..1",
    "1.1.+123",
    "1.1.-beta",
    "-1.1.1",
    "1.-1.1",
    "1.1.-1",
    "20000000000000000000.1.1",
    "1.20000000000000000000.1",
    "1.1.20000000000000000000",
    "1.1.1-20000000000000000000",
    "01.1.1",
    "001.1.1",
    "1.01.1",
    "1.001.1",
    "1.1.01",
    "1.1.001",
    "1.1.1-01",
    "1.1.1-001",
    "1.1.1-beta.01",
    "1.1.1-beta.001",
    "0.0.0-!",
    "0.0.0+!",
    "0.0.0-.alpha",
    "0.0.0-alpha+",
    "0.0.0-alpha+test.",
]


@pytest.mark.parametrize("text", WRONG_FORMAT)
def test_wrong_format(text: str) -> None:
    with pytest.raises(SemverError):
        parse_semver(text)


def test_must_parse() -> None:
    assert str(parse_semver("32.2.1-alpha")) == "32.2.1-alpha"
    with pytest.raises(SemverError):
        parse_semver("invalid version")
