"""The memo mechanisms and their switch (modelplane.api.memo).

Each memo of the pure layers is registered in `MEMOS`; these tests check the
mechanisms themselves: bounded by recency, copies for callers that change what
they get, and nothing remembered while memos are off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from modelplane.api import memo
from modelplane.api.frozen import frozen, memoized
from modelplane.api.memo import CopiedMemo, Memo, memo_function, memos_off, memos_on
from modelplane.dra.quantity import parse_quantity
from modelplane.dra.semver import parse_semver

# A registered name to build throwaway memos under (their size given here).
NAME = "compose.common._PARSED"


@pytest.fixture(autouse=True)
def _memos_on() -> Iterator[None]:
    """Every test starts with memos on and leaves the switch as it found it."""
    before = memos_on()
    memo.set_memos(True)
    yield
    memo.set_memos(before)


def _counting(derived: list[str], value: str) -> Any:
    def run() -> str:
        derived.append(value)
        return value.upper()

    return run


def test_the_least_recently_used_value_is_forgotten_beyond_the_size() -> None:
    m: Memo[str] = Memo(NAME, size=2)
    derived: list[str] = []
    assert m.get("a", _counting(derived, "a")) == "A"
    assert m.get("b", _counting(derived, "b")) == "B"
    assert m.get("a", _counting(derived, "a")) == "A"  # remembered; "b" is now the least recent
    assert m.get("c", _counting(derived, "c")) == "C"  # forgets "b"
    assert m.get("a", _counting(derived, "a")) == "A"
    assert m.get("b", _counting(derived, "b")) == "B"
    assert derived == ["a", "b", "c", "b"]


def test_with_memos_off_every_get_derives_and_nothing_is_kept() -> None:
    m: Memo[str] = Memo(NAME, size=4)
    derived: list[str] = []
    m.get("kept", _counting(derived, "kept"))
    with memos_off():
        assert not memos_on()
        assert len(m) == 0  # turning memos off forgets what they held
        for _ in range(3):
            assert m.get("a", _counting(derived, "a")) == "A"
        m["b"] = "B"
        assert m.get("b") is None
        assert len(m) == 0
    assert memos_on()
    assert derived == ["kept", "a", "a", "a"]


def test_a_remembered_function_runs_every_time_while_memos_are_off() -> None:
    calls: list[int] = []

    @memo_function("dra._regex._compile")  # a registered name; this function is the test's
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    assert [double(1), double(1), double(2)] == [2, 2, 4]
    assert calls == [1, 2]
    with memos_off():
        assert [double(1), double(1)] == [2, 2]
    assert calls == [1, 2, 1, 1]


def test_a_memo_function_must_be_registered_under_its_mechanism() -> None:
    with pytest.raises(KeyError):
        memo_function("nowhere.unregistered")
    with pytest.raises(ValueError, match="registered as a memo_function"):
        Memo("dra._regex._compile")


def test_values_remembered_on_a_read_only_object_are_derived_afresh_while_off() -> None:
    obj = frozen({"spec": {"a": 1}})
    first = memoized(obj, "test.probe", lambda o: object())
    assert memoized(obj, "test.probe", lambda o: object()) is first
    with memos_off():
        fresh = frozen({"spec": {"a": 1}})
        one = memoized(fresh, "test.probe", lambda o: object())
        assert memoized(fresh, "test.probe", lambda o: object()) is not one
        assert not hasattr(fresh, "_memo") or "test.probe" not in fresh._memo


@pytest.mark.parametrize(
    ("value", "on"),
    [
        *[("off", False), ("OFF", False), ("0", False), ("no", False), ("false", False)],
        *[("on", True), ("", True), ("1", True), ("yes", True)],
    ],
)
def test_the_environment_variable_turns_memos_off(value: str, on: bool) -> None:
    assert memo.memos_from_environment({memo.ENVIRONMENT_VARIABLE: value}) is on
    assert memos_on() is on
    assert memo.memos_from_environment({}) is True


def test_a_copied_memo_hands_each_caller_its_own_copy() -> None:
    m = CopiedMemo("compose.clusters.serving_stack._FIXED", size=4)
    derived: list[int] = []

    def derive() -> Any:
        derived.append(1)
        return {"a": [1, 1.0, True, None, "x"], "b": {"c": (1, 2)}}

    first = m.get("k", derive)
    first["a"].append("changed")
    second = m.get("k", derive)
    assert second == {"a": [1, 1.0, True, None, "x"], "b": {"c": (1, 2)}}
    assert [type(x) for x in second["a"]] == [int, float, bool, type(None), str]
    assert second is not m.get("k", derive)
    assert len(derived) == 1
    # A value marshal refuses (read-only containers) is derived every time.
    assert m.get("frozen", lambda: frozen({"a": 1})) == {"a": 1}
    assert m.get("frozen", lambda: frozen({"a": 2})) == {"a": 2}


def test_remembered_quantities_and_versions_cannot_be_changed() -> None:
    q = parse_quantity("1Gi")
    assert parse_quantity("1Gi") is q  # the remembered one
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.unscaled = 2  # type: ignore[misc]
    v = parse_semver("1.2.3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.major = 9  # type: ignore[misc]
    assert str(parse_semver("1.2.3")) == "1.2.3"


def test_a_value_remembered_on_a_read_only_object_is_read_only() -> None:
    obj = frozen({"spec": {"pools": [{"name": "p"}]}})
    pools = memoized(obj, "test.pools", lambda o: frozen(o["spec"]["pools"]))
    with pytest.raises(TypeError, match="read-only"):
        pools.append({"name": "q"})
    with pytest.raises(TypeError, match="read-only"):
        pools[0]["name"] = "changed"
    assert memoized(obj, "test.pools", lambda o: []) == [{"name": "p"}]
