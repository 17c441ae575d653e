"""The embedded control plane reuses work: versions, encodings, calls whose inputs are unchanged."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from modelplane.local import ControlPlane, Key, load_paths
from modelplane.local.engine import Inputs
from modelplane.local.output import dump_yaml
from modelplane.local.store import ObjectStore

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
    assert store.version(key) is None and store.fingerprints() == {}


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

    def _inputs(self, *args: Any) -> Inputs:
        return Inputs(composite=(Key("", "", "", ""), -1), observed=(), fetched=())


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
