"""Tables mirrored from k8s.io/apimachinery/pkg/api/resource/quantity_test.go.

Expected values are the upstream test's own (value and format, canonical strings,
comparison results, floats); helpers build quantities the way the Go helpers do.
"""

from __future__ import annotations

import math

import pytest

from modelplane.dra.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    parse_quantity,
)

MOST_POSITIVE = (1 << 63) - 1
MOST_NEGATIVE = -(1 << 63)


def dec_q(i: int, exponent: int, fmt: str) -> Quantity:
    """decQuantity: an inf.Dec-backed quantity of value i * 10^exponent."""
    return Quantity(i, exponent, fmt, is_dec=True)  # type: ignore[arg-type]


def int_q(i: int, exponent: int, fmt: str) -> Quantity:
    """intQuantity: an int64Amount-backed quantity."""
    return Quantity(i, exponent, fmt)  # type: ignore[arg-type]


MAX_ALLOWED_BIN = dec_q(MOST_POSITIVE, 0, BINARY_SI)

# TestQuantityParse: input -> expected value and format.
PARSE_TABLE = [
    ("0", dec_q(0, 0, DECIMAL_SI)),
    ("0n", dec_q(0, 0, DECIMAL_SI)),
    ("0u", dec_q(0, 0, DECIMAL_SI)),
    ("0m", dec_q(0, 0, DECIMAL_SI)),
    ("0Ki", dec_q(0, 0, BINARY_SI)),
    ("0k", dec_q(0, 0, DECIMAL_SI)),
    ("0Mi", dec_q(0, 0, BINARY_SI)),
    ("0M", dec_q(0, 0, DECIMAL_SI)),
    ("0Gi", dec_q(0, 0, BINARY_SI)),
    ("0G", dec_q(0, 0, DECIMAL_SI)),
    ("0Ti", dec_q(0, 0, BINARY_SI)),
    ("0T", dec_q(0, 0, DECIMAL_SI)),
    ("1", dec_q(1, 0, DECIMAL_SI)),
    ("1Ki", dec_q(1024, 0, BINARY_SI)),
    ("8Ki", dec_q(8 * 1024, 0, BINARY_SI)),
    ("7Mi", dec_q(7 * 1024**2, 0, BINARY_SI)),
    ("6Gi", dec_q(6 * 1024**3, 0, BINARY_SI)),
    ("5Ti", dec_q(5 * 1024**4, 0, BINARY_SI)),
    ("4Pi", dec_q(4 * 1024**5, 0, BINARY_SI)),
    ("3Ei", dec_q(3 * 1024**6, 0, BINARY_SI)),
    ("10Ti", dec_q(10 * 1024**4, 0, BINARY_SI)),
    ("100Ti", dec_q(100 * 1024**4, 0, BINARY_SI)),
    ("5n", dec_q(5, -9, DECIMAL_SI)),
    ("4u", dec_q(4, -6, DECIMAL_SI)),
    ("3m", dec_q(3, -3, DECIMAL_SI)),
    ("9", dec_q(9, 0, DECIMAL_SI)),
    ("8k", dec_q(8, 3, DECIMAL_SI)),
    ("50k", dec_q(5, 4, DECIMAL_SI)),
    ("7M", dec_q(7, 6, DECIMAL_SI)),
    ("6G", dec_q(6, 9, DECIMAL_SI)),
    ("5T", dec_q(5, 12, DECIMAL_SI)),
    ("40T", dec_q(4, 13, DECIMAL_SI)),
    ("300T", dec_q(3, 14, DECIMAL_SI)),
    ("2P", dec_q(2, 15, DECIMAL_SI)),
    ("1E", dec_q(1, 18, DECIMAL_SI)),
    ("1E-3", dec_q(1, -3, DECIMAL_EXPONENT)),
    ("1e3", dec_q(1, 3, DECIMAL_EXPONENT)),
    ("1E6", dec_q(1, 6, DECIMAL_EXPONENT)),
    ("1e9", dec_q(1, 9, DECIMAL_EXPONENT)),
    ("1E12", dec_q(1, 12, DECIMAL_EXPONENT)),
    ("1e15", dec_q(1, 15, DECIMAL_EXPONENT)),
    ("1E18", dec_q(1, 18, DECIMAL_EXPONENT)),
    ("1e14", dec_q(1, 14, DECIMAL_EXPONENT)),
    ("1e13", dec_q(1, 13, DECIMAL_EXPONENT)),
    ("100.035k", dec_q(100035, 0, DECIMAL_SI)),
    ("0.001", dec_q(1, -3, DECIMAL_SI)),
    ("0.0005k", dec_q(5, -1, DECIMAL_SI)),
    ("0.005", dec_q(5, -3, DECIMAL_SI)),
    ("0.05", dec_q(5, -2, DECIMAL_SI)),
    ("0.5", dec_q(5, -1, DECIMAL_SI)),
    ("0.00050k", dec_q(5, -1, DECIMAL_SI)),
    ("0.00500", dec_q(5, -3, DECIMAL_SI)),
    ("0.05000", dec_q(5, -2, DECIMAL_SI)),
    ("0.50000", dec_q(5, -1, DECIMAL_SI)),
    ("0.5e0", dec_q(5, -1, DECIMAL_EXPONENT)),
    ("0.5e-1", dec_q(5, -2, DECIMAL_EXPONENT)),
    ("0.5e-2", dec_q(5, -3, DECIMAL_EXPONENT)),
    ("10.035M", dec_q(10035, 3, DECIMAL_SI)),
    ("1.2e3", dec_q(12, 2, DECIMAL_EXPONENT)),
    ("1.3E+6", dec_q(13, 5, DECIMAL_EXPONENT)),
    ("1.40e9", dec_q(14, 8, DECIMAL_EXPONENT)),
    ("1.53E12", dec_q(153, 10, DECIMAL_EXPONENT)),
    ("1.6e15", dec_q(16, 14, DECIMAL_EXPONENT)),
    ("1.7E18", dec_q(17, 17, DECIMAL_EXPONENT)),
    ("9.01", dec_q(901, -2, DECIMAL_SI)),
    ("8.1k", dec_q(81, 2, DECIMAL_SI)),
    ("7.123456M", dec_q(7123456, 0, DECIMAL_SI)),
    ("6.987654321G", dec_q(6987654321, 0, DECIMAL_SI)),
    ("5.444T", dec_q(5444, 9, DECIMAL_SI)),
    ("40.1T", dec_q(401, 11, DECIMAL_SI)),
    ("300.2T", dec_q(3002, 11, DECIMAL_SI)),
    ("2.5P", dec_q(25, 14, DECIMAL_SI)),
    ("1.01E", dec_q(101, 16, DECIMAL_SI)),
    ("3.001n", dec_q(4, -9, DECIMAL_SI)),
    ("1.1E-9", dec_q(2, -9, DECIMAL_EXPONENT)),
    ("0.0000000001", dec_q(1, -9, DECIMAL_SI)),
    ("0.0000000005", dec_q(1, -9, DECIMAL_SI)),
    ("0.00000000050", dec_q(1, -9, DECIMAL_SI)),
    ("0.5e-9", dec_q(1, -9, DECIMAL_EXPONENT)),
    ("0.9n", dec_q(1, -9, DECIMAL_SI)),
    ("0.00000012345", dec_q(124, -9, DECIMAL_SI)),
    ("0.00000012354", dec_q(124, -9, DECIMAL_SI)),
    ("9Ei", MAX_ALLOWED_BIN),
    ("9223372036854775807Ki", MAX_ALLOWED_BIN),
    ("12E", dec_q(12, 18, DECIMAL_SI)),
    ("100.035Ki", dec_q(10243584, -2, BINARY_SI)),
    ("0.5Mi", dec_q(524288, 0, BINARY_SI)),
    ("0.05Gi", dec_q(536870912, -1, BINARY_SI)),
    ("0.025Ti", dec_q(274877906944, -1, BINARY_SI)),
    ("0.000000000001Ki", dec_q(2, -9, DECIMAL_SI)),
    (".001", dec_q(1, -3, DECIMAL_SI)),
    (".0001k", dec_q(100, -3, DECIMAL_SI)),
    ("1.", dec_q(1, 0, DECIMAL_SI)),
    ("1.G", dec_q(1, 9, DECIMAL_SI)),
]


