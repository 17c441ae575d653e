"""Shared constants: API groups, labels, ports, condition types and reasons.

Every layer reads these names from here so that one fact has one source.
"""

from __future__ import annotations

from typing import Final

from modelplane import __version__

# API groups and versions.
GROUP: Final = "modelplane.ai"
INFRA_GROUP: Final = "infrastructure.modelplane.ai"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
INFRA_API_VERSION: Final = f"{INFRA_GROUP}/{VERSION}"

# Labels Modelplane stamps on what it composes. The `modelplane.ai/` prefix is
# reserved: user labels carrying it are dropped from composed objects.
LABEL_PREFIX: Final = "modelplane.ai/"
LABEL_DEPLOYMENT: Final = "modelplane.ai/deployment"
LABEL_CLUSTER: Final = "modelplane.ai/cluster"
LABEL_REPLICA_INDEX: Final = "modelplane.ai/replica-index"
LABEL_REPLICA: Final = "modelplane.ai/replica"
LABEL_ROLE: Final = "modelplane.ai/role"
LABEL_POOL: Final = "modelplane.ai/pool"
LABEL_CACHE: Final = "modelplane.ai/cache"
# The replica template revision a ModelReplica runs (api/rollout.py).
LABEL_REVISION: Final = "modelplane.ai/revision"
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "modelplane"

# Crossplane's labels on composed resources and the annotation naming a
# composed resource within its composite.
XP_LABEL_COMPOSITE: Final = "crossplane.io/composite"
XP_LABEL_CLAIM_NAME: Final = "crossplane.io/claim-name"
XP_LABEL_CLAIM_NAMESPACE: Final = "crossplane.io/claim-namespace"
XP_ANNOTATION_RESOURCE_NAME: Final = "crossplane.io/composition-resource-name"

# Crossplane stamps a composite's name into the `crossplane.io/composite` label
# of everything it composes, so a composite's name must fit a label value.
MAX_COMPOSITE_NAME: Final = 63
COMPOSITE_NAME_MESSAGE: Final = (
    "metadata.name must be at most 63 characters: Crossplane labels every composed resource with it"
)

# Kind names, for code that reads or requires another kind's objects (the
# registry of kinds with their schemas is `api/kinds.py`).
KIND_INFERENCE_CLASS: Final = "InferenceClass"
KIND_INFERENCE_CLUSTER: Final = "InferenceCluster"
KIND_INFERENCE_GATEWAY: Final = "InferenceGateway"
KIND_MODEL_DEPLOYMENT: Final = "ModelDeployment"
KIND_MODEL_REPLICA: Final = "ModelReplica"
KIND_MODEL_CACHE: Final = "ModelCache"
KIND_MODEL_ENDPOINT: Final = "ModelEndpoint"
KIND_MODEL_SERVICE: Final = "ModelService"
KIND_FLEET_QUOTA: Final = "FleetQuota"
PRIORITY_CLASS_API_VERSION: Final = "scheduling.k8s.io/v1"
KIND_PRIORITY_CLASS: Final = "PriorityClass"

# Requirement names a composer and its kind's Composition share (`kinds.UpFront`).
REQUIREMENT_INFERENCE_CLUSTERS: Final = "inference-clusters"
REQUIREMENT_MODEL_REPLICAS: Final = "model-replicas"
REQUIREMENT_FLEET_QUOTAS: Final = "fleet-quotas"

# Composed-resource API versions.
PROVIDER_KUBERNETES_API_VERSION: Final = "kubernetes.m.crossplane.io/v1alpha1"
PROVIDER_HELM_API_VERSION: Final = "helm.m.crossplane.io/v1beta1"
# What provider-kubernetes writes onto every Object it reconciles: the external
# name (an Object's own name) and the managed resource finalizer.
EXTERNAL_NAME_ANNOTATION: Final = "crossplane.io/external-name"
PROVIDER_FINALIZER: Final = "finalizer.managedresource.crossplane.io"
# What Crossplane writes onto every composite resource it reconciles first.
COMPOSITE_FINALIZER: Final = "composite.apiextensions.crossplane.io"
# Workload-cluster API versions (what a replica's Objects wrap).
CORE_API_VERSION: Final = "v1"
APPS_API_VERSION: Final = "apps/v1"
DRA_API_VERSION: Final = "resource.k8s.io/v1"
LWS_API_VERSION: Final = "leaderworkerset.x-k8s.io/v1"
GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
GATEWAY_API_VERSION: Final = f"{GATEWAY_GROUP}/v1"
FUNCTION_NAME: Final = "function-modelplane"

