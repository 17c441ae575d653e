"""Stamping and engine modules on their own: claim retirement and when Ray is used."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.model_replica import ReplicaRole
from modelplane.compose.replica.engines import ray
from modelplane.compose.replica.stamping import dra


def _workload(claim_template: str, updated: int, total: int) -> dict[str, Any]:
    pod = {
        "spec": {
            "resourceClaims": [{"name": "devices", "resourceClaimTemplateName": claim_template}]
        }
    }
    live = {
        "kind": "Deployment",
        "metadata": {"generation": 2},
        "spec": {"replicas": total, "template": pod},
        "status": {"observedGeneration": 2, "updatedReplicas": updated, "replicas": total},
    }
    return {"status": {"atProvider": {"manifest": live}}}


OBSERVED_CLAIMS = {
    "unified-claims": {},  # the key before templates carried a digest
    "unified-claims-0badc0de": {},  # the previous template
    "unified-claims-1234abcd": {},  # the current one (desired anyway)
    "prefill-claims-0badc0de": {},  # another role's
    "unified-claims-notahash": {},  # not a claims key of this composer
    "unified-service": {},
}


@pytest.mark.parametrize(
    ("updated", "expected"),
    [
        (1, ["unified-claims", "unified-claims-0badc0de"]),  # mid-rollout: keep the previous
        (2, []),  # every pod on the new template: let the previous go
    ],
)
def test_retiring_claims_are_the_previous_ones_until_the_pods_rolled(
    updated: int, expected: list[str]
) -> None:
    observed = {**OBSERVED_CLAIMS, "unified-deployment": _workload("r-1234abcd", updated, 2)}
    kept = dra.retiring_claims(
        observed, "unified", "unified-claims-1234abcd", "r-1234abcd", "unified-deployment"
    )
    assert kept == expected


def _role(image: str, **topology: int) -> tuple[ReplicaRole, dict[str, Any]]:
    engine = {"name": "engine", "image": image}
    role = ReplicaRole.model_validate(
        {
            "nodePoolName": "p",
            "workers": {"topology": topology, "template": {"spec": {"containers": [engine]}}},
        }
    )
    return role, engine


@pytest.mark.parametrize(
    ("image", "topology", "expected"),
    [
        ("vllm/vllm-openai:v0.9.0", {"pipeline": 2}, True),  # two nodes, pipeline parallel
        ("vllm/vllm-openai:v0.9.0", {"data": 2}, True),  # two nodes, data parallel
        ("vllm/vllm-openai:v0.9.0", {"tensor": 8}, False),  # one node
        # Pipeline parallel inside one node (dataLocal packs it): no Ray.
        ("vllm/vllm-openai:v0.9.0", {"pipeline": 2, "data": 2, "dataLocal": 4}, False),
        ("lmsysorg/sglang:v0.4.6", {"pipeline": 2}, False),  # not vLLM
    ],
)
def test_ray_only_for_vllm_parallel_over_several_nodes(
    image: str, topology: dict[str, int], expected: bool
) -> None:
    role, engine = _role(image, **topology)
    assert ray.needs_ray(role, engine) is expected
