"""The fetcher: what a function call reads from the store, kept by version.

Hand-built stores, no composer: each reading must be what the store holds
now, and a kept reading must be handed out again only while what it read is
unchanged.
"""

from __future__ import annotations

from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, Interner
from modelplane.local.fetch import Fetcher, resource_name
from modelplane.local.store import Key, Obj, ObjectStore

XR_API = "test.modelplane.ai/v1"


def xr(name: str = "w", namespace: str = "default") -> Obj:
    return {
        "apiVersion": XR_API,
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"n": 1},
    }


def composed(name: str, resource: str | None, owner: str = "w", **data: str) -> Obj:
    """A ConfigMap controlled by the Widget `owner`, annotated with `resource`."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "ownerReferences": [
            {"apiVersion": XR_API, "kind": "Widget", "name": owner, "controller": True}
        ],
    }
    if resource is not None:
        meta["annotations"] = {c.XP_ANNOTATION_RESOURCE_NAME: resource}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def configmap(name: str, namespace: str = "default", **labels: str) -> Obj:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {}}


def fetcher_of(*objects: Obj) -> Fetcher:
    store = ObjectStore()
    for obj in objects:
        store.put(obj)
    return Fetcher(store, Interner())


def by_name(name: str, namespace: str | None = "default") -> fnv1.ResourceSelector:
    selector = fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", match_name=name)
    if namespace is not None:
        selector.namespace = namespace
    return selector


def by_labels(namespace: str | None = None, **labels: str) -> fnv1.ResourceSelector:
    selector = fnv1.ResourceSelector(api_version="v1", kind="ConfigMap")
    selector.match_labels.labels.update(labels)
    if namespace is not None:
        selector.namespace = namespace
    return selector


def requirements(**selectors: fnv1.ResourceSelector) -> fnv1.Requirements:
    req = fnv1.Requirements()
    for name, selector in selectors.items():
        req.resources[name].CopyFrom(selector)
    return req


def test_observed_are_the_xrs_annotated_resources_by_resource_name() -> None:
    f = fetcher_of(
        xr(),
        composed("a-1", "a"),
        composed("b-1", "b"),
        composed("plain", None),  # no resource-name annotation: Crossplane cannot address it
        composed("other", "c", owner="v"),  # another XR's
    )
    observed = f.observed(xr())
    assert sorted(observed) == ["a", "b"]
    assert observed["a"]["metadata"]["name"] == "a-1"
    assert resource_name(observed["b"]) == "b"


def test_observed_is_looked_up_again_only_after_a_candidate_changed() -> None:
    f = fetcher_of(xr(), composed("a-1", "a"))
    first = f.observed(xr())
    assert f.observed(xr()) is first
    f.store.put(composed("b-1", "b"))
    again = f.observed(xr())
    assert again is not first and sorted(again) == ["a", "b"]


def test_a_frozen_copy_is_built_once_per_version_and_carries_it() -> None:
    f = fetcher_of(composed("a-1", "a", x="1"))
    key = Key("v1", "ConfigMap", "default", "a-1")
    stored = f.store.get(key)
    assert stored is not None
    frozen = f.frozen(stored)
    assert type(frozen) is FrozenDict and frozen["data"] == {"x": "1"}
    assert frozen["metadata"]["resourceVersion"] == str(f.store.version(key))
    assert "resourceVersion" not in stored["metadata"]  # only the copy a call reads has it
    assert f.frozen(stored) is frozen
    f.store.put(composed("a-1", "a", x="2"))
    changed = f.store.get(key)
    assert changed is not None
    again = f.frozen(changed)
    assert again is not frozen and again["data"] == {"x": "2"}
    assert again["metadata"]["resourceVersion"] == str(f.store.version(key))


def test_a_struct_is_encoded_once_per_version_and_carries_it() -> None:
    f = fetcher_of(composed("a-1", "a", x="1"))
    key = Key("v1", "ConfigMap", "default", "a-1")
    stored = f.store.get(key)
    assert stored is not None
    struct = f.struct(stored)
    meta = struct.fields["metadata"].struct_value
    assert meta.fields["resourceVersion"].string_value == str(f.store.version(key))
    assert struct.fields["data"].struct_value.fields["x"].string_value == "1"
    assert f.struct(stored) is struct


def test_required_resources_by_name_and_by_labels() -> None:
    f = fetcher_of(
        configmap("one", tier="gpu"),
        configmap("two", "other", tier="gpu"),
        configmap("three", tier="cpu"),
    )
    fetched = f.require(
        requirements(
            named=by_name("one"),
            gpus=by_labels(tier="gpu"),  # no namespace: every namespace
            local=by_labels("default", tier="gpu"),
            absent=by_name("nowhere"),
        )
    )
    got = {fetch.name: [o["metadata"]["name"] for o in objs] for fetch, objs in fetched}
    assert got == {"absent": [], "gpus": ["one", "two"], "local": ["one"], "named": ["one"]}
    assert [fetch.name for fetch, _ in fetched] == ["absent", "gpus", "local", "named"]
    named = next(fetch for fetch, _ in fetched if fetch.name == "named")
    key = Key("v1", "ConfigMap", "default", "one")
    assert named.field == "required" and named.found == ((key, f.store.version(key)),)


def test_a_name_match_without_namespace_is_cluster_scoped() -> None:
    # As Crossplane: an unset namespace is used literally, not defaulted.
    f = fetcher_of(configmap("one"))
    ((_, objs),) = f.require(requirements(named=by_name("one", namespace=None)))
    assert objs == []


def test_extra_resources_are_fetched_into_their_own_field() -> None:
    f = fetcher_of(configmap("one"))
    req = fnv1.Requirements()
    req.extra_resources["old"].CopyFrom(by_name("one"))
    ((fetch, objs),) = f.require(req)
    assert (fetch.field, fetch.name, len(objs)) == ("extra", "old", 1)


def test_a_selector_is_listed_again_once_its_kind_changed() -> None:
    f = fetcher_of(configmap("one", tier="gpu"))
    selector = by_labels(tier="gpu")
    signature = selector.SerializeToString(deterministic=True)
    found, _ = f.found(signature, selector)
    assert f.found(signature, selector)[0] is found
    f.store.put(configmap("two", tier="gpu"))
    found_now, objs = f.found(signature, selector)
    assert [o["metadata"]["name"] for o in objs] == ["one", "two"] and found_now != found


def test_a_selectors_frozen_list_is_reused_while_its_objects_are_unchanged() -> None:
    f = fetcher_of(configmap("one", tier="gpu"), configmap("two", tier="gpu"))
    ((fetch, objs),) = f.require(requirements(gpus=by_labels(tier="gpu")))
    first = f.frozen_all(fetch, objs)
    second = f.frozen_all(fetch, objs)
    assert second is not first  # a new list each time: callers own it
    assert all(a is b for a, b in zip(first, second, strict=True))
    f.store.put({**configmap("one", tier="gpu"), "data": {"x": "1"}})
    f.forget_stale_lists()
    ((fetch, objs),) = f.require(requirements(gpus=by_labels(tier="gpu")))
    third = f.frozen_all(fetch, objs)
    assert third[0]["data"] == {"x": "1"} and third[1] is first[1]


CHANGES = {
    # change: whether the call would see its inputs again
    "composite": False,
    "observed": False,
    "observed in place": False,
    "observed deleted": False,
    "observed added": False,
    "required": False,
    # A candidate the call does not observe (no resource name): the candidates'
    # version moves, the observed ones do not.
    "unobserved candidate": True,
    "nothing": True,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_call_sees_its_inputs_again_only_while_none_changed(change: str) -> None:
    f = fetcher_of(xr(), composed("a-1", "a"), composed("b-1", None), configmap("one", tier="gpu"))
    key = Key(XR_API, "Widget", "default", "w")
    stored = f.store.get(key)
    assert stored is not None
    observed = f.observed(stored)
    fetched = f.require(requirements(gpus=by_labels(tier="gpu")))
    inputs = f.inputs(key, stored, observed, (tuple(fetch for fetch, _ in fetched),))
    if change == "composite":
        f.store.put({**xr(), "spec": {"n": 2}})
    elif change == "observed":
        f.store.put(composed("a-1", "a", x="1"))
    elif change == "observed in place":
        a = Key("v1", "ConfigMap", "default", "a-1")
        f.store.get(a)["data"]["x"] = "1"  # type: ignore[index]
        f.store.touch(a)
    elif change == "observed deleted":
        f.store.delete(Key("v1", "ConfigMap", "default", "a-1"))
    elif change == "observed added":
        f.store.put(composed("c-1", "c"))
    elif change == "required":
        f.store.put(configmap("two", tier="gpu"))
    elif change == "unobserved candidate":
        f.store.put(composed("b-1", None, x="1"))
    now = f.store.get(key)
    assert now is not None
    assert f.sees(key, f.observed(now), inputs) is CHANGES[change]