# Serving defaults.
ENGINE_CONTAINER: Final = "engine"
ENGINE_PORT: Final = 8000
ENGINE_PORT_NAME: Final = "http"
GPU_TOLERATION_KEY: Final = "nvidia.com/gpu"
DEFAULT_GATEWAY_NAME: Final = "modelplane-inference"
DEFAULT_GATEWAY_NAMESPACE: Final = "modelplane-system"
DEFAULT_KUBECONFIG_KEY: Final = "kubeconfig"
# The Kubernetes version a provisioned cluster runs unless its InferenceCluster names
# one (EKS's version, GKE's minimum control-plane version, AKS's control plane and
# node pools): DRA's resource.k8s.io/v1, which every replica's claims use, is GA
# from 1.34, and a cloud's own default may be older.
DEFAULT_KUBERNETES_VERSION: Final = "1.36"

# Provisioned clusters and their serving stack (compose/clusters/: clouds/eks.py,
# clouds/gke.py, serving_stack.py). Internal composites live in the function's
# system namespace; the managed resources they compose land there too.
SYSTEM_NAMESPACE: Final = "modelplane-system"
LABEL_COMPONENT: Final = "modelplane.ai/component"
LABEL_SUBNET_TIER: Final = "modelplane.ai/subnet-tier"
LABEL_ZONE: Final = "modelplane.ai/zone"
KUBECONFIG_CONNECTION_KEY: Final = "kubeconfig"
GPU_TAINT_KEY: Final = "nvidia.com/gpu"
GPU_TAINT_VALUE: Final = "present"
GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
DEFAULT_CLOUD_PROVIDER_CONFIG: Final = "default"
CONDITION_CONTROL_PLANE_READY: Final = "ControlPlaneReady"
CONDITION_NODE_POOLS_READY: Final = "NodePoolsReady"
CONDITION_HARDWARE_DRIFT: Final = "HardwareDrift"
CONDITION_REACHABLE: Final = "Reachable"
# InferenceCluster: is the inventory agent's last report recent enough to act on?
CONDITION_INVENTORY_FRESH: Final = "InventoryFresh"

# Replica roles. A unified replica has one role; a disaggregated one has two.
ROLE_UNIFIED: Final = "unified"
ROLE_PREFILL: Final = "prefill"
ROLE_DECODE: Final = "decode"

# Condition types owned by the control plane itself (Crossplane sets these on
# every composite; a function may not set them).
CONDITION_READY: Final = "Ready"
CONDITION_SYNCED: Final = "Synced"

# Condition types Modelplane's composers set: one type per question.
CONDITION_VALID: Final = "Valid"
CONDITION_WITHIN_QUOTA: Final = "WithinQuota"  # FleetQuota: is every limit's use within it?
CONDITION_PREEMPTION: Final = "Preemption"  # ModelDeployment: preempting, or preempted?
CONDITION_POOLS_RESOLVED: Final = "PoolsResolved"
CONDITION_CREDENTIALS_RESOLVED: Final = "CredentialsResolved"
CONDITION_SERVING_STACK_READY: Final = "ServingStackReady"
CONDITION_INSUFFICIENT_GPU_CAPACITY: Final = "InsufficientGPUCapacity"
CONDITION_SCHEDULED: Final = "Scheduled"
CONDITION_REPLICAS_READY: Final = "ReplicasReady"
CONDITION_WORKLOAD_READY: Final = "WorkloadReady"
CONDITION_CLUSTER_RESOLVED: Final = "ClusterResolved"
CONDITION_ARTIFACT_READY: Final = "ArtifactReady"
# Does the autoscaler own the replica count, and what did it decide (spec.autoscaling)?
CONDITION_AUTOSCALING: Final = "Autoscaling"
# Does every replica run the spec's template revision (rollout Progressive)?
CONDITION_ROLLED_OUT: Final = "RolledOut"
# Can the composite read every observed and required object it depends on? Set
# False naming each unreadable object and field (kept as it is, never taken
# as absent); set True again only once it was False.
CONDITION_INPUTS_READABLE: Final = "InputsReadable"

