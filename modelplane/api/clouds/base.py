"""The cloud seam: what every cloud that provisions an InferenceCluster declares.

A cloud is one `Cloud` value (SkyPilot style: its capabilities as data) in its
own module beside this one, registered once in `api/clouds/__init__.py`. The
API generates from the registry what used to be spelled per cloud: the
InferenceCluster `source` and InferenceClass `provider` enums and their CEL
rules, the ServingStack's `cloud`, the provisioning composite's kind, the upjet
providers the package depends on. The composers read the rest (node-pool kind,
stock-out codes, driver root, StorageClasses, kubeconfig key) from it, so no
code outside a cloud's modules branches on a cloud's name.

Also here: the models every cloud's blocks are built from (accelerators,
provider config references, sized pools, CSI driver names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field, model_validator

from modelplane.api import constants as c
from modelplane.api.common import DNSLabel, DNSSubdomain, KubeModel, cel_rules

CSIDriver = Literal["SharedFilesystem", "ObjectStorageMount", "BlockDevice"]

_MAX_AT_LEAST_COUNT = (
    "!has(self.maxNodeCount) || self.maxNodeCount >= self.nodeCount",
    "maxNodeCount must be at least nodeCount",
)


class Accelerator(KubeModel):
    """A cloud accelerator type and how many a machine carries."""

    type: str = Field(min_length=1, max_length=128, description="Cloud accelerator type.")
    count: int = Field(ge=1, le=64, description="Accelerators per machine.")


class CloudProviderConfigRef(KubeModel):
    """The upjet provider config the managed resources use (Crossplane v2 style)."""

    kind: Literal["ProviderConfig", "ClusterProviderConfig"] = Field(
        default="ClusterProviderConfig",
        description="ProviderConfig (in the composite's namespace) or ClusterProviderConfig.",
    )
    name: DNSSubdomain = Field(
        default=c.DEFAULT_CLOUD_PROVIDER_CONFIG, description="Name of the provider config."
    )


class SizedPool(KubeModel):
    """Size of a node pool: a fixed count, or autoscaling from it up to a ceiling."""

    model_config = KubeModel.model_config | {"json_schema_extra": cel_rules(_MAX_AT_LEAST_COUNT)}

    name: DNSLabel = Field(description="The InferenceCluster pool this node pool serves.")
    accelerator: Accelerator | None = Field(
        default=None, description="GPUs each node carries; absent for a CPU-only pool."
    )
    node_count: int = Field(
        default=1, ge=0, le=1000, description="Nodes to start with (the autoscaling floor)."
    )
    max_node_count: int | None = Field(
        default=None, ge=0, le=1000, description="Autoscaling ceiling; absent means fixed size."
    )

    @model_validator(mode="after")
    def _max_at_least_count(self) -> SizedPool:
        if self.max_node_count is not None and self.max_node_count < self.node_count:
            raise ValueError("maxNodeCount must be at least nodeCount")
        return self

    @property
    def ceiling(self) -> int:
        """The autoscaling ceiling: maxNodeCount when set, else nodeCount."""
        return self.max_node_count if self.max_node_count is not None else self.node_count

    @property
    def autoscaled(self) -> bool:
        """Whether the cloud's autoscaler owns the size (a ceiling above the count)."""
        return self.max_node_count is not None and self.max_node_count > self.node_count


class CloudSource(KubeModel):
    """An InferenceCluster's block for one cloud (`spec.<cloud>`)."""

    def composite_spec(self, name: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
        """The provisioning composite's spec (wire form) for cluster `name` and its pools."""
        raise NotImplementedError


@dataclass(frozen=True)
class ManagedKind:
    """A managed resource kind by apiVersion and kind."""

    api_version: str
    kind: str


@dataclass(frozen=True)
class StorageFact:
    """A fact of the provisioned cluster a StorageClass parameter needs.

    `fact` names the ServingStack `spec.storage` field that carries it
    (`sharedFilesystemId` or `network`); until it is known the class is not made.
    """

    parameter: str
    fact: Literal["shared_filesystem_id", "network"]
    waiting_for: str


@dataclass(frozen=True)
class StorageClassSpec:
    """The StorageClass one `csiDrivers` entry maps to on this cloud."""

    provisioner: str
    parameters: Mapping[str, str] = field(default_factory=dict)
    needs: StorageFact | None = None


@dataclass(frozen=True)
class Cloud:
    """Everything Modelplane knows about one cloud, as data.

    `name` is the value of InferenceCluster `spec.source`, InferenceClass
    `spec.provisioning.provider` and ServingStack `spec.cloud`; `block` is the
    field both kinds carry the cloud's settings in.
    """

    name: str
    block: str
    composite_kind: str
    composite_plural: str
    description: str
    source_model: type[CloudSource]
    """The InferenceCluster's `spec.<block>`."""
    class_model: type[KubeModel]
    """The InferenceClass's `spec.provisioning.<block>`: how a node of the class is provisioned."""
    spec_model: type[KubeModel]
    """The provisioning composite's spec (every pool's class already resolved)."""
    node_pool: ManagedKind
    """The managed kind of one pool's nodes, named `<cluster>-pool-<pool>`."""
    system_pool: ManagedKind
    """The managed resource the untainted system nodes belong to."""
    system_pool_suffix: str
    """Its name after the cluster's: `<cluster>-<suffix>`."""
    stockout_codes: tuple[str, ...]
    """The cloud's error codes for "no capacity" in a node pool's error messages."""
    zone_pattern: re.Pattern[str] | None
    """A zone named in such a message (group 1); None when the cloud names none."""
    storage_classes: Mapping[str, StorageClassSpec]
    """csiDrivers entry → the StorageClass of the cloud's own CSI driver."""
    upjet_providers: Mapping[str, tuple[str, ...]]
    """Upjet family provider → the ManagedResourceDefinitions it serves that the composer uses."""
    render_kinds: Mapping[str, tuple[str, ...]]
    """API group → namespaced kinds the embedded control plane must know (`modelplane render`)."""
    provider_group: str
    """The group of the provider's ProviderConfig / ClusterProviderConfig."""
    provider: str
    """The upjet provider's repository (`provider-upjet-aws`), naming it where a render files
    what it reconciles."""
    driver_root: str | None = None
    """Where the node image puts the NVIDIA driver, when not at `/` (the DRA driver's root)."""
    kubeconfig_key: str = c.KUBECONFIG_CONNECTION_KEY
    """The connection Secret key the control plane writes its kubeconfig under."""
    connection_keys: tuple[str, ...] = (c.KUBECONFIG_CONNECTION_KEY,)
    """Every key the upjet provider writes into that connection Secret (the render
    simulation writes exactly these; `docs/install.md` names them)."""

    def manages(self, api_version: str, kind: str) -> bool:
        """Whether `kind` of `api_version` is one of this cloud's managed resources."""
        group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        return kind in self.render_kinds.get(group, ())

    @property
    def storage_facts(self) -> frozenset[str]:
        """The provisioned-cluster facts this cloud's StorageClasses need."""
        return frozenset(s.needs.fact for s in self.storage_classes.values() if s.needs)
