"""The KServe serving backend: hand-written expected manifests, the same devices as
native, the model it serves, and its readiness."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from replicas import placed_by, ready_caches

from modelplane.compose.replica.backends import kserve
from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput, ComposeResult

HERE = Path(__file__).resolve().parent
CASES = sorted((HERE / "expected" / "model_replica_kserve").glob("*.yaml"))
PROVIDER_KUBERNETES = "kubernetes.m.crossplane.io/v1alpha1"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def _compose(replica: dict[str, Any], cluster: dict[str, Any]) -> ComposeResult:
    required = {"cluster": [cluster], "deployment": placed_by(replica), **ready_caches(replica)}
    return compose(ComposeInput(composite=replica, required=required))


def _manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    found: dict[str, Any] = res.desired[key].resource["spec"]["forProvider"]["manifest"]
    return found


def _readiness(want: str, policy: dict[str, str]) -> None:
    if want in ("Ready", "Accepted"):
        assert policy["policy"] == "DeriveFromCelQuery"
        probe = "'Ready'" if want == "Ready" else "object.status.parents"
        assert probe in policy["celQuery"]
    else:
        assert policy == {"policy": want}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_expected_manifests(path: Path) -> None:
    case = _load(path)
    res = _compose(case["replica"], case["cluster"])
    assert res.fatal is None
    assert sorted(res.desired) == sorted([*case["objects"], *case.get("usages", {})])
    for key, want in case.get("usages", {}).items():
        assert res.desired[key].resource == want, key
    for key, want in case["objects"].items():
        obj = res.desired[key].resource
        assert (obj["apiVersion"], obj["kind"]) == (PROVIDER_KUBERNETES, "Object"), key
        assert obj["metadata"]["name"] == want["name"], key
        assert obj["spec"]["providerConfigRef"]["name"] == case["providerConfig"], key
        _readiness(want["readiness"], obj["spec"]["readiness"])
        assert ("managementPolicies" in obj["spec"]) == bool(want.get("keepOnDelete")), key
        assert _manifest(res, key) == want["manifest"], key
    assert res.status == case["status"]
    assert sorted({e.reason for e in res.events}) == sorted(case.get("warnings", []))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_conformance(path: Path, oracle: Any) -> None:
    case = _load(path)
    res = _compose(case["replica"], case["cluster"])
    assert res.desired, "nothing composed: nothing checked"
    for key, desired in res.desired.items():
        issues = oracle.validate(desired.resource)
        assert not issues, f"{key}: {[(i.path, i.message) for i in issues]}"


def test_the_oracle_rejects_a_broken_llm_inference_service(oracle: Any) -> None:
    case = _load(CASES[0])
    res = _compose(case["replica"], case["cluster"])
    obj = copy.deepcopy(res.desired["llminferenceservice"].resource)
    obj["spec"]["forProvider"]["manifest"]["spec"]["parallelism"]["tensr"] = 2
    assert oracle.validate(obj)


def _native(replica: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(replica)
    del out["spec"]["backend"]
    return out


def _pods_kserve(spec: dict[str, Any]) -> list[dict[str, Any]]:
    sections = [spec, *([spec["prefill"]] if "prefill" in spec else [])]
    return [s[part] for s in sections for part in ("template", "worker") if part in s]


def _pods_native(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest["kind"] == "Deployment":
        return [manifest["spec"]["template"]["spec"]]
    lwt = manifest["spec"]["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]


def _placement(pod: dict[str, Any]) -> tuple[Any, ...]:
    engine = next(x for x in pod["containers"] if x["name"] in ("engine", "main"))
    return (
        pod["nodeSelector"],
        pod["resourceClaims"],
        engine["resources"]["claims"],
        pod["tolerations"],
        pod.get("schedulerName"),
        pod.get("priorityClassName"),
    )


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_native_and_kserve_claim_the_same_devices_on_the_same_pool(path: Path) -> None:
    case = _load(path)
    on_kserve = _compose(case["replica"], case["cluster"])
    on_native = _compose(_native(case["replica"]), case["cluster"])
    claims = {k for k in on_kserve.desired if "-claims-" in k}
    assert claims and claims == {k for k in on_native.desired if "-claims-" in k}
    for key in claims:
        # The same ResourceClaimTemplate: name, requests, device classes, CEL selectors.
        assert _manifest(on_kserve, key) == _manifest(on_native, key), key
        assert on_kserve.desired[key].resource == on_native.desired[key].resource, key
    native_pods = [
        pod
        for k in on_native.desired
        if k.endswith(("-deployment", "-leaderworkerset"))
        for pod in _pods_native(_manifest(on_native, k))
    ]
    kserve_pods = _pods_kserve(_manifest(on_kserve, "llminferenceservice")["spec"])
    assert sorted(map(repr, map(_placement, kserve_pods))) == sorted(
        map(repr, map(_placement, native_pods))
    )
    group = "podgroup" in on_native.desired
    assert group == ("podgroup" in on_kserve.desired)
    if group:
        assert _manifest(on_kserve, "podgroup") == _manifest(on_native, "podgroup")


@pytest.mark.parametrize(
    ("model", "uri"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "hf://meta-llama/Llama-3.1-8B-Instruct"),
        ("hf://Qwen/Qwen3-8B", "hf://Qwen/Qwen3-8B"),
        ("s3://models/llama/8b", "s3://models/llama/8b"),
        ("pvc://weights/llama", "pvc://weights/llama"),
        ("/mnt/models", None),  # a local path is no URI KServe can fetch
        ("http://example.com/model", None),
    ],
)
def test_the_model_uri(model: str, uri: str | None) -> None:
    case = _load(HERE / "expected" / "model_replica_kserve" / "kserve-single-gpu.yaml")
    replica = copy.deepcopy(case["replica"])
    del replica["spec"]["caches"]
    replica["spec"]["workers"]["template"]["spec"]["containers"][0]["args"] = ["--model", model]
    from modelplane.api.model_replica import ModelReplicaSpec

    spec = ModelReplicaSpec.model_validate(replica["spec"])
    assert kserve.model_uri(spec) == uri
    res = _compose(replica, case["cluster"])
    valid = {c.type: c for c in res.conditions}["Valid"]
    if uri is None:
        assert (valid.status, valid.reason) == ("False", "InvalidSpec")
        assert "spec.workers.template" in valid.message and "KServe" in valid.message
        assert not res.desired
    else:
        assert valid.status == "True"
        assert _manifest(res, "llminferenceservice")["spec"]["model"] == {"uri": uri}


def test_ready_only_when_the_llm_inference_service_reports_ready() -> None:
    case = _load(CASES[0])
    first = _compose(case["replica"], case["cluster"])
    observed = {k: copy.deepcopy(d.resource) for k, d in first.desired.items()}
    for obj in observed.values():
        obj["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    svc = observed["llminferenceservice"]
    wrapped = copy.deepcopy(svc["spec"]["forProvider"]["manifest"])
    wrapped["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    svc["status"]["atProvider"] = {"manifest": wrapped}
    inp = ComposeInput(composite=case["replica"], observed=observed)
    inp.required["cluster"] = [case["cluster"]]
    res = compose(inp)
    assert res.desired["llminferenceservice"].ready == "False"
    assert res.ready == "False"
    wrapped["status"]["conditions"][0]["status"] = "True"
    res = compose(inp)
    assert res.desired["llminferenceservice"].ready == "True"
    assert res.ready == "True"
