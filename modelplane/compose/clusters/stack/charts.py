"""The Helm charts a serving stack installs: where from, into which namespace, with what values.

Every chart is pinned to a version the Helm values oracle knows
(../shared/conformance/CHARTS.md) and its values are checked against the
chart's stored values.yaml and schema. Which charts a stack installs
(`charts`) follows from its spec: what every cluster needs, and what only
some of their workloads need (KServe, a GPU scheduler, Kueue).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds import cloud_named
from modelplane.api.serving_stack import COMPONENT_RELEASES, ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.types import Resource

GPU_TOLERATION = {"key": c.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Chart:
    """A chart the stack installs: where from, into which namespace."""

    key: str
    name: str
    repository: str
    namespace: str
    on_gpu_nodes: bool = False


ENVOY_OCI = "oci://docker.io/envoyproxy"
KSERVE_OCI = "oci://ghcr.io/kserve/charts"

NFD = Chart(
    "node-feature-discovery",
    "node-feature-discovery",
    "https://kubernetes-sigs.github.io/node-feature-discovery/charts",
    "node-feature-discovery",
    on_gpu_nodes=True,
)
DRA_DRIVER = Chart(
    "nvidia-dra-driver",
    "nvidia-dra-driver-gpu",
    "https://helm.ngc.nvidia.com/nvidia",
    "nvidia-dra-driver-gpu",
    on_gpu_nodes=True,
)
LWS = Chart("leaderworkerset", "lws", "oci://registry.k8s.io/lws/charts", "lws-system")
ENVOY_GATEWAY = Chart("envoy-gateway", "gateway-helm", ENVOY_OCI, "envoy-gateway-system")
# The gateway's InferencePool support: Envoy Gateway hands InferencePool
# backends to Envoy AI Gateway's extension server (below).
AI_GATEWAY_CRDS = Chart(
    "envoy-ai-gateway-crds", "ai-gateway-crds-helm", ENVOY_OCI, "envoy-ai-gateway-system"
)
AI_GATEWAY = Chart("envoy-ai-gateway", "ai-gateway-helm", ENVOY_OCI, "envoy-ai-gateway-system")
# The stable name another part of the stack (the workload Gateway's
# certificates) relies on: key `release-cert-manager`, namespace cert-manager.
CERT_MANAGER = Chart(
    "cert-manager", "cert-manager", "oci://quay.io/jetstack/charts", "cert-manager"
)
KAI = Chart("kai-scheduler", "kai-scheduler", "oci://ghcr.io/nvidia/kai-scheduler", "kai-scheduler")
VOLCANO = Chart("volcano", "volcano", "https://volcano-sh.github.io/helm-charts", "volcano-system")
KUEUE = Chart("kueue", "kueue", "oci://registry.k8s.io/kueue/charts", "kueue-system")
KSERVE_CRD = Chart("kserve-llmisvc-crd", "kserve-llmisvc-crd", KSERVE_OCI, "kserve")
KSERVE_CONTROLLER = Chart("kserve-llmisvc", "kserve-llmisvc-resources", KSERVE_OCI, "kserve")
KSERVE_RUNTIMES = Chart("kserve-runtime-configs", "kserve-runtime-configs", KSERVE_OCI, "kserve")

# Where Envoy AI Gateway's controller serves Envoy Gateway's extension hooks
# (ai-gateway-helm's `ai-gateway-controller` Service, its extension server port).
AI_GATEWAY_EXTENSION_HOST = "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local"
AI_GATEWAY_EXTENSION_PORT = 1063


def release_key(chart: Chart) -> str:
    """The composition resource name of a chart's Release."""
    return f"release-{chart.key}"


def installs(spec: ServingStackSpec, chart: Chart) -> bool:
    """Whether the stack installs `chart`'s release: not when its component is present."""
    return not any(COMPONENT_RELEASES[name] == chart.key for name in spec.present or ())