@pytest.mark.parametrize(("text", "expect"), PARSE_TABLE, ids=[t for t, _ in PARSE_TABLE])
def test_parse_value_and_format(text: str, expect: Quantity) -> None:
    got = parse_quantity(text)
    assert got.cmp(expect) == 0, f"{text}: got {got}"
    assert got.format == expect.format
    # int64 views agree whenever both forms offer one (the upstream check).
    i, j = Quantity(expect.unscaled, expect.exponent, expect.format).as_int64(), got.as_int64()
    if i is not None and j is not None:
        assert i == j


@pytest.mark.parametrize(("text", "expect"), PARSE_TABLE, ids=[t for t, _ in PARSE_TABLE])
def test_parse_with_explicit_sign(text: str, expect: Quantity) -> None:
    neg = parse_quantity("-" + text)
    assert neg.cmp(expect.neg()) == 0
    assert neg.format == expect.format
    pos = parse_quantity("+" + text)
    assert pos.cmp(expect) == 0
    assert pos.format == expect.format


@pytest.mark.parametrize(
    "text",
    ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", ""],
)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # quantity_test.go (apiserver CEL library): the two distinct parse errors.
        ("10Mo", ERR_FORMAT_WRONG),
        ("10Mm", ERR_SUFFIX),
        ("-.e-20", ERR_NUMERIC),
    ],
)
def test_parse_error_messages(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as info:
        parse_quantity(text)
    assert str(info.value) == message


def test_parse_zero_string() -> None:
    assert str(parse_quantity("0")) == "0"


@pytest.mark.parametrize(
    ("x", "y", "expect"),
    [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1)],
)
def test_cmp_parsed(x: str, y: str, expect: int) -> None:
    assert parse_quantity(x).cmp(parse_quantity(y)) == expect


