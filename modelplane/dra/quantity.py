"""Kubernetes resource quantities, ported from k8s.io/apimachinery/pkg/api/resource.

A `Quantity` keeps what Kubernetes keeps: the exact value, the suffix format it was
written in, and whether it is stored in the fast int64 form or the arbitrary-precision
decimal form (observable through `is_integer`/`as_integer`, which only succeed for the
int64 form). Values are exact integers scaled by powers of ten; no float is involved
except in `as_approximate_float`.

Quantities are immutable. Upstream's `Cmp` converts both operands to the decimal form as
a side effect (so a quantity compared once reports `isInteger() == false` afterwards);
ours does not. Arithmetic or parsing that would need to materialise a power of ten with
more than 4096 digits (exponents near the int32 limits) is refused with QuantityError
where upstream would spend unbounded time and memory. So is a quantity written with more
than `MAX_DIGITS` digits: upstream reads any length, but no real capacity needs it and
every value then stays far below Python's 4,300-digit integer conversion limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from modelplane.api.memo import memo_function

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "MAX_DIGITS",
    "Quantity",
    "QuantityDigitsError",
    "QuantityError",
    "parse_quantity",
]

Format = Literal["DecimalExponent", "BinarySI", "DecimalSI"]
DECIMAL_EXPONENT: Format = "DecimalExponent"
BINARY_SI: Format = "BinarySI"
DECIMAL_SI: Format = "DecimalSI"

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NANO = -9
_MAX_INT64_FACTORS = 18
# Exponents are int32 upstream; values this far apart cannot be aligned without
# materialising astronomically large integers, so arithmetic on them is refused
# (upstream would spend unbounded time and memory instead).
_MAX_ALIGN_DIGITS = 4096
#: Most digits the numeric part of a quantity string may have (see the module docstring).
MAX_DIGITS = 1000

SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = "quantities must match the regular expression '" + SPLIT_RE + "'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"
ERR_TOO_MANY_DIGITS = f"quantity has too many digits (at most {MAX_DIGITS} are accepted)"

_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_ZERO = frozenset("0")

# suffix -> (base, exponent, format)
_DEC_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BIN_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_BY_EXP = {e: s for s, e in _BIN_SUFFIXES.items()}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity; the message is Kubernetes' own."""


class QuantityDigitsError(QuantityError):
    """A quantity written with more than MAX_DIGITS digits (a limit upstream lacks)."""


def _wrap_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _go_parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64): optional sign, decimal digits, int64 range."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not _DIGITS.issuperset(body):
        return None
    # Leading zeros are legal; more than 19 significant digits is out of range, and
    # checking the length first keeps int() away from enormous strings.
    body = body.lstrip("0")
    if len(body) > 19:
        return None
    v = int(body or "0")
    if s[:1] == "-":
        v = -v
    if v > _INT64_MAX or v < _INT64_MIN:
        return None
    return v


def _interpret_suffix(suf: str) -> tuple[int, int, Format] | None:
    """Return (base, exponent, format) for a suffix, as quantitySuffixer.interpret does."""
    if suf in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suf], DECIMAL_SI
    if suf in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suf], BINARY_SI
    if len(suf) > 1 and suf[0] in "eE":
        parsed = _go_parse_int64(suf[1:])
        if parsed is None:
            return None
        return 10, _wrap_int32(parsed), DECIMAL_EXPONENT
    return None


def _run(s: str, pos: int, chars: frozenset[str]) -> int:
    """The index just past the run of `chars` starting at pos."""
    end = len(s)
    while pos < end and s[pos] in chars:
        pos += 1
    return pos