# Reasons (CamelCase), shared where more than one composer uses them.
REASON_VALID: Final = "Valid"
REASON_INVALID_SPEC: Final = "InvalidSpec"
REASON_RESOLVED: Final = "Resolved"
REASON_CLASS_NOT_FOUND: Final = "ClassNotFound"
REASON_INVALID_CLASS: Final = "InvalidClass"
REASON_SECRET_NOT_FOUND: Final = "SecretNotFound"
REASON_SECRET_KEY_MISSING: Final = "SecretKeyMissing"
REASON_WAITING_FOR_RESOURCES: Final = "WaitingForResources"
REASON_UNSUPPORTED_SOURCE: Final = "UnsupportedSource"
REASON_CLUSTER_NOT_FOUND: Final = "ClusterNotFound"
REASON_CLUSTER_NOT_READY: Final = "ClusterNotReady"

# ModelDeployment scheduling (compose/deployments/model_deployment.py). Scheduled says
# whether every desired replica has a place; ReplicasReady whether they serve.
CONDITION_CACHE_RESOLVED: Final = "CacheResolved"
REASON_ALL_REPLICAS_SCHEDULED: Final = "AllReplicasScheduled"
REASON_PARTIAL: Final = "Partial"
REASON_INSUFFICIENT_CAPACITY: Final = "InsufficientCapacity"
REASON_INVALID_NODE_SELECTOR: Final = "InvalidNodeSelector"
REASON_NO_CLUSTERS: Final = "NoClusters"
REASON_WAITING_FOR_CACHE: Final = "WaitingForCache"
REASON_CACHE_NOT_FOUND: Final = "CacheNotFound"
REASON_ALL_REPLICAS_READY: Final = "AllReplicasReady"
REASON_REPLICAS_NOT_READY: Final = "ReplicasNotReady"
REASON_REPLICA_REPLACED: Final = "ReplicaReplaced"
REASON_REPLICA_WITHDRAWN: Final = "ReplicaWithdrawn"
# A replaced replica whose replacement serves starts leaving the routes, and is deleted.
REASON_REPLICA_LEAVING: Final = "ReplicaLeaving"
REASON_REPLICA_REMOVED: Final = "ReplicaRemoved"
REASON_INVALID_LABEL: Final = "InvalidLabel"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"

# Kubernetes resource.Quantity syntax, as the OpenAPI schema of a Quantity
# states it. Semantic parsing lives in `modelplane.dra.quantity`.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# A strict semantic version as DRA reads a version attribute (blang/semver `Parse`: no
# "v", no leading zeros, at most 20 digits a number). uint64 range and the rest of the
# semantics live in `modelplane.dra.semver`.
_SEMVER_NUMBER = r"(0|[1-9][0-9]{0,19})"
_SEMVER_PRERELEASE = r"(0|[1-9][0-9]{0,19}|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER_PATTERN: Final = (
    rf"^{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}\.{_SEMVER_NUMBER}"
    rf"(-{_SEMVER_PRERELEASE}(\.{_SEMVER_PRERELEASE})*)?"
    r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)
# RFC 1123 label (names of pools, devices, requests).
DNS_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# RFC 1123 subdomain (driver names, device class names, object names).
DNS_SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# A DRA attribute or capacity name: an optional DNS-subdomain domain and a
# C identifier of at most 32 characters.
_DOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME_PATTERN: Final = rf"^({_DOMAIN}/)?[A-Za-z_][A-Za-z0-9_]{{0,31}}$"

