"""`jsontext.encode` writes what `json.dumps` (indent 2, sorted keys, no ASCII escapes) does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelplane.api.frozen import FrozenDict, FrozenList
from modelplane.local import jsontext
from modelplane.local.output import write_json


def reference(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


VALUES: list[Any] = [
    {},
    [],
    "",
    None,
    True,
    0,
    -0.0,
    1.5e300,
    2**70,
    {"b": [1, 2.0, True, None, "x"], "a": {"z": {}, "y": [], "é": '\u2028"\\\n\u001b'}},
    [[[]], [{}], [{"k": [{"k": 1}]}]],
    # Left to the standard library: its text, at any depth.
    {"t": (1, 2), "f": FrozenDict({"b": 1, "a": [2]}), "n": float("nan"), "i": float("-inf")},
    {1: "int key", 2: "another"},
    {"nested": [{True: 1}, {None: 2}, {1.5: 3}]},
]


@pytest.mark.parametrize("value", VALUES)
def test_the_text_is_the_standard_library_s(value: Any) -> None:
    assert jsontext.encode(value) == reference(value)
    # Nested two levels deep, as an item of the List `render -o json` writes.
    nested = reference({"items": [value]})
    start = nested.index("[") + len("[\n    ")
    end = nested.rindex("]") - len("\n  ")
    assert jsontext.encode(value, 2) == nested[start:end]


@pytest.mark.parametrize("value", [{"x": object()}, {"x": {"y": b"bytes"}}, {"a": 1, 2: {3}}])
def test_an_unencodable_value_raises_what_the_standard_library_raises(value: Any) -> None:
    with pytest.raises(TypeError) as ours:
        jsontext.encode(value)
    with pytest.raises(TypeError) as theirs:
        reference(value)
    assert str(ours.value) == str(theirs.value)


def test_a_circular_value_is_refused_as_the_standard_library_refuses_it() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.encode(loop)


@pytest.mark.parametrize("objects", [[], [{"a": 1}], [{"b": [1]}, {"a": {"c": None}}]])
def test_the_streamed_list_is_the_text_json_dumps_writes(objects: list[Any]) -> None:
    parts: list[str] = []
    write_json(objects, parts.append)
    doc = {"apiVersion": "v1", "kind": "List", "items": objects}
    assert "".join(parts) == reference(doc) + "\n"


def test_a_shared_container_is_written_as_where_it_first_appeared_at_its_depth() -> None:
    inner = FrozenDict({"b": FrozenList([1, "x", FrozenDict({})]), "a": None})
    values = [
        {"one": inner, "two": [inner, {"deeper": inner}]},
        FrozenList([inner, inner]),
        {"again": inner},
    ]
    for limit in (4_000_000, 10, 0):  # a table that fills up starts afresh
        shared = jsontext.Shared(limit)
        for value in values:
            for level in (0, 2, 3):
                assert jsontext.encode(value, level, shared) == jsontext.encode(value, level)
        assert shared.size <= max(limit, max(len(t) for t in shared.texts.values()))


def test_a_shared_container_s_text_is_written_once_per_depth() -> None:
    inner = FrozenDict({"k": FrozenList(["v"])})
    shared = jsontext.Shared()
    jsontext.encode({"a": inner, "b": {"c": inner}, "d": inner}, 0, shared)
    # inner at depth 1 (under a and d) and 2 (under c), its list once at each depth below.
    assert sorted(level for _, level in shared.texts) == [1, 2, 2, 3]