CMP_INT64_AND_DEC = [
    (int_q(901, -2, DECIMAL_SI), int_q(901, -2, DECIMAL_SI), 0),
    (int_q(90, -1, DECIMAL_SI), int_q(901, -2, DECIMAL_SI), -1),
    (int_q(901, -2, DECIMAL_SI), int_q(900, -2, DECIMAL_SI), 1),
    (int_q(0, 0, DECIMAL_SI), int_q(0, 0, DECIMAL_SI), 0),
    (int_q(0, 1, DECIMAL_SI), int_q(0, -1, DECIMAL_SI), 0),
    (int_q(0, -1, DECIMAL_SI), int_q(0, 1, DECIMAL_SI), 0),
    (int_q(800, -3, DECIMAL_SI), int_q(1, 0, DECIMAL_SI), -1),
    (int_q(800, -3, DECIMAL_SI), int_q(79, -2, DECIMAL_SI), 1),
    (int_q(MOST_POSITIVE, 0, DECIMAL_SI), int_q(1, -1, DECIMAL_SI), 1),
    (int_q(MOST_POSITIVE, 1, DECIMAL_SI), int_q(1, 0, DECIMAL_SI), 1),
    (int_q(MOST_POSITIVE, 1, DECIMAL_SI), int_q(1, 1, DECIMAL_SI), 1),
    (int_q(MOST_POSITIVE, 1, DECIMAL_SI), int_q(0, 1, DECIMAL_SI), 1),
    (int_q(MOST_POSITIVE, -16, DECIMAL_SI), int_q(1, 3, DECIMAL_SI), -1),
    (int_q(MOST_NEGATIVE, 0, DECIMAL_SI), int_q(0, 0, DECIMAL_SI), -1),
    (int_q(MOST_NEGATIVE, -18, DECIMAL_SI), int_q(-1, 0, DECIMAL_SI), -1),
    (int_q(MOST_NEGATIVE, -19, DECIMAL_SI), int_q(-1, 0, DECIMAL_SI), 1),
    (int_q(10**18, -17, DECIMAL_SI), int_q(1, 1, DECIMAL_SI), 0),
    (int_q(10**18, -17, DECIMAL_SI), int_q(-10, 0, DECIMAL_SI), 1),
    (int_q(-(10**18), -17, DECIMAL_SI), int_q(-10, 0, DECIMAL_SI), 0),
    (int_q(10**18, -17, DECIMAL_SI), int_q(1, 0, DECIMAL_SI), 1),
    (int_q(10**18 + 1, -17, DECIMAL_SI), int_q(1, 1, DECIMAL_SI), 1),
    (int_q(10**18 - 1, -17, DECIMAL_SI), int_q(1, 1, DECIMAL_SI), -1),
]


