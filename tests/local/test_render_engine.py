"""Engine mechanics of the embedded control plane, driven by injected test composers."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Requirement
from modelplane.local import ControlPlane, Key, NotConvergedError
from modelplane.local.output import dump_yaml

TEST_API = "test.modelplane.ai/v1"
COMPOSITE = "crossplane.io/composite"
RESOURCE_NAME = "crossplane.io/composition-resource-name"


def xr(kind: str, name: str, namespace: str | None = None, **spec: object) -> dict[str, Any]:
    """A test composite resource."""
    meta: dict[str, object] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": TEST_API, "kind": kind, "metadata": meta, "spec": dict(spec)}


def configmap(name: str, namespace: str = "default", **extra: object) -> dict[str, Any]:
    """A ConfigMap manifest (an empty namespace leaves it unset)."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    obj.update(extra)
    return obj


def cond(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    """(status, reason, message) of a condition."""
    for c in obj["status"]["conditions"]:
        if c["type"] == type_:
            return c["status"], c["reason"], c.get("message", "")
    raise AssertionError(f"no {type_} condition in {obj['status']}")


def items_composer(inp: ComposeInput) -> ComposeResult:
    """Composes one ConfigMap per entry of spec.items, ready as spec.ready says."""
    result = ComposeResult()
    for item in inp.composite["spec"].get("items", []):
        result.desired[item] = DesiredResource(
            configmap(f"cm-{item}", namespace="", data={"item": item}),
            inp.composite["spec"].get("ready", {}).get(item, "Unspecified"),
        )
    result.status = {"count": len(result.desired)}
    result.ready = inp.composite["spec"].get("composite", "Unspecified")
    return result


def test_composed_resources_carry_crossplane_metadata(install) -> None:
    def composer(inp: ComposeInput) -> ComposeResult:
        return ComposeResult(
            desired={
                "named": DesiredResource(configmap("explicit", namespace="elsewhere"), "True"),
                "anonymous": DesiredResource(
                    {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}, "True"
                ),
            }
        )

    install({"Widget": composer})
    result = ControlPlane([xr("Widget", "w", "team")]).run()
    w = result.get(TEST_API, "Widget", "w", "team")
    assert w is not None
    composed = result.composed_of(w)
    # A namespaced XR's composed resources land in its namespace; a resource
    # without a name gets <xr-name>-<5 hex digits>.
    names = {o["metadata"]["annotations"][RESOURCE_NAME]: o for o in composed}
    assert set(names) == {"named", "anonymous"}
    assert names["named"]["metadata"]["name"] == "explicit"
    generated = names["anonymous"]["metadata"]["name"]
    assert generated.startswith("w-") and len(generated) == len("w-") + 5
    for obj in composed:
        m = obj["metadata"]
        assert m["namespace"] == "team"
        assert m["labels"][COMPOSITE] == "w"
        assert m["ownerReferences"] == [
            {
                "apiVersion": TEST_API,
                "kind": "Widget",
                "name": "w",
                "uid": w["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    assert w["spec"]["crossplane"]["resourceRefs"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "explicit"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": generated},
    ]
    assert w["status"]["conditions"][-2:] == [
        {
            "type": "Synced",
            "status": "True",
            "observedGeneration": 1,
            "lastTransitionTime": w["status"]["conditions"][-2]["lastTransitionTime"],
            "reason": "ReconcileSuccess",
        },
        {
            "type": "Ready",
            "status": "True",
            "observedGeneration": 1,
            "lastTransitionTime": w["status"]["conditions"][-1]["lastTransitionTime"],
            "reason": "Available",
        },
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # The function's composite readiness wins when it gives one.
        ({"items": ["a"], "ready": {"a": "False"}, "composite": "True"}, ("True", "Available", "")),
        ({"items": ["a"], "ready": {"a": "True"}, "composite": "False"}, ("False", "Creating", "")),
        # Otherwise: every composed resource must be ready (function readiness,
        # else its own Ready condition, which a ConfigMap never has).
        ({"items": ["a"], "ready": {"a": "True"}}, ("True", "Available", "")),
        ({"items": []}, ("True", "Available", "")),
        (
            {"items": ["c", "a", "b"], "ready": {"a": "True", "b": "False"}},
            ("False", "Creating", "Unready resources: b, c"),
        ),
        ({"items": ["c", "a", "b"]}, ("False", "Creating", "Unready resources: a, b, and c")),
        (
            {"items": ["d", "c", "b", "a", "e"], "ready": {"e": "True"}},
            ("False", "Creating", "Unready resources: a, b, c, and 1 more"),
        ),
    ],
)
def test_ready_derivation(install, spec: dict[str, Any], expected: tuple[str, str, str]) -> None:
    install({"Widget": items_composer})
    result = ControlPlane([xr("Widget", "w", **spec)]).run()
    w = result.get(TEST_API, "Widget", "w")
    assert w is not None
    assert cond(w, "Ready") == expected
    assert cond(w, "Synced") == ("True", "ReconcileSuccess", "")
    assert w["status"]["count"] == len(spec["items"])


def snapshot_cm(name: str, resource: str, owner: str = "w") -> dict[str, Any]:
    """A composed ConfigMap as exported from a live control plane."""
    cm = configmap(name)
    cm["metadata"].update(
        labels={COMPOSITE: owner},
        annotations={RESOURCE_NAME: resource},
        uid="live-uid-1",
        ownerReferences=[
            {
                "apiVersion": TEST_API,
                "kind": "Widget",
                "name": owner,
                "uid": "live-xr-uid",
                "controller": True,
            }
        ],
    )
    return cm


def test_snapshot_adoption_and_garbage_collection(install) -> None:
    seen: list[set[str]] = []

    def composer(inp: ComposeInput) -> ComposeResult:
        seen.append(set(inp.observed))
        return items_composer(inp)

    install({"Widget": composer})
    objects = [
        xr("Widget", "w", items=["keep"]),
        snapshot_cm("live-keep", "keep"),
        snapshot_cm("live-old", "old"),
        # Another XR's resource (same label value, other controller) is not ours.
        {**snapshot_cm("foreign", "keep")}
        | {
            "metadata": {
                **snapshot_cm("foreign", "keep")["metadata"],
                "ownerReferences": [
                    {"apiVersion": "x/v1", "kind": "Other", "name": "w", "controller": True}
                ],
            }
        },
    ]
    result = ControlPlane(objects).run()
    # The snapshot's resources are observed as the XR's composed resources...
    assert seen[0] == {"keep", "old"}
    # ...the desired one keeps its live name (no duplicate under a new name),
    # the undesired one is garbage collected, the foreign one is untouched.
    names = sorted(k.name for k in result.store if k.kind == "ConfigMap")
    assert names == ["foreign", "live-keep"]
    kept = result.get("v1", "ConfigMap", "live-keep", "default")
    assert kept is not None and kept["data"] == {"item": "keep"}
    assert kept["metadata"]["uid"] == "live-uid-1"


def test_fatal_keeps_everything_and_reports_reconcile_error(install) -> None:
    calls = itertools.count()

    def composer(inp: ComposeInput) -> ComposeResult:
        if next(calls) == 0:
            result = items_composer(inp)
            result.condition("Valid", True, "Valid")
            return result
        return ComposeResult(fatal="cannot place replicas safely")

    install({"Widget": composer})
    result = ControlPlane([xr("Widget", "w", items=["a", "b"])]).run()
    w = result.get(TEST_API, "Widget", "w")
    assert w is not None
    assert sorted(o["metadata"]["name"] for o in result.composed_of(w)) == ["cm-a", "cm-b"]
    assert cond(w, "Synced") == (
        "False",
        "ReconcileError",
        'cannot compose resources: pipeline step "compose" returned a fatal result: '
        "cannot place replicas safely",
    )
    # A condition the fatal call did not report becomes Unknown, as in Crossplane.
    assert cond(w, "Valid") == (
        "Unknown",
        "FatalError",
        "A fatal error occurred before the status of this condition could be determined.",
    )
    assert [(e.type, e.reason) for e in result.events[Key.of(w)]] == [
        ("Warning", "ComposeResources")
    ]


def test_nested_composites_reconcile_in_later_rounds(install) -> None:
    def parent(inp: ComposeInput) -> ComposeResult:
        child = xr("Child", f"{inp.composite['metadata']['name']}-child", size=2)
        return ComposeResult(desired={"child": DesiredResource(child)})

    def child(inp: ComposeInput) -> ComposeResult:
        cms = {
            f"cm{i}": DesiredResource(configmap(f"c{i}", namespace=""), "True")
            for i in range(inp.composite["spec"]["size"])
        }
        return ComposeResult(desired=cms, status={"size": len(cms)})

    install({"Parent": parent, "Child": child})
    result = ControlPlane([xr("Parent", "p")]).run()
    p = result.get(TEST_API, "Parent", "p")
    c = result.get(TEST_API, "Child", "p-child")
    assert p is not None and c is not None
    assert [Key.of(o) for o in result.composed_of(p)] == [Key.of(c)]
    assert sorted(o["metadata"]["name"] for o in result.composed_of(c)) == ["c0", "c1"]
    assert c["status"]["size"] == 2
    assert cond(c, "Ready") == ("True", "Available", "")
    # The parent reads its child's Ready condition (the function left it unspecified).
    assert cond(p, "Ready") == ("True", "Available", "")
    # Round 1 creates the child, round 2 reconciles it (and the parent sees it
    # Ready), round 3 changes nothing.
    assert result.rounds == 3


def test_requirements_resolved_like_crossplane(install) -> None:
    def composer(inp: ComposeInput) -> ComposeResult:
        result = ComposeResult()
        result.requirements = {
            "by-name-ns": Requirement("v1", "ConfigMap", match_name="a", namespace="ns1"),
            # No namespace: Crossplane gets a cluster-scoped object, so a
            # namespaced one is not found.
            "by-name-no-ns": Requirement("v1", "ConfigMap", match_name="a"),
            "by-labels-all-ns": Requirement("v1", "ConfigMap", match_labels={"team": "x"}),
            "by-labels-ns": Requirement(
                "v1", "ConfigMap", match_labels={"team": "x"}, namespace="ns2"
            ),
            "missing": Requirement("v1", "ConfigMap", match_name="nope", namespace="ns1"),
            "cluster": Requirement("v1", "Namespace", match_name="ns1"),
        }
        # A second-order requirement: what to fetch next depends on what came back.
        found = inp.required.get("by-name-ns", [])
        if found:
            result.requirements["next"] = Requirement(
                "v1", "ConfigMap", match_name=found[0]["data"]["next"], namespace="ns1"
            )
        result.status = {
            "seen": {
                name: [
                    f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}" for o in objs
                ]
                for name, objs in sorted(inp.required.items())
            }
        }
        return result

    install({"Widget": composer})
    objects = [
        xr("Widget", "w"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}},
        configmap(
            "a",
            "ns1",
            data={"next": "b"},
            metadata={"name": "a", "namespace": "ns1", "labels": {"team": "x"}},
        ),
        configmap("b", "ns1"),
        configmap("c", "ns2", metadata={"name": "c", "namespace": "ns2", "labels": {"team": "x"}}),
        configmap("d", "ns2", metadata={"name": "d", "namespace": "ns2", "labels": {"team": "y"}}),
    ]
    result = ControlPlane(objects).run()
    w = result.get(TEST_API, "Widget", "w")
    assert w is not None
    assert w["status"]["seen"] == {
        "by-labels-all-ns": ["ns1/a", "ns2/c"],
        "by-labels-ns": ["ns2/c"],
        "by-name-no-ns": [],
        "by-name-ns": ["ns1/a"],
        "cluster": ["/ns1"],
        "missing": [],
        "next": ["ns1/b"],
    }
    assert cond(w, "Synced") == ("True", "ReconcileSuccess", "")


