"""Passes of the simulated providers: when an unchanged Object is simulated again."""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_cache import HydrateEnv
from modelplane.local.conditions import Clock
from modelplane.local.passes import Passes
from modelplane.local.simulate import simulate
from modelplane.local.store import Key, ObjectStore


def _object(name: str, references: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "cluster-a"},
        "forProvider": {
            "manifest": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"},
            }
        },
    }
    if references:
        spec["references"] = references
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": {"name": name, "namespace": "modelplane-system"},
        "spec": spec,
    }


def _provider_config() -> dict[str, Any]:
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "ClusterProviderConfig",
        "metadata": {"name": "cluster-a"},
        "spec": {"credentials": {"source": "Secret"}},
    }


def _synced(store: ObjectStore, name: str) -> tuple[str, str]:
    obj = store.get(Key(c.PROVIDER_KUBERNETES_API_VERSION, "Object", "modelplane-system", name))
    assert obj is not None
    cond = next(x for x in obj["status"]["conditions"] if x["type"] == "Synced")
    return cond["status"], cond.get("message", "")


def test_an_unchanged_object_syncs_once_its_provider_config_appears() -> None:
    store, clock, passes = ObjectStore(), Clock(), Passes()
    store.put(_object("a"))
    simulate(store, clock, passes)
    assert _synced(store, "a") == (
        "False",
        "cannot get referenced ClusterProviderConfig cluster-a: not found",
    )
    # Nothing changed: nothing is simulated again, however many passes.
    assert simulate(store, clock, passes) == []
    assert simulate(store, clock, passes) == []
    # The Object is as it was, but what it reads is not: it is simulated again.
    store.put(_provider_config())
    touched = simulate(store, clock, passes)
    assert Key(c.PROVIDER_KUBERNETES_API_VERSION, "Object", "modelplane-system", "a") in touched
    assert _synced(store, "a") == ("True", "")
    assert simulate(store, clock, passes) == []


def test_an_unchanged_object_resolves_a_reference_that_appears_later() -> None:
    store, clock, passes = ObjectStore(), Clock(), Passes()
    store.put(_provider_config())
    ref = {
        "patchesFrom": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "x", "name": "src"}
    }
    store.put(_object("b", [ref]))
    simulate(store, clock, passes)
    assert _synced(store, "b") == (
        "False",
        "cannot resolve references: ConfigMap x/src: not found",
    )
    assert simulate(store, clock, passes) == []
    # A ConfigMap elsewhere changes nothing the Object reads ...
    store.put(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "x"}}
    )
    assert simulate(store, clock, passes) == []
    # ... the one it names does.
    store.put(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "src", "namespace": "x"}}
    )
    simulate(store, clock, passes)
    assert _synced(store, "b") == ("True", "")


class _CountingStore(ObjectStore):
    """A store that counts how often each object's in-place changes are noted."""

    def __init__(self) -> None:
        super().__init__()
        self.touches: dict[Key, int] = {}

    def touch(self, key: Key) -> bool:
        self.touches[key] = self.touches.get(key, 0) + 1
        return super().touch(key)


def test_an_object_two_steps_change_in_one_pass_is_noted_once() -> None:
    # An inventory Object is simulated (synced, observed), then the simulated
    # agent's summary is written into it: one pass, two in-place changes.
    store, clock = _CountingStore(), Clock()
    store.put(_provider_config())
    inventory = _object("cluster-a-inventory")
    inventory["metadata"]["labels"] = {c.LABEL_COMPONENT: "inventory", c.LABEL_CLUSTER: "cluster-a"}
    store.put(inventory)
    key = Key(
        c.PROVIDER_KUBERNETES_API_VERSION,
        "Object",
        "modelplane-system",
        inventory["metadata"]["name"],
    )
    version = store.version(key)
    touched = simulate(store, clock, Passes())
    assert touched == [key]
    assert store.touches == {key: 1}
    assert store.version(key) != version
    obj = store.get(key)
    assert obj is not None
    assert list(obj["status"]["atProvider"]["manifest"]["data"]) == [c.INVENTORY_DATA_KEY]


