"""ServingStack: what its spec alone decides is remembered on the decoded spec, and answers
exactly as a call over a plain (never remembered) spec does."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.frozen import FrozenDict, frozen, thaw
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


def _stack(spec: dict[str, Any], namespace: str = "modelplane-system") -> dict[str, Any]:
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "east", "namespace": namespace},
        "spec": {"clusterName": "east", "providerConfigName": "modelplane-east", **spec},
    }


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


def _call(composite: dict[str, Any], replicas: list[str], image: str = "img:1") -> tuple[Any, ...]:
    required = {"replicas": [_replica(ns) for ns in replicas]}
    return _answer(compose(ComposeInput(composite, {}, required, image=image)))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_remembered_stack_answers_as_a_plain_one(name: str) -> None:
    decoded = frozen(_stack(SPECS[name]))
    # Calls over the same decoded spec, with what else they see changing between them.
    for replicas, image in (
        (["a"], "img:1"),
        (["a", "b"], "img:1"),
        ([], "img:2"),
        (["b"], "img:1"),
    ):
        plain = _call(_stack(SPECS[name]), replicas, image)
        assert _call(decoded, replicas, image) == plain
    # The same spec object under another namespace: its own answer, not the memo's.
    moved = FrozenDict({**frozen(_stack({}, "other")), "spec": decoded["spec"]})
    assert moved["spec"] is decoded["spec"]
    assert _call(moved, ["a"]) == _call(_stack(SPECS[name], "other"), ["a"])
    assert _call(moved, ["a"]) != _call(decoded, ["a"])


def test_the_spec_is_read_once_per_namespace_and_image() -> None:
    decoded = frozen(_stack(SPECS["storage"]))
    first = compose(ComposeInput(decoded, {}, {"replicas": []}, image="img:1"))
    again = compose(ComposeInput(decoded, {}, {"replicas": []}, image="img:1"))
    other = compose(ComposeInput(decoded, {}, {"replicas": []}, image="img:2"))
    key = "gateway"
    assert again.desired[key].resource is first.desired[key].resource
    assert other.desired[key].resource is not first.desired[key].resource
    assert other.desired[key].resource == first.desired[key].resource
