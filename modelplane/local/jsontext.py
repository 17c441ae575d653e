"""Indented JSON text exactly as `json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False)`.

The standard library encodes indented JSON in Python, through a generator per
container, which made writing a large render's `-o json` a sizeable share of
its CPU time. This encoder writes the same text with plain recursion into a
list. Anything it does not handle the way the standard library would (a
value JSON cannot hold, a key that is not a string, a float that is not
finite) makes `encode` fall back to the standard library for that value, so
the text, or the error, is always the standard library's.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from modelplane.api.frozen import FrozenDict, FrozenList

INDENT = 2
_CONTAINERS: frozenset[type] = frozenset((dict, list, FrozenDict, FrozenList))
"""Plain or read-only (a store holds both)."""


class _UnhandledError(Exception):
    """A value this encoder leaves to the standard library."""


def _scalar(v: Any) -> str:
    """The text of a value that is not a container; raises _UnhandledError for the rest."""
    t = type(v)
    if t is str:
        return encode_basestring(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if t is int:
        return int.__repr__(v)
    if t is float and v == v and v not in (float("inf"), float("-inf")):
        return float.__repr__(v)
    raise _UnhandledError


class Shared:
    """The texts of read-only containers already written, by identity and depth.

    A render's store shares each distinct read-only container between every
    object that holds it (`api.frozen.Interner`): a fleet's thousand copies of
    one container spec are one object, so its text is written once per depth
    and then repeated. Only for values that outlive it (a writer keeps every
    object it writes alive), since an identity names one object only while
    that object lives. Bounded: past `limit` characters, it starts afresh.
    """

    def __init__(self, limit: int = 4_000_000) -> None:
        """An empty table holding at most about `limit` characters of text."""
        self.texts: dict[tuple[int, int], str] = {}
        self.size = 0
        self.limit = limit

    def text(self, v: Any, level: int) -> str:
        """The text of the read-only container `v` at depth `level`."""
        key = (id(v), level)
        found = self.texts.get(key)
        if found is None:
            out: list[str] = []
            _value(v, level, out, self)
            found = "".join(out)
            if self.size + len(found) > self.limit:
                self.texts.clear()
                self.size = 0
            self.texts[key] = found
            self.size += len(found)
        return found


_READ_ONLY: frozenset[type] = frozenset((FrozenDict, FrozenList))


def _dict(d: dict[Any, Any], level: int, out: list[str], shared: Shared | None) -> None:
    if not d:
        out.append("{}")
        return
    inner = "\n" + " " * (INDENT * (level + 1))
    sep = "{" + inner
    for k, v in sorted(d.items()):
        if type(k) is not str:
            raise _UnhandledError
        t = type(v)
        if t in _CONTAINERS:
            out.append(sep + encode_basestring(k) + ": ")
            _child(v, t, level + 1, out, shared)
        else:
            out.append(sep + encode_basestring(k) + ": " + _scalar(v))
        sep = "," + inner
    out.append("\n" + " " * (INDENT * level) + "}")


def _list(items: list[Any], level: int, out: list[str], shared: Shared | None) -> None:
    if not items:
        out.append("[]")
        return
    inner = "\n" + " " * (INDENT * (level + 1))
    sep = "[" + inner
    for v in items:
        t = type(v)
        if t in _CONTAINERS:
            out.append(sep)
            _child(v, t, level + 1, out, shared)
        else:
            out.append(sep + _scalar(v))
        sep = "," + inner
    out.append("\n" + " " * (INDENT * level) + "]")


def _child(v: Any, t: type, level: int, out: list[str], shared: Shared | None) -> None:
    if shared is not None and t in _READ_ONLY:
        out.append(shared.text(v, level))
    else:
        _value(v, level, out, shared)


def _value(v: Any, level: int, out: list[str], shared: Shared | None = None) -> None:
    t = type(v)
    if t is dict or t is FrozenDict:
        _dict(v, level, out, shared)
    elif t is list or t is FrozenList:
        _list(v, level, out, shared)
    else:
        out.append(_scalar(v))


def encode(value: Any, level: int = 0, shared: Shared | None = None) -> str:
    """`value`'s indented JSON text, as nested `level` containers deep in a document.

    Only dicts, lists (plain or read-only), strings, ints, finite floats,
    booleans and None are encoded here; any other value is left to the
    standard library, whose text at depth 0 differs from that at `level`
    only by the indentation after each line break (strings hold no raw line
    breaks), and whose errors are the ones raised. Through `shared`, the
    text of a read-only container written before at the same depth is
    repeated, not written again (`Shared`).
    """
    out: list[str] = []
    try:
        _value(value, level, out, shared)
    except (_UnhandledError, RecursionError, TypeError, ValueError):
        text = json.dumps(value, indent=INDENT, sort_keys=True, ensure_ascii=False)
        return text.replace("\n", "\n" + " " * (INDENT * level))
    return "".join(out)
