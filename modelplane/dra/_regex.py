"""Kubernetes' CEL regex library (`find`, `findAll`) on RE2, with Go's match semantics.

Kubernetes evaluates these with Go's `regexp`, an RE2 engine: matching takes time linear
in the input whatever the pattern, so `"aaa…a!".find("(a+)+$")` cannot stall a
reconcile the way a backtracking engine (Python's `re`) does. This module uses Google's
RE2 through the `google-re2` bindings, and reproduces Go's `FindAllString` rules for
empty matches (an empty match right after the previous match is skipped).

Patterns that RE2 refuses raise ValueError with Go's prefix ("error parsing regexp: "),
which the CEL environment turns into an evaluation error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import re2

from modelplane.api.memo import memo_function

__all__ = ["find", "find_all"]

_OPTIONS = re2.Options()
# An invalid user pattern is reported as an evaluation error; RE2 would also log it.
_OPTIONS.log_errors = False


def _message(err: BaseException) -> str:
    raw = err.args[0] if err.args else str(err)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


@memo_function("dra._regex._compile")
def _compile(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        raise ValueError(f"error parsing regexp: {_message(e)}") from None


def _rune_width(data: bytes, pos: int) -> int:
    """Bytes in the UTF-8 sequence starting at pos (1 past the end, to stop the scan)."""
    if pos >= len(data):
        return 1
    lead = data[pos]
    if lead < 0x80:
        return 1
    return 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _spans(regexp: Any, data: bytes, limit: int) -> Iterator[tuple[int, int]]:
    """Go's Regexp.allMatches over UTF-8 bytes: successive leftmost-first match spans."""
    pos, prev_end, found = 0, -1, 0
    while pos <= len(data) and found != limit:
        m = regexp.search(data, pos)
        if m is None:
            return
        start, stop = m.span()
        accept = True
        if stop == pos:
            # An empty match: never right after the previous match; step one rune on.
            accept = start != prev_end
            pos += _rune_width(data, pos)
        else:
            pos = stop
        prev_end = stop
        if accept:
            found += 1
            yield start, stop


def _text(data: bytes, span: tuple[int, int]) -> str:
    # RE2 matches whole runes in UTF-8 mode; only `\C` can split one, and Go refuses it.
    return data[span[0] : span[1]].decode("utf-8", "replace")


def find(s: str, pattern: str) -> str:
    """`s.find(pattern)`: the first match, or "" (Go's FindString)."""
    data = s.encode()
    for span in _spans(_compile(pattern), data, 1):
        return _text(data, span)
    return ""


def find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    """`s.findAll(pattern[, limit])`: successive matches, at most `limit` when ≥ 0."""
    if limit == 0:
        return []
    data = s.encode()
    return [_text(data, span) for span in _spans(_compile(pattern), data, limit)]
