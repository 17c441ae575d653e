"""The embedded control plane reuses work: versions, encodings, calls whose inputs are unchanged."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from modelplane.api.frozen import FrozenDict
from modelplane.compose.types import ComposeResult, DesiredResource
from modelplane.crossplane import FunctionRunner
from modelplane.local import ControlPlane, Key, load_paths
from modelplane.local.output import dump_yaml
from modelplane.local.store import ObjectStore
from tests.local.conftest import TEST_API

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": dict(data),
    }


def test_a_version_changes_exactly_when_the_content_does() -> None:
    store = ObjectStore()
    key = store.put(configmap("a", x="1"))
    v1 = store.version(key)
    store.put(configmap("a", x="1"))  # an equal object, put again
    assert store.version(key) == v1
    store.put(configmap("a", x="2"))
    v2 = store.version(key)
    assert v2 is not None and v1 is not None and v2 > v1
    obj = store.get(key)
    assert obj is not None
    obj["data"]["x"] = "3"  # in place: seen once noted
    assert store.version(key) == v2
    assert store.refresh() == [key]
    assert store.version(key) not in (v1, v2)
    assert store.touch(key) is False and store.refresh() == []
    store.delete(key)
    assert store.version(key) is None and store.versions() == {}


def test_a_version_changes_when_a_value_changes_only_in_type() -> None:
    # 1 == 1.0 == True to Python; to a reader of the object they differ.
    store = ObjectStore()
    key = store.put({**configmap("a"), "data": {"x": 1}})
    seen = [store.version(key)]
    for value in (1.0, True, 1):
        store.put({**configmap("a"), "data": {"x": value}})
        seen.append(store.version(key))
    obj = store.get(key)
    assert obj is not None
    obj["data"]["x"] = True  # in place, as the simulator changes objects
    store.touch(key)
    seen.append(store.version(key))
    assert len(set(seen)) == len(seen)


def test_a_kind_is_listed_in_key_order_without_scanning_others() -> None:
    store = ObjectStore()
    for name in ("c", "a", "b"):
        store.put(configmap(name))
    store.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}})
    assert [o["metadata"]["name"] for o in store.list("v1", "ConfigMap")] == ["a", "b", "c"]
    store.delete(Key("v1", "ConfigMap", "default", "b"))
    store.put(configmap("0"))
    assert [o["metadata"]["name"] for o in store.list("v1", "ConfigMap", "default")] == [
        "0",
        "a",
        "c",
    ]


class CallEveryTime(ControlPlane):
    """The engine as it was: every XR called in every round."""

    def __init__(self, objects: list[Any]) -> None:
        super().__init__(objects)
        self.fetcher.sees = lambda *args: False  # type: ignore[method-assign]


def test_skipping_unchanged_composites_changes_nothing_in_the_result() -> None:
    objects = load_paths([str(QUICKSTART)])
    reused = ControlPlane(copy.deepcopy(objects))
    fresh = CallEveryTime(copy.deepcopy(objects))
    a, b = reused.run(), fresh.run()
    assert dump_yaml(a.store.objects()) == dump_yaml(b.store.objects())
    assert a.events == b.events and a.rounds == b.rounds
    assert fresh.skipped == 0 and reused.skipped > 0
    assert reused.calls < fresh.calls


def test_a_converged_store_makes_no_call() -> None:
    plane = ControlPlane(load_paths([str(QUICKSTART)]))
    plane.run()
    calls = plane.calls
    again = plane.run()
    assert again.rounds == 1 and plane.calls == calls


def test_an_edit_recalls_only_what_sees_it() -> None:
    plane = ControlPlane(load_paths([str(QUICKSTART)]))
    plane.run()
    key = Key("modelplane.ai/v1alpha1", "ModelDeployment", "ml-team", "qwen-small")
    deployment = plane.store.get(key)
    assert deployment is not None
    plane.store.put({**deployment, "spec": {**deployment["spec"], "replicas": 3}})
    reconciled = plane.reconciled
    result = plane.run()
    replicas = [o for o in result.store.objects() if o["kind"] == "ModelReplica"]
    assert len(replicas) == 4
    composites = len(result.composites())
    # Not every composite of every round: the InferenceClasses, for one, see nothing new.
    assert plane.reconciled - reconciled < composites * result.rounds


def test_versions_are_unique_across_stores() -> None:
    # The function's decode cache is keyed by (uid, resourceVersion); the engine
    # stamps the same uid on an object in every render, so versions must differ.
    a, b = ObjectStore(), ObjectStore()
    ka, kb = a.put(configmap("a", x="1")), b.put(configmap("a", x="2"))
    assert ka == kb and a.version(ka) != b.version(kb)


def test_labels_are_selected_from_an_index_that_follows_in_place_edits() -> None:
    store = ObjectStore()
    for name, region in (("b", "eu"), ("a", "eu"), ("c", "us")):
        cm = configmap(name)
        cm["metadata"]["labels"] = {"region": region, "tier": "gold"}
        store.put(cm)

    def names(**labels: str) -> list[str]:
        return [o["metadata"]["name"] for o in store.list("v1", "ConfigMap", None, labels)]

    assert names(region="eu") == ["a", "b"] and names(region="eu", tier="gold") == ["a", "b"]
    assert names(region="mars") == [] and names(tier="gold") == ["a", "b", "c"]
    moved = store.get(Key("v1", "ConfigMap", "default", "a"))
    assert moved is not None
    moved["metadata"]["labels"]["region"] = "us"  # in place: indexed once noted
    store.refresh()
    assert names(region="eu") == ["b"] and names(region="us") == ["a", "c"]
    store.delete(Key("v1", "ConfigMap", "default", "c"))
    assert names(region="us") == ["a"]


EXAMPLES = QUICKSTART.parent


@pytest.mark.parametrize(
    "example",
    [
        "quickstart",
        "operations/rolling",
        "caches/huggingface",
        "routing",
        "missing-cache",
        "clusters",
    ],
)
def test_in_process_calls_render_what_the_grpc_entry_point_renders(example: str) -> None:
    # Without a runner the composers are called on dicts; with one, every call
    # is a RunFunctionRequest through the servicer, protobuf both ways.
    objects = load_paths([str(EXAMPLES / example)])
    direct = ControlPlane(copy.deepcopy(objects)).run()
    wire = ControlPlane(copy.deepcopy(objects), runner=FunctionRunner(log_errors=False)).run()
    assert dump_yaml(direct.store.objects()) == dump_yaml(wire.store.objects())
    assert direct.events == wire.events and direct.rounds == wire.rounds
    assert direct.readiness == wire.readiness


def test_a_result_no_struct_holds_is_fatal_in_process_too(install: Any) -> None:
    widget = {
        "apiVersion": TEST_API,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {},
    }
    bad = {**configmap("x"), "data": {"set": {1, 2}}}
    install({"Widget": lambda inp: ComposeResult(desired={"cm": DesiredResource(bad)})})
    results = [
        ControlPlane([copy.deepcopy(widget)], runner=runner).run()
        for runner in (None, FunctionRunner(log_errors=False))
    ]
    synced = [
        next(
            c
            for c in (r.get(TEST_API, "Widget", "w", "default") or {})["status"]["conditions"]
            if c["type"] == "Synced"
        )
        for r in results
    ]
    for cond in synced:
        assert cond["status"] == "False" and cond["reason"] == "ReconcileError"
        assert "Widget default/w returned a value that is not JSON" in cond["message"]
    assert [len(r.composed_of(r.composites()[0])) for r in results] == [0, 0]


def test_a_reordered_or_unmarshallable_object_is_versioned_by_content() -> None:
    store = ObjectStore()
    key = store.put(configmap("a", x="1", y="2"))
    v1 = store.version(key)
    # Equal content in another key order: the bytes differ, the content does not.
    cm = configmap("a")
    reordered = {"data": {"y": "2", "x": "1"}, "metadata": cm["metadata"], "kind": "ConfigMap"}
    reordered["apiVersion"] = "v1"
    store.put(reordered)
    assert store.version(key) == v1
    # Marshal refuses dict subclasses: a copy of the content decides.
    store.put({**configmap("a"), "data": FrozenDict({"x": "1", "y": "2"})})
    assert store.version(key) == v1
    store.put({**configmap("a"), "data": FrozenDict({"x": "1", "y": "3"})})
    assert store.version(key) != v1


class CheckEveryRound(ControlPlane):
    """The engine, checking after each round that no in-place change went unnoticed."""

    missed: list[Key]

    def _round(self) -> None:
        super()._round()
        self.missed = getattr(self, "missed", []) + self.store.refresh()


@pytest.mark.parametrize(
    "example", ["quickstart", "clusters", "caches/huggingface", "operations/unschedulable"]
)
def test_every_change_of_a_round_is_noted_without_digesting_the_whole_store(example: str) -> None:
    # Only objects the simulator changed in place are digested again after it;
    # a full refresh after every round must find nothing more.
    plane = CheckEveryRound(load_paths([str(EXAMPLES / example)]))
    plane.run()
    assert plane.missed == []


def test_no_change_goes_unnoticed_while_a_cluster_is_deleted() -> None:
    plane = CheckEveryRound(load_paths([str(EXAMPLES / "clusters")]))
    plane.run()
    plane.delete(Key("modelplane.ai/v1alpha1", "InferenceCluster", "", "eu-west"))
    plane.run()
    assert plane.missed == []
