"""A replica's ModelCache: the claim it mounts, readiness that waits for the copy, the Usage."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from replicas import NS, cluster, cond, manifest, placed_by, replica

from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput, ComposeResult


def cache(*copies: dict[str, Any], backend: str = "PVC") -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "weights", "namespace": NS},
        "spec": {"storage": {"backend": backend}},
        "status": {"clusters": list(copies)},
    }


READY = {"cluster": "east", "phase": "Ready", "claimName": "weights", "resolvedDigest": "abc"}


def run(
    caches: list[dict[str, Any]] | None,
    observed: dict[str, Any] | None = None,
    template: dict[str, Any] | None = None,
) -> ComposeResult:
    xr = replica(caches=[{"name": "weights"}])
    if template is not None:
        xr["spec"]["workers"]["template"] = template
    required: dict[str, Any] = {"cluster": [cluster()], "deployment": placed_by(xr)}
    if caches is not None:
        required["model-cache"] = caches
    return compose(ComposeInput(composite=xr, observed=observed or {}, required=required))


def _engine(res: ComposeResult) -> dict[str, Any]:
    pod = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    found: dict[str, Any] = next(c for c in pod["containers"] if c["name"] == "engine")
    return found


def test_the_replica_waits_for_its_cache_to_be_fetched() -> None:
    res = run(None)
    assert res.requirements["model-cache"].kind == "ModelCache"
    assert res.requirements["model-cache"].match_name == "weights"
    assert res.requirements["model-cache"].namespace == NS
    assert res.desired == {} and res.ready == "False"


def test_a_ready_copy_is_mounted_read_only_with_scratch_and_a_usage() -> None:
    res = run([cache(READY)])
    assert cond(res, "CacheReady") == (
        "True",
        "Ready",
        "ModelCache 'weights' copy on cluster 'east' Ready (abc), claim 'weights'",
    )
    engine = _engine(res)
    assert engine["volumeMounts"] == [
        {"name": "model-cache", "mountPath": "/mnt/models", "readOnly": True, "subPath": "model"},
        {"name": "engine-scratch", "mountPath": "/var/cache/modelplane"},
    ]
    assert {e["name"]: e["value"] for e in engine["env"]}["HF_HOME"] == (
        "/var/cache/modelplane/huggingface"
    )
    usage = res.desired["unified-deployment-cache-usage"].resource
    assert usage["spec"]["of"]["resourceRef"] == {"name": "weights-east-pvc"}
    assert usage["spec"]["by"]["resourceRef"] == {
        "name": res.desired["unified-deployment"].resource["metadata"]["name"]
    }
    # The claim's deletion, denied while the replica mounts it, is re-issued as
    # soon as the replica's workload is gone (not at the garbage collector's
    # back-off, which reaches minutes).
    assert usage["spec"]["replayDeletion"] is True
    assert usage["spec"]["reason"] == "a replica's serving workload mounts the cache's claim"


def test_an_existing_pvc_is_mounted_at_its_root_under_its_own_claim_name() -> None:
    copy = {"cluster": "east", "phase": "Ready", "claimName": "team-weights"}
    res = run([cache(copy, backend="ExistingPVC")])
    pod = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    assert pod["volumes"][0] == {
        "name": "model-cache",
        "persistentVolumeClaim": {"claimName": "team-weights", "readOnly": True},
    }
    assert "subPath" not in _engine(res)["volumeMounts"][0]


def test_the_users_own_cache_variables_are_kept() -> None:
    template = {
        "spec": {
            "containers": [
                {
                    "name": "engine",
                    "image": "vllm/vllm-openai:v0.9.0",
                    "env": [{"name": "HF_HOME", "value": "/data/hf"}],
                }
            ]
        }
    }
    env = _engine(run([cache(READY)], template=template))["env"]
    assert [e["value"] for e in env if e["name"] == "HF_HOME"] == ["/data/hf"]


@pytest.mark.parametrize(
    ("caches", "reason", "message"),
    [
        (
            [cache({"cluster": "east", "phase": "Hydrating", "claimName": "weights"})],
            "CopyNotReady",
            "ModelCache 'weights' copy on cluster 'east' is Hydrating: the replica starts "
            "serving once it is Ready",
        ),
        (
            [cache({"cluster": "west", "phase": "Ready"})],
            "NotOnCluster",
            "ModelCache 'weights' stages no copy on cluster 'east'",
        ),
        (
            [],
            "CacheNotFound",
            "spec.caches: ModelCache 'weights' not found: the replica waits for it",
        ),
    ],
)
def test_no_workload_starts_before_the_copy_is_ready(
    caches: list[dict[str, Any]], reason: str, message: str
) -> None:
    res = run(caches)
    assert cond(res, "CacheReady") == ("False", reason, message)
    assert "unified-deployment" not in res.desired  # nothing starts from a half-staged folder
    assert "unified-deployment-cache-usage" not in res.desired
    assert {"namespace", "unified-service", "route"} <= set(res.desired)
    assert res.ready == "False"
    assert cond(res, "WorkloadReady")[:2] == ("False", "WorkloadNotAvailable")


def test_a_serving_workload_is_kept_while_its_copy_re_stages() -> None:
    ready = run([cache(READY)])
    observed = {k: copy.deepcopy(d.resource) for k, d in ready.desired.items()}
    res = run([cache({**READY, "phase": "Hydrating"})], observed)
    assert "unified-deployment" in res.desired  # never torn down
    assert "unified-deployment-cache-usage" in res.desired
    assert res.ready == "False" and cond(res, "CacheReady")[1] == "CopyNotReady"