@pytest.mark.parametrize(("a", "b", "expect"), CMP_INT64_AND_DEC)
def test_cmp_int64_and_dec(a: Quantity, b: Quantity, expect: int) -> None:
    for x in (a, Quantity(a.unscaled, a.exponent, a.format, is_dec=True)):
        for y in (b, Quantity(b.unscaled, b.exponent, b.format, is_dec=True)):
            assert x.cmp(y) == expect
            assert y.cmp(x) == -expect
            assert (x.order_key() > y.order_key()) - (x.order_key() < y.order_key()) == expect


STRING_TABLE = [
    # (quantity, canonical, alternate spelling parsing to the same canonical)
    (dec_q(1024**3, 0, BINARY_SI), "1Gi", "1024Mi"),
    (dec_q(300 * 1024**2, 0, BINARY_SI), "300Mi", "307200Ki"),
    (dec_q(6 * 1024, 0, BINARY_SI), "6Ki", ""),
    (dec_q(1001 * 1024**3, 0, BINARY_SI), "1001Gi", "1025024Mi"),
    (dec_q(1024**4, 0, BINARY_SI), "1Ti", "1024Gi"),
    (dec_q(5, 0, BINARY_SI), "5", "5000m"),
    (dec_q(500, -3, BINARY_SI), "500m", "0.5"),
    (dec_q(1, 9, DECIMAL_SI), "1G", "1000M"),
    (dec_q(1000, 6, DECIMAL_SI), "1G", "0.001T"),
    (dec_q(1000000, 3, DECIMAL_SI), "1G", ""),
    (dec_q(1000000000, 0, DECIMAL_SI), "1G", ""),
    (dec_q(1, -3, DECIMAL_SI), "1m", "1000u"),
    (dec_q(80, -3, DECIMAL_SI), "80m", ""),
    (dec_q(1080, -3, DECIMAL_SI), "1080m", "1.08"),
    (dec_q(108, -2, DECIMAL_SI), "1080m", "1080000000n"),
    (dec_q(10800, -4, DECIMAL_SI), "1080m", ""),
    (dec_q(300, 6, DECIMAL_SI), "300M", ""),
    (dec_q(1, 12, DECIMAL_SI), "1T", ""),
    (dec_q(1234567, 6, DECIMAL_SI), "1234567M", ""),
    (dec_q(1234567, -3, BINARY_SI), "1234567m", ""),
    (dec_q(3, 3, DECIMAL_SI), "3k", ""),
    (dec_q(1025, 0, BINARY_SI), "1025", ""),
    (dec_q(0, 0, DECIMAL_SI), "0", ""),
    (dec_q(0, 0, BINARY_SI), "0", ""),
    (dec_q(1, 9, DECIMAL_EXPONENT), "1e9", ".001e12"),
    (dec_q(1, -3, DECIMAL_EXPONENT), "1e-3", "0.001e0"),
    (dec_q(1, -9, DECIMAL_EXPONENT), "1e-9", "1000e-12"),
    (dec_q(80, -3, DECIMAL_EXPONENT), "80e-3", ""),
    (dec_q(300, 6, DECIMAL_EXPONENT), "300e6", ""),
    (dec_q(1, 12, DECIMAL_EXPONENT), "1e12", ""),
    (dec_q(1, 3, DECIMAL_EXPONENT), "1e3", ""),
    (dec_q(3, 3, DECIMAL_EXPONENT), "3e3", ""),
    (dec_q(3, 3, DECIMAL_SI), "3k", ""),
    (dec_q(0, 0, DECIMAL_EXPONENT), "0", "00"),
    (dec_q(1, -9, DECIMAL_SI), "1n", ""),
    (dec_q(80, -9, DECIMAL_SI), "80n", ""),
    (dec_q(1080, -9, DECIMAL_SI), "1080n", ""),
    (dec_q(108, -8, DECIMAL_SI), "1080n", ""),
    (dec_q(10800, -10, DECIMAL_SI), "1080n", ""),
    (dec_q(1, -6, DECIMAL_SI), "1u", ""),
    (dec_q(80, -6, DECIMAL_SI), "80u", ""),
    (dec_q(1080, -6, DECIMAL_SI), "1080u", ""),
]


