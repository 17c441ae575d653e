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
