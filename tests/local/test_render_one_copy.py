"""One copy of a composed object's content: stored read-only, shared with what calls read.

The engine stores what a composer desired read-only below its top level and
metadata (`convert.as_stored`); the copy each call reads (`freeze_stored`)
shares those containers instead of copying them, and the store's versions
do not depend on whether a field is plain or read-only.
"""

from __future__ import annotations

from typing import Any

import yaml

from modelplane.api.frozen import FrozenDict, FrozenList, thaw
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource
from modelplane.crossplane.convert import (
    as_json,
    as_stored,
    dict_to_struct,
    freeze,
    freeze_stored,
    struct_to_dict,
)
from modelplane.local import ControlPlane, Key
from modelplane.local.output import dump_json, dump_yaml
from modelplane.local.store import ObjectStore
from tests.local.conftest import TEST_API, Install

DESIRED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "made", "labels": {"a": "b"}, "finalizers": ["x"]},
    "data": {"whole": 2.0, "list": [1, (2, 3)], "text": "t"},
    "status": {"n": 1.0},
}


def typed(value: Any) -> Any:
    """A value with every number's type spelled out (1, 1.0 and True differ), keys sorted."""
    if isinstance(value, dict):
        return ("dict", sorted((k, typed(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))


def test_as_stored_is_as_json_read_only_below_the_top_level_and_metadata() -> None:
    stored = as_stored(DESIRED)
    through = struct_to_dict(dict_to_struct(as_json(DESIRED)))
    assert typed(thaw(stored)) == typed(through) == typed(as_json(DESIRED))
    assert type(stored) is dict
    assert type(stored["metadata"]) is dict and type(stored["metadata"]["labels"]) is dict
    assert type(stored["status"]) is dict  # the engine drops or rewrites it
    assert type(stored["data"]) is FrozenDict and type(stored["data"]["list"]) is FrozenList


def test_freeze_stored_shares_read_only_containers_and_equals_freeze() -> None:
    stored = as_stored(DESIRED)
    stored["metadata"]["resourceVersion"] = "7"
    shared = freeze_stored(stored)
    assert shared["data"] is stored["data"]
    assert shared["metadata"] is not stored["metadata"]
    assert typed(thaw(shared)) == typed(thaw(freeze(stored)))


def test_a_field_counts_by_content_whether_plain_or_read_only() -> None:
    store = ObjectStore()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    key = store.put({**cm, "data": {"x": "1", "n": [1, 2]}})
    v1 = store.version(key)
    store.put({**cm, "data": FrozenDict({"n": FrozenList([1, 2]), "x": "1"})})
    assert store.version(key) == v1
    store.put({**cm, "data": {"x": "1", "n": [1, 2]}})
    assert store.version(key) == v1
    store.put({**cm, "data": FrozenDict({"x": "1", "n": FrozenList([1, 2.0])})})
    assert store.version(key) != v1


def test_a_field_that_changes_only_in_type_gets_a_new_version() -> None:
    store = ObjectStore()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    key = store.put({**cm, "data": "{}"})
    versions = {store.version(key)}
    changes: list[Any] = [{}, "[]", [], FrozenDict(), 1, True, 1.0, "1", None]
    for data in changes:
        store.put({**cm, "data": data})
        versions.add(store.version(key))
    assert len(versions) == 10


def test_yaml_dumps_read_only_containers_as_plain_ones() -> None:
    value = {"a": FrozenDict({"b": FrozenList([1, "x"]), "a": FrozenDict()})}
    assert (
        yaml.safe_dump(value) == yaml.safe_dump(thaw(value)) == "a:\n  a: {}\n  b:\n  - 1\n  - x\n"
    )
    assert yaml.dump(FrozenDict({"k": 1})) == "k: 1\n"


def nested(inp: ComposeInput) -> ComposeResult:
    """A ConfigMap with nested data."""
    data = {"cfg": {"a": [1, {"b": 2.0}]}, "n": str(inp.composite["spec"]["n"])}
    return ComposeResult(
        desired={
            "cm": DesiredResource(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "made"},
                    "data": data,
                }
            )
        }
    )


