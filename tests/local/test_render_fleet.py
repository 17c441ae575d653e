"""Rendering a small hand-written fleet with the real composers, and provider simulation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource
from modelplane.local import ControlPlane, Key, load_paths

API = "modelplane.ai/v1alpha1"
PKUBE = "kubernetes.m.crossplane.io/v1alpha1"
TEST_API = "test.modelplane.ai/v1"

FLEET = """\
apiVersion: v1
kind: Namespace
metadata: {name: infra}
---
apiVersion: v1
kind: Secret
metadata: {name: east-kubeconfig, namespace: infra}
data: {kubeconfig: YQ==}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata: {name: l4}
spec:
  devices:
  - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata:
  name: east
  labels: {region: us-east-1}
spec:
  source: Existing
  existing:
    kubeconfigSecretRef: {namespace: infra, name: east-kubeconfig}
  pools:
  - {name: l4, className: l4, nodeCount: 3}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: broken}
spec:
  source: Existing
  existing:
    kubeconfigSecretRef: {namespace: infra, name: east-kubeconfig}
  pools:
  - {name: p, className: nope, nodeCount: 1}
"""


def conditions(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in obj["status"]["conditions"]]


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    return tmp_path


def test_fleet_renders_to_the_expected_fixed_point(fleet: Path) -> None:
    result = ControlPlane(load_paths([fleet])).run()
    # Round 1: classes, then clusters (which compose their provider configs);
    # round 2: clusters observe their provider config; round 3: no change.
    assert result.rounds == 3
    assert sorted(str(k) for k in result.store) == [
        "ClusterProviderConfig modelplane-broken",
        "ClusterProviderConfig modelplane-east",
        "InferenceClass l4",
        "InferenceCluster broken",
        "InferenceCluster east",
        "Namespace infra",
        "Secret infra/east-kubeconfig",
    ]
    klass = result.get(API, "InferenceClass", "l4")
    assert klass is not None
    assert klass["status"]["draDevices"] == 1
    assert conditions(klass) == [
        ("Valid", "True", "Valid"),
        ("Synced", "True", "ReconcileSuccess"),
        ("Ready", "True", "Available"),
    ]

    east = result.get(API, "InferenceCluster", "east")
    assert east is not None
    status = {k: v for k, v in east["status"].items() if k != "conditions"}
    assert status == {
        "providerConfigName": "modelplane-east",
        "gpuPools": [
            {
                "name": "l4",
                "className": "l4",
                "nodes": 3,
                "devices": [
                    {
                        "name": "gpu",
                        "claim": "DRA",
                        "driver": "gpu.nvidia.com",
                        "deviceClassName": "gpu.nvidia.com",
                        "count": 1,
                    }
                ],
            }
        ],
    }
    assert conditions(east) == [
        ("PoolsResolved", "True", "Resolved"),
        ("CredentialsResolved", "True", "Resolved"),
        ("Synced", "True", "ReconcileSuccess"),
        ("Ready", "True", "Available"),
    ]
    pc = result.get(PKUBE, "ClusterProviderConfig", "modelplane-east")
    assert pc is not None
    assert pc["spec"] == {
        "credentials": {
            "source": "Secret",
            "secretRef": {"namespace": "infra", "name": "east-kubeconfig", "key": "kubeconfig"},
        }
    }
    assert pc["metadata"]["labels"]["crossplane.io/composite"] == "east"
    assert pc["metadata"]["annotations"] == {
        "crossplane.io/composition-resource-name": "provider-config"
    }
    assert pc["metadata"]["ownerReferences"][0]["uid"] == east["metadata"]["uid"]
    assert east["spec"]["crossplane"] == {
        "resourceRefs": [
            {"apiVersion": PKUBE, "kind": "ClusterProviderConfig", "name": "modelplane-east"}
        ]
    }

    broken = result.get(API, "InferenceCluster", "broken")
    assert broken is not None
    # Published as unknown, not left out (issue 10): its replicas would be kept.
    assert [(p["name"], p["reason"], p["devices"]) for p in broken["status"]["gpuPools"]] == [
        ("p", "ClassNotFound", [])
    ]
    assert conditions(broken) == [
        ("PoolsResolved", "False", "ClassNotFound"),
        ("CredentialsResolved", "True", "Resolved"),
        ("Synced", "True", "ReconcileSuccess"),
        ("Ready", "False", "Creating"),
    ]
    assert [(e.type, e.reason, e.message) for e in result.events[Key.of(broken)]] == [
        (
            "Warning",
            "ClassNotFound",
            "spec.pools[0].className: InferenceClass 'nope' of pool 'p' not found",
        )
    ]


def test_render_is_reproducible_and_yaml_when_piped(fleet: Path) -> None:
    first = CliRunner().invoke(cli, ["render", str(fleet)])
    second = CliRunner().invoke(cli, ["render", str(fleet), "-o", "yaml"])
    assert first.exit_code == 0, first.output
    assert first.output == second.output
    docs = list(yaml.safe_load_all(first.output))
    assert len(docs) == 7
    east = next(d for d in docs if d["metadata"]["name"] == "east")
    # Deterministic metadata: the logical clock starts at 2026-01-01T00:00:00Z.
    assert east["metadata"]["creationTimestamp"].startswith("2026-01-01T00:00:")
    as_json = json.loads(CliRunner().invoke(cli, ["render", str(fleet), "-o", "json"]).output)
    assert as_json["kind"] == "List"
    assert as_json["items"] == docs


def test_tree_shows_conditions_pools_and_warnings(fleet: Path) -> None:
    res = CliRunner().invoke(cli, ["render", str(fleet), "-o", "tree"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = res.output
    assert "InferenceCluster east  Ready=True Synced=True" in out
    assert "InferenceCluster broken  Ready=False Synced=True" in out
    assert "l4: class l4, 3 nodes, per node 1× gpu (DRA, gpu.nvidia.com)" in out
    assert "ClusterProviderConfig modelplane-east ready" in out
    assert (
        "⚠ ClassNotFound: spec.pools[0].className: InferenceClass 'nope' of pool 'p' not found"
        in out
    )


def _wrapped(kind: str, api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": f"web-{kind.lower()}", "namespace": "apps"},
        "spec": spec,
    }


WORKLOADS = {
    "deployment": _wrapped("Deployment", "apps/v1", {"replicas": 3}),
    "lws": _wrapped("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", {"replicas": 2}),
    "pvc": _wrapped(
        "PersistentVolumeClaim",
        "v1",
        {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Gi"}}},
    ),
    "job": _wrapped("Job", "batch/v1", {"template": {"spec": {}}}),
    "config": _wrapped("ConfigMap", "v1", {}),
}


def workload(inp: ComposeInput) -> ComposeResult:
    """Wraps each WORKLOADS manifest in an Object bound for spec.providerConfig."""
    result = ComposeResult()
    for name, manifest in WORKLOADS.items():
        result.desired[name] = DesiredResource(
            {
                "apiVersion": PKUBE,
                "kind": "Object",
                "metadata": {"name": f"w-{name}"},
                "spec": {
                    "forProvider": {"manifest": manifest},
                    "providerConfigRef": {
                        "kind": "ClusterProviderConfig",
                        "name": inp.composite["spec"]["providerConfig"],
                    },
                },
            }
        )
    result.desired["release"] = DesiredResource(
        {
            "apiVersion": "helm.m.crossplane.io/v1beta1",
            "kind": "Release",
            "metadata": {"name": "lws"},
            "spec": {"forProvider": {"chart": {"name": "lws", "version": "0.7.0"}}},
        }
    )
    return result


def _workload_xr(provider_config: str) -> str:
    return (
        f"apiVersion: {TEST_API}\nkind: Workload\nmetadata: {{name: web, namespace: apps}}\n"
        f"spec: {{providerConfig: {provider_config}}}\n"
    )


def test_provider_simulation(install, fleet: Path) -> None:
    install({"Workload": workload})
    (fleet / "workload.yaml").write_text(_workload_xr("modelplane-east"))
    result = ControlPlane(load_paths([fleet])).run()

    def observed(name: str) -> dict[str, Any]:
        obj = result.get(PKUBE, "Object", f"w-{name}", "apps")
        assert obj is not None
        assert conditions(obj) == [
            ("Synced", "True", "ReconcileSuccess"),
            ("Ready", "True", "Available"),
        ]
        return obj["status"]["atProvider"]["manifest"]

    deployment = observed("deployment")
    assert deployment["spec"] == {"replicas": 3}
    assert {k: deployment["status"][k] for k in ("readyReplicas", "availableReplicas")} == {
        "readyReplicas": 3,
        "availableReplicas": 3,
    }
    assert [(c["type"], c["status"]) for c in deployment["status"]["conditions"]] == [
        ("Available", "True"),
        ("Progressing", "True"),
    ]
    lws = observed("lws")["status"]
    assert (lws["readyReplicas"], lws["conditions"][0]["type"]) == (2, "Available")
    assert observed("pvc")["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteMany"],
        "capacity": {"storage": "10Gi"},
    }
    job = observed("job")["status"]
    assert job["succeeded"] == 1
    assert ("Complete", "True") in [(c["type"], c["status"]) for c in job["conditions"]]
    assert "status" not in observed("config")
    release = result.get("helm.m.crossplane.io/v1beta1", "Release", "lws", "apps")
    assert release is not None
    assert release["status"]["atProvider"]["state"] == "deployed"
    assert conditions(release)[-1] == ("Ready", "True", "Available")
    web = result.get(TEST_API, "Workload", "web", "apps")
    assert web is not None
    assert conditions(web)[-1] == ("Ready", "True", "Available")


def test_object_without_provider_config_does_not_sync(install, fleet: Path) -> None:
    install({"Workload": workload})
    (fleet / "workload.yaml").write_text(_workload_xr("nowhere"))
    result = ControlPlane(load_paths([fleet])).run()
    obj = result.get(PKUBE, "Object", "w-deployment", "apps")
    assert obj is not None
    assert obj["status"]["conditions"][0]["reason"] == "ReconcileError"
    assert "ClusterProviderConfig nowhere: not found" in obj["status"]["conditions"][0]["message"]
    web = result.get(TEST_API, "Workload", "web", "apps")
    assert web is not None
    assert conditions(web)[-1] == ("Ready", "False", "Creating")
    assert web["status"]["conditions"][-1]["message"] == (
        "Unready resources: config, deployment, job, and 2 more"
    )


def test_no_simulate_leaves_provider_objects_unready(install, fleet: Path) -> None:
    install({"Workload": workload})
    (fleet / "workload.yaml").write_text(_workload_xr("modelplane-east"))
    result = ControlPlane(load_paths([fleet]), simulate=False).run()
    obj = result.get(PKUBE, "Object", "w-deployment", "apps")
    assert obj is not None and "status" not in obj
    web = result.get(TEST_API, "Workload", "web", "apps")
    assert web is not None
    assert web["status"]["conditions"][-1]["message"] == (
        "Unready resources: config, deployment, job, and 3 more"
    )


def test_output_dir_layout(install, fleet: Path, tmp_path: Path) -> None:
    install({"Workload": workload})
    (fleet / "workload.yaml").write_text(_workload_xr("modelplane-east"))
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["render", str(fleet), "--output-dir", str(out), "-o", "json"])
    assert res.exit_code == 0, res.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml"))
    assert "control-plane/inferencecluster/_cluster/east.yaml" in files
    assert "control-plane/secret/infra/east-kubeconfig.yaml" in files
    assert "control-plane/object/apps/w-deployment.yaml" in files
    assert "control-plane/workload/apps/web.yaml" in files
    # Wrapped manifests go to the InferenceCluster publishing the provider config.
    assert sorted(f for f in files if f.startswith("clusters/")) == [
        "clusters/east/configmap/apps/web-configmap.yaml",
        "clusters/east/deployment/apps/web-deployment.yaml",
        "clusters/east/job/apps/web-job.yaml",
        "clusters/east/leaderworkerset/apps/web-leaderworkerset.yaml",
        "clusters/east/persistentvolumeclaim/apps/web-persistentvolumeclaim.yaml",
    ]
    written = yaml.safe_load(
        (out / "clusters/east/deployment/apps/web-deployment.yaml").read_text()
    )
    assert written == WORKLOADS["deployment"]