def test_requirements_that_never_stabilize_fail_the_reconcile(install) -> None:
    counter = itertools.count()

    def composer(inp: ComposeInput) -> ComposeResult:
        result = ComposeResult()
        result.requirements["moving"] = Requirement(
            "v1", "ConfigMap", match_name=f"x{next(counter)}"
        )
        return result

    install({"Widget": composer})
    cp = ControlPlane([xr("Widget", "w")])
    with pytest.raises(NotConvergedError):
        cp.run(max_rounds=1)
    w = cp.store.get(Key(TEST_API, "Widget", "", "w"))
    assert w is not None
    assert cond(w, "Synced") == (
        "False",
        "ReconcileError",
        'cannot compose resources: step "compose" requirements didn\'t stabilize after the '
        "maximum number of iterations (5)",
    )
    # Crossplane calls the function at most five times per reconcile.
    assert next(counter) == 5


def test_max_rounds_failure_names_what_keeps_changing(install, tmp_path) -> None:
    def composer(inp: ComposeInput) -> ComposeResult:
        generation = (inp.composite.get("status") or {}).get("tick", 0)
        return ComposeResult(status={"tick": generation + 1})

    install({"Widget": composer, "Quiet": lambda inp: ComposeResult()})
    (tmp_path / "w.yaml").write_text(
        f"apiVersion: {TEST_API}\nkind: Widget\nmetadata: {{name: spinner}}\nspec: {{}}\n---\n"
        f"apiVersion: {TEST_API}\nkind: Quiet\nmetadata: {{name: calm}}\nspec: {{}}\n"
    )
    res = CliRunner().invoke(cli, ["render", str(tmp_path), "--max-rounds", "4"])
    assert res.exit_code == 1
    assert "no fixed point after 4 rounds; still changing: Widget spinner\n" in res.output
    assert "Traceback" not in res.output


