"""ServingStack composer: pinned Releases the Helm values oracle accepts, Gateway, storage."""

from __future__ import annotations

from typing import Any

import pytest
from oracles import conformance_module

from modelplane.api.serving_stack import read_serving_stack
from modelplane.compose.clusters.serving_stack import compose
from modelplane.compose.types import ComposeInput, ComposeResult

TOLERATE_GPU = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _stack(**spec: Any) -> dict[str, Any]:
    body = {"clusterName": "us-east", "providerConfigName": "modelplane-us-east", **spec}
    return {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "us-east", "namespace": "modelplane-system"},
        "spec": body,
    }


def _compose(composite: dict[str, Any], observed: dict[str, Any] | None = None) -> ComposeResult:
    return compose(ComposeInput(composite, observed or {}))


def _cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    (cond,) = [x for x in res.conditions if x.type == type_]
    return cond.status, str(cond.reason), cond.message


def test_the_dra_driver_release_written_by_hand() -> None:
    res = _compose(_stack(cloud="GKE"))
    assert res.desired["release-nvidia-dra-driver"].resource == {
        "apiVersion": "helm.m.crossplane.io/v1beta1",
        "kind": "Release",
        "metadata": {
            "name": "us-east-nvidia-dra-driver",
            "namespace": "modelplane-system",
            "labels": {
                "modelplane.ai/cluster": "us-east",
                "modelplane.ai/component": "nvidia-dra-driver",
                "app.kubernetes.io/managed-by": "modelplane",
            },
        },
        "spec": {
            "forProvider": {
                "chart": {
                    "name": "nvidia-dra-driver-gpu",
                    "repository": "https://helm.ngc.nvidia.com/nvidia",
                    "version": "25.12.0",
                },
                "namespace": "nvidia-dra-driver-gpu",
                "values": {
                    "gpuResourcesEnabledOverride": True,
                    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
                    "kubeletPlugin": {"tolerations": TOLERATE_GPU},
                    "nvidiaDriverRoot": "/home/kubernetes/bin/nvidia",
                },
            },
            "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "modelplane-us-east"},
        },
    }


def _releases(res: ComposeResult) -> dict[str, dict[str, Any]]:
    return {k: d.resource for k, d in res.desired.items() if d.resource["kind"] == "Release"}


def test_default_charts_and_versions() -> None:
    charts = {
        r["spec"]["forProvider"]["chart"]["name"]: r["spec"]["forProvider"]["chart"]["version"]
        for r in _releases(_compose(_stack())).values()
    }
    # What every cluster's workloads may need: GPUs, LeaderWorkerSets, the
    # Gateway and its InferencePool support (Envoy AI Gateway), cert-manager
    # (the Gateway's certificates); nothing for KServe or a GPU scheduler.
    assert charts == {
        "node-feature-discovery": "0.19.0",
        "nvidia-dra-driver-gpu": "25.12.0",
        "lws": "0.10.0",
        "gateway-helm": "v1.9.0",
        "ai-gateway-crds-helm": "v1.1.0",
        "ai-gateway-helm": "v1.1.0",
        "cert-manager": "v1.21.1",
    }


def test_kai_is_installed_only_when_asked_and_versions_are_overridable() -> None:
    res = _compose(_stack(gpuScheduler="KAI", charts={"kaiScheduler": "v0.13.0"}))
    kai = _releases(res)["release-kai-scheduler"]["spec"]["forProvider"]["chart"]
    assert (kai["name"], kai["version"]) == ("kai-scheduler", "v0.13.0")
    assert "release-kai-scheduler" not in _releases(_compose(_stack()))