@pytest.mark.parametrize(("q", "canonical", "alternate"), STRING_TABLE)
def test_string_canonical_and_reuse(q: Quantity, canonical: str, alternate: str) -> None:
    assert str(q) == canonical
    # Parsing the canonical form keeps the original string (upstream checks q.s).
    assert parse_quantity(canonical).cached == canonical
    if alternate:
        alt = parse_quantity(alternate)
        assert alt.cached is None
        assert str(alt) == canonical
    if q.unscaled != 0:
        assert str(q.neg()) == "-" + canonical


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        # Past E, DecimalSI falls back to the exponent form (kubernetes#140459):
        # the values its new round-trip cases pin, plus the edge it keeps.
        ("100E", "100E"),
        ("1000E", "1e21"),
        ("5000E", "5e21"),
        ("1000000E", "1e24"),
    ],
)
def test_parse_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect
    assert str(parse_quantity("-" + text)) == "-" + expect


@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_add_sub_zero_preserves_suffix(text: str) -> None:
    zero, value = parse_quantity("0"), parse_quantity(text)
    assert str(value.add(zero)) == text
    assert str(zero.add(value)) == text
    assert str(value.sub(zero)) == text
    assert str(zero.sub(value)) == str(value.neg())


@pytest.mark.parametrize(
    ("q", "out"),
    [(int_q(901, -2, DECIMAL_SI), "-9010m"), (dec_q(901, -2, DECIMAL_SI), "-9010m")],
)
def test_neg(q: Quantity, out: str) -> None:
    assert str(q.neg()) == out
    assert q.neg().cmp(q) != 0


ZERO_SI = int_q(0, 0, DECIMAL_SI)


@pytest.mark.parametrize(
    ("a", "b", "expect"),
    [
        (dec_q(10, 0, DECIMAL_SI), dec_q(1, 1, DECIMAL_SI), dec_q(0, 0, DECIMAL_SI)),
        (dec_q(10, 0, DECIMAL_SI), dec_q(1, 0, BINARY_SI), dec_q(9, 0, DECIMAL_SI)),
        (dec_q(10, 0, BINARY_SI), dec_q(1, 0, DECIMAL_SI), dec_q(9, 0, BINARY_SI)),
        (ZERO_SI, dec_q(50, 0, DECIMAL_SI), dec_q(-50, 0, DECIMAL_SI)),
        (dec_q(50, 0, DECIMAL_SI), ZERO_SI, dec_q(50, 0, DECIMAL_SI)),
        (ZERO_SI, ZERO_SI, dec_q(0, 0, DECIMAL_SI)),
    ],
)
def test_sub(a: Quantity, b: Quantity, expect: Quantity) -> None:
    assert a.sub(b).cmp(expect) == 0


@pytest.mark.parametrize(
    ("a", "b", "expect"),
    [
        (dec_q(10, 0, DECIMAL_SI), dec_q(1, 1, DECIMAL_SI), dec_q(20, 0, DECIMAL_SI)),
        (dec_q(10, 0, DECIMAL_SI), dec_q(1, 0, BINARY_SI), dec_q(11, 0, DECIMAL_SI)),
        (dec_q(10, 0, BINARY_SI), dec_q(1, 0, DECIMAL_SI), dec_q(11, 0, BINARY_SI)),
        (ZERO_SI, dec_q(50, 0, DECIMAL_SI), dec_q(50, 0, DECIMAL_SI)),
        (dec_q(50, 0, DECIMAL_SI), ZERO_SI, dec_q(50, 0, DECIMAL_SI)),
        (ZERO_SI, ZERO_SI, dec_q(0, 0, DECIMAL_SI)),
    ],
)
def test_add(a: Quantity, b: Quantity, expect: Quantity) -> None:
    assert a.add(b).cmp(expect) == 0


