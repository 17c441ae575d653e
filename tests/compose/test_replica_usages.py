"""The Usages a replica's workload Objects get: only the releases the wrapped kind needs."""

from __future__ import annotations

from typing import Any

import pytest
from replicas import cluster, replica, run

from modelplane.compose.clusters.infra import releases_for, workload_usages

STACK_READY = {
    "conditions": [
        {"type": "ServingStackReady", "status": "True", "reason": "Available"},
    ]
}


def _workload_kinds(res: Any) -> dict[str, str]:
    """Object name → wrapped kind, for every desired Object wrapping a Deployment or LWS."""
    out = {}
    for d in res.desired.values():
        r = d.resource
        if r["kind"] != "Object":
            continue
        kind = r["spec"]["forProvider"]["manifest"]["kind"]
        if kind in ("Deployment", "LeaderWorkerSet"):
            out[r["metadata"]["name"]] = kind
    return out


def _usages(res: Any) -> dict[str, str]:
    """Usage name → the release it keeps, for every desired Usage of a Release."""
    return {
        d.resource["metadata"]["name"]: d.resource["spec"]["of"]["resourceRef"]["name"]
        for d in res.desired.values()
        if d.resource["kind"] == "Usage" and d.resource["spec"]["of"]["kind"] == "Release"
    }


def _single_node() -> dict[str, Any]:
    return replica()


def _multi_node() -> dict[str, Any]:
    return replica(
        workers={
            "count": 1,
            "topology": {"tensor": 1, "pipeline": 2},
            "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}},
        }
    )


@pytest.mark.parametrize(
    ("xr", "kind", "releases"),
    [
        (_single_node(), "Deployment", ["east-envoy-gateway", "east-nvidia-dra-driver"]),
        (
            _multi_node(),
            "LeaderWorkerSet",
            ["east-envoy-gateway", "east-leaderworkerset", "east-nvidia-dra-driver"],
        ),
    ],
    ids=["deployment", "leaderworkerset"],
)
def test_only_a_leaderworkerset_uses_the_leaderworkerset_release(
    xr: dict[str, Any], kind: str, releases: list[str]
) -> None:
    res = run(xr, cluster(**STACK_READY))
    kinds = _workload_kinds(res)
    assert list(kinds.values()) == [kind]
    [workload] = kinds
    usages = _usages(res)
    assert usages, "the replica composes no Usage of a Release"
    assert all(name.startswith(f"{workload}-uses-") for name in usages)
    assert sorted(usages.values()) == releases


def test_releases_by_wrapped_kind() -> None:
    assert releases_for("Deployment") == ("nvidia-dra-driver", "envoy-gateway")
    assert releases_for("LeaderWorkerSet") == (
        "nvidia-dra-driver",
        "leaderworkerset",
        "envoy-gateway",
    )
    both = workload_usages("ns", "east", {"a-deployment": "Deployment", "b-lws": "LeaderWorkerSet"})
    assert sorted(both) == [
        "usage-a-deployment-envoy-gateway",
        "usage-a-deployment-nvidia-dra-driver",
        "usage-b-lws-envoy-gateway",
        "usage-b-lws-leaderworkerset",
        "usage-b-lws-nvidia-dra-driver",
    ]
