"""The embedded control plane reuses a call's work: applies, requirements, simulations.

Each shortcut must leave the result exactly as the long way would: the tests
compare against an engine with the shortcut switched off, or check that a
change the shortcut could hide is still seen.
"""

from __future__ import annotations

import copy
from typing import Any

from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Requirement
from modelplane.local import ControlPlane, Key
from modelplane.local.output import dump_yaml
from modelplane.local.store import Obj
from tests.local.conftest import TEST_API, Install

WIDGET = Key(TEST_API, "Widget", "default", "w")


def widget(n: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": TEST_API,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"n": n},
    }


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}


def fixed_configmap(inp: ComposeInput) -> ComposeResult:
    """Always the same ConfigMap; the composite's spec only shows in its status."""
    return ComposeResult(
        desired={"cm": DesiredResource(configmap("made", x="1"), ready="True")},
        status={"n": inp.composite["spec"]["n"]},
    )


class CountingPuts(ControlPlane):
    """The engine, counting the puts of each key after it is built."""

    def __init__(self, objects: list[Obj], **kwargs: Any) -> None:
        super().__init__(objects, **kwargs)
        self.puts: dict[Key, int] = {}
        put = self.store.put

        def counted(obj: Obj, known: Key | None = None) -> Key:
            key = put(obj, known)
            self.puts[key] = self.puts.get(key, 0) + 1
            return key

        self.store.put = counted  # type: ignore[method-assign]


def settled_configmap(install: Install) -> tuple[CountingPuts, Key]:
    """An engine at its fixed point over a Widget composing `fixed_configmap`, and
    the ConfigMap's key (put once)."""
    install({"Widget": fixed_configmap})
    plane = CountingPuts([widget()])
    plane.run()
    made = Key("v1", "ConfigMap", "default", "made")
    assert plane.puts[made] == 1
    return plane, made


def test_an_equal_desired_object_is_applied_again_only_when_its_object_changed(
    install: Install,
) -> None:
    plane, made = settled_configmap(install)
    version = plane.store.version(made)

    # The composite changes, its desired ConfigMap does not: it is called, nothing applied.
    xr = plane.store.get(WIDGET)
    assert xr is not None
    plane.store.put({**xr, "spec": {"n": 2}})
    calls = plane.calls
    result = plane.run()
    assert plane.calls > calls and plane.puts[made] == 1
    assert plane.store.version(made) == version
    assert (result.get(TEST_API, "Widget", "w", "default") or {})["status"]["n"] == 2

    # Someone else edits the ConfigMap: the next call applies the desired one again.
    cm = plane.store.get(made)
    assert cm is not None
    # What a composer's object holds below its top level is stored read-only
    # (`convert.as_stored`): an editor replaces the field.
    cm["data"] = {**cm["data"], "x": "edited"}
    plane.store.touch(made)
    plane.run()
    assert plane.puts[made] == 2
    assert (plane.store.get(made) or {})["data"] == {"x": "1"}


def test_a_status_written_since_leaves_an_equal_desired_object_unapplied(
    install: Install,
) -> None:
    plane, made = settled_configmap(install)

    # A provider reports on the object: its status is not the composer's, so
    # an equal desired object has nothing to apply.
    cm = plane.store.get(made)
    assert cm is not None
    cm["status"] = {"observed": True}
    plane.store.touch(made)
    xr = plane.store.get(WIDGET)
    assert xr is not None
    plane.store.put({**xr, "spec": {"n": 2}})
    calls = plane.calls
    plane.run()
    assert plane.calls > calls and plane.puts[made] == 1
    assert (plane.store.get(made) or {})["status"] == {"observed": True}

    # Anything else written since is the desired object's to correct, status kept.
    cm = plane.store.get(made)
    assert cm is not None
    cm["metadata"] = {**cm["metadata"], "labels": {"crossplane.io/composite": "other"}}
    cm["status"] = {"observed": 2}
    plane.store.touch(made)
    plane.store.put({**xr, "spec": {"n": 3}})
    plane.run()
    assert plane.puts[made] == 2
    now = plane.store.get(made) or {}
    assert now["metadata"]["labels"] == {"crossplane.io/composite": "w"}
    assert now["status"] == {"observed": 2}