def _wrapping(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    obj = _object(name)
    obj["spec"]["forProvider"]["manifest"] = manifest
    return obj


def _job(result: str, source_hash: str) -> dict[str, Any]:
    env = [
        {"name": HydrateEnv.RESULT_CONFIGMAP, "value": result},
        {"name": HydrateEnv.SOURCE_HASH, "value": source_hash},
    ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hydrate", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "h", "image": "x", "env": env}]}}},
    }


def _result(store: ObjectStore) -> Any:
    obj = store.get(Key(c.PROVIDER_KUBERNETES_API_VERSION, "Object", "modelplane-system", "cm"))
    assert obj is not None
    return obj["status"]["atProvider"]["manifest"].get("data")


def test_hydration_results_stay_while_no_object_changes_and_follow_a_change() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "result", "namespace": "default", "labels": {c.LABEL_CACHE: "c"}},
    }
    store, clock, passes = _CountingStore(), Clock(), Passes()
    store.put(_provider_config())
    store.put(_wrapping("cm", cm))
    store.put(_wrapping("job", _job("result", "h1")))
    for _ in range(3):
        simulate(store, clock, passes)
    first = _result(store)
    assert first is not None and "h1" in str(first)
    # Nothing changes: no pass writes (or notes) anything, and the result stays.
    store.touches.clear()
    assert simulate(store, clock, passes) == []
    assert simulate(store, clock, passes) == []
    assert store.touches == {}
    assert _result(store) == first
    # The Job changes: the next pass hydrates again, from the new Job.
    store.put(_wrapping("job", _job("result", "h2")))
    simulate(store, clock, passes)
    second = _result(store)
    assert "h2" in str(second) and second != first
    # And a pass with no hydration at all (a fresh record) finds exactly that result.
    fresh = Passes()
    simulate(store, clock, fresh)
    assert _result(store) == second


def _wrapping(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    obj = _object(name)
    obj["spec"]["forProvider"]["manifest"] = manifest
    return obj


def _backend_object() -> dict[str, Any]:
    return _wrapping(
        "backend",
        {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "Backend",
            "metadata": {"name": "east", "namespace": "modelplane-system"},
            "spec": {"endpoints": [{"ip": {"address": "192.0.2.1", "port": 443}}]},
        },
    )


def _route_object(backend: str) -> dict[str, Any]:
    return _wrapping(
        "route",
        {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "chat", "namespace": "team-a"},
            "spec": {
                "parentRefs": [{"name": "gw"}],
                "rules": [
                    {
                        "backendRefs": [
                            {
                                "group": "gateway.envoyproxy.io",
                                "kind": "Backend",
                                "name": backend,
                                "namespace": "modelplane-system",
                            }
                        ]
                    }
                ],
            },
        },
    )


def _judged(store: ObjectStore) -> tuple[Any, str]:
    obj = store.get(
        Key(c.PROVIDER_KUBERNETES_API_VERSION, "Object", "modelplane-system", "backend")
    )
    assert obj is not None
    ready = next(x for x in obj["status"]["conditions"] if x["type"] == "Ready")
    return obj["status"]["atProvider"]["manifest"].get("status"), ready["status"]


def test_a_backend_is_judged_only_once_a_route_names_it() -> None:
    """Envoy Gateway reads only the Backends routes refer to: the render must not show
    one Accepted that no route names (a join that waited for it would wait forever)."""
    store, clock, passes = ObjectStore(), Clock(), Passes()
    store.put(_provider_config())
    store.put(_backend_object())
    store.put(_route_object("west"))  # names another Backend
    simulate(store, clock, passes)
    assert _judged(store) == (None, "False")
    assert simulate(store, clock, passes) == []
    # The route now names it: the unchanged Backend is simulated again, and Accepted.
    store.put(_route_object("east"))
    simulate(store, clock, passes)
    status, ready = _judged(store)
    assert ready == "True" and status["conditions"][0]["type"] == "Accepted"


def test_a_derived_value_is_derived_again_only_when_its_stamp_changes() -> None:
    passes, made = Passes(), []

    def derive(n: int) -> Any:
        return lambda: made.append(n) or frozenset({n})

    assert passes.derived("x", (1,), derive(1)) == {1}
    assert passes.derived("x", (1,), derive(2)) == {1}  # the same stamp: kept
    assert passes.derived("y", (1,), derive(3)) == {3}  # another name: its own
    assert passes.derived("x", (2,), derive(4)) == {4}
    assert made == [1, 3, 4]
