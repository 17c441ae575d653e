"""The registry of Modelplane kinds: one entry per XRD, the source of the package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from modelplane.api import constants as c
from modelplane.api.clouds import CLOUDS, Cloud
from modelplane.api.fleet_quota import FleetQuotaSpec, FleetQuotaStatus
from modelplane.api.inference_class import InferenceClassSpec, InferenceClassStatus
from modelplane.api.inference_cluster import InferenceClusterSpec, InferenceClusterStatus
from modelplane.api.inference_gateway import InferenceGatewaySpec, InferenceGatewayStatus
from modelplane.api.model_cache import ModelCacheSpec, ModelCacheStatus
from modelplane.api.model_deployment import ModelDeploymentSpec, ModelDeploymentStatus
from modelplane.api.model_endpoint import ModelEndpointSpec, ModelEndpointStatus
from modelplane.api.model_replica import ModelReplicaSpec, ModelReplicaStatus
from modelplane.api.model_service import ModelServiceSpec, ModelServiceStatus
from modelplane.api.provisioning import ProvisionedClusterStatus
from modelplane.api.serving_stack import ServingStackSpec, ServingStackStatus


@dataclass(frozen=True)
class PrinterColumn:
    """An `additionalPrinterColumns` entry of the XRD."""

    name: str
    json_path: str
    type: Literal["string", "integer", "number", "boolean", "date"] = "string"
    priority: int = 0
    description: str = ""


UP_FRONT_PREFIX = "up-front-"
"""What a Composition step's requirement names start with (`UpFront.key`)."""


@dataclass(frozen=True)
class UpFront:
    """A requirement the kind's Composition has Crossplane fetch before the function's
    first call (a pipeline step's `requirements`), so a call need not ask for it.

    Crossplane calls a function again whenever its response asks for resources,
    until two responses ask for the same: a composer that asks for anything is
    called twice per reconcile. What it asks for with a selector that does not
    depend on the composite can come with the first call instead; when all of it
    does, one call is enough. The step fetches under `key`, not `name`, so a
    request tells what came up front from what a previous response asked for.
    """

    name: str
    """The composer's requirement name."""
    api_version: str
    kind: str
    match_labels: tuple[tuple[str, str], ...] = ()
    own_namespace: bool = False
    """The composer asks for the composite's namespace only: the step, which cannot
    name it, fetches every namespace's and the function keeps the composite's."""

    @property
    def key(self) -> str:
        """The step's requirement name: where the request carries what it fetched."""
        return f"{UP_FRONT_PREFIX}{self.name}"

    def selector(self) -> dict[str, Any]:
        """The step's `requirements.requiredResources` entry."""
        out: dict[str, Any] = {
            "requirementName": self.key,
            "apiVersion": self.api_version,
            "kind": self.kind,
        }
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        return out


# A ModelDeployment reads the whole fleet at every call: every cluster, every
# replica, and its namespace's quotas.
DEPLOYMENT_UP_FRONT: tuple[UpFront, ...] = (
    UpFront(c.REQUIREMENT_INFERENCE_CLUSTERS, c.API_VERSION, c.KIND_INFERENCE_CLUSTER),
    UpFront(
        c.REQUIREMENT_MODEL_REPLICAS,
        c.API_VERSION,
        c.KIND_MODEL_REPLICA,
        match_labels=((c.LABEL_MANAGED_BY, c.MANAGED_BY),),
    ),
    UpFront(c.REQUIREMENT_FLEET_QUOTAS, c.API_VERSION, c.KIND_FLEET_QUOTA, own_namespace=True),
)


@dataclass(frozen=True)
class Kind:
    """Everything the package generator and the function need to know about a kind."""

    group: str
    kind: str
    plural: str
    scope: Literal["Cluster", "Namespaced"]
    spec: type[BaseModel]
    status: type[BaseModel]
    description: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ("modelplane",)
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: dict[str, Any] | None = None
    singleton_name: str | None = None
    """When set, the only name an object of the kind may have (an XRD rule enforces it)."""
    up_front: tuple[UpFront, ...] = ()
    """What its Composition fetches before the function's first call."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        """The served and referenceable version."""
        return c.VERSION

    @property
    def singleton_message(self) -> str:
        """Why another name is refused."""
        return (
            f"metadata.name must be '{self.singleton_name}': "
            f"there is one {self.kind} per control plane"
        )

    @property
    def api_version(self) -> str:
        """The kind's apiVersion string."""
        return f"{self.group}/{self.version}"

    @property
    def singular(self) -> str:
        """The lower-case singular name."""
        return self.kind.lower()

    @property
    def xrd_name(self) -> str:
        """The XRD's metadata.name: `<plural>.<group>`."""
        return f"{self.plural}.{self.group}"

    @property
    def composition_name(self) -> str:
        """The name of the kind's Composition."""
        return f"{self.plural}.{self.group}"


