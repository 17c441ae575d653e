"""Which kinds the embedded control plane accepts, and their scope.

A manifest is accepted when it is a Modelplane kind, a Kubernetes built-in, or
a kind Modelplane composes (provider-kubernetes, provider-helm, Crossplane,
and the in-cluster serving stack). Anything else is almost always a typo, so
the loader rejects it rather than silently carrying it along.
"""

from __future__ import annotations

from typing import Literal

from modelplane.api.clouds import CLOUDS

Scope = Literal["Namespaced", "Cluster"]

_N: Scope = "Namespaced"
_C: Scope = "Cluster"

# Built-in kinds by API group ("" is the core group), with their scope.
BUILTIN: dict[str, dict[str, Scope]] = {
    "": {
        "Namespace": _C,
        "Node": _C,
        "PersistentVolume": _C,
        "Secret": _N,
        "ConfigMap": _N,
        "Service": _N,
        "ServiceAccount": _N,
        "PersistentVolumeClaim": _N,
        "Pod": _N,
        "Endpoints": _N,
        "LimitRange": _N,
        "ResourceQuota": _N,
        "Event": _N,
    },
    "apps": {
        "Deployment": _N,
        "StatefulSet": _N,
        "DaemonSet": _N,
        "ReplicaSet": _N,
        "ControllerRevision": _N,
    },
    "batch": {"Job": _N, "CronJob": _N},
    "autoscaling": {"HorizontalPodAutoscaler": _N},
    "policy": {"PodDisruptionBudget": _N},
    "networking.k8s.io": {
        "Ingress": _N,
        "NetworkPolicy": _N,
        "IngressClass": _C,
    },
    "rbac.authorization.k8s.io": {
        "Role": _N,
        "RoleBinding": _N,
        "ClusterRole": _C,
        "ClusterRoleBinding": _C,
    },
    "storage.k8s.io": {
        "StorageClass": _C,
        "CSIDriver": _C,
        "CSINode": _C,
        "VolumeAttachment": _C,
    },
    "scheduling.k8s.io": {"PriorityClass": _C},
    "coordination.k8s.io": {"Lease": _N},
    "discovery.k8s.io": {"EndpointSlice": _N},
    "node.k8s.io": {"RuntimeClass": _C},
    "resource.k8s.io": {
        "DeviceClass": _C,
        "ResourceSlice": _C,
        "ResourceClaim": _N,
        "ResourceClaimTemplate": _N,
    },
    "apiextensions.k8s.io": {"CustomResourceDefinition": _C},
    "admissionregistration.k8s.io": {
        "ValidatingWebhookConfiguration": _C,
        "MutatingWebhookConfiguration": _C,
        "ValidatingAdmissionPolicy": _C,
        "ValidatingAdmissionPolicyBinding": _C,
    },
}

# Kinds Modelplane composes or that a control-plane snapshot carries.
COMPOSED: dict[str, dict[str, Scope]] = {
    "kubernetes.m.crossplane.io": {
        "Object": _N,
        "ProviderConfig": _N,
        "ClusterProviderConfig": _C,
        "ProviderConfigUsage": _N,
        "ClusterProviderConfigUsage": _C,
    },
    "kubernetes.crossplane.io": {
        "Object": _C,
        "ProviderConfig": _C,
        "ProviderConfigUsage": _C,
    },
    "helm.m.crossplane.io": {
        "Release": _N,
        "ProviderConfig": _N,
        "ClusterProviderConfig": _C,
        "ProviderConfigUsage": _N,
        "ClusterProviderConfigUsage": _C,
    },
    "helm.crossplane.io": {"Release": _C, "ProviderConfig": _C, "ProviderConfigUsage": _C},
    "apiextensions.crossplane.io": {
        "CompositeResourceDefinition": _C,
        "Composition": _C,
        "CompositionRevision": _C,
        "EnvironmentConfig": _C,
        "Usage": _C,
    },
    "protection.crossplane.io": {"Usage": _N, "ClusterUsage": _C},
    "pkg.crossplane.io": {
        "Provider": _C,
        "Function": _C,
        "Configuration": _C,
        "DeploymentRuntimeConfig": _C,
        "ImageConfig": _C,
    },
    # The serving stack inside workload clusters (normally wrapped in Objects).
    "leaderworkerset.x-k8s.io": {"LeaderWorkerSet": _N},
    "gateway.networking.k8s.io": {
        "Gateway": _N,
        "GatewayClass": _C,
        "HTTPRoute": _N,
        "ReferenceGrant": _N,
    },
    "inference.networking.k8s.io": {"InferencePool": _N},
    # Envoy Gateway on the control plane (InferenceGateway, ModelService).
    "gateway.envoyproxy.io": {
        "Backend": _N,
        "HTTPRouteFilter": _N,
        "EnvoyProxy": _N,
        "SecurityPolicy": _N,
        "BackendTrafficPolicy": _N,
        "ClientTrafficPolicy": _N,
    },
    "serving.kserve.io": {"LLMInferenceService": _N},
    "nvidia.com": {"DynamoGraphDeployment": _N},
    "cert-manager.io": {"Issuer": _N, "ClusterIssuer": _C, "Certificate": _N},
    "scheduling.run.ai": {"PodGroup": _N, "Queue": _C},
    "scheduling.volcano.sh": {"PodGroup": _N, "Queue": _C},
}

# Cloud managed resources (v2 namespaced groups) the provisioning composites
# compose, and each cloud provider's configs: from the cloud registry.
for _cloud in CLOUDS:
    COMPOSED.setdefault(_cloud.provider_group, {}).update(
        {"ProviderConfig": _N, "ClusterProviderConfig": _C}
    )
    for _group, _kinds in _cloud.render_kinds.items():
        COMPOSED.setdefault(_group, {}).update(dict.fromkeys(_kinds, _N))


def group_of(api_version: str) -> str:
    """The API group of an apiVersion ("" for the core group `v1`)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def known_scope(api_version: str, kind: str) -> Scope | None:
    """The scope of a built-in or composed kind, or None if the kind is not known."""
    group = group_of(api_version)
    for table in (BUILTIN, COMPOSED):
        scope = table.get(group, {}).get(kind)
        if scope is not None:
            return scope
    return None