def charts(spec: ServingStackSpec) -> list[tuple[Chart, str]]:
    """The charts the stack installs and their pinned versions, in install order; none of
    a component the cluster already runs."""
    v = spec.charts
    out = [
        (chart, version)
        for chart, version in (
            (NFD, v.node_feature_discovery),
            (DRA_DRIVER, v.nvidia_dra_driver),
            (LWS, v.leader_worker_set),
            (ENVOY_GATEWAY, v.envoy_gateway),
            (CERT_MANAGER, v.cert_manager),
        )
        if installs(spec, chart)
    ]
    if spec.inference_pool:
        out += [(AI_GATEWAY_CRDS, v.envoy_ai_gateway), (AI_GATEWAY, v.envoy_ai_gateway)]
    if spec.kserve:
        out += [(KSERVE_CRD, v.kserve), (KSERVE_CONTROLLER, v.kserve), (KSERVE_RUNTIMES, v.kserve)]
    if spec.gpu_scheduler == "KAI":
        out.append((KAI, v.kai_scheduler))
    if spec.gpu_scheduler == "Volcano":
        out.append((VOLCANO, v.volcano))
    if spec.kueue:
        out.append((KUEUE, v.kueue))
    return out


def _dra_values(spec: ServingStackSpec) -> dict[str, Any]:
    values: dict[str, Any] = {
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": {"tolerations": [dict(GPU_TOLERATION)]},
    }
    # Where the cloud's node image puts the NVIDIA driver, when not at `/`.
    cloud = cloud_named(spec.cloud)
    root = cloud.driver_root if cloud is not None else None
    if root:
        values["nvidiaDriverRoot"] = root
    return values


def _envoy_gateway_values() -> dict[str, Any]:
    """Envoy Gateway's configuration for InferencePool backends.

    As Envoy AI Gateway's install guide configures it (its
    `manifests/envoy-gateway-values.yaml` plus the inference-pool addon):
    Envoy Gateway passes routes, clusters and InferencePool backendRefs to the
    AI Gateway controller's extension server, which programs the endpoint
    picker's ext_proc in front of the pool.
    """
    every = {"includeAll": True}
    return {
        "config": {
            "envoyGateway": {
                "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
                "extensionManager": {
                    "backendResources": [
                        {
                            "group": c.INFERENCE_GROUP,
                            "kind": "InferencePool",
                            "version": "v1",
                        }
                    ],
                    "hooks": {
                        "xdsTranslator": {
                            "translation": {
                                "listener": every,
                                "route": every,
                                "cluster": every,
                                "secret": every,
                            },
                            "post": ["Translation", "Cluster", "Route"],
                        }
                    },
                    "service": {
                        "fqdn": {
                            "hostname": AI_GATEWAY_EXTENSION_HOST,
                            "port": AI_GATEWAY_EXTENSION_PORT,
                        }
                    },
                },
            }
        }
    }


def _values(chart: Chart, spec: ServingStackSpec) -> dict[str, Any]:
    fixed: dict[str, dict[str, Any]] = {
        NFD.key: {"worker": {"tolerations": [dict(GPU_TOLERATION)]}},
        # The AI Gateway controller lets Envoy Gateway's service account read pools.
        AI_GATEWAY.key: {"envoyGateway": {"namespace": ENVOY_GATEWAY.namespace}},
        CERT_MANAGER.key: {"crds": {"enabled": True}},
        # The stack installs the InferencePool CRD itself (one owner, the
        # version the gateway support was checked with).
        KSERVE_CONTROLLER.key: {"kserve": {"llmisvc": {"createGIECRDs": False}}},
        # The LLMInferenceServiceConfig presets KServe merges every service into.
        KSERVE_RUNTIMES.key: {"kserve": {"llmisvcConfigs": {"enabled": True}}},
    }
    if chart is DRA_DRIVER:
        return _dra_values(spec)
    if chart is ENVOY_GATEWAY:
        return _envoy_gateway_values() if spec.inference_pool else {}
    return fixed.get(chart.key, {})


def release(chart: Chart, version: str, spec: ServingStackSpec, namespace: str) -> Resource:
    """One provider-helm Release of the stack, pinned to `version`."""
    for_provider: dict[str, Any] = {
        "chart": {"name": chart.name, "repository": chart.repository, "version": version},
        "namespace": chart.namespace,
    }
    values = _values(chart, spec)
    if values:
        for_provider["values"] = values
    return {
        "apiVersion": c.PROVIDER_HELM_API_VERSION,
        "kind": "Release",
        "metadata": {
            "name": resource_name(spec.cluster_name, chart.key),
            "namespace": namespace,
            "labels": labels(spec.cluster_name, chart.key),
        },
        "spec": {
            "forProvider": for_provider,
            "providerConfigRef": {
                "kind": "ClusterProviderConfig",
                "name": spec.provider_config_name,
            },
        },
    }