@pytest.mark.parametrize(
    ("value", "fmt", "expect"),
    [
        # TestNewSet: NewQuantity(value, format).String(), in both stored forms.
        (1, DECIMAL_SI, "1"),
        (1000, DECIMAL_SI, "1k"),
        (1234000, DECIMAL_SI, "1234k"),
        (1024, BINARY_SI, "1Ki"),
        (1000000, "invalidFormatDefaultsToExponent", "1e6"),
        (1024 * 1024, BINARY_SI, "1Mi"),
    ],
)
def test_new_quantity_string(value: int, fmt: str, expect: str) -> None:
    assert str(Quantity(value, 0, fmt)) == expect  # type: ignore[arg-type]
    assert str(Quantity(value, 0, fmt, is_dec=True)) == expect  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "fmt", "expect"),
    [
        # TestMilliNewSet: NewMilliQuantity(value, format).String().
        (1, DECIMAL_SI, "1m"),
        (1000, DECIMAL_SI, "1"),
        (1234000, DECIMAL_SI, "1234"),
        (1024, BINARY_SI, "1024m"),
        (1000000, "invalidFormatDefaultsToExponent", "1e3"),
        (1024 * 1024, BINARY_SI, "1048576m"),
    ],
)
def test_new_milli_quantity_string(value: int, fmt: str, expect: str) -> None:
    assert str(Quantity(value, -3, fmt)) == expect  # type: ignore[arg-type]


P7 = 7 * 1024 * 1024

APPROX_FLOAT = [
    (dec_q(0, 0, DECIMAL_SI), 0.0),
    (dec_q(0, 0, DECIMAL_EXPONENT), 0.0),
    (dec_q(0, 0, BINARY_SI), 0.0),
    (dec_q(1, 0, DECIMAL_SI), 1.0),
    (dec_q(1, 0, DECIMAL_EXPONENT), 1.0),
    (dec_q(1, 0, BINARY_SI), 1.0),
    (dec_q(1024, 0, BINARY_SI), 1024.0),
    (dec_q(8 * 1024, 0, BINARY_SI), 8.0 * 1024),
    (dec_q(P7, 0, BINARY_SI), float(P7)),
    (dec_q(P7, 1, BINARY_SI), float(P7 * 10)),
    (dec_q(P7, 4, BINARY_SI), float(P7 * 10000)),
    (dec_q(P7, 8, BINARY_SI), float(P7 * 100000000)),
    (dec_q(P7, -1, BINARY_SI), P7 * 0.1),
    (dec_q(P7, -8, BINARY_SI), P7 / 100000000.0),
    (dec_q(P7, -1, DECIMAL_SI), P7 * 0.1),
    (dec_q(P7, -8, DECIMAL_EXPONENT), P7 / 100000000.0),
    (dec_q(MOST_POSITIVE, 0, DECIMAL_SI), float(MOST_POSITIVE)),
    (dec_q(12, 18, DECIMAL_SI), 1.2e19),
    (dec_q(12, 500, DECIMAL_SI), math.inf),
    (dec_q(-12, 500, DECIMAL_SI), -math.inf),
]


@pytest.mark.parametrize(("q", "expect"), APPROX_FLOAT)
def test_as_approximate_float(q: Quantity, expect: float) -> None:
    assert q.as_approximate_float() == expect
    as_int = Quantity(q.unscaled, q.exponent, q.format).as_int64()
    if as_int is not None:
        assert Quantity(as_int, 0, q.format).as_approximate_float() == expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [("2Ki", 2048.0), ("1.1Ki", 1126.4), ("1Mi", 1.048576e06), ("2Gi", 2.147483648e09)],
)
def test_string_as_approximate_float(text: str, expect: float) -> None:
    assert parse_quantity(text).as_approximate_float() == expect


def test_add_sub_round_trip_across_scales() -> None:
    # TestAddSubRoundTripAcrossScales with a fixed sequence instead of rand.Int63.
    q = Quantity(0, 0, DECIMAL_SI)
    values = [(7**k * 1_000_003) % MOST_POSITIVE for k in range(100)]
    for j in values:
        q = q.add(Quantity(j, j % 20 - 10, DECIMAL_SI))
    for j in values:
        q = q.sub(Quantity(j, j % 20 - 10, DECIMAL_SI))
    assert q.is_zero()
