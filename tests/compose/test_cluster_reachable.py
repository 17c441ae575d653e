"""Reachable: a workload cluster whose API server stopped answering is not Ready (found on
the real stack: with wl-2's kube-apiserver stopped, its InferenceCluster stayed Ready)."""

from __future__ import annotations

import pytest

from modelplane.compose.clusters import sources
from modelplane.compose.clusters.inventory import INVENTORY_KEY
from modelplane.compose.types import ComposeInput, ComposeResult

REFUSED = (
    'cannot get object: Get "https://127.0.0.1:40123/api/v1/namespaces/modelplane-system/'
    'configmaps/modelplane-inventory": dial tcp 127.0.0.1:40123: connect: connection refused'
)


def _observed(status: str | None, message: str = "") -> dict:
    conditions = (
        [] if status is None else [{"type": "Synced", "status": status, "message": message}]
    )
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "status": {"conditions": conditions},
    }


@pytest.mark.parametrize(
    ("observed", "expected", "reason"),
    [
        (_observed("False", REFUSED), False, "APIServerUnreachable"),
        (
            _observed("False", "context deadline exceeded (Client.Timeout exceeded)"),
            False,
            "APIServerUnreachable",
        ),
        # The server answered; the object is what failed.
        (_observed("False", 'configmaps "modelplane-inventory" not found'), True, "Reachable"),
        (_observed("True"), True, "Reachable"),
        (_observed(None), True, "Reachable"),
    ],
)
def test_the_inventory_observation_says_whether_the_api_server_answers(
    observed: dict, expected: bool, reason: str
) -> None:
    result = ComposeResult()
    got = sources.reachability(ComposeInput({}, observed={INVENTORY_KEY: observed}), result)
    assert got is expected
    (cond,) = [x for x in result.conditions if x.type == "Reachable"]
    assert (cond.status, cond.reason) == ("True" if expected else "False", reason)
    assert bool(result.events) is (not expected)  # a warning event when it stops answering


def test_no_probe_no_condition() -> None:
    result = ComposeResult()
    assert sources.reachability(ComposeInput({}), result) is None
    assert not [x for x in result.conditions if x.type == "Reachable"]
