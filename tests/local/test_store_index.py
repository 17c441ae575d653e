"""The store's label and owner indexes answer as a scan of every object would."""

from __future__ import annotations

import random
from typing import Any

import pytest

from modelplane.api.frozen import FrozenDict
from modelplane.local.store import Key, ObjectStore

API = "modelplane.ai/v1alpha1"


def labelled(kind: str, name: str, labels: dict[str, str], owner: str | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": API, "kind": "Parent", "name": owner}]
    return {"apiVersion": API, "kind": kind, "metadata": meta}


def scan(store: ObjectStore, kind: str, labels: dict[str, str]) -> list[str]:
    return [
        o["metadata"]["name"]
        for o in store.objects()
        if o["kind"] == kind
        and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in labels.items())
    ]


def test_a_label_first_selected_after_puts_finds_every_object_that_carries_it() -> None:
    store = ObjectStore()
    store.put(labelled("A", "a1", {"team": "x", "tier": "1"}))
    store.put(labelled("A", "a2", {"team": "y"}))
    assert [o["metadata"]["name"] for o in store.list(API, "A", labels={"team": "x"})] == ["a1"]
    # Indexed from now on: later puts, relabels and deletes are seen.
    store.put(labelled("A", "a3", {"team": "x"}))
    store.put(labelled("A", "a1", {"team": "y", "tier": "1"}))
    assert [o["metadata"]["name"] for o in store.list(API, "A", labels={"team": "x"})] == ["a3"]
    store.delete(Key(API, "A", "", "a3"))
    assert store.list(API, "A", labels={"team": "x"}) == []
    # A label selected for the first time after all that still finds what carries it.
    assert [o["metadata"]["name"] for o in store.list(API, "A", labels={"tier": "1"})] == ["a1"]


@pytest.mark.parametrize("seed", range(5))
def test_selections_agree_with_a_scan_over_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    store = ObjectStore()
    values = ["a", "b", "c"]
    for step in range(300):
        kind, name = rng.choice(["A", "B"]), f"o{rng.randrange(12)}"
        labels = {k: rng.choice(values) for k in ("p", "q", "r") if rng.random() < 0.6}
        action = rng.random()
        if action < 0.15:
            store.delete(Key(API, kind, "", name))
        elif action < 0.25 and (current := store.get(Key(API, kind, "", name))) is not None:
            current["metadata"]["labels"] = FrozenDict(labels)  # changed in place, then noted
            store.touch(Key(API, kind, "", name))
        else:
            store.put(labelled(kind, name, labels))
        if step % 7 == 0:
            want = {k: rng.choice(values) for k in rng.sample(["p", "q", "r"], rng.randint(1, 2))}
            got = [o["metadata"]["name"] for o in store.list(API, kind, labels=want)]
            assert got == scan(store, kind, want), (step, want)


def test_owner_index_follows_owner_changes() -> None:
    store = ObjectStore()
    store.put(labelled("A", "a", {}, owner="p1"))
    store.put(labelled("A", "b", {}, owner="p1"))
    assert [o["metadata"]["name"] for o in store.owned_by_name("p1")] == ["a", "b"]
    store.put(labelled("A", "a", {}, owner="p2"))
    store.put(labelled("A", "b", {}))
    assert store.owned_by_name("p1") == []
    assert [o["metadata"]["name"] for o in store.owned_by_name("p2")] == ["a"]
    store.delete(Key(API, "A", "", "a"))
    assert store.owned_by_name("p2") == []
