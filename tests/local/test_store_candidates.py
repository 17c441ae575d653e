"""The store's index of composed-resource candidates: by the one composite that can own each."""

from __future__ import annotations

from typing import Any

from modelplane.local.store import ObjectStore, owned_by

XR_API = "modelplane.io/v1alpha1"


def obj(kind: str, name: str, *, controller: str | None = None, root: str | None = None) -> Any:
    meta: dict[str, Any] = {"name": name}
    if root is not None:
        meta["labels"] = {"crossplane.io/composite": root}
    if controller is not None:
        meta["ownerReferences"] = [
            {"apiVersion": XR_API, "kind": "Parent", "name": controller, "controller": True}
        ]
    return {"apiVersion": XR_API, "kind": kind, "metadata": meta}


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_a_root_composite_s_candidates_are_its_own_resources_not_its_tree() -> None:
    store = ObjectStore()
    root = obj("Parent", "root")
    child = obj("Parent", "child", controller="root", root="root")
    store.put(root)
    store.put(child)
    # The grandchild carries the root's label but its controller is the child.
    store.put(obj("Leaf", "grandchild", controller="child", root="root"))
    # Labelled, without a controller reference: the label decides.
    store.put(obj("Leaf", "labelled", root="root"))
    # Owned by name, but not as controller: never a composed resource.
    other = obj("Leaf", "referenced")
    other["metadata"]["ownerReferences"] = [
        {"apiVersion": XR_API, "kind": "Parent", "name": "root"}
    ]
    store.put(other)
    assert names(store.candidates_of(root)) == ["labelled", "child"]  # key order: kind first
    assert names(store.candidates_of(child)) == ["grandchild"]
    assert [o for o in store.candidates_of(root) if owned_by(o, root)] == store.candidates_of(root)


def test_the_index_follows_a_changed_controller_and_a_deletion() -> None:
    store = ObjectStore()
    a, b = obj("Parent", "a"), obj("Parent", "b")
    store.put(a)
    store.put(b)
    leaf = obj("Leaf", "leaf", controller="a", root="a")
    key = store.put(leaf)
    assert names(store.candidates_of(a)) == ["leaf"]
    # Changed in place, then noted: the index moves with the controller.
    leaf["metadata"]["ownerReferences"][0]["name"] = "b"
    store.touch(key)
    assert names(store.candidates_of(a)) == [] and names(store.candidates_of(b)) == ["leaf"]
    store.delete(key)
    assert store.candidates_of(b) == []


def test_the_candidates_version_moves_exactly_when_a_candidate_does() -> None:
    store = ObjectStore()
    store.put(obj("Parent", "root"))
    store.put(obj("Parent", "other"))
    leaf = obj("Leaf", "a", controller="root")
    store.put(leaf)
    seen = [store.candidates_version("root")]

    def moved() -> bool:
        now = store.candidates_version("root")
        changed = now != seen[-1]
        seen.append(now)
        return changed

    store.put(obj("Leaf", "b", controller="other"))
    assert not moved()  # another composite's candidate
    store.put(obj("Leaf", "a", controller="root"))
    assert moved()  # equal content, a new object: holders of the old one look again
    same = store.get(next(k for k in store if k.name == "a"))
    assert same is not None
    store.put(same)
    assert not moved()  # the very object again
    same["metadata"]["labels"] = {"x": "y"}
    store.touch(next(k for k in store if k.name == "a"))
    assert moved()  # changed in place, then noted
    store.put(obj("Leaf", "b", controller="root"))
    assert moved()  # b becomes a candidate of root
    store.delete(next(k for k in store if k.name == "b"))
    assert moved()
