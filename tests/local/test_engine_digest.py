"""The engine's digest of a composer's desired object: equal digests, equal objects."""

from __future__ import annotations

from modelplane.api.frozen import FrozenDict, FrozenList, frozen
from modelplane.local.apply import digest

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
    assert digest(wrapped(CRD)) == digest(wrapped(CRD)) == digest(wrapped(again))
    other = frozen({"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": 1}]}})
    assert digest(wrapped(other)) != digest(wrapped(CRD))
    assert digest(wrapped(CRD, "b")) != digest(wrapped(CRD))


def test_a_read_only_list_and_the_plain_object_are_told_apart() -> None:
    listed = wrapped(FrozenList([CRD]))
    assert digest(listed) == digest(wrapped(FrozenList([CRD])))
    assert digest(listed) != digest(wrapped(FrozenList([CRD, CRD])))
    # The same content held plain is another serialization: a new digest, never a
    # false match.
    plain = wrapped(
        {"spec": {"names": {"kind": "Pool"}, "versions": [{"name": "v1", "served": True}]}}
    )
    assert digest(plain) != digest(wrapped(CRD))
    assert digest(plain) == digest(wrapped(dict(plain["spec"]["m"])))  # type: ignore[index]


def test_types_and_key_order_count() -> None:
    assert digest(wrapped({"x": 1})) != digest(wrapped({"x": 1.0}))
    assert digest(wrapped({"x": 1})) != digest(wrapped({"x": True}))
    assert digest(wrapped({"x": 1, "y": 2})) != digest(wrapped({"y": 2, "x": 1}))
    assert digest(wrapped(frozen({"x": 1}))) != digest(wrapped(frozen({"x": True})))