_READY = PrinterColumn("Ready", ".status.conditions[?(@.type=='Ready')].status")
_SYNCED = PrinterColumn("Synced", ".status.conditions[?(@.type=='Synced')].status")
_AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")

INFERENCE_CLASS = Kind(
    group=c.GROUP,
    kind="InferenceClass",
    plural="inferenceclasses",
    scope="Cluster",
    spec=InferenceClassSpec,
    status=InferenceClassStatus,
    description="A node's hardware recipe, described as DRA-style devices.",
    short_names=("iclass",),
    printer_columns=(
        PrinterColumn("Provider", ".spec.provisioning.provider"),
        PrinterColumn("Devices", ".status.draDevices", "integer"),
        _READY,
        _AGE,
    ),
)

INFERENCE_CLUSTER = Kind(
    group=c.GROUP,
    kind="InferenceCluster",
    plural="inferenceclusters",
    scope="Cluster",
    spec=InferenceClusterSpec,
    status=InferenceClusterStatus,
    description="One workload cluster of the fleet and the GPU pools it holds.",
    short_names=("icluster",),
    printer_columns=(
        PrinterColumn("Source", ".spec.source"),
        PrinterColumn("Provider-Config", ".status.providerConfigName", priority=1),
        _READY,
        _SYNCED,
        _AGE,
    ),
)

MODEL_DEPLOYMENT = Kind(
    group=c.GROUP,
    kind="ModelDeployment",
    plural="modeldeployments",
    scope="Namespaced",
    spec=ModelDeploymentSpec,
    status=ModelDeploymentStatus,
    description="A model to serve: how many replicas, on what hardware, on which clusters.",
    short_names=("mdep",),
    printer_columns=(
        PrinterColumn("Desired", ".spec.replicas", "integer"),
        PrinterColumn("Placed", ".status.replicas", "integer"),
        PrinterColumn("Ready-Replicas", ".status.readyReplicas", "integer"),
        PrinterColumn("Scheduled", ".status.conditions[?(@.type=='Scheduled')].reason"),
        _READY,
        _AGE,
    ),
    scale={
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    },
    up_front=DEPLOYMENT_UP_FRONT,
)

MODEL_REPLICA = Kind(
    group=c.GROUP,
    kind="ModelReplica",
    plural="modelreplicas",
    scope="Namespaced",
    spec=ModelReplicaSpec,
    status=ModelReplicaStatus,
    description="One serving instance of a ModelDeployment on one cluster (composed).",
    short_names=("mrep",),
    printer_columns=(
        PrinterColumn("Deployment", ".spec.deploymentName"),
        PrinterColumn("Cluster", ".spec.clusterName"),
        PrinterColumn("Index", ".spec.index", "integer"),
        PrinterColumn("Pool", ".spec.nodePoolName"),
        _READY,
        _AGE,
    ),
)

MODEL_CACHE = Kind(
    group=c.GROUP,
    kind="ModelCache",
    plural="modelcaches",
    scope="Namespaced",
    spec=ModelCacheSpec,
    status=ModelCacheStatus,
    description="An artifact (weights, tokenizer, bytes) staged once per matching cluster.",
    short_names=("mcache",),
    printer_columns=(
        PrinterColumn("Source", ".status.source"),
        PrinterColumn("Ready-Clusters", ".status.ready"),
        PrinterColumn("Artifact", ".status.conditions[?(@.type=='ArtifactReady')].reason"),
        _READY,
        _AGE,
    ),
)

FLEET_QUOTA = Kind(
    group=c.GROUP,
    kind="FleetQuota",
    plural="fleetquotas",
    scope="Namespaced",
    spec=FleetQuotaSpec,
    status=FleetQuotaStatus,
    description="Devices a namespace's deployments may hold across the fleet, per device class "
    "or InferenceClass.",
    short_names=("fquota",),
    printer_columns=(
        PrinterColumn("Within", ".status.conditions[?(@.type=='WithinQuota')].status"),
        _READY,
        _AGE,
    ),
)

