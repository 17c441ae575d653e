"""The function decodes each version of a required object once, and composers cannot change it."""

from __future__ import annotations

import copy
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane.api.frozen import FrozenDict, FrozenList, Interner, memoized, thaw
from modelplane.compose import registry
from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import (
    DecodeCache,
    SharedDecoder,
    as_json,
    as_stored,
    dict_to_struct,
    freeze,
    freeze_stored,
    struct_to_dict,
    to_input,
)

XR = {
    "apiVersion": "test.modelplane.ai/v1alpha1",
    "kind": "Widget",
    "metadata": {"name": "w1", "namespace": "team-a"},
    "spec": {},
}


def cluster(name: str, version: str | None = "1", nodes: int = 2) -> dict[str, Any]:
    """A required object; `version=None` leaves out uid and resourceVersion."""
    meta: dict[str, Any] = {"name": name, "labels": {"region": "eu"}}
    if version is not None:
        meta.update(uid=f"uid-{name}", resourceVersion=version)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": meta,
        "status": {"gpuPools": [{"name": "h100", "nodes": nodes, "devices": [{"count": 8}]}]},
    }


def request(*objects: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.CopyFrom(dict_to_struct(XR))
    for obj in objects:
        req.required_resources["clusters"].items.add().resource.CopyFrom(dict_to_struct(obj))
    return req


def test_one_decode_per_uid_and_resource_version() -> None:
    cache = DecodeCache()
    first = to_input(request(cluster("a"), cluster("b")), cache)
    again = to_input(request(cluster("a"), cluster("b", version="2", nodes=3)), cache)
    # The composite (no resourceVersion: keyed by content) once, a once, b twice.
    assert (cache.misses, cache.hits) == (4, 2)
    assert again.required["clusters"][0] is first.required["clusters"][0]
    assert again.required["clusters"][1]["status"]["gpuPools"][0]["nodes"] == 3
    # Decoded exactly as without the cache: plain JSON types, integers kept integral.
    assert again.required == to_input(request(cluster("a"), cluster("b", "2", 3)), None).required


def test_objects_without_a_resource_version_are_keyed_by_content() -> None:
    cache = DecodeCache()
    a = to_input(request(cluster("a", version=None)), cache).required["clusters"][0]
    same = to_input(request(cluster("a", version=None)), cache).required["clusters"][0]
    other = to_input(request(cluster("a", version=None, nodes=5)), cache).required["clusters"][0]
    assert same is a
    assert other is not a and other["status"]["gpuPools"][0]["nodes"] == 5
    assert (cache.misses, cache.hits) == (1 + 2, 2 + 1)  # the composite, then the clusters


def test_the_cache_stays_within_its_bound() -> None:
    size = dict_to_struct(cluster("c-00")).ByteSize()
    cache = DecodeCache(max_bytes=10 * size + size // 2)
    for i in range(30):
        cache.decode(dict_to_struct(cluster(f"c-{i:02d}")))
    assert len(cache) == 10
    assert cache.bytes <= cache.max_bytes
    # The least recently used went first: the last ten are still there.
    for i in range(20, 30):
        cache.decode(dict_to_struct(cluster(f"c-{i:02d}")))
    assert cache.hits == 10


def mutations(obj: dict[str, Any]) -> list[Any]:
    """Every way a composer might change a decoded object in place."""
    pools = obj["status"]["gpuPools"]
    return [
        lambda: obj.__setitem__("spec", {}),
        lambda: obj["metadata"]["labels"].update(region="us"),
        lambda: obj["metadata"].setdefault("annotations", {}),
        lambda: obj["metadata"]["labels"].pop("region"),
        lambda: obj["status"].clear(),
        lambda: pools.append({}),
        lambda: pools[0].__setitem__("nodes", 0),
        lambda: pools[0]["devices"].pop(),
        lambda: pools.sort(key=str),
        lambda: pools.__delitem__(0),
    ]


def test_a_decoded_object_cannot_be_changed_in_place() -> None:
    cache = DecodeCache()
    obj = to_input(request(cluster("a")), cache).required["clusters"][0]
    for change in mutations(obj):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert thaw(obj) == cluster("a")


def test_copies_are_plain_and_mutable() -> None:
    obj = DecodeCache().decode(dict_to_struct(cluster("a")))
    for copied in (thaw(obj), copy.deepcopy(obj)):
        assert type(copied) is dict and type(copied["status"]["gpuPools"]) is list
        copied["status"]["gpuPools"][0]["nodes"] = 0
    shallow = dict(obj)
    shallow["spec"] = {}
    assert obj["status"]["gpuPools"][0]["nodes"] == 2 and "spec" not in obj
    assert isinstance(obj, FrozenDict) and isinstance(obj["status"]["gpuPools"], FrozenList)


def test_a_composer_that_mutates_its_input_cannot_poison_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []

    def vandal(inp: ComposeInput) -> ComposeResult:
        pool = inp.required["clusters"][0]["status"]["gpuPools"][0]
        seen.append(pool["nodes"])
        pool["nodes"] = 0  # must fail, not change what the next call sees
        return ComposeResult()

    monkeypatch.setattr(registry, "composer_for", lambda api_version, kind: vandal)
    runner = FunctionRunner(log_errors=False)
    for _ in range(2):
        rsp = runner.run(request(cluster("shared-a")))
        assert rsp.results[0].severity == fnv1.SEVERITY_FATAL
        assert "read-only" in rsp.results[0].message
    assert seen == [2, 2]


def test_composers_may_return_decoded_values_in_their_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def echo(inp: ComposeInput) -> ComposeResult:
        return ComposeResult(status={"pools": inp.required["clusters"][0]["status"]["gpuPools"]})

    monkeypatch.setattr(registry, "composer_for", lambda api_version, kind: echo)
    rsp = FunctionRunner(log_errors=False).run(request(cluster("echo-a")))
    assert struct_to_dict(rsp.desired.composite.resource)["status"]["pools"] == [
        {"name": "h100", "nodes": 2, "devices": [{"count": 8}]}
    ]


def test_the_composite_and_observed_resources_are_read_only_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    errors: list[str] = []

    def vandal(inp: ComposeInput) -> ComposeResult:
        for change in (
            lambda: inp.composite["spec"].update(replicas=0),
            lambda: inp.observed["cm"]["data"].clear(),
        ):
            try:
                change()
            except TypeError as exc:
                errors.append(str(exc))
        return ComposeResult()

    monkeypatch.setattr(registry, "composer_for", lambda api_version, kind: vandal)
    req = request()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}
    req.observed.resources["cm"].resource.CopyFrom(dict_to_struct(cm))
    FunctionRunner(log_errors=False).run(req)
    assert len(errors) == 2 and all("read-only" in e for e in errors)


def test_readers_read_a_cached_object_as_they_read_a_plain_one() -> None:
    from modelplane.api.readers import read_inference_cluster

    obj = cluster("a")
    obj["metadata"]["name"] = "a"
    obj["spec"] = {"pools": [{"name": "h100", "className": "h100-8x", "nodeCount": 2}]}
    obj["status"]["gpuPools"][0].update(className="h100-8x", devices=[{"name": "gpu", "count": 8}])
    plain = read_inference_cluster(struct_to_dict(dict_to_struct(obj)))
    cached = read_inference_cluster(DecodeCache().decode(dict_to_struct(obj)))
    assert plain is not None and cached is not None
    assert [p.known for p in plain.pools] == [True]
    assert [(p.name, p.nodes, p.known, list(p.devices)) for p in cached.pools] == [
        (p.name, p.nodes, p.known, list(p.devices)) for p in plain.pools
    ]


def test_a_cached_object_is_read_once_per_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from modelplane.api import readers

    reads: list[str] = []
    real = readers._read_inference_cluster

    def counting(obj: Any) -> Any:
        reads.append(obj["metadata"]["name"])
        return real(obj)

    monkeypatch.setattr(readers, "_read_inference_cluster", counting)
    cache = DecodeCache()
    for version in ("1", "1", "2"):
        obj = cache.decode(dict_to_struct(cluster("a", version=version)))
        assert readers.read_inference_cluster(obj) is readers.read_inference_cluster(obj)
    plain = struct_to_dict(dict_to_struct(cluster("a")))
    readers.read_inference_cluster(plain)
    readers.read_inference_cluster(plain)
    assert reads == ["a", "a", "a", "a"]  # versions 1 and 2 once each; a plain dict every time


JSON_VALUES: list[Any] = [
    {"replicas": 3, "ratio": 0.5, "whole": 2.0, "big": 2**60, "neg": -(2**53)},
    {"flags": [True, False, None], "nested": {"a": ({"b": "c"}, 1.5)}},
    {"empty": {}, "list": [], "text": "ü", "zero": 0, "negzero": -0.0},
    {"frozen": FrozenDict({"x": FrozenList([1, 2.0])})},
]


@pytest.mark.parametrize("value", JSON_VALUES)
def test_as_json_and_freeze_are_the_struct_round_trip(value: dict[str, Any]) -> None:
    # The embedded control plane skips protobuf; what composers see and what
    # it applies must be exactly what a Struct would have carried.
    through = struct_to_dict(dict_to_struct(value))
    plain = as_json(value)
    assert typed(plain) == typed(through)  # ints stay ints, tuples become lists, everywhere
    frozen = freeze(value)
    assert isinstance(frozen, FrozenDict) and typed(thaw(frozen)) == typed(through)


PLAIN_VALUES = [v for v in JSON_VALUES if "frozen" not in v]  # what a store holds


@pytest.mark.parametrize("value", PLAIN_VALUES)
def test_freezing_through_an_interner_is_freezing_sharing_equal_parts(
    value: dict[str, Any],
) -> None:
    interner = Interner()
    first = freeze_stored(copy.deepcopy(value), interner)
    new = {**copy.deepcopy(value), "status": {"n": 2.0}, "extra": [1]}
    again = freeze_stored(new, interner)
    assert typed(thaw(first)) == typed(thaw(freeze(value)))
    assert typed(thaw(again)) == typed(thaw(freeze(new)))
    assert list(again) == list(new)  # the new version's field order
    assert value, "an empty value repeats nothing"
    for k, v in value.items():
        if isinstance(v, (dict, list)) and k != "metadata":
            assert again[k] is first[k]  # an equal part is the one shared object


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param({"x": 1}, {"x": True}, id="1-to-True"),
        pytest.param({"x": 2}, {"x": 2.5}, id="int-to-float"),
        pytest.param({"x": True}, {"x": 1}, id="True-to-1"),
        pytest.param({"x": None}, {"x": 0}, id="None-to-0"),
        pytest.param({"x": {"a": 1, "b": 2}}, {"x": {"b": 2, "a": 1}}, id="reordered"),
        pytest.param({"x": [0]}, {"x": [False]}, id="in-a-list"),
        pytest.param({"x": ["1"]}, {"x": [1]}, id="string-to-int"),
    ],
)
def test_values_equal_only_to_python_are_not_shared(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    # 1 == 1.0 == True to Python, and dicts compare without order; a reader
    # of the new version must still see exactly the new version.
    interner = Interner()
    first = freeze_stored({"spec": old}, interner)
    second = freeze_stored({"spec": new}, interner)
    assert second["spec"] is not first["spec"]
    assert typed(thaw(second)) == typed(thaw(freeze({"spec": new})))
    if isinstance(new["x"], dict):
        assert list(second["spec"]["x"]) == list(new["x"])  # the new key order


def test_a_container_is_not_taken_for_a_number_equal_to_its_identity() -> None:
    interner = Interner()
    child = interner.dict({"a": "b"})
    by_child = interner.list([child])
    by_number = interner.list([id(child)])
    assert by_number is not by_child and by_number == [id(child)]


def test_a_reading_remembered_on_a_shared_part_serves_every_copy() -> None:
    interner = Interner()
    old: dict[str, Any] = {"spec": {"pools": [{"name": "a"}], "region": "eu"}, "status": {"n": 1}}
    previous = freeze_stored(old, interner)
    first = memoized(previous["spec"]["pools"][0], "test", lambda p: [p["name"]])
    us = freeze_stored({**old, "spec": {**old["spec"], "region": "us"}}, interner)
    assert us["spec"] is not previous["spec"]
    assert us["spec"]["pools"] is previous["spec"]["pools"]
    assert memoized(us["spec"]["pools"][0], "test", list) is first


def test_what_an_interner_cannot_key_is_frozen_unshared() -> None:
    interner = Interner()
    a = interner.dict({"s": {1, 2}})  # type: ignore[dict-item]
    b = interner.dict({"s": {1, 2}})  # type: ignore[dict-item]
    assert a == b and a is not b and isinstance(a, FrozenDict)


def test_clearing_an_interner_keeps_what_it_handed_out() -> None:
    interner = Interner()
    kept = freeze_stored({"spec": {"a": [1, {"b": 2}]}}, interner)
    assert len(interner) == 3
    interner.clear()
    assert len(interner) == 0 and not interner.owns(kept["spec"])
    assert thaw(kept) == {"spec": {"a": [1, {"b": 2}]}}
    again = freeze_stored({"spec": {"a": [1, {"b": 2}]}}, interner)
    assert again == kept and again["spec"] is not kept["spec"]


def test_as_stored_through_an_interner_shares_across_objects() -> None:
    interner = Interner()
    one = as_stored({"kind": "A", "metadata": {"name": "a"}, "spec": {"x": [1, 2]}}, interner)
    two = as_stored({"kind": "A", "metadata": {"name": "b"}, "spec": {"x": [1, 2]}}, interner)
    assert one["spec"] is two["spec"] and isinstance(one["spec"], FrozenDict)
    assert type(one["metadata"]) is dict  # changed in place by the control plane
    assert typed(one) == typed({**as_json(one), "spec": freeze({"x": [1, 2]})})


def typed(v: Any) -> Any:
    """A value with the exact type of every part spelled out (1 and 1.0 differ)."""
    if isinstance(v, dict):
        return (type(v).__name__, sorted((k, typed(x)) for k, x in v.items()))
    if isinstance(v, list):
        return (type(v).__name__, [typed(x) for x in v])
    return (type(v).__name__, repr(v))


@pytest.mark.parametrize("value", [{"s": {1, 2}}, {"o": object()}, {"d": {1: "x"}}])
def test_what_no_struct_holds_is_refused_like_encoding_it(value: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        dict_to_struct(value)
    with pytest.raises((TypeError, ValueError)):
        as_json(value)


def _device(product: str) -> dict[str, Any]:
    return {"name": "gpu", "count": 8, "attributes": {"productName": {"string": product}}}


def _fleet_cluster(i: int, product: str) -> dict[str, Any]:
    obj = cluster(f"c-{i}", nodes=i % 3 + 1)
    obj["status"]["gpuPools"][0]["devices"] = [_device(product), {"name": "nic", "count": 2.0}]
    return obj


def test_shared_decoding_is_the_plain_decoding_with_equal_mappings_shared() -> None:
    objects = [_fleet_cluster(i, "H100" if i % 2 else "A100") for i in range(6)]
    cache = DecodeCache()
    decoded = [cache.decode(dict_to_struct(obj)) for obj in objects]
    for obj, got in zip(objects, decoded, strict=True):
        assert typed(thaw(got)) == typed(struct_to_dict(dict_to_struct(obj)))
    devices = [d["status"]["gpuPools"][0]["devices"] for d in decoded]
    # Equal device mappings are one object, so what is memoized on one is read once.
    assert devices[1][0] is devices[3][0] is devices[5][0]
    assert devices[0][0] is devices[2][0] and devices[0][0] is not devices[1][0]
    assert devices[0][1] is devices[1][1] and devices[0][1]["count"] == 2
    assert type(devices[0][1]["count"]) is int
    # Pools differ by their node count: equal ones shared, the others not.
    pools = [d["status"]["gpuPools"][0] for d in decoded]
    assert pools[0] is not pools[1] and [p["nodes"] for p in pools] == [1, 2, 3, 1, 2, 3]
    # An object's own top-level fields are its own.
    assert decoded[0]["status"] is not decoded[3]["status"]
    assert memoized(devices[1][0], "probe", lambda d: object()) is memoized(
        devices[3][0], "probe", lambda d: object()
    )


def test_shared_mappings_do_not_depend_on_key_order() -> None:
    a = {"apiVersion": "v1", "kind": "K", "spec": {"x": {"k1": 1, "k2": "two", "k3": True}}}
    b = {"apiVersion": "v1", "kind": "K", "spec": {"x": {"k3": True, "k2": "two", "k1": 1}}}
    c = {"apiVersion": "v1", "kind": "K", "spec": {"x": {"k1": 1.5, "k2": "two", "k3": True}}}
    cache = DecodeCache()
    first, second, third = (cache.decode(dict_to_struct(o))["spec"]["x"] for o in (a, b, c))
    assert first is second and first == b["spec"]["x"]
    assert third is not first and third["k1"] == 1.5


def test_the_shared_table_stays_within_its_bound() -> None:
    decoder = SharedDecoder(max_bytes=200)
    kept = [
        decoder.decode(dict_to_struct({"spec": {"x": {"n": i, "pad": "p" * 30}}}))
        for i in range(40)
    ]
    assert decoder.bytes <= 200
    assert len(decoder._table) + len(decoder._old) < 40
    # What falls out of both generations is decoded again, equal and correct.
    again = decoder.decode(dict_to_struct({"spec": {"x": {"n": 0, "pad": "p" * 30}}}))
    assert again == kept[0] and again["spec"]["x"]["n"] == 0
    recent = decoder.decode(dict_to_struct({"spec": {"x": {"n": 39, "pad": "p" * 30}}}))
    assert recent["spec"]["x"] is kept[39]["spec"]["x"]