def test_render_is_independent_of_input_order(install) -> None:
    def composer(inp: ComposeInput) -> ComposeResult:
        return items_composer(inp)

    install({"Widget": composer})
    objects = [
        xr("Widget", f"w{i}", items=[f"i{i}", f"j{i}"], ready={f"i{i}": "True"}) for i in range(4)
    ] + [configmap(f"input{i}") for i in range(3)]
    first = dump_yaml(ControlPlane(objects).run().store.objects())
    shuffled = list(objects)
    random.Random(7).shuffle(shuffled)
    assert dump_yaml(ControlPlane(shuffled).run().store.objects()) == first
    assert dump_yaml(ControlPlane(list(reversed(objects))).run().store.objects()) == first


def test_garbage_collection_cascades_to_nested_composed_resources(install) -> None:
    install(
        {
            "Parent": lambda inp: ComposeResult(),
            "Child": lambda inp: ComposeResult(
                desired={"cm": DesiredResource(configmap("grandchild"), "True")}
            ),
        }
    )
    child = xr("Child", "kid")
    child["metadata"].update(labels={COMPOSITE: "p"}, annotations={RESOURCE_NAME: "child"})
    grandchild = configmap("grandchild")
    grandchild["metadata"].update(labels={COMPOSITE: "kid"}, annotations={RESOURCE_NAME: "cm"})
    unrelated = configmap("unrelated")
    result = ControlPlane([xr("Parent", "p"), child, grandchild, unrelated]).run()
    # The parent no longer desires its child: the child goes, and with it
    # what the child composed (Kubernetes garbage collection via ownership).
    assert sorted(str(k) for k in result.store) == [
        "ConfigMap default/unrelated",
        "Parent p",
    ]


