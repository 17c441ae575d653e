"""ServingStack: what its spec alone decides is remembered by the spec's content, and
answers exactly as a call that builds it afresh does."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.frozen import frozen, thaw
from modelplane.compose.clusters import serving_stack
from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput, ComposeResult

KAI = {"queues": [{"system": "KAI", "template": "{{ .Namespace }}"}], "gpuScheduler": "KAI"}
SPECS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "kai-queues": KAI,
    "storage-waiting": {"cloud": "EKS", "storage": {"csiDrivers": ["SharedFilesystem"]}},
    "storage": {"cloud": "EKS", "storage": {"csiDrivers": ["BlockDevice"]}},
    "kserve": {"kserve": True},
}


def _stack(spec: dict[str, Any], namespace: str = "modelplane-system", refs: int = 0) -> Any:
    body = {"clusterName": "east", "providerConfigName": "modelplane-east", **spec}
    # Crossplane's bookkeeping changes as composed resources appear: not the spec's content.
    body["crossplane"] = {"resourceRefs": [{"name": f"r{i}"} for i in range(refs)]}
    return frozen(
        {
            "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
            "kind": "ServingStack",
            "metadata": {"name": "east", "namespace": namespace},
            "spec": body,
        }
    )


def _replica(namespace: str) -> dict[str, Any]:
    return frozen(
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelReplica",
            "metadata": {"name": f"{namespace}-r", "namespace": namespace},
            "spec": {"deploymentName": "d", "clusterName": "east", "index": 0, "roles": []},
        }
    )


def _answer(res: ComposeResult) -> tuple[Any, ...]:
    """Everything a call answers, as plain values."""
    desired = {k: (thaw(d.resource), d.ready) for k, d in res.desired.items()}
    return (
        list(desired.items()),  # in order
        [(e.severity, e.reason, e.message) for e in res.events],
        [(x.type, x.status, x.reason, x.message) for x in res.conditions],
        thaw(dict(res.status)),
        res.ready,
        sorted(res.requirements),
    )


def _call(composite: Any, replicas: list[str], image: str = "img:1") -> ComposeResult:
    required = {"replicas": [_replica(ns) for ns in replicas]}
    return compose(ComposeInput(composite, {}, required, image=image))


def _afresh(composite: Any, replicas: list[str], image: str = "img:1") -> tuple[Any, ...]:
    serving_stack._FIXED.clear()
    return _answer(_call(composite, replicas, image))


CALLS = [(["a"], "img:1", 0), (["a", "b"], "img:1", 3), ([], "img:2", 3), (["b"], "img:1", 5)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_remembered_stack_answers_as_one_built_afresh(name: str) -> None:
    expected = [_afresh(_stack(SPECS[name], refs=refs), r, image) for r, image, refs in CALLS]
    serving_stack._FIXED.clear()
    for (replicas, image, refs), answer in zip(CALLS, expected, strict=True):
        assert _answer(_call(_stack(SPECS[name], refs=refs), replicas, image)) == answer
    # The same spec in another namespace: its own answer, not the one remembered.
    moved = _answer(_call(_stack(SPECS[name], "other"), ["a"]))
    assert moved == _afresh(_stack(SPECS[name], "other"), ["a"])
    assert moved != expected[0]


def test_the_spec_is_read_once_per_content_namespace_and_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[str] = []
    fixed = serving_stack._fixed

    def counted(spec: Any, namespace: str, image: str) -> Any:
        built.append(image)
        return fixed(spec, namespace, image)

    monkeypatch.setattr(serving_stack, "_fixed", counted)
    serving_stack._FIXED.clear()
    first = _call(_stack(SPECS["storage"]), [])
    again = _call(_stack(SPECS["storage"], refs=2), [])  # a new object, the same spec
    other = _call(_stack(SPECS["storage"]), [], image="img:2")
    _call(_stack({**SPECS["storage"], "cloud": "GKE"}), [])
    assert built == ["img:1", "img:2", "img:1"]
    # Each call has copies of its own: changing one changes no other call's.
    assert again.desired["gateway"].resource == first.desired["gateway"].resource
    assert again.desired["gateway"].resource is not first.desired["gateway"].resource
    first.desired["gateway"].resource["spec"].clear()
    assert _call(_stack(SPECS["storage"]), []).desired["gateway"].resource["spec"]
    assert other.desired["gateway"].resource["spec"]