MODEL_ENDPOINT = Kind(
    group=c.GROUP,
    kind="ModelEndpoint",
    plural="modelendpoints",
    scope="Namespaced",
    spec=ModelEndpointSpec,
    status=ModelEndpointStatus,
    description="One reachable OpenAI-compatible backend: a Ready replica or an external provider.",
    short_names=("mep",),
    printer_columns=(
        PrinterColumn("URL", ".spec.url"),
        PrinterColumn("Endpoint-Ready", ".status.ready", "boolean"),
        _READY,
        _AGE,
    ),
)

MODEL_SERVICE = Kind(
    group=c.GROUP,
    kind="ModelService",
    plural="modelservices",
    scope="Namespaced",
    spec=ModelServiceSpec,
    status=ModelServiceStatus,
    description="One stable OpenAI-compatible address, weighted over ModelEndpoints.",
    short_names=("msvc",),
    printer_columns=(
        PrinterColumn("Address", ".status.address"),
        PrinterColumn("Endpoints-Ready", ".status.endpointsReady"),
        _READY,
        _AGE,
    ),
)

INFERENCE_GATEWAY = Kind(
    group=c.GROUP,
    kind="InferenceGateway",
    plural="inferencegateways",
    scope="Cluster",
    spec=InferenceGatewaySpec,
    status=InferenceGatewayStatus,
    description="The fleet's front door: Envoy Gateway on the control plane (singleton 'default').",
    short_names=("igw",),
    printer_columns=(
        PrinterColumn("Address", ".status.address"),
        PrinterColumn("Chart", ".spec.chart.version", priority=1),
        _READY,
        _AGE,
    ),
    singleton_name=c.INFERENCE_GATEWAY_NAME,
)

_CLUSTER_COLUMN = PrinterColumn("Cluster", ".spec.clusterName")
# Every provisioning composite answers the same questions in `kubectl get`.
_PROVISIONED_COLUMNS = (
    _CLUSTER_COLUMN,
    PrinterColumn("Region", ".spec.region"),
    PrinterColumn("Version", ".spec.kubernetesVersion"),
    PrinterColumn("Reachable", ".status.reachable", "boolean"),
    _READY,
    _AGE,
)


def provisioning_kind(cloud: Cloud) -> Kind:
    """The internal composite a cloud provisions clusters through (EKSCluster, ...)."""
    return Kind(
        group=c.INFRA_GROUP,
        kind=cloud.composite_kind,
        plural=cloud.composite_plural,
        scope="Namespaced",
        spec=cloud.spec_model,
        status=ProvisionedClusterStatus,
        description=cloud.description,
        categories=("modelplane", "modelplane-infrastructure"),
        printer_columns=_PROVISIONED_COLUMNS,
    )


# One per registered cloud (api/clouds/), in the registry's order.
CLOUD_KINDS: tuple[Kind, ...] = tuple(provisioning_kind(cloud) for cloud in CLOUDS)

SERVING_STACK = Kind(
    group=c.INFRA_GROUP,
    kind="ServingStack",
    plural="servingstacks",
    scope="Namespaced",
    spec=ServingStackSpec,
    status=ServingStackStatus,
    description="The in-cluster software Modelplane installs on one workload cluster (internal).",
    categories=("modelplane", "modelplane-infrastructure"),
    printer_columns=(
        _CLUSTER_COLUMN,
        PrinterColumn("Gateway", ".status.gatewayAddress"),
        PrinterColumn(
            "Stack", ".status.conditions[?(@.type=='ServingStackReady')].reason", priority=1
        ),
        _READY,
        _AGE,
    ),
)

KINDS: tuple[Kind, ...] = (
    INFERENCE_CLASS,
    INFERENCE_CLUSTER,
    MODEL_DEPLOYMENT,
    MODEL_REPLICA,
    MODEL_CACHE,
    FLEET_QUOTA,
    MODEL_ENDPOINT,
    MODEL_SERVICE,
    INFERENCE_GATEWAY,
    *CLOUD_KINDS,
    SERVING_STACK,
)


_BY_NAME: dict[tuple[str, str], Kind] = {}
for _k in reversed(KINDS):  # the first of equal names wins, as a scan would find it
    _BY_NAME[(_k.api_version, _k.kind)] = _k
del _k


def kind_for(api_version: str, kind: str) -> Kind | None:
    """Return the registered kind for an apiVersion/kind pair, if Modelplane owns it."""
    return _BY_NAME.get((api_version, kind))
