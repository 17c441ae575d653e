"""Deletion in the embedded control plane: garbage collection held back by Usages.

Table tests over hand-written tiny stores: which waves a deletion goes in, and
what a deletion that can never finish reports instead of waiting forever.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from modelplane.local import ControlPlane, Key, ObjectStore
from modelplane.local.deletion import GARBAGE, Collector, resolve

NS = "ns"
MR = "example.m.crossplane.io/v1"
USAGE = "protection.crossplane.io/v1beta1"


def _mr(name: str, owner: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owner is not None:
        meta["labels"] = {"crossplane.io/composite": owner}
        meta["ownerReferences"] = [
            {"apiVersion": MR, "kind": "XThing", "name": owner, "controller": True}
        ]
    return {"apiVersion": MR, "kind": "Thing", "metadata": meta, "spec": spec}


def _xr(name: str) -> dict[str, Any]:
    return {"apiVersion": MR, "kind": "XThing", "metadata": {"name": name, "namespace": NS}}


def _usage(name: str, of: str, by: str | None, owner: str | None = "x") -> dict[str, Any]:
    usage = _mr(name, owner)
    usage["apiVersion"], usage["kind"] = USAGE, "Usage"
    spec: dict[str, Any] = {"of": {"apiVersion": MR, "kind": "Thing", "resourceRef": {"name": of}}}
    if by is not None:
        spec["by"] = {"apiVersion": MR, "kind": "Thing", "resourceRef": {"name": by}}
    usage["spec"] = spec
    return usage


def _key(name: str, kind: str = "Thing") -> Key:
    return Key(USAGE if kind == "Usage" else MR, kind, NS, name)


def _names(waves: list[tuple[Key, ...]]) -> list[list[str]]:
    return [sorted(k.name for k in wave) for wave in waves]


CASES = [
    pytest.param(
        [_xr("x"), _mr("a", "x"), _mr("b", "x")],
        [["x"], ["a", "b"]],
        [],
        id="an XR's composed resources follow it, no Usage: one wave",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _mr("b", "x"), _usage("b-uses-a", "a", "b")],
        [["x"], ["b"], ["b-uses-a"], ["a"]],
        [],
        id="a Usage: its user goes first, then the Usage, then what it protected",
    ),
    pytest.param(
        [
            _xr("x"),
            _mr("a", "x"),
            _mr("b", "x"),
            _mr("c", "x"),
            _usage("b-uses-a", "a", "b"),
            _usage("c-uses-b", "b", "c"),
        ],
        [["x"], ["c"], ["c-uses-b"], ["b"], ["b-uses-a"], ["a"]],
        [],
        id="a chain of Usages: one wave per link",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _mr("live"), _usage("live-uses-a", "a", "live")],
        [["x"]],
        [
            "Thing ns/a cannot be deleted: in use by Thing ns/live (Usage ns/live-uses-a), "
            "and nothing deletes Thing ns/live",
            "Usage ns/live-uses-a cannot be deleted: in use by Thing ns/live, "
            "and nothing deletes Thing ns/live",
        ],
        id="a user nothing deletes: stuck, naming the user",
    ),
    pytest.param(
        [
            _xr("x"),
            _mr("a", "x"),
            _mr("b", "x"),
            _usage("b-uses-a", "a", "b"),
            _usage("a-uses-b", "b", "a"),
        ],
        [["x"]],
        [
            "Thing ns/a cannot be deleted: in use by Thing ns/b (Usage ns/b-uses-a): "
            "a Usage cycle Thing ns/a → Thing ns/b → Thing ns/a",
            "Thing ns/b cannot be deleted: in use by Thing ns/a (Usage ns/a-uses-b): "
            "a Usage cycle Thing ns/b → Thing ns/a → Thing ns/b",
            "Usage ns/a-uses-b cannot be deleted: in use by Thing ns/a, "
            "which is in a Usage cycle Thing ns/a → Thing ns/b → Thing ns/a",
            "Usage ns/b-uses-a cannot be deleted: in use by Thing ns/b, "
            "which is in a Usage cycle Thing ns/b → Thing ns/a → Thing ns/b",
        ],
        id="a Usage cycle: stuck, naming the cycle",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _usage("protect-a", "a", None)],
        [["x"], ["protect-a"], ["a"]],
        [],
        id="a Usage without by protects its of until the Usage itself goes",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _usage("protect-a", "a", None, owner=None)],
        [["x"]],
        [
            "Thing ns/a cannot be deleted: protected by Usage ns/protect-a, which has no spec.by, "
            "and nothing deletes that Usage"
        ],
        id="a standing Usage without by: stuck, naming the Usage",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _usage("gone-uses-a", "a", "gone")],
        [["x"], ["gone-uses-a"], ["a"]],
        [],
        id="a deleted Usage whose user does not exist goes, then what it protected",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _usage("gone-uses-a", "a", "gone", owner=None)],
        [["x"]],
        [
            "Thing ns/a cannot be deleted: protected by Usage ns/gone-uses-a, whose user "
            "Thing ns/gone does not exist, and nothing deletes that Usage"
        ],
        id="a missing user: stuck, naming the Usage and the user it lacks",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _mr("b", "x"), _usage("b-uses-a", "a", "b", owner=None)],
        [["x"], ["b"], ["b-uses-a"], ["a"]],
        [],
        id="a Usage nothing composed follows its user (its owner), then what it protected",
    ),
    pytest.param(
        [_xr("x"), _mr("a", "x"), _usage("a-uses-a", "a", "a")],
        [["x"], ["a"], ["a-uses-a"]],
        [],
        id="a resource does not block itself",
    ),
]


@pytest.mark.parametrize(("objects", "waves", "stuck"), CASES)
def test_deletion_waves_and_what_is_stuck(
    objects: list[dict[str, Any]], waves: list[list[str]], stuck: list[str]
) -> None:
    store = ObjectStore()
    for obj in objects:
        store.put(obj)
    collector = Collector(store, record=True)
    collector.request(Key(MR, "XThing", NS, "x"))
    collector.collect(0)
    assert _names([w.keys for w in collector.waves]) == waves
    assert collector.stuck() == stuck


def test_a_provider_config_waits_for_the_managed_resources_using_it() -> None:
    store = ObjectStore()
    pc = {"apiVersion": "example.m.crossplane.io/v1", "kind": "ClusterProviderConfig"}
    pc["metadata"] = {"name": "cloud", "labels": {"crossplane.io/composite": "x"}}
    other = {**_mr("elsewhere"), "apiVersion": "other.io/v1"}
    other["spec"] = {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": "cloud"}}
    for obj in (
        _xr("x"),
        pc,
        _mr("a", "x", providerConfigRef={"kind": "ClusterProviderConfig", "name": "cloud"}),
        other,  # another provider's resource: a config of the same name elsewhere
    ):
        store.put(obj)
    collector = Collector(store, record=True)
    collector.request(Key(MR, "XThing", NS, "x"))
    # The XR is cluster-less here: its ProviderConfig is cluster-scoped, so
    # only the composite label ties it to x.
    collector.request(Key(MR, "ClusterProviderConfig", "", "cloud"), GARBAGE)
    collector.collect(0)
    assert _names([w.keys for w in collector.waves]) == [["x"], ["a"], ["cloud"]]


def test_a_connection_secret_follows_its_managed_resource() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "a-conn",
            "namespace": NS,
            "ownerReferences": [{"apiVersion": MR, "kind": "Thing", "name": "a"}],
        },
    }
    store = ObjectStore()
    for obj in (_mr("a"), secret):
        store.put(obj)
    collector = Collector(store, record=True)
    collector.request(_key("a"))
    collector.collect(0)
    assert _names([w.keys for w in collector.waves]) == [["a"], ["a-conn"]]


def test_a_live_owner_applying_a_collected_object_again_keeps_it() -> None:
    store = ObjectStore()
    store.put(_mr("a", "x"))
    collector = Collector(store)
    collector.request(_key("a"), GARBAGE)
    collector.applied(_key("a"))
    assert collector.collect(0) == [] and _key("a") in store


@pytest.mark.parametrize(
    ("ref", "found"),
    [
        ("thing/a", _key("a")),
        ("Thing/ns/a", _key("a")),
        ("Thing.example.m.crossplane.io/a", _key("a")),
        ("Thing/other/a", "no such object"),
        ("Thing", "expected KIND/NAME"),
        ("Usage/a", "no such object"),
        ("Twin/t", "is ambiguous: Twin.example.m.crossplane.io/ns/t, Twin.other.io/ns/t"),
    ],
)
def test_resolving_what_to_delete(ref: str, found: Key | str) -> None:
    store = ObjectStore()
    for obj in (_mr("a"), {**_mr("t"), "kind": "Twin"}, {**_mr("t"), "kind": "Twin"}):
        store.put(obj)
    store.put({**_mr("t"), "kind": "Twin", "apiVersion": "other.io/v1"})
    if isinstance(found, Key):
        assert resolve(store, ref) == found
    else:
        with pytest.raises(ValueError, match=found):
            resolve(store, ref)


def test_deleting_what_does_not_exist_is_an_error() -> None:
    plane = ControlPlane([_mr("a")], simulate=False)
    with pytest.raises(KeyError, match="Thing ns/b"):
        plane.delete(_key("b"))


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "clusters"


def test_render_delete_prints_the_waves_and_fails_on_a_deletion_that_cannot_finish() -> None:
    from modelplane.cli.main import cli

    runner = CliRunner()
    ok = runner.invoke(
        cli,
        [
            "render",
            str(FIXTURE),
            "-o",
            "yaml",
            "--delete",
            "EKSCluster/us-east",
            "--delete",
            "ServingStack/modelplane-system/us-east",
        ],
    )
    assert ok.exit_code == 0, ok.output
    head = ok.output.split("\n---", 1)[0].splitlines()
    assert head[0] == "# deletion wave 1 (at once):"
    assert "#   EKSCluster (infrastructure.modelplane.ai): modelplane-system/us-east" in head
    stuck = runner.invoke(
        cli, ["render", str(FIXTURE), "-o", "yaml", "--delete", "EKSCluster/us-east"]
    )
    assert stuck.exit_code == 1
    assert "the deletion cannot finish" in stuck.output
    assert "NodeGroup modelplane-system/us-east-system cannot be deleted" in stuck.output
    unknown = runner.invoke(cli, ["render", str(FIXTURE), "--delete", "Nope/x"])
    assert unknown.exit_code == 2 and "'Nope/x': no such object" in unknown.output
