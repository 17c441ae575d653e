"""The engine's digest of a composer's desired object: equal digests, equal objects."""

from __future__ import annotations

from modelplane.api.frozen import FrozenDict, FrozenList, frozen
from modelplane.local.engine import _digest

CRD = frozen({"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": True}]}})


def wrapped(manifest: object, name: str = "a") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Object",
        "metadata": {"name": name},
        "spec": {"m": manifest},
    }


def test_a_read_only_part_counts_by_its_content() -> None:
    again = frozen(
        {"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": True}]}}
    )
    assert type(CRD) is FrozenDict and again is not CRD
    assert _digest(wrapped(CRD)) == _digest(wrapped(CRD)) == _digest(wrapped(again))
    other = frozen({"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": 1}]}})
    assert _digest(wrapped(other)) != _digest(wrapped(CRD))
    assert _digest(wrapped(CRD, "b")) != _digest(wrapped(CRD))


def test_a_read_only_list_and_the_plain_object_are_told_apart() -> None:
    listed = wrapped(FrozenList([CRD]))
    assert _digest(listed) == _digest(wrapped(FrozenList([CRD])))
    assert _digest(listed) != _digest(wrapped(FrozenList([CRD, CRD])))
    # The same content held plain is another serialization: a new digest, never a
    # false match.
    plain = wrapped(
        {"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": True}]}}
    )
    assert _digest(plain) != _digest(wrapped(CRD))
    assert _digest(plain) == _digest(wrapped(dict(plain["spec"]["m"])))  # type: ignore[index]


def test_types_and_key_order_count() -> None:
    assert _digest(wrapped({"x": 1})) != _digest(wrapped({"x": 1.0}))
    assert _digest(wrapped({"x": 1})) != _digest(wrapped({"x": True}))
    assert _digest(wrapped({"x": 1, "y": 2})) != _digest(wrapped({"y": 2, "x": 1}))
    assert _digest(wrapped(frozen({"x": 1}))) != _digest(wrapped(frozen({"x": True})))
