"""The applicator: desired composed resources onto hand-built stores.

What Crossplane sets on a composed resource, the simplified server-side
apply, refusing another controller's object, and not writing what a write
would not change.
"""

from __future__ import annotations

import hashlib
from typing import Any

from modelplane.api import constants as c
from modelplane.api.frozen import Interner
from modelplane.local.apply import Applicator, Applied, digest, identity, uid_of
from modelplane.local.conditions import Clock
from modelplane.local.deletion import Collector
from modelplane.local.store import Key, Obj, ObjectStore

XR_API = "test.modelplane.ai/v1"
MADE = Key("v1", "ConfigMap", "default", "made")


def xr(name: str = "w", namespace: str | None = "default", **labels: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": XR_API, "kind": "Widget", "metadata": meta, "spec": {}}


def configmap(name: str | None = "made", **data: str) -> Obj:
    meta = {"name": name} if name else {}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


class Rig:
    """An applicator over a fresh store, counting puts and recording deletions."""

    def __init__(self) -> None:
        self.store = ObjectStore()
        self.readiness: dict[Key, bool | None] = {}
        self.deleted: list[Key] = []
        self.puts = 0
        put = self.store.put

        def counted(obj: Obj, key: Key | None = None) -> Key:
            self.puts += 1
            assert key is None or key == Key.of(obj)  # a key given is the object's
            return put(obj, key)

        self.store.put = counted  # type: ignore[method-assign]
        self.applicator = Applicator(
            self.store,
            Interner(),
            Clock(),
            Collector(self.store),
            self.readiness,
            lambda obj: self.deleted.append(Key.of(obj)),
        )

    def apply(
        self, owner: Obj, desired: Obj, observed: dict[str, Obj] | None = None, *, raw: bool = True
    ) -> tuple[dict[str, tuple[Obj, bool | None]], list[str]]:
        """Apply `desired` as resource "cm", as an in-process call hands it over."""
        raws = {"cm": (desired, digest(desired))} if raw else {}
        return self.applicator.apply(owner, {"cm": (dict(desired), True)}, raws, observed or {})

    def again(self, owner: Obj, desired: Obj, observed: dict[str, Obj]) -> list[str]:
        """Apply an equal object again, left unconverted as `reply_of` leaves it."""
        raws = {"cm": (desired, digest(desired))}
        return self.applicator.apply(owner, {"cm": (None, True)}, raws, observed)[1]


def test_a_created_composed_resource_gets_crossplanes_metadata() -> None:
    rig = Rig()
    applied, errors = rig.apply(xr(), configmap(None, x="1"))
    assert errors == []
    obj, ready = applied["cm"]
    suffix = hashlib.sha256(f"{XR_API}/Widget/default/w/cm".encode()).hexdigest()[:5]
    meta = obj["metadata"]
    assert meta["name"] == f"w-{suffix}" and meta["namespace"] == "default"
    assert meta["labels"] == {c.XP_LABEL_COMPOSITE: "w"}
    assert meta["annotations"] == {c.XP_ANNOTATION_RESOURCE_NAME: "cm"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": XR_API,
            "kind": "Widget",
            "name": "w",
            "uid": "uid-w",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    key = Key.of(obj)
    assert meta["uid"] == uid_of(key) and meta["generation"] == 1
    assert ready is True and rig.readiness[key] is True
    assert list(obj) == ["apiVersion", "kind", "metadata", "data"]


def test_a_generated_name_stays_a_dns_label() -> None:
    long_name = "x" * 56 + "-" + "y" * 20
    obj = Rig().apply(xr(long_name), configmap(None))[0]["cm"][0]
    name = obj["metadata"]["name"]
    assert len(name) <= 63 and name.startswith("x" * 56 + "-") and "--" not in name


def test_a_nested_xrs_resources_carry_the_root_composite() -> None:
    obj = Rig().apply(xr("child", **{c.XP_LABEL_COMPOSITE: "root"}), configmap())[0]["cm"][0]
    assert obj["metadata"]["labels"][c.XP_LABEL_COMPOSITE] == "root"


def test_a_cluster_scoped_xrs_namespaced_resource_lands_in_default() -> None:
    obj = Rig().apply(xr(namespace=None), configmap())[0]["cm"][0]
    assert obj["metadata"]["namespace"] == "default"


def test_a_merge_keeps_status_and_identity_and_counts_spec_changes() -> None:
    rig = Rig()
    owner = xr()
    created = rig.apply(owner, configmap(x="1"))[0]["cm"][0]
    created["status"] = {"phase": "Done"}
    uid, stamp = created["metadata"]["uid"], created["metadata"]["creationTimestamp"]
    observed = {"cm": created}
    labelled = {**configmap(x="1"), "metadata": {"name": "made", "labels": {"a": "b"}}}
    same_spec = rig.apply(owner, labelled, observed)[0]["cm"][0]
    assert same_spec["metadata"]["generation"] == 1  # labels are not the spec
    assert same_spec["metadata"]["labels"] == {"a": "b", c.XP_LABEL_COMPOSITE: "w"}
    changed = rig.apply(owner, configmap(x="2"), {"cm": same_spec})[0]["cm"][0]
    assert changed["data"] == {"x": "2"} and changed["status"] == {"phase": "Done"}
    assert changed["metadata"]["generation"] == 2
    assert (changed["metadata"]["uid"], changed["metadata"]["creationTimestamp"]) == (uid, stamp)
    assert list(changed)[-1] == "status"


def test_an_owner_another_manager_added_survives_the_apply_and_a_stale_controller_does_not() -> (
    None
):
    # Server-side apply keeps list entries other managers own: Crossplane's Usage
    # controller makes a Usage's user its owner beside the composite.
    rig = Rig()
    owner = xr()
    stored = rig.apply(owner, configmap())[0]["cm"][0]
    mine = stored["metadata"]["ownerReferences"]
    user = {"apiVersion": "v1", "kind": "ConfigMap", "name": "user", "uid": "u-1"}
    stale = {**user, "name": "old", "uid": "u-0", "controller": True}
    stored["metadata"] = {**stored["metadata"], "ownerReferences": [*mine, stale, user]}
    again = rig.apply(owner, configmap(), {"cm": stored})[0]["cm"][0]
    assert again["metadata"]["ownerReferences"] == [*mine, user]


def test_an_owner_another_manager_appended_leaves_nothing_to_apply() -> None:
    # Crossplane's Usage controller appends a Usage's user to its owners once it
    # is applied; applying the same desired object again would keep that owner
    # where it is, so it is not applied again (nor is a later status report).
    rig = Rig()
    owner = xr()
    desired = configmap(x="1")
    stored = rig.apply(owner, desired)[0]["cm"][0]
    mine = list(stored["metadata"]["ownerReferences"])
    user = {"apiVersion": "v1", "kind": "ConfigMap", "name": "user", "uid": "u-1"}
    owned = {**stored, "metadata": {**stored["metadata"], "ownerReferences": [*mine, user]}}
    rig.store.put(owned)
    puts = rig.puts
    assert rig.again(owner, desired, {"cm": owned}) == [] and rig.puts == puts
    assert rig.store.get(MADE) is owned
    owned["status"] = {"phase": "Done"}
    rig.store.touch(MADE)
    assert rig.again(owner, desired, {"cm": owned}) == [] and rig.puts == puts
    # An owner before the XR's own, one claiming to be a controller (after another
    # owner too), or an owner added with another edit: applying again changes the
    # object, so it is applied.
    edited = {**stored, "data": {"x": "edited"}}
    for refs, obj, kept in (
        ([user, *mine], stored, [*mine, user]),
        ([*mine, {**user, "controller": True}], stored, mine),
        ([*mine, user, {**user, "uid": "u-2", "controller": True}], stored, [*mine, user]),
        ([*mine, user], edited, [*mine, user]),
    ):
        changed = {**obj, "metadata": {**obj["metadata"], "ownerReferences": refs}}
        rig.store.put(changed)
        puts = rig.puts
        rig.again(owner, desired, {"cm": changed})
        after = rig.store.get(MADE)
        assert rig.puts == puts + 1 and after is not None and after["data"] == {"x": "1"}
        assert after["metadata"]["ownerReferences"] == kept


def test_a_nested_xrs_own_machinery_survives_its_parents_apply() -> None:
    rig = Rig()
    child = {**configmap(), "spec": {"n": 1}}
    stored = rig.apply(xr(), child)[0]["cm"][0]
    stored["spec"] = {**stored["spec"], "crossplane": {"resourceRefs": [{"name": "x"}]}}
    again = rig.apply(xr(), {**configmap(), "spec": {"n": 2}}, {"cm": stored})[0]["cm"][0]
    assert again["spec"] == {"n": 2, "crossplane": {"resourceRefs": [{"name": "x"}]}}


def test_another_controllers_object_is_refused() -> None:
    rig = Rig()
    rig.apply(xr("v"), configmap())
    applied, errors = rig.apply(xr("w"), configmap())
    assert applied == {}
    assert errors == [f"cannot apply composed resource 'cm': {MADE} is controlled by Widget v"]


def test_an_object_without_a_kind_is_an_error() -> None:
    applied, errors = Rig().apply(xr(), {"apiVersion": "v1", "metadata": {"name": "x"}})
    assert applied == {} and errors == ["composed resource 'cm' has no apiVersion/kind"]


def test_a_composed_resource_keeps_its_name_and_a_new_kind_replaces_it() -> None:
    rig = Rig()
    old = rig.apply(xr(), configmap("old"))[0]["cm"][0]
    renamed = rig.apply(xr(), configmap("new"), {"cm": old})[0]["cm"][0]
    assert renamed["metadata"]["name"] == "old" and rig.deleted == []
    secret = {**configmap("old"), "kind": "Secret"}
    rig.apply(xr(), secret, {"cm": renamed})
    assert rig.deleted == [Key("v1", "ConfigMap", "default", "old")]
    assert rig.store.get(Key("v1", "Secret", "default", "old")) is not None


def test_what_a_write_would_not_change_is_not_written() -> None:
    rig = Rig()
    owner = xr()
    desired = configmap(x="1")
    stored = rig.apply(owner, desired)[0]["cm"][0]
    last = rig.applicator.last(owner)
    assert last is not None and last["cm"] == Applied(
        digest(desired), MADE, rig.store.version(MADE), rig.store.body(MADE)
    )
    puts = rig.puts
    assert rig.again(owner, desired, {"cm": stored}) == [] and rig.puts == puts
    # A provider's status report leaves nothing to apply either.
    stored["status"] = {"phase": "Done"}
    rig.store.touch(MADE)
    assert rig.again(owner, desired, {"cm": stored}) == [] and rig.puts == puts
    # Someone else's edit of what the XR applied is applied over.
    stored["data"] = {"x": "edited"}
    rig.store.touch(MADE)
    rig.again(owner, desired, {"cm": stored})
    after = rig.store.get(MADE)
    assert rig.puts == puts + 1 and after is not None and after["data"] == {"x": "1"}


def test_a_recreated_xr_applies_afresh() -> None:
    rig = Rig()
    rig.apply(xr(), configmap())
    recreated = {**xr(), "metadata": {**xr()["metadata"], "uid": "uid-new"}}
    assert identity(recreated) != identity(xr())
    assert rig.applicator.last(recreated) is None and rig.applicator.last(xr()) is not None
