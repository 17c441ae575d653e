"""`modelplane render` over examples/caches: simulated hydration, per-cluster copies, Secrets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from modelplane.api.model_cache import read_model_cache
from modelplane.local import ControlPlane, RenderResult, load_paths
from modelplane.local.tree import render_tree

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "caches"


def _render(path: Path, *, simulate: bool = True) -> RenderResult:
    return ControlPlane(load_paths([str(path)]), simulate=simulate).run()


def _cache(result: RenderResult, name: str) -> dict[str, Any]:
    (obj,) = [o for o in result.store.objects() if o["kind"] == "ModelCache"]
    assert obj["metadata"]["name"] == name
    return obj


def _condition(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    (c,) = [x for x in obj["status"]["conditions"] if x["type"] == type_]
    return c["status"], c["reason"], c.get("message", "")


def _wrapped_kinds(result: RenderResult) -> list[str]:
    return sorted(
        o["spec"]["forProvider"]["manifest"]["kind"]
        for o in result.store.objects()
        if o["kind"] == "Object" and o["metadata"]["name"].startswith("qwen-0-5b-")
    )


def test_hf_cache_is_staged_on_both_clusters_with_a_visibly_simulated_digest() -> None:
    result = _render(EXAMPLES / "huggingface")
    obj = _cache(result, "qwen-0-5b")
    seen = read_model_cache(obj)
    assert [c.cluster for c in seen.copies] == ["eu-west-h100", "us-east-l4"]
    for copy in seen.copies:
        assert copy.ready and copy.claim_name == "qwen-0-5b"
        assert (copy.resolved_digest or "").startswith("simulated:")
        assert copy.bytes_staged is not None and copy.bytes_staged > 1_000_000_000
    assert obj["status"]["ready"] == "2/2"
    assert _condition(obj, "ArtifactReady") == ("True", "Ready", "staged on 2/2 cluster(s)")
    # Once Ready, the credentials copy is gone: per cluster the namespace, claim,
    # result, account, role, binding and Job remain.
    assert _wrapped_kinds(result) == sorted(
        2 * ["Namespace", "PersistentVolumeClaim", "ConfigMap", "ServiceAccount"]
        + 2 * ["Role", "RoleBinding", "Job"]
    )
    # Deterministic: a second render measures the same simulated digest.
    again = read_model_cache(_cache(_render(EXAMPLES / "huggingface"), "qwen-0-5b"))
    assert again.copies == seen.copies


def test_the_token_never_leaves_its_secret() -> None:
    result = _render(EXAMPLES / "huggingface")
    others = [o for o in result.store.objects() if o["kind"] != "Secret"]
    assert "hf_placeholder_replace_me" not in json.dumps(others)


def test_without_the_token_secret_the_cache_says_secret_not_found(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "huggingface", tmp_path / "hf")
    docs = list(yaml.safe_load_all((tmp_path / "hf" / "cache.yaml").read_text()))
    kept = [d for d in docs if d and d["kind"] != "Secret"]
    (tmp_path / "hf" / "cache.yaml").write_text(yaml.safe_dump_all(kept))
    result = _render(tmp_path / "hf")
    obj = _cache(result, "qwen-0-5b")
    status, reason, message = _condition(obj, "ArtifactReady")
    assert (status, reason) == ("False", "SecretNotFound")
    assert (
        "cluster eu-west-h100: credentials Secret 'hf-token': cannot resolve references: "
        in message
    )
    assert "Secret ml-team/hf-token: not found" in message
    assert obj["status"]["ready"] == "0/2"


def test_existing_pvc_runs_no_job_and_covers_only_selected_clusters() -> None:
    result = _render(EXAMPLES / "existing-pvc")
    obj = _cache(result, "llama-70b")
    assert [(c.cluster, c.phase, c.claim_name) for c in read_model_cache(obj).copies] == [
        ("eu-west-h100", "Ready", "llama-70b-weights")
    ]
    jobs = [
        o
        for o in result.store.objects()
        if o["kind"] == "Object" and o["spec"]["forProvider"]["manifest"]["kind"] == "Job"
    ]
    assert jobs == []


def test_without_simulation_every_copy_waits() -> None:
    obj = _cache(_render(EXAMPLES / "s3-compatible", simulate=False), "mistral-7b")
    assert [(c.cluster, c.phase) for c in read_model_cache(obj).copies] == [
        ("us-east-l4", "Pending")
    ]
    assert _condition(obj, "ArtifactReady")[:2] == ("False", "Hydrating")


def test_the_tree_shows_each_clusters_copy() -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render_tree(_render(EXAMPLES / "s3-compatible")))
    text = console.export_text()
    assert "Copies" in text
    assert "us-east-l4: Ready (claim mistral-7b, digest simulated:" in text


def test_the_deployment_goes_where_the_copy_is_already_ready() -> None:
    # eu-west-h100 would win on equal load (first by name); us-east-l4's copy is
    # Ready (snapshot.yaml) while eu-west-h100's only starts hydrating.
    result = _render(EXAMPLES / "prefer-ready")
    (dep,) = [o for o in result.store.objects() if o["kind"] == "ModelDeployment"]
    assert [p["cluster"] for p in dep["status"]["placements"]] == ["us-east-l4"]
    (rep,) = [o for o in result.store.objects() if o["kind"] == "ModelReplica"]
    assert _condition(rep, "CacheReady")[:2] == ("True", "Ready")
    # The cache's Usage (the serving stack's Usages name Releases and node pools).
    (usage,) = [
        o
        for o in result.store.objects()
        if o["kind"] == "Usage" and o["spec"]["of"]["resourceRef"]["name"].endswith("-pvc")
    ]
    assert usage["spec"]["of"]["resourceRef"] == {"name": "qwen-0-5b-us-east-l4-pvc"}
    workload = next(
        o
        for o in result.store.objects()
        if o["kind"] == "Object" and o["spec"]["forProvider"]["manifest"]["kind"] == "Deployment"
    )
    pod = workload["spec"]["forProvider"]["manifest"]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["persistentVolumeClaim"] == {
        "claimName": "qwen-0-5b",
        "readOnly": True,
    }
    (engine,) = pod["containers"]
    assert "--model=/mnt/models" in engine["args"]