def test_generated_names_fit_a_dns_label(install) -> None:
    install({"Widget": lambda inp: ComposeResult(desired={"cm": DesiredResource(configmap(""))})})
    long_name = "a" * 56 + "-" + "b" * 13
    result = ControlPlane([xr("Widget", long_name, "ns")]).run()
    w = result.get(TEST_API, "Widget", long_name, "ns")
    assert w is not None
    (cm,) = result.composed_of(w)
    name = cm["metadata"]["name"]
    # 57 characters of the XR's name, minus a trailing '-', then '-' + 5 hex digits.
    assert name[:57] == "a" * 56 + "-" and name[56] == "-" and len(name) == 62
    assert all(ch in "0123456789abcdef" for ch in name[-5:])


def test_composer_exception_is_a_fatal_result_not_a_crash(install, tmp_path) -> None:
    def broken(inp: ComposeInput) -> ComposeResult:
        raise ZeroDivisionError("division by zero")

    install({"Widget": broken})
    (tmp_path / "w.yaml").write_text(
        f"apiVersion: {TEST_API}\nkind: Widget\nmetadata: {{name: w}}\nspec: {{}}\n"
    )
    res = CliRunner().invoke(cli, ["render", str(tmp_path), "-o", "yaml"])
    assert res.exit_code == 0
    # stdout stays parseable YAML: the error is in the XR's Synced condition.
    assert res.output.startswith("---\napiVersion: test.modelplane.ai/v1\n")
    assert "Traceback" not in res.output
    assert "ZeroDivisionError: division by zero" in res.output


def test_a_nested_composites_resources_carry_the_root_composite_label() -> None:
    """As Crossplane labels them: a real control plane labelled a ModelReplica's Objects
    with their ModelDeployment, not the ModelReplica; ownership stays with the parent."""
    from pathlib import Path

    from modelplane.local import load_paths
    from modelplane.local.store import owned_by

    root = Path(__file__).resolve().parents[2]
    plane = ControlPlane(load_paths([root / "examples" / "quickstart"]))
    plane.run()
    replicas = [o for o in plane.store.objects() if o["kind"] == "ModelReplica"]
    assert replicas
    for replica in replicas:
        deployment = replica["metadata"]["labels"]["modelplane.ai/deployment"]
        objects = [
            o
            for o in plane.store.objects()
            if o["kind"] == "Object"
            and any(
                r.get("name") == replica["metadata"]["name"]
                for r in o["metadata"].get("ownerReferences") or []
            )
        ]
        assert objects, replica["metadata"]["name"]
        for obj in objects:
            assert obj["metadata"]["labels"][COMPOSITE] == deployment
            assert owned_by(obj, replica)
            assert not any(owned_by(obj, other) for other in replicas if other is not replica)
