"""`ReadOnlyDict`: a memo's shared table that no caller can change, copied at a dict's speed."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from modelplane.api.frozen import ReadOnlyDict

CHANGES: list[tuple[str, Any]] = [
    ("set", lambda d: d.__setitem__("c", 3)),
    ("delete", lambda d: d.__delitem__("a")),
    ("update", lambda d: d.update({"c": 3})),
    ("merge in place", lambda d: d.__ior__({"c": 3})),
    ("setdefault", lambda d: d.setdefault("c", 3)),
    ("pop", lambda d: d.pop("a")),
    ("popitem", lambda d: d.popitem()),
    ("clear", lambda d: d.clear()),
]


@pytest.mark.parametrize(("what", "change"), CHANGES, ids=[w for w, _ in CHANGES])
def test_no_change_reaches_it(what: str, change: Any) -> None:
    shared: ReadOnlyDict[str, int] = ReadOnlyDict({"a": 1, "b": 2})
    with pytest.raises(TypeError, match="read-only"):
        change(shared)
    assert shared == {"a": 1, "b": 2}


def test_keys_of_any_kind_and_copies_of_its_own() -> None:
    shared: ReadOnlyDict[tuple[str, str], int] = ReadOnlyDict({("c1", "p1"): 4})
    mine = dict(shared)
    mine[("c1", "p2")] = 8  # a copy is the caller's
    merged: dict[tuple[str, str], int] = {}
    merged.update(shared)
    assert merged == {("c1", "p1"): 4} and shared == {("c1", "p1"): 4}
    assert type(copy.copy(shared)) is dict
    assert pickle.loads(pickle.dumps(shared)) == {("c1", "p1"): 4}