def test_volcano_and_kueue_are_installed_like_kai() -> None:
    res = _compose(_stack(gpuScheduler="Volcano", kueue=True))
    charts = {
        k: (r["spec"]["forProvider"]["chart"]["name"], r["spec"]["forProvider"]["chart"]["version"])
        for k, r in _releases(res).items()
    }
    assert charts["release-volcano"] == ("volcano", "1.15.1")
    assert charts["release-kueue"] == ("kueue", "0.19.2")
    assert "release-kai-scheduler" not in charts
    volcano = _releases(res)["release-volcano"]["spec"]["forProvider"]
    assert volcano["chart"]["repository"] == "https://volcano-sh.github.io/helm-charts"
    assert volcano["namespace"] == "volcano-system"
    # Everything ready and programmed: nothing is left unsupported.
    observed = {k: {**d.resource, **_ready()} for k, d in res.desired.items()}
    programmed = {"status": {"conditions": [{"type": "Programmed", "status": "True"}]}}
    observed["gateway"]["status"] = {"atProvider": {"manifest": programmed}, **_ready()["status"]}
    again = _compose(_stack(gpuScheduler="Volcano", kueue=True), observed)
    assert _cond(again, "ServingStackReady")[:2] == ("True", "Ready")
    assert not again.events


def test_kserve_installs_its_three_charts_beside_cert_manager() -> None:
    releases = _releases(_compose(_stack(kserve=True)))
    want = {
        "release-kserve-llmisvc-crd": ("kserve-llmisvc-crd", "kserve", None),
        "release-kserve-llmisvc": (
            "kserve-llmisvc-resources",
            "kserve",
            # The stack owns the InferencePool CRD, so KServe must not bring its own.
            {"kserve": {"llmisvc": {"createGIECRDs": False}}},
        ),
        "release-kserve-runtime-configs": (
            "kserve-runtime-configs",
            "kserve",
            {"kserve": {"llmisvcConfigs": {"enabled": True}}},
        ),
        "release-cert-manager": ("cert-manager", "cert-manager", {"crds": {"enabled": True}}),
    }
    for key, (chart, namespace, values) in want.items():
        fp = releases[key]["spec"]["forProvider"]
        assert (fp["chart"]["name"], fp["namespace"], fp.get("values")) == (
            chart,
            namespace,
            values,
        )
    assert releases["release-cert-manager"]["metadata"]["name"] == "us-east-cert-manager"
    usages = {
        (u["spec"]["by"]["resourceRef"]["name"], u["spec"]["of"]["resourceRef"]["name"])
        for u in (d.resource for d in _compose(_stack(kserve=True)).desired.values())
        if u["kind"] == "Usage"
    }
    # KServe's Certificates go before cert-manager.
    assert ("us-east-kserve-llmisvc", "us-east-cert-manager") in usages
    plain = _releases(_compose(_stack()))
    assert not [k for k in plain if "kserve" in k]


def test_envoy_gateway_hands_inference_pools_to_the_ai_gateway_extension() -> None:
    releases = _releases(_compose(_stack()))
    config = releases["release-envoy-gateway"]["spec"]["forProvider"]["values"]["config"]
    manager = config["envoyGateway"]["extensionManager"]
    assert manager["backendResources"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
    ]
    assert manager["service"]["fqdn"] == {
        "hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
        "port": 1063,
    }
    ai = releases["release-envoy-ai-gateway"]["spec"]["forProvider"]
    assert ai["namespace"] == "envoy-ai-gateway-system"


def test_the_inference_pool_crd_is_installed_and_left_behind() -> None:
    obj = _compose(_stack()).desired["inference-pool-crd"].resource
    crd = obj["spec"]["forProvider"]["manifest"]
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "inferencepools.inference.networking.k8s.io"
    assert crd["metadata"]["annotations"]["inference.networking.k8s.io/bundle-version"] == "v1.6.0"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]
    assert "Delete" not in obj["spec"]["managementPolicies"]


STACKS = [
    pytest.param(_stack(cloud="EKS", gpuScheduler="KAI"), id="eks-kai"),
    pytest.param(_stack(gpuScheduler="Volcano", kserve=True), id="volcano-kserve"),
    pytest.param(_stack(kueue=True), id="kueue"),
    pytest.param(_stack(cloud="GKE"), id="gke"),
    pytest.param(_stack(cloud="Existing"), id="existing"),
    pytest.param(
        _stack(present=["CertManager", "NodeFeatureDiscovery", "EnvoyGateway"], kserve=True),
        id="brownfield",
    ),
]


