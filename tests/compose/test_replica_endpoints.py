"""A replica's ModelEndpoint exists exactly while the replica can serve."""

from __future__ import annotations

import pytest

from modelplane.compose.deployments.endpoints import ReplicaView, endpoint_for

URL = "http://203.0.113.10/team-a/qwen/0"


@pytest.mark.parametrize(
    ("view", "has_endpoint"),
    [
        (ReplicaView("qwen-1a2b3c", False, None, None), False),  # placed, nothing yet
        (ReplicaView("qwen-1a2b3c", False, URL, "203.0.113.10"), False),  # warming up
        (ReplicaView("qwen-1a2b3c", True, URL, "203.0.113.10"), True),  # Ready
        (ReplicaView("qwen-1a2b3c", True, URL, None), False),  # cluster lost its gateway
        (ReplicaView("qwen-1a2b3c", True, None, "203.0.113.10"), False),  # no route yet
        (ReplicaView("qwen-1a2b3c", True, "http://bad host/x", "h"), False),  # unusable URL
        (ReplicaView("qwen-1a2b3c", False, URL, "203.0.113.10"), False),  # draining
    ],
)
def test_endpoint_only_while_ready_and_reachable(view: ReplicaView, has_endpoint: bool) -> None:
    got = endpoint_for(view, "qwen", "team-a", {"model": "qwen3-8b"})
    assert (got is not None) == has_endpoint


def test_endpoint_manifest_carries_template_labels_and_the_deployment() -> None:
    got = endpoint_for(
        ReplicaView("qwen-1a2b3c", True, URL, "203.0.113.10"),
        "qwen",
        "team-a",
        {"model": "qwen3-8b", "track": "stable"},
    )
    assert got == {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelEndpoint",
        "metadata": {
            "name": "qwen-1a2b3c",
            "namespace": "team-a",
            "labels": {
                "model": "qwen3-8b",
                "track": "stable",
                "app.kubernetes.io/managed-by": "modelplane",
                "modelplane.ai/deployment": "qwen",
            },
            "finalizers": ["composite.apiextensions.crossplane.io"],
        },
        "spec": {"url": URL},
    }