def _is_suffix(t: str) -> bool:
    """Whether t is all of `[eEinumkKMGTP]*[-+]?[0-9]*`, the scanner's suffix shape."""
    i = _run(t, 0, _SUFFIX_CHARS)
    if i < len(t) and t[i] in "+-":
        i += 1
    return _run(t, i, _DIGITS) == len(t)


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """The upstream fast scanner: (positive, value, num, denom, suffix) or QuantityError.

    `num` has its leading zeros removed; `value` is the numeric part as written.
    """
    end = len(s)
    positive = not s.startswith("-")
    pos = 1 if s[:1] in ("+", "-") else 0
    pos = _run(s, pos, _ZERO)
    if pos >= end:
        return positive, "0", "0", "", ""
    i = _run(s, pos, _DIGITS)
    if i >= end:
        return positive, s, s[pos:], "", ""
    num = s[pos:i] or "0"
    denom, pos = "", i
    if s[pos] == ".":
        i = _run(s, pos + 1, _DIGITS)
        denom = s[pos + 1 : i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    if not _is_suffix(s[pos:]):
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, s[:pos], num, denom, s[pos:]


def _parse_dec_string(value: str) -> tuple[int, int] | None:
    """inf.Dec.SetString: returns (unscaled, infScale) or None when no digits were read.

    More than MAX_DIGITS significant digits is refused rather than read.
    """
    sign = -1 if value[:1] == "-" else 1
    body = value[1:] if value[:1] in ("+", "-") else value
    ip, _, fp = body.partition(".")
    digits = ip + fp
    if not digits or not _DIGITS.issuperset(digits):
        return None
    significant = ip.lstrip("0") + fp
    if len(significant) > MAX_DIGITS:
        raise QuantityDigitsError(ERR_TOO_MANY_DIGITS)
    return sign * int(significant or "0"), len(fp)


def _strip_factors(v: int, base: int) -> tuple[int, int]:
    times = 0
    if v == 0:
        return 0, 0
    while v % base == 0:
        v //= base
        times += 1
    return v, times


def _go_pow10(n: int) -> float:
    """math.Pow10 from Go, bit for bit (table products, Inf above 308, 0 below -323)."""
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10_TAB[n % 32]
    if -323 <= n <= 0:
        m = -n
        return _POW10_NEG32[m // 32] / _POW10_TAB[m % 32]
    return math.inf if n > 0 else 0.0


_POW10_TAB = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


def _int_to_float(v: int) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _ndigits(v: int) -> int:
    """Decimal digits of |v| (1 for 0), without converting v to a string."""
    v = abs(v)
    # floor((bits - 1) * log10(2)) is the digit count less one, or one less than that.
    d = max(1, ((v.bit_length() - 1) * 30103) // 100000 + 1)
    return d + 1 if v >= 10**d else d


def _cmp_exact(a: int, ea: int, b: int, eb: int) -> int:
    """Compare a*10^ea with b*10^eb exactly, without expanding huge exponents."""
    sa = (a > 0) - (a < 0)
    sb = (b > 0) - (b < 0)
    if sa != sb:
        return 1 if sa > sb else -1
    if sa == 0:
        return 0
    # Order of magnitude: |a|*10^ea lies in [10^(len-1+ea), 10^(len+ea)).
    ma = _ndigits(a) + ea
    mb = _ndigits(b) + eb
    if ma != mb:
        return sa if ma > mb else -sa
    m = min(ea, eb)
    x = a * 10 ** (ea - m)
    y = b * 10 ** (eb - m)
    return (x > y) - (x < y)


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """A Kubernetes resource.Quantity: exact value, format, and stored form."""

    # value == unscaled * 10**exponent, exactly.
    unscaled: int
    exponent: int
    format: Format
    # True when upstream would hold an inf.Dec (asInteger then always fails).
    is_dec: bool = False
    # The original string when upstream keeps it (already canonical).
    cached: str | None = None

    @staticmethod
    def from_int(v: int, fmt: Format = DECIMAL_EXPONENT) -> Quantity:
        """resource.NewQuantity(v, fmt): an int64-form quantity."""
        return Quantity(v, 0, fmt)

    # -- accessors -------------------------------------------------------

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.unscaled > 0) - (self.unscaled < 0)

    def is_zero(self) -> bool:
        """True when the value is zero."""
        return self.unscaled == 0

    def as_int64(self) -> int | None:
        """Quantity.AsInt64: the value as int64, or None (always None for the decimal form)."""
        if self.is_dec:
            return None
        v, e = self.unscaled, self.exponent
        if e == 0:
            return v
        if e < 0:
            return None
        if v == 0:
            return 0
        if e > 18:
            return None
        r = v * 10**e
        if r > _INT64_MAX or r < _INT64_MIN:
            return None
        return r

    def is_integer(self) -> bool:
        """CEL isInteger(): asInteger would succeed."""
        return self.as_int64() is not None

    def as_approximate_float(self) -> float:
        """Quantity.AsApproximateFloat64."""
        base = _int_to_float(self.unscaled)
        if self.exponent == 0:
            return base
        return base * _go_pow10(self.exponent)

    def cmp(self, other: Quantity) -> int:
        """Exact comparison: -1, 0 or 1."""
        return _cmp_exact(self.unscaled, self.exponent, other.unscaled, other.exponent)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.cmp(other) == 0

    def __hash__(self) -> int:
        v, e = _strip_factors(self.unscaled, 10)
        return hash((v, self.exponent + e if v else 0))

    def __lt__(self, other: Quantity) -> bool:
        return self.cmp(other) < 0

    def __le__(self, other: Quantity) -> bool:
        return self.cmp(other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        return self.cmp(other) > 0

    def __ge__(self, other: Quantity) -> bool:
        return self.cmp(other) >= 0

    # -- arithmetic ------------------------------------------------------

    def _aligned(self, other: Quantity) -> tuple[int, int, int]:
        m = min(self.exponent, other.exponent)
        # The aligned operands must stay within _MAX_ALIGN_DIGITS digits, so that no
        # result (and no chain of results) outgrows what a quantity can print.
        widest = max(
            _ndigits(self.unscaled) + self.exponent - m,
            _ndigits(other.unscaled) + other.exponent - m,
        )
        if self.unscaled and other.unscaled and widest > _MAX_ALIGN_DIGITS:
            raise QuantityError("quantity arithmetic out of range")
        return (
            self.unscaled * 10 ** (self.exponent - m),
            other.unscaled * 10 ** (other.exponent - m),
            m,
        )

    def add(self, other: Quantity) -> Quantity:
        """Quantity.Add on a copy: the int64 fast path when it does not overflow."""
        fmt = self.format
        if not self.is_dec and not other.is_dec:
            if self.unscaled == 0:
                fmt = other.format
            r = _int64_add(self.unscaled, self.exponent, other.unscaled, other.exponent)
            if r is not None:
                return Quantity(r[0], r[1], fmt)
        elif self.unscaled == 0:
            fmt = other.format
        a, b, m = self._aligned(other)
        return Quantity(a + b, m, fmt, is_dec=True)

    def sub(self, other: Quantity) -> Quantity:
        """Quantity.Sub on a copy."""
        fmt = other.format if self.unscaled == 0 else self.format
        if not self.is_dec and not other.is_dec and other.unscaled != _INT64_MIN:
            r = _int64_add(self.unscaled, self.exponent, -other.unscaled, other.exponent)
            if r is not None:
                return Quantity(r[0], r[1], fmt)
        a, b, m = self._aligned(other)
        return Quantity(a - b, m, fmt, is_dec=True)

    def neg(self) -> Quantity:
        """The negated quantity."""
        return Quantity(-self.unscaled, self.exponent, self.format, self.is_dec)

    # -- formatting ------------------------------------------------------

    def order_key(self) -> str:
        """A string whose lexicographic order is the numeric order of quantities.

        Equal values get equal keys whatever their format or stored form; the CEL
        environment compares these natively instead of calling back into Python.
        """
        if self.unscaled == 0:
            return "1"
        text = str(abs(self.unscaled))
        digits = text.rstrip("0")
        magnitude = self.exponent + len(text)
        mag = f"{magnitude + _KEY_OFFSET:012d}"
        if self.unscaled > 0:
            return "2" + mag + digits
        return "0" + mag.translate(_INVERT) + digits.translate(_INVERT) + "~"

    def __str__(self) -> str:
        if self.cached is not None:
            return self.cached
        return _canonical(self)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


_KEY_OFFSET = 5 * 10**10
_INVERT = str.maketrans("0123456789", "9876543210")


def _int64_add(a: int, ea: int, b: int, eb: int) -> tuple[int, int] | None:
    """int64Amount.Add: the result (value, scale) or None on overflow."""
    if b == 0:
        return a, ea
    if a == 0:
        return b, eb
    if ea == eb:
        c = a + b
        return (c, ea) if _INT64_MIN <= c <= _INT64_MAX else None
    if ea > eb:
        if ea - eb > 18:
            return None
        sa = a * 10 ** (ea - eb)
        if not _INT64_MIN <= sa <= _INT64_MAX:
            return None
        c = sa + b
        return (c, eb) if _INT64_MIN <= c <= _INT64_MAX else None
    if eb - ea > 18:
        return None
    sb = b * 10 ** (eb - ea)
    if not _INT64_MIN <= sb <= _INT64_MAX:
        return None
    c = a + sb
    return (c, ea) if _INT64_MIN <= c <= _INT64_MAX else None


def _canonical(q: Quantity) -> str:
    """Quantity.CanonicalizeBytes joined with its suffix."""
    if q.unscaled == 0:
        return "0"
    fmt = q.format
    u, e = q.unscaled, q.exponent
    if fmt == BINARY_SI:
        if _cmp_exact(u, e, -1024, 0) > 0 and _cmp_exact(u, e, 1024, 0) < 0:
            fmt = DECIMAL_SI
        elif e < 0 and (-e > len(str(abs(u))) or u % 10 ** (-e) != 0):
            # Not an integer: showing it in base 1024 would lose precision.
            fmt = DECIMAL_SI
        elif _ndigits(u) + e > _MAX_ALIGN_DIGITS:
            # Beyond anything a resource can hold; decimal avoids a gigantic integer.
            fmt = DECIMAL_SI
    elif fmt != DECIMAL_SI:
        fmt = DECIMAL_EXPONENT
    if fmt == BINARY_SI:
        whole = u * 10**e if e >= 0 else u // 10 ** (-e)
        amount, times = _strip_factors(whole, 1024)
        return str(amount) + _BIN_BY_EXP.get(times * 10, "")
    amount, times = _strip_factors(q.unscaled, 10)
    exponent = q.exponent + times
    r = exponent % 3
    if r:
        amount *= 10**r
        exponent -= r
    if fmt == DECIMAL_SI and exponent in _DEC_BY_EXP:
        return str(amount) + _DEC_BY_EXP[exponent]
    # Beyond E (10^18) DecimalSI has no suffix: the exponent form keeps the
    # magnitude (kubernetes/kubernetes#140459; before it, 1000E printed as "1").
    return str(amount) + (f"e{exponent}" if exponent else "")


def _int64_form(
    s: str, positive: bool, num: str, denom: str, exponent: int, fmt: Format
) -> Quantity | None:
    """Upstream's int64 fast path, or None when the value needs the decimal form."""
    mantissa, scale = 1, exponent
    if fmt == BINARY_SI:
        if exponent < 0 or denom:
            return None
        mantissa, scale = 1 << exponent, 0
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    scale -= len(denom)
    if precision < 0 or scale < _NANO:
        return None
    shifted = num + denom
    v = _go_parse_int64(shifted)
    if v is None:
        raise QuantityError(ERR_NUMERIC)
    result = v * mantissa
    if not _INT64_MIN <= result <= _INT64_MAX:
        return None
    if fmt == BINARY_SI:
        canonical = exponent % 10 == 0 and (v & 0x07) != 0
    else:
        canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return Quantity(result if positive else -result, scale, fmt, cached=s if canonical else None)


def _round_to_nano(unscaled: int, exp10: int) -> tuple[int, int]:
    """Round a positive value up (away from zero) to a whole nano unit."""
    if unscaled == 0 or exp10 >= _NANO:
        return unscaled, exp10
    shift = _NANO - exp10
    # Below one nano unit everything rounds up to exactly 1n (no huge power of ten).
    return (1 if shift > len(str(unscaled)) else -(-unscaled // 10**shift)), _NANO


def _decimal_form(value: str, base: int, exponent: int, fmt: Format) -> Quantity:
    """Upstream's inf.Dec path: exact value, rounded to nano, binary capped at 2^63-1."""
    dec = _parse_dec_string(value)
    if dec is None:
        raise QuantityError(ERR_NUMERIC)
    unscaled, inf_scale = dec
    exp10 = -inf_scale
    if base == 10:
        exp10 += exponent
    else:
        unscaled <<= exponent
    negative = unscaled < 0
    unscaled, exp10 = _round_to_nano(abs(unscaled), exp10)
    if fmt == BINARY_SI and _cmp_exact(unscaled, exp10, _INT64_MAX, 0) > 0:
        unscaled, exp10 = _INT64_MAX, 0
    if fmt == BINARY_SI and unscaled != 0 and _cmp_exact(unscaled, exp10, 1, 0) < 0:
        fmt = DECIMAL_SI
    return Quantity(-unscaled if negative else unscaled, exp10, fmt, is_dec=True)


@memo_function("dra.quantity.parse_quantity")
def parse_quantity(s: str) -> Quantity:
    """resource.ParseQuantity: parse or raise QuantityError with the upstream message."""
    if not s:
        raise QuantityError(ERR_FORMAT_WRONG)
    if s == "0":
        return Quantity(0, 0, DECIMAL_SI, cached=s)
    positive, value, num, denom, suf = _scan(s)
    interp = _interpret_suffix(suf)
    if interp is None:
        raise QuantityError(ERR_SUFFIX)
    base, exponent, fmt = interp
    fast = _int64_form(s, positive, num, denom, exponent, fmt)
    return fast if fast is not None else _decimal_form(value, base, exponent, fmt)