@pytest.mark.parametrize("composite", STACKS)
def test_every_release_passes_the_helm_values_oracle(composite: dict[str, Any]) -> None:
    helmvalues = conformance_module("helmvalues")
    releases = _releases(_compose(composite))
    assert releases, "no Release composed: nothing checked"
    for key, release in releases.items():
        assert [str(i) for i in helmvalues.check_release(release)] == [], key


@pytest.mark.parametrize("composite", STACKS)
def test_everything_composed_passes_the_oracles(composite: dict[str, Any], oracle: Any) -> None:
    desired_state = _compose(composite).desired
    assert desired_state, "nothing composed: nothing checked"
    for key, desired in desired_state.items():
        assert [str(i) for i in oracle.validate(desired.resource)] == [], key


def _storage_classes(res: ComposeResult) -> dict[str, dict[str, Any]]:
    out = {}
    for d in res.desired.values():
        manifest = d.resource["spec"].get("forProvider", {}).get("manifest", {})
        if manifest.get("kind") == "StorageClass":
            out[manifest["metadata"]["name"]] = manifest
    return out


ALL_DRIVERS = ["SharedFilesystem", "ObjectStorageMount", "BlockDevice"]


def test_storage_classes_map_to_each_clouds_drivers() -> None:
    eks = _storage_classes(
        _compose(
            _stack(cloud="EKS", storage={"csiDrivers": ALL_DRIVERS, "sharedFilesystemId": "fs-1"})
        )
    )
    assert {n: s["provisioner"] for n, s in eks.items()} == {
        "modelplane-shared": "efs.csi.aws.com",
        "modelplane-object": "s3.csi.aws.com",
        "modelplane-block": "ebs.csi.aws.com",
    }
    assert eks["modelplane-shared"]["parameters"]["fileSystemId"] == "fs-1"
    gke = _storage_classes(
        _compose(_stack(cloud="GKE", storage={"csiDrivers": ALL_DRIVERS, "network": "net-1"}))
    )
    assert {n: s["provisioner"] for n, s in gke.items()} == {
        "modelplane-shared": "filestore.csi.storage.gke.io",
        "modelplane-object": "gcsfuse.csi.storage.gke.io",
        "modelplane-block": "pd.csi.storage.gke.io",
    }
    assert gke["modelplane-shared"]["parameters"]["network"] == "net-1"


def test_a_shared_filesystem_waits_for_its_file_system_id() -> None:
    res = _compose(_stack(cloud="EKS", storage={"csiDrivers": ["SharedFilesystem"]}))
    assert _storage_classes(res) == {}
    assert any(e.reason == "StorageClassPending" and "EFS" in e.message for e in res.events)


def test_releases_go_before_the_node_pools_they_run_on() -> None:
    pools = [
        {
            "apiVersion": "eks.aws.m.upbound.io/v1beta1",
            "kind": "NodeGroup",
            "name": "gpu",
            "gpu": True,
        },
        {"apiVersion": "eks.aws.m.upbound.io/v1beta1", "kind": "NodeGroup", "name": "sys"},
    ]
    res = _compose(_stack(cloud="EKS", nodePools=pools))
    pairs = {
        (u["spec"]["by"]["resourceRef"]["name"], u["spec"]["of"]["resourceRef"]["name"])
        for u in (d.resource for d in res.desired.values())
        if u["kind"] == "Usage"
    }
    assert ("us-east-nvidia-dra-driver", "gpu") in pairs
    assert ("us-east-node-feature-discovery", "gpu") in pairs
    assert ("us-east-leaderworkerset", "gpu") not in pairs
    for release in ("leaderworkerset", "envoy-gateway", "nvidia-dra-driver"):
        assert (f"us-east-{release}", "sys") in pairs
    assert ("us-east-gateway", "us-east-envoy-gateway") in pairs


