"""Property tests: quantities against an independent exact-arithmetic oracle, versions.

The oracle reads a generated quantity the way Kubernetes documents it (number times
suffix multiplier, rounded up to a whole nano unit away from zero, binary values capped
at 2^63-1) using Python's Fraction; it shares no code with the implementation.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.dra.cel import evaluate
from modelplane.dra.quantity import Quantity, parse_quantity
from modelplane.dra.semver import parse_semver

DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
NANO = Fraction(1, 10**9)
INT64_MAX = 2**63 - 1


@st.composite
def quantity_text(draw: st.DrawFn) -> tuple[str, Fraction, bool]:
    """(text, exact value Kubernetes assigns to it, is_binary)."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", min_size=1, max_size=22))
    frac = draw(st.none() | st.text("0123456789", max_size=14))
    kind = draw(st.sampled_from(["dec", "bin", "exp"]))
    if kind == "dec":
        suffix = draw(st.sampled_from(sorted(DECIMAL)))
        mult = Fraction(10) ** DECIMAL[suffix]
    elif kind == "bin":
        suffix = draw(st.sampled_from(sorted(BINARY)))
        mult = Fraction(2) ** BINARY[suffix]
    else:
        exp = draw(st.integers(-30, 30))
        suffix = (
            draw(st.sampled_from(["e", "E"]))
            + draw(st.sampled_from(["", "+"]) if exp >= 0 else st.just(""))
            + str(exp)
        )
        mult = Fraction(10) ** exp
    digits = whole + (frac or "")
    number = Fraction(int(digits), 10 ** len(frac or ""))
    text = sign + whole + ("." + frac if frac is not None else "") + suffix
    magnitude = number * mult
    if magnitude % NANO:
        magnitude = (magnitude // NANO + 1) * NANO
    if kind == "bin" and magnitude > INT64_MAX:
        magnitude = Fraction(INT64_MAX)
    return text, (-magnitude if sign == "-" else magnitude), kind == "bin"


def exact(q: Quantity) -> Fraction:
    return Fraction(q.unscaled) * Fraction(10) ** q.exponent


@settings(max_examples=400, deadline=None)
@given(quantity_text())
def test_parse_matches_the_oracle(case: tuple[str, Fraction, bool]) -> None:
    text, value, _ = case
    assert exact(parse_quantity(text)) == value


@settings(max_examples=400, deadline=None)
@given(quantity_text())
def test_parse_string_parse_is_identity(case: tuple[str, Fraction, bool]) -> None:
    text, value, _ = case
    q = parse_quantity(text)
    canonical = str(q)
    again = parse_quantity(canonical)
    assert exact(again) == value
    assert str(again) == canonical  # the canonical form is a fixed point


@settings(max_examples=400, deadline=None)
@given(quantity_text(), quantity_text())
def test_ordering_is_total_and_exact(
    a: tuple[str, Fraction, bool], b: tuple[str, Fraction, bool]
) -> None:
    qa, qb = parse_quantity(a[0]), parse_quantity(b[0])
    expect = (a[1] > b[1]) - (a[1] < b[1])
    assert qa.cmp(qb) == expect
    assert qb.cmp(qa) == -expect
    assert (qa == qb) is (expect == 0)
    ka, kb = qa.order_key(), qb.order_key()
    assert (ka > kb) - (ka < kb) == expect


@settings(max_examples=200, deadline=None)
@given(quantity_text(), quantity_text())
def test_add_sub_are_exact(a: tuple[str, Fraction, bool], b: tuple[str, Fraction, bool]) -> None:
    qa, qb = parse_quantity(a[0]), parse_quantity(b[0])
    assert exact(qa.add(qb)) == a[1] + b[1]
    assert exact(qa.sub(qb)) == a[1] - b[1]


@settings(max_examples=300, deadline=None)
@given(quantity_text())
def test_integer_views(case: tuple[str, Fraction, bool]) -> None:
    q = parse_quantity(case[0])
    as_int = q.as_int64()
    if as_int is not None:
        assert q.is_integer()
        assert Fraction(as_int) == case[1]
    assert q.sign() == (case[1] > 0) - (case[1] < 0)
    f = q.as_approximate_float()
    assert math.isinf(f) or math.isclose(f, float(case[1]), rel_tol=1e-9, abs_tol=1e-300)


@settings(max_examples=150, deadline=None)
@given(quantity_text(), quantity_text())
def test_cel_comparisons_agree_with_the_oracle(
    a: tuple[str, Fraction, bool], b: tuple[str, Fraction, bool]
) -> None:
    expect = (a[1] > b[1]) - (a[1] < b[1])
    qa, qb = f'quantity("{a[0]}")', f'quantity("{b[0]}")'
    assert evaluate(f"{qa}.compareTo({qb})") == expect
    assert evaluate(f"{qa}.isGreaterThan({qb})") is (expect == 1)
    assert evaluate(f"{qa} == {qb}") is (expect == 0)
    device = {"driver": "d.example.com", "capacity": {"c": {"value": a[0]}}}
    assert evaluate(f'device.capacity["d.example.com"].c.compareTo({qb}) < 0', device) is (
        expect < 0
    )
    assert (
        evaluate(f'cel.bind(x, device.capacity["d.example.com"].c, x.compareTo({qb}))', device)
        == expect
    )


IDENT = st.from_regex(r"[0-9A-Za-z-]{1,6}", fullmatch=True)


@st.composite
def version_text(draw: st.DrawFn) -> str:
    nums = [str(draw(st.integers(0, 2**64 - 1))) for _ in range(3)]
    text = ".".join(nums)
    pre = draw(
        st.lists(
            IDENT.filter(lambda s: not (s.isdigit() and len(s) > 1 and s[0] == "0")), max_size=3
        )
    )
    if pre:
        text += "-" + ".".join(pre)
    build = draw(st.lists(IDENT, max_size=2))
    if build:
        text += "+" + ".".join(build)
    return text


def precedence(text: str) -> tuple:  # type: ignore[type-arg]
    """semver.org precedence key, written from the spec (build ignored)."""
    core, _, _ = text.partition("+")
    nums, dash, pre = core.partition("-")
    major, minor, patch = (int(x) for x in nums.split("."))
    if not dash:
        return (major, minor, patch, 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (major, minor, patch, 0, ids)


@settings(max_examples=300, deadline=None)
@given(version_text(), version_text())
def test_semver_order_follows_the_spec(a: str, b: str) -> None:
    va, vb = parse_semver(a), parse_semver(b)
    assert str(va) == a
    pa, pb = precedence(a), precedence(b)
    expect = (pa > pb) - (pa < pb)
    assert va.cmp(vb) == expect
    ka, kb = va.order_key(), vb.order_key()
    assert (ka > kb) - (ka < kb) == expect
    assert parse_semver("v" + a, True).cmp(va) == 0