def two_level(inp: ComposeInput) -> ComposeResult:
    """Requires the labelled ConfigMaps, then a Secret named after each one found."""
    res = ComposeResult(
        requirements={"cms": Requirement("v1", "ConfigMap", match_labels={"a": "1"})}
    )
    for cm in inp.required.get("cms", []):
        name = cm["metadata"]["name"]
        res.requirements[f"secret-{name}"] = Requirement(
            "v1", "Secret", match_name=f"{name}-secret", namespace="default"
        )
    found = sorted(
        f"{name}={len(objs)}" for name, objs in inp.required.items() if name.startswith("secret-")
    )
    res.status = {"found": found, "n": inp.composite["spec"]["n"]}
    return res


class NoSettledRequirements(ControlPlane):
    """The engine as Crossplane: every call starts from no requirements."""

    def __init__(self, objects: list[Obj], **kwargs: Any) -> None:
        super().__init__(objects, **kwargs)
        pipeline = self.pipeline
        call = pipeline.call

        def from_nothing(key: Key, xr: Obj, observed: Any) -> Any:
            pipeline.settled.pop(key, None)
            return call(key, xr, observed)

        pipeline.call = from_nothing  # type: ignore[method-assign]


def test_starting_from_settled_requirements_answers_as_crossplane_with_fewer_calls(
    install: Install,
) -> None:
    install({"Widget": two_level})
    objects = [
        widget(),
        configmap("one", {"a": "1"}),
        configmap("two", {"a": "1"}),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "one-secret", "namespace": "default"},
        },
    ]
    planes = [ControlPlane(copy.deepcopy(objects)), NoSettledRequirements(copy.deepcopy(objects))]
    results = [plane.run() for plane in planes]

    def edit_and_run(plane: ControlPlane) -> None:
        # A new labelled ConfigMap and a new Secret change what is required and found.
        plane.store.put(configmap("three", {"a": "1"}))
        xr = plane.store.get(WIDGET)
        assert xr is not None
        plane.store.put({**xr, "spec": {"n": 2}})
        plane.run()

    before = [plane.calls for plane in planes]
    for plane in planes:
        edit_and_run(plane)
    outputs = [dump_yaml(plane.store.objects()) for plane in planes]
    assert outputs[0] == outputs[1]
    assert dump_yaml(results[0].store.objects()) == dump_yaml(results[1].store.objects())
    assert planes[0].events == planes[1].events
    status = (planes[0].store.get(WIDGET) or {})["status"]
    assert status["found"] == ["secret-one=1", "secret-three=0", "secret-two=0"]
    assert status["n"] == 2
    # Crossplane's way takes three calls per reconcile here (none, the
    # ConfigMaps, the Secrets); starting from the settled ones takes fewer.
    made = [plane.calls - b for plane, b in zip(planes, before, strict=True)]
    assert made[0] < made[1]


def test_an_object_whose_provider_config_appears_is_simulated_again() -> None:
    # Simulating an Object is skipped while it and what it reads are unchanged;
    # a provider config appearing later is such a read.
    obj: dict[str, Any] = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "o", "namespace": "default"},
        "spec": {
            "forProvider": {"manifest": configmap("inside", x="1")},
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "later"},
        },
    }
    plane = ControlPlane([obj])
    plane.run()

    def synced() -> dict[str, Any]:
        got = plane.store.get(Key(obj["apiVersion"], "Object", "default", "o")) or {}
        return next(c for c in got["status"]["conditions"] if c["type"] == "Synced")

    assert synced()["status"] == "False" and "later" in synced()["message"]
    plane.store.put(
        {
            "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
            "kind": "ClusterProviderConfig",
            "metadata": {"name": "later"},
            "spec": {"credentials": {"source": "None"}},
        }
    )
    plane.run()
    assert synced()["status"] == "True"


def passthrough(inp: ComposeInput) -> ComposeResult:
    """A ConfigMap carrying the composite's `spec.x` as it is."""
    cm = {**configmap("made"), "spec": {"x": inp.composite["spec"]["x"]}}
    return ComposeResult(desired={"cm": DesiredResource(cm, ready="True")})


def test_a_desired_value_equal_only_to_python_is_applied_again(install: Install) -> None:
    # 1 == 1.0 == True to Python; the applied object must still follow the type.
    install({"Widget": passthrough})
    plane = ControlPlane([{**widget(), "spec": {"x": 1}}])
    plane.run()
    made = Key("v1", "ConfigMap", "default", "made")
    for value in (True, 1.0, 1):
        xr = plane.store.get(WIDGET)
        assert xr is not None
        plane.store.put({**xr, "spec": {"x": value}})
        plane.run()
        got = (plane.store.get(made) or {})["spec"]["x"]
        # A Struct carries numbers as doubles: 1.0 arrives as 1, like `as_json`.
        assert (type(got), got) == ((bool, True) if value is True else (int, 1))