def _ready() -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_stack_ready_names_the_release_not_ready_then_the_gateway_address() -> None:
    composite = _stack()
    first = _compose(composite)
    observed = {k: {**d.resource, **_ready()} for k, d in first.desired.items()}
    observed["release-leaderworkerset"] = first.desired["release-leaderworkerset"].resource
    res = _compose(composite, observed)
    status, reason, message = _cond(res, "ServingStackReady")
    assert (status, reason) == ("False", "ReleaseNotReady")
    assert "leaderworkerset (lws 0.10.0)" in message and "envoy" not in message
    assert read_serving_stack({"status": res.status}).not_ready == ["leaderworkerset"]
    assert res.ready == "False"

    observed["release-leaderworkerset"] = {**observed["release-leaderworkerset"], **_ready()}
    gateway = {
        "status": {
            "addresses": [{"type": "IPAddress", "value": "203.0.113.7"}],
            "conditions": [{"type": "Programmed", "status": "True"}],
        }
    }
    observed["gateway"] = {
        **observed["gateway"],
        "status": {"atProvider": {"manifest": gateway}, **_ready()["status"]},
    }
    res = _compose(composite, observed)
    assert _cond(res, "ServingStackReady")[:2] == ("True", "Ready")
    assert res.status["gatewayAddress"] == "203.0.113.7"
    assert res.ready == "True"


def test_the_gateway_class_is_watched_and_ready_once_its_controller_accepts_it() -> None:
    # Its status is read: unwatched, provider-kubernetes would show the class as
    # it first observed it (`Pending`) until its next poll, ten minutes later.
    first = _compose(_stack())
    obj = first.desired["gateway-class"].resource
    assert obj["spec"]["watch"] is True
    assert obj["spec"]["readiness"]["policy"] == "DeriveFromCelQuery"
    assert "'Accepted'" in obj["spec"]["readiness"]["celQuery"]

    def observed_class(status: str, reason: str) -> dict[str, Any]:
        accepted = {"type": "Accepted", "status": status, "reason": reason}
        manifest = {"status": {"conditions": [accepted]}}
        return {**obj, "status": {"atProvider": {"manifest": manifest}}}

    pending = _compose(_stack(), {"gateway-class": observed_class("Unknown", "Pending")})
    assert pending.desired["gateway-class"].ready == "False"
    accepted = _compose(_stack(), {"gateway-class": observed_class("True", "Accepted")})
    assert accepted.desired["gateway-class"].ready == "True"


def test_an_invalid_spec_holds() -> None:
    res = _compose(_stack(cloud="Azure"))
    status, reason, message = _cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert "spec.cloud" in message


@pytest.mark.parametrize(
    "gateway_status",
    [
        {"atProvider": None},  # before the provider first observes the Gateway
        {"atProvider": {"manifest": None}},
        {"atProvider": {"manifest": {"status": None}}},
        {"atProvider": {"manifest": {"status": {"addresses": None}}}},
        {"atProvider": {"manifest": {"status": {"addresses": "203.0.113.7"}}}},
    ],
)
def test_a_gateway_without_a_readable_address_reports_none_and_does_not_crash(
    gateway_status: dict[str, Any],
) -> None:
    # Regression: `atProvider: null` raised AttributeError in _gateway_address,
    # which the servicer turns into a fatal result for the whole stack.
    composite = _stack()
    first = _compose(composite)
    observed = {k: {**d.resource, **_ready()} for k, d in first.desired.items()}
    observed["gateway"] = {
        **observed["gateway"],
        "status": {**gateway_status, **_ready()["status"]},
    }
    res = _compose(composite, observed)
    assert "gatewayAddress" not in res.status
    assert _cond(res, "ServingStackReady")[:2] == ("True", "Ready")
