"""`ObjectStore.touch_status`: a status changed in place is noted as `touch` would note it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from modelplane.api.frozen import FrozenDict
from modelplane.local import ControlPlane, load_paths
from modelplane.local import store as store_module
from modelplane.local.store import Key, ObjectStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def obj(read_only: bool = False, **status: Any) -> dict[str, Any]:
    """A ConfigMap; `read_only`: its data read-only, as the engine stores what it
    applies (marshal refuses such an object, so it is noted by its text alone)."""
    data = {"k": "v"}
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "namespace": "default", "labels": {"x": "1"}},
        "data": FrozenDict(data) if read_only else data,
    }
    if status:
        out["status"] = dict(status)
    return out


KEY = Key("v1", "ConfigMap", "default", "a")


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize(
    ("before", "after", "changed"),
    [
        ({"phase": "A"}, {"phase": "B"}, True),
        ({"phase": "A"}, {"phase": "A"}, False),
        ({}, {"phase": "A"}, True),  # a status added
        ({"phase": "A"}, None, True),  # the status removed
        ({"n": 1}, {"n": 1.0}, True),  # a value's type counts
    ],
)
def test_a_status_change_is_noted_as_a_whole_touch_notes_it(
    before: dict[str, Any], after: dict[str, Any] | None, changed: bool, read_only: bool
) -> None:
    stores = [ObjectStore(), ObjectStore()]
    for s in stores:
        s.put(obj(read_only, **before))
    versions = [s.version(KEY) for s in stores]
    for s in stores:
        held = s.get(KEY)
        assert held is not None
        if after is None:
            held.pop("status", None)
        else:
            held["status"] = dict(after)
    assert stores[0].touch_status(KEY) is changed
    assert stores[1].touch(KEY) is changed
    assert (stores[0].version(KEY) != versions[0]) is changed
    assert stores[0].body(KEY) == stores[1].body(KEY)
    # The content noted is the object's: putting an equal copy changes nothing.
    held = stores[0].get(KEY)
    assert held is not None
    before_put = stores[0].version(KEY)
    stores[0].put(copy.deepcopy(held))
    assert stores[0].version(KEY) == before_put


def test_a_body_changed_too_is_not_what_touch_status_is_for() -> None:
    """The contract: the caller changed the status alone. A body change slipped in is
    not seen (this is why the engine calls it only for providers' reports)."""
    s = ObjectStore()
    s.put(obj(phase="A"))
    held = s.get(KEY)
    assert held is not None
    held["data"] = {"k": "w"}
    body = s.body(KEY)
    version = s.version(KEY)
    assert s.touch_status(KEY) is False
    assert s.body(KEY) == body and s.version(KEY) == version
    # Nor does a whole note later: the bytes were noted as they are. So the engine
    # notes by status only what a provider's simulated report changed.
    assert s.touch(KEY) is False


@pytest.mark.parametrize(
    "example",
    ["quickstart", "operations/progressive/pass", "clusters", "caches/huggingface"],
)
def test_every_status_the_render_notes_digests_as_the_whole_object(
    example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each object the provider simulation changes in place and notes by its status
    alone (`touch_status`) holds the content digest a whole note would give."""
    noted = []
    original = ObjectStore.touch_status

    def checked(self: ObjectStore, key: Key) -> bool:
        changed = original(self, key)
        held = self.get(key)
        assert held is not None
        assert self._content[key][1] == store_module._text_digest(held), key
        noted.append(key)
        return changed

    monkeypatch.setattr(ObjectStore, "touch_status", checked)
    ControlPlane(load_paths([EXAMPLES / example])).run(max_rounds=60)
    assert noted


def test_an_object_with_keys_of_mixed_types_is_noted_whole() -> None:
    """Such an object's digest has no body part (`_text_digest` hashes its repr)."""
    s = ObjectStore()
    odd: dict[Any, Any] = {**obj(phase="A"), 1: "one"}
    s.put(odd)
    held: dict[Any, Any] | None = s.get(KEY)
    assert held is not None
    held[1] = "two"  # not the status: only a whole note can see it
    held["status"] = {"phase": "B"}
    assert s.touch_status(KEY) is True
    version = s.version(KEY)
    s.put({**copy.deepcopy(held)})
    assert s.version(KEY) == version


@pytest.mark.parametrize("read_only", [False, True])
def test_a_kinds_body_version_moves_with_its_objects_bodies_not_their_reports(
    read_only: bool,
) -> None:
    store = ObjectStore()
    assert store.kind_body_version("v1", "ConfigMap") is None
    store.put(obj(read_only, phase="A"))
    added = store.kind_body_version("v1", "ConfigMap")
    assert added is not None

    # A report, put whole or changed in place: the kind's version moves, its body's not.
    kind = store.kind_version("v1", "ConfigMap")
    store.put(obj(read_only, phase="B"))
    stored = store.get(KEY)
    assert stored is not None
    stored["status"] = {"phase": "C"}
    assert store.touch_status(KEY)
    assert store.kind_version("v1", "ConfigMap") != kind
    assert store.kind_body_version("v1", "ConfigMap") == added

    # A label, another object of the kind, a deletion: each is a new body version.
    seen = {added}
    changed = obj(read_only, phase="C")
    changed["metadata"]["labels"] = {"x": "2"}
    store.put(changed)
    other = obj(read_only)
    other["metadata"]["name"] = "b"
    for step in (lambda: None, lambda: store.put(other), lambda: store.delete(KEY)):
        step()
        now = store.kind_body_version("v1", "ConfigMap")
        assert now not in seen
        seen.add(now)
    # Another kind's objects are not this kind's.
    store.put({**obj(read_only), "kind": "Secret"})
    assert store.kind_body_version("v1", "ConfigMap") in seen