def widget() -> dict[str, Any]:
    """The composite the tests compose."""
    return {
        "apiVersion": TEST_API,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"n": 1},
    }


def test_the_copy_a_call_reads_shares_the_stored_content(install: Install) -> None:
    install({"Widget": nested})
    plane = ControlPlane([widget()])
    result = plane.run()
    made = result.get("v1", "ConfigMap", "made", "default")
    assert made is not None and type(made["data"]) is FrozenDict
    assert plane.fetcher.frozen(made)["data"] is made["data"]
    # The writers print read-only containers exactly as plain ones.
    plain = [thaw(o) for o in result.store.objects()]
    assert dump_yaml(result.store.objects()) == dump_yaml(plain)
    assert dump_json(result.store.objects()) == dump_json(plain)


def seen_by(inp: ComposeInput) -> ComposeResult:
    """Reports what the composer read of the spec, as its status."""
    spec = inp.composite["spec"]
    return ComposeResult(status={"seen": {k: type(v).__name__ for k, v in spec.items()}})


def test_the_store_shares_a_field_only_when_the_copy_equals_it_exactly(install: Install) -> None:
    install({"Widget": seen_by})
    exact = {"n": 1, "items": ["a"], "ratio": 0.5}
    # A Struct reads back 1, and the nearest double's integer.
    rounded = {"n": 1.0, "big": 2**60 + 1, "items": ["a"]}
    widgets = [
        {
            "apiVersion": TEST_API,
            "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": dict(spec),
        }
        for name, spec in (("exact", exact), ("rounded", rounded))
    ]
    result = ControlPlane(widgets).run()
    shared = result.get(TEST_API, "Widget", "exact", "default")
    kept = result.get(TEST_API, "Widget", "rounded", "default")
    assert shared is not None and kept is not None
    # Shared with the copy calls read (the top level is the XR's own: it writes
    # its resource references there).
    assert type(shared["spec"]["items"]) is FrozenList
    assert typed(thaw(shared["spec"])) == typed(exact)
    # The composer read the Struct's numbers; the store kept what was written.
    assert kept["status"]["seen"] == {"n": "int", "big": "int", "items": "FrozenList"}
    assert type(kept["spec"]["items"]) is list and typed(kept["spec"]) == typed(rounded)


def test_a_composites_status_and_refs_are_shared_with_the_copy_calls_read(
    install: Install,
) -> None:
    install({"Widget": nested_with_status})
    plane = ControlPlane([widget()])
    result = plane.run()
    xr = result.get(TEST_API, "Widget", "w", "default")
    assert xr is not None
    refs = xr["spec"]["crossplane"]["resourceRefs"]
    assert refs == [{"apiVersion": "v1", "kind": "ConfigMap", "name": "made"}]
    assert type(refs) is FrozenList and type(xr["status"]["summary"]) is FrozenDict
    # Freezing the composite for a call takes them as they are.
    read = freeze_stored(xr)
    assert read["status"]["summary"] is xr["status"]["summary"]
    assert read["spec"]["crossplane"]["resourceRefs"] is refs
    # Written exactly as a plain composite would be.
    assert typed(thaw(xr["status"]["summary"])) == typed({"made": [1, {"ready": True}]})

    # Refs equal to the ones it holds are left as they are, spec and all; so is
    # a status equal to the one the composer desired last time.
    spec, status = xr["spec"], xr["status"]
    xr["spec"] = {**spec, "n": 2}
    plane.store.touch(Key.of(xr))
    calls = plane.calls
    plane.run()
    now = plane.store.get(Key.of(xr))
    assert now is not None and plane.calls > calls
    assert now["spec"]["crossplane"]["resourceRefs"] is refs
    assert now["status"] is status


def nested_with_status(inp: ComposeInput) -> ComposeResult:
    """`nested`, reporting a nested status."""
    result = nested(inp)
    result.status = {"summary": {"made": [1, {"ready": True}]}}
    return result