# ModelReplica composition (compose/replica/).
REASON_AVAILABLE: Final = "Available"
REASON_WORKLOAD_NOT_AVAILABLE: Final = "WorkloadNotAvailable"
REASON_INVALID_SCHEDULING_TEMPLATE: Final = "InvalidSchedulingTemplate"
REASON_GPU_LIMIT_IGNORED: Final = "GPUResourceLimitIgnored"
REASON_PROVIDER_CONFIG_MISSING: Final = "ProviderConfigMissing"
CONDITION_ROUTE_ACCEPTED: Final = "RouteAccepted"
CONDITION_CACHE_READY: Final = "CacheReady"
REASON_ACCEPTED: Final = "Accepted"
REASON_ROUTE_NOT_ACCEPTED: Final = "RouteNotAccepted"
RAY_PORT: Final = 6379
ENGINE_HEALTH_PATH: Final = "/health"
CACHE_MOUNT_PATH: Final = "/mnt/models"
GPU_RESOURCE_NAME: Final = "nvidia.com/gpu"

# ModelCache hydration (compose/caches/model_cache.py, modelplane/hydrate). The Job
# runs the function image's `modelplane hydrate`; it mounts the cache's PVC at
# HYDRATE_MOUNT and stages the artifact in its HYDRATE_SUBPATH folder, which
# replicas mount read-only at CACHE_MOUNT_PATH.
FUNCTION_PACKAGE: Final = "xpkg.crossplane.io/modelplane/function-modelplane"
"""Where the Function package (and the image it runs) is published by default."""
FUNCTION_IMAGE: Final = f"{FUNCTION_PACKAGE}:v{__version__}"
"""The default function image of this release. What runs is the image the Composition's
input names (`api/function_input.py`); hydration Jobs and the inventory agent run it too."""
IMAGE_PATTERN: Final = (
    r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
)
"""An OCI image reference: registry and path, then a tag and/or a digest."""
HYDRATE_MOUNT: Final = "/cache"
HYDRATE_SUBPATH: Final = "model"
HYDRATE_HEADERS_DIR: Final = "/var/run/modelplane/headers"

# In-cluster GPU schedulers' documented contracts (SPEC §5; sources cited in
# modelplane/compose/replica/schedulers.py).
KAI_SCHEDULER_NAME: Final = "kai-scheduler"
KAI_QUEUE_LABEL: Final = "kai.scheduler/queue"
KAI_LEGACY_QUEUE_LABEL: Final = "runai/queue"
KAI_POD_GROUP_ANNOTATION: Final = "pod-group-name"
KAI_SKIP_PODGROUPER_ANNOTATION: Final = "kai.scheduler/skip-podgrouper"
KAI_PODGROUP_API_VERSION: Final = "scheduling.run.ai/v2alpha2"
VOLCANO_SCHEDULER_NAME: Final = "volcano"
VOLCANO_GROUP_ANNOTATION: Final = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_KEY: Final = "scheduling.volcano.sh/queue-name"
VOLCANO_PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"

