"""Crossplane's Usage controller as the render plays it: a Usage is owned by its user.

Crossplane v2.3's Usage reconciler adds the using resource as an owner of the
Usage (apiVersion, kind, name and uid; neither controller nor blocking), after
the owners it has, so the Usage is collected with its user. A real fleet shows
it on every Usage a replica composes (render parity compares the whole list).
"""

from __future__ import annotations

from typing import Any

from modelplane.local import simulate
from modelplane.local.deletion import user_key
from modelplane.local.passes import Passes
from modelplane.local.simulate import simulate_usage_owners
from modelplane.local.store import Key, Obj, ObjectStore

OBJECT_API = "kubernetes.m.crossplane.io/v1alpha1"
USAGE_API = "protection.crossplane.io/v1beta1"
REPLICA = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelReplica",
    "name": "r",
    "uid": "uid-r",
    "controller": True,
    "blockOwnerDeletion": True,
}


def obj(name: str, uid: str) -> Obj:
    return {
        "apiVersion": OBJECT_API,
        "kind": "Object",
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
    }


def usage(by: str | None, owners: list[dict[str, Any]] | None = None) -> Obj:
    spec: dict[str, Any] = {
        "of": {"apiVersion": OBJECT_API, "kind": "Object", "resourceRef": {"name": "claim"}}
    }
    if by is not None:
        spec["by"] = {"apiVersion": OBJECT_API, "kind": "Object", "resourceRef": {"name": by}}
    return {
        "apiVersion": USAGE_API,
        "kind": "Usage",
        "metadata": {"name": "u", "namespace": "ns", "ownerReferences": list(owners or [REPLICA])},
        "spec": spec,
    }


U = Key(USAGE_API, "Usage", "ns", "u")


def owners(store: ObjectStore) -> list[dict[str, Any]]:
    return list((store.get(U) or {})["metadata"]["ownerReferences"])


def test_a_usage_whose_user_exists_is_owned_by_it_after_its_composite() -> None:
    store = ObjectStore({})
    for o in (obj("claim", "uid-claim"), obj("workload", "uid-w"), usage("workload")):
        store.put(o)
    assert simulate_usage_owners(store) == [U]
    assert owners(store) == [
        REPLICA,
        {"apiVersion": OBJECT_API, "kind": "Object", "name": "workload", "uid": "uid-w"},
    ]
    # Once owned, a second pass changes nothing (the render reaches a fixed point).
    version = store.version(U)
    assert simulate_usage_owners(store) == []
    assert store.version(U) == version


def test_a_usage_without_a_user_or_whose_user_is_missing_is_left_alone() -> None:
    for by in (None, "missing"):
        store = ObjectStore({})
        store.put(obj("claim", "uid-claim"))
        store.put(usage(by))
        assert simulate_usage_owners(store) == []
        assert owners(store) == [REPLICA]


def test_the_shared_owner_list_is_not_edited_in_place() -> None:
    # Composed objects share their metadata lists (the applier interns them).
    shared = [REPLICA]
    store = ObjectStore({})
    store.put(obj("workload", "uid-w"))
    store.put(usage("workload", shared))
    store.get(U)["metadata"]["ownerReferences"] = shared  # type: ignore[index]
    simulate_usage_owners(store)
    assert shared == [REPLICA]
    assert len(owners(store)) == 2


def test_a_pass_reads_again_only_a_usage_or_a_user_that_changed(monkeypatch: Any) -> None:
    # A Usage unchanged since the last pass, whose user is as it was, is left as
    # that pass left it without reading its spec again; a user recreated with a
    # new uid, or a Usage applied again without its owner, is owned again.
    read: list[Obj] = []

    def counted(u: Obj) -> Key | None:
        read.append(u)
        return user_key(u)

    monkeypatch.setattr(simulate, "user_key", counted)
    store, passes = ObjectStore({}), Passes()
    for o in (obj("claim", "uid-claim"), obj("workload", "uid-w"), usage("workload")):
        store.put(o)
    assert simulate_usage_owners(store, passes) == [U] and len(read) == 1
    passes.settle(store)
    assert simulate_usage_owners(store, passes) == [] and len(read) == 1
    store.delete(Key(OBJECT_API, "Object", "ns", "workload"))
    store.put(obj("workload", "uid-w2"))
    assert simulate_usage_owners(store, passes) == [U] and len(read) == 2
    assert [o["uid"] for o in owners(store)] == ["uid-r", "uid-w", "uid-w2"]
    passes.settle(store)
    store.put(usage("workload"))
    assert simulate_usage_owners(store, passes) == [U] and len(read) == 3
    assert [o["uid"] for o in owners(store)] == ["uid-r", "uid-w2"]
