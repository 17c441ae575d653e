"""Semantic versions with the semantics of github.com/blang/semver/v4.

`parse_semver(s)` is blang's strict `Parse`; `parse_semver(s, normalize=True)` is the
normalisation Kubernetes' CEL `semver(s, true)` applies first (drop a leading "v",
strip leading zeros, fill a missing minor/patch with 0). Build metadata is kept for
display but ignored by comparison, as in blang. A number of any length is refused with
blang's own "value out of range" (uint64), so no parse error escapes as anything but
SemverError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from modelplane.api.memo import memo_function

__all__ = ["Semver", "SemverDigitsError", "SemverError", "parse_semver"]

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_UINT64_MAX = (1 << 64) - 1


class SemverError(ValueError):
    """A string that is not a semantic version; the message mirrors blang/semver."""


class SemverDigitsError(SemverError):
    """A number with more digits than any uint64 has (blang's "value out of range")."""


def _only(s: str, allowed: frozenset[str]) -> bool:
    return allowed.issuperset(s)


def _leading_zero(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def _q(s: str) -> str:
    """Go's %q, close enough for the strings that reach error messages.

    A string longer than 64 characters is shortened (Go would quote it whole): the
    message must stay readable in a condition or a terminal.
    """
    if len(s) > 64:
        return json.dumps(s[:32]) + f"... ({len(s)} characters)"
    return json.dumps(s)


def _parse_uint(s: str) -> int:
    """strconv.ParseUint(s, 10, 64), with Go's error text."""
    if not s or not _only(s, _NUMBERS):
        raise SemverError(f"strconv.ParseUint: parsing {_q(s)}: invalid syntax")
    # More than 20 significant digits is out of range whatever they are; checking the
    # length first keeps int() (and its 4,300-digit limit) away from long strings.
    digits = s.lstrip("0")
    if len(digits) > len(str(_UINT64_MAX)):
        raise SemverDigitsError(f"strconv.ParseUint: parsing {_q(s)}: value out of range")
    v = int(digits or "0")
    if v > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {_q(s)}: value out of range")
    return v


def _number(part: str, what: str) -> int:
    if not _only(part, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {what} number {_q(part)}")
    if _leading_zero(part):
        raise SemverError(f"{what.capitalize()} number must not contain leading zeroes {_q(part)}")
    return _parse_uint(part)


@dataclass(frozen=True, slots=True)
class PreRelease:
    """One dot-separated prerelease identifier: numeric or alphanumeric."""

    num: int | None
    text: str

    def cmp(self, other: PreRelease) -> int:
        """PRVersion.Compare: numeric < alphanumeric; numbers numerically, text bytewise."""
        if self.num is not None and other.num is not None:
            return (self.num > other.num) - (self.num < other.num)
        if self.num is not None:
            return -1
        if other.num is not None:
            return 1
        a, b = self.text.encode(), other.text.encode()
        return (a > b) - (a < b)


def _prerelease(s: str) -> PreRelease:
    if not s:
        raise SemverError("Prerelease is empty")
    if _only(s, _NUMBERS):
        if _leading_zero(s):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {_q(s)}")
        return PreRelease(_parse_uint(s), s)
    if _only(s, _ALPHANUM):
        return PreRelease(None, s)
    raise SemverError(f"Invalid character(s) found in prerelease {_q(s)}")


@dataclass(frozen=True, slots=True, eq=False)
class Semver:
    """A semantic version (blang/semver v4 Version)."""

    major: int
    minor: int
    patch: int
    pre: tuple[PreRelease, ...] = ()
    build: tuple[str, ...] = field(default=())

    def cmp(self, other: Semver) -> int:
        """Version.Compare: precedence per semver 2.0; build metadata ignored."""
        for a, b in (
            (self.major, other.major),
            (self.minor, other.minor),
            (self.patch, other.patch),
        ):
            if a != b:
                return 1 if a > b else -1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre, strict=False):
            c = x.cmp(y)
            if c:
                return c
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.cmp(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __lt__(self, other: Semver) -> bool:
        return self.cmp(other) < 0

    def __le__(self, other: Semver) -> bool:
        return self.cmp(other) <= 0

    def __gt__(self, other: Semver) -> bool:
        return self.cmp(other) > 0

    def __ge__(self, other: Semver) -> bool:
        return self.cmp(other) >= 0

    def order_key(self) -> str:
        """A string whose lexicographic order is semver precedence (build ignored)."""
        # Control characters sort below every identifier character; NUL is avoided
        # because the engine's string conversion stops at it.
        key = f"{self.major:020d}.{self.minor:020d}.{self.patch:020d}"
        if not self.pre:
            return key + "\x03"
        parts = [f"0{p.num:020d}" if p.num is not None else "1" + p.text for p in self.pre]
        return key + "\x02" + "".join(part + "\x01" for part in parts)

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(p.text for p in self.pre)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


# The common plain form, at most 20 digits a number (longer ones take the slow path,
# which reports them out of range).
_PLAIN = re.compile(r"(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})\.(0|[1-9][0-9]{0,19})")


def _strict(s: str) -> Semver:
    plain = _PLAIN.fullmatch(s)
    if plain is not None:
        major, minor, patch = (int(x) for x in plain.groups())
        if max(major, minor, patch) <= _UINT64_MAX:
            return Semver(major, minor, patch)
    if not s:
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    pre: list[str] = []
    if "+" in rest:
        rest, b = rest.split("+", 1)
        build = b.split(".")
    if "-" in rest:
        rest, p = rest.split("-", 1)
        pre = p.split(".")
    patch = _number(rest, "patch")
    pres = tuple(_prerelease(p) for p in pre)
    for b in build:
        if not b:
            raise SemverError("Build meta data is empty")
        if not _only(b, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {_q(b)}")
    return Semver(major, minor, patch, pres, tuple(build))


def _normalized(s: str) -> Semver:
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in "+-" for c in parts[-1]):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return _strict(".".join(parts))


@memo_function("dra.semver.parse_semver")
def parse_semver(s: str, normalize: bool = False) -> Semver:
    """Parse a version string; raise SemverError with blang's message when invalid."""
    return _normalized(s) if normalize else _strict(s)