# Routing (ModelEndpoint, ModelService, InferenceGateway; SPEC §2).
ENVOY_GATEWAY_GROUP: Final = "gateway.envoyproxy.io"
ENVOY_GATEWAY_API_VERSION: Final = f"{ENVOY_GATEWAY_GROUP}/v1alpha1"
ENVOY_GATEWAY_CONTROLLER: Final = "gateway.envoyproxy.io/gatewayclass-controller"
ENVOY_GATEWAY_CHART: Final = "gateway-helm"
ENVOY_GATEWAY_CHART_REPOSITORY: Final = "oci://docker.io/envoyproxy"
# The release the stored values oracle knows (../shared/conformance/CHARTS.md).
ENVOY_GATEWAY_CHART_VERSION: Final = "v1.9.0"
ENVOY_GATEWAY_NAMESPACE: Final = "envoy-gateway-system"
INFERENCE_GATEWAY_NAME: Final = "default"
CONTROL_PLANE_GATEWAY_NAME: Final = "modelplane"
CONTROL_PLANE_GATEWAY_CLASS: Final = "modelplane"
# Where the InferenceGateway's own managed resources (Release, Objects) live on
# the control plane: Crossplane's namespace always exists.
CONTROL_PLANE_NAMESPACE: Final = "crossplane-system"
CONTROL_PLANE_PROVIDER_CONFIG: Final = "modelplane-control-plane"
DEFAULT_AUTH_HEADER: Final = "Authorization"
OPENAI_PATHS: Final = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models")
# Envoy Gateway's credential injector reads this key of the Secret it references.
ENVOY_CREDENTIAL_KEY: Final = "credential"
CONDITION_GATEWAY_READY: Final = "GatewayReady"
CONDITION_ENDPOINTS_READY: Final = "EndpointsReady"
CONDITION_ENDPOINTS_ROUTABLE: Final = "EndpointsRoutable"
LABEL_SERVICE: Final = "modelplane.ai/service"
LABEL_ENDPOINT: Final = "modelplane.ai/endpoint"
# On a ModelService's objects in the system namespace: the service's own namespace.
LABEL_SERVICE_NAMESPACE: Final = "modelplane.ai/service-namespace"
# The Envoy data plane's Service (fixed through the EnvoyProxy) and the internal
# hostnames of a ModelService's second hop (see compose/routing/model_service.py).
ENVOY_SERVICE_NAME: Final = "modelplane-gateway"
HOP_DOMAIN: Final = "hop.modelplane.internal"
# Serving backends (ModelDeployment.spec.backend): Native composes a Deployment or
# LeaderWorkerSet, KServe an LLMInferenceService, Dynamo a DynamoGraphDeployment.
BACKEND_NATIVE: Final = "Native"
# Not a backend: the word the scheduler's BackendUnsupported carries when a
# disaggregated replica finds no InferencePool support on a cluster.
DISAGGREGATED: Final = "disaggregated serving"
BACKEND_KSERVE: Final = "KServe"
BACKEND_DYNAMO: Final = "Dynamo"
BACKENDS: Final = (BACKEND_NATIVE, BACKEND_KSERVE, BACKEND_DYNAMO)
# NVIDIA Dynamo's DynamoGraphDeployment: nvidia.com/v1alpha1 is the version of the
# CRD the conformance oracle holds (served and stored).
DYNAMO_API_VERSION: Final = "nvidia.com/v1alpha1"
# The engine frameworks a DynamoGraphDeployment's spec.backendFramework names.
DYNAMO_FRAMEWORKS: Final = ("vllm", "sglang", "trtllm")
# KServe's LLMInferenceService: v1alpha2 is the served storage version of the
# KServe v0.20 CRD (v1alpha1 is still served, not stored).
KSERVE_LLMISVC_API_VERSION: Final = "serving.kserve.io/v1alpha2"
# Gateway API inference extension (InferencePool v1).
INFERENCE_GROUP: Final = "inference.networking.k8s.io"
INFERENCE_POOL_API_VERSION: Final = f"{INFERENCE_GROUP}/v1"

# The inventory agent (modelplane/agent, installed by the ServingStack): it
# summarises each workload cluster's Nodes, ResourceSlices and unschedulable
# replica pods into one ConfigMap the InferenceCluster observes.
INVENTORY_CONFIGMAP: Final = "modelplane-inventory"
INVENTORY_NAMESPACE: Final = SYSTEM_NAMESPACE
INVENTORY_DATA_KEY: Final = "inventory.json"
INVENTORY_FIELD_MANAGER: Final = "modelplane-inventory"
DEFAULT_UNSCHEDULABLE_AFTER: Final = "5m"
DURATION_PATTERN: Final = r"^([0-9]{1,6}(h|m|s))+$"
