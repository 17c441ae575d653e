"""ModelReplica composer against hand-written expected manifests.

Each file under `expected/model_replica/` holds a ModelReplica, its
InferenceCluster and, written by hand from SPEC §4–5 (not generated from the
code), every Object the cluster must receive: its name, readiness and the exact
manifest it wraps. The conformance oracle then checks every composed manifest
against the Kubernetes 1.34 and third-party schemas when it is available.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from replicas import placed_by

from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput, ComposeResult

HERE = Path(__file__).resolve().parent
CASES = sorted((HERE / "expected" / "model_replica").glob("*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def _compose(case: dict[str, Any]) -> ComposeResult:
    required = {"cluster": [case["cluster"]], "deployment": placed_by(case["replica"])}
    if "cache" in case:
        required["model-cache"] = [case["cache"]]
    return compose(ComposeInput(composite=case["replica"], required=required))


def _check_readiness(readiness: dict[str, Any], want: str, key: str) -> None:
    if want == "RolledOut":
        # A Deployment: every replica updated and available (SPEC §5 readiness).
        assert readiness["policy"] == "DeriveFromCelQuery", key
        for field in ("updatedReplicas", "availableReplicas", "observedGeneration"):
            assert f"object.status.{field}" in readiness["celQuery"], key
    elif want == "Available":
        assert readiness["policy"] == "DeriveFromCelQuery", key
        assert "Available" in readiness["celQuery"], key
    elif want == "Accepted":
        assert readiness["policy"] == "DeriveFromCelQuery", key
        assert "object.status.parents" in readiness["celQuery"], key
        assert "'Accepted'" in readiness["celQuery"], key
    elif want == "DynamoGraphReady":
        # A DynamoGraphDeployment: its Ready condition, and its state once reported.
        assert readiness["policy"] == "DeriveFromCelQuery", key
        assert "x.type == 'Ready' && x.status == 'True'" in readiness["celQuery"], key
        assert "object.status.state == 'successful'" in readiness["celQuery"], key
    else:
        assert readiness == {"policy": want}, key


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_expected_manifests(path: Path) -> None:
    case = _load(path)
    res = _compose(case)
    assert res.fatal is None
    assert sorted(res.desired) == sorted([*case["objects"], *case.get("usages", {})])
    for key, want in case.get("usages", {}).items():
        assert res.desired[key].resource == want, key
    replica_ns = case["replica"]["metadata"]["namespace"]
    for key, want in case["objects"].items():
        obj = res.desired[key].resource
        assert obj["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1", key
        assert obj["kind"] == "Object", key
        assert obj["metadata"]["name"] == want["name"], key
        assert len(obj["metadata"]["name"]) <= 63, key
        assert obj["metadata"]["namespace"] == replica_ns, key
        # What provider-kubernetes would otherwise write first, each in an update.
        assert obj["metadata"]["annotations"] == {"crossplane.io/external-name": want["name"]}, key
        assert obj["metadata"]["finalizers"] == ["finalizer.managedresource.crossplane.io"], key
        assert obj["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": case["providerConfig"],
        }, key
        _check_readiness(obj["spec"]["readiness"], want["readiness"], key)
        if want.get("keepOnDelete"):
            assert "Delete" not in obj["spec"]["managementPolicies"], key
        else:
            assert "managementPolicies" not in obj["spec"], key
        assert obj["spec"]["forProvider"]["manifest"] == want["manifest"], key
    for key, want in case["objects"].items():
        if want["manifest"]["kind"] != "ResourceClaimTemplate":
            continue
        # Its spec is immutable, so a digest of the spec names the template,
        # its Object and its composed-resource key; the pods name the template.
        canonical = json.dumps(want["manifest"]["spec"], sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:8]
        template = want["manifest"]["metadata"]["name"]
        assert key.endswith(f"-claims-{digest}"), key
        assert want["name"].endswith(f"-claims-{digest}"), key
        assert template.endswith(f"-{digest}"), key
        role = key.removesuffix(f"-claims-{digest}")
        [workload] = [
            w
            for k, w in case["objects"].items()
            if (
                k.startswith(f"{role}-")
                and (w["manifest"]["kind"] in ("Deployment", "LeaderWorkerSet"))
            )
            or w["manifest"]["kind"] == "DynamoGraphDeployment"
        ]
        pods = _pod_specs(workload["manifest"], role)
        assert pods, key
        for pod in pods:
            claims = [x["resourceClaimTemplateName"] for x in pod["resourceClaims"]]
            assert claims == [template], key
    assert res.status == case["status"]
    assert sorted({e.reason for e in res.events}) == sorted(case.get("warnings", []))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_nothing_is_ready_before_it_is_observed(path: Path) -> None:
    res = _compose(_load(path))
    assert res.ready == "False"
    assert {d.ready for d in res.desired.values()} == {"False"}
    workload = {c.type: c for c in res.conditions}["WorkloadReady"]
    assert (workload.status, workload.reason) == ("False", "WorkloadNotAvailable")


# Dynamo's worker service of each role (written by hand from the Dynamo backend's mapping).
DYNAMO_WORKERS = {"unified": "Worker", "prefill": "PrefillWorker", "decode": "DecodeWorker"}


def _pod_specs(manifest: dict[str, Any], role: str | None = None) -> list[dict[str, Any]]:
    spec = manifest.get("spec") or {}
    if manifest["kind"] == "Deployment":
        return [spec["template"]["spec"]]
    if manifest["kind"] == "LeaderWorkerSet":
        lwt = spec["leaderWorkerTemplate"]
        return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]
    if manifest["kind"] == "DynamoGraphDeployment":
        # The pod Dynamo's operator builds from a worker service: its extraPodSpec, with
        # mainContainer (the engine) as the main container.
        services = spec["services"]
        names = [DYNAMO_WORKERS[role]] if role else [n for n in services if n != "Frontend"]
        pods = []
        for name in names:
            extra = dict(services[name]["extraPodSpec"])
            main = {"name": "engine", **extra.pop("mainContainer")}
            pods.append({**extra, "containers": [main, *extra.get("containers", [])]})
        return pods
    return []


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_no_pod_template_carries_a_gpu_resource(path: Path) -> None:
    res = _compose(_load(path))
    # Serving workloads carry their role; the P/D endpoint picker claims no GPU.
    manifests = [
        d.resource["spec"]["forProvider"]["manifest"]
        for d in res.desired.values()
        if d.resource["kind"] == "Object"
    ]
    pods = [
        pod
        for m in manifests
        if "modelplane.ai/role" in m["metadata"].get("labels", {})
        or m["kind"] == "DynamoGraphDeployment"
        for pod in _pod_specs(m)
    ]
    assert pods
    for pod in pods:
        for ctr in pod.get("containers", []) + pod.get("initContainers", []):
            for part in ("limits", "requests"):
                assert "nvidia.com/gpu" not in (ctr.get("resources") or {}).get(part, {})
        # ... and every serving pod binds its GPUs through its DRA claim instead.
        assert [x["name"] for x in pod["resourceClaims"]] == ["devices"]
        engine = next(x for x in pod["containers"] if x["name"] == "engine")
        assert engine["resources"]["claims"] == [{"name": "devices"}]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_conformance(path: Path, oracle: Any) -> None:
    res = _compose(_load(path))
    assert res.desired, "nothing composed: nothing checked"
    for key, desired in res.desired.items():
        issues = oracle.validate(desired.resource)
        assert not issues, f"{key}: {[(i.path, i.message) for i in issues]}"


def test_the_oracle_rejects_a_broken_manifest(oracle: Any) -> None:
    # Guards the conformance test above against passing vacuously.
    res = _compose(_load(CASES[0]))
    obj = next(d.resource for k, d in res.desired.items() if k.endswith("-service"))
    obj["spec"]["forProvider"]["manifest"]["spec"]["ports"][0]["prot"] = "TCP"
    assert oracle.validate(obj)
