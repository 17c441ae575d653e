"""InferenceClass: a node's hardware recipe, described as DRA-style devices."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from modelplane.api import constants as c
from modelplane.api.clouds import CloudName, cloud_named, source_rules
from modelplane.api.clouds.aks import AKSProvisioning
from modelplane.api.clouds.eks import EKSProvisioning
from modelplane.api.clouds.gke import GKEProvisioning
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    DNSSubdomain,
    KubeModel,
    QualifiedName,
    QuantityString,
    cel_rules,
)


class DeviceAttribute(KubeModel):
    """A typed attribute value: exactly one of string, int, bool, version."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "[has(self.string), has(self.int), has(self.bool), has(self.version)]"
                ".filter(x, x).size() == 1",
                "exactly one of string, int, bool or version must be set",
            )
        )
    }

    string: str | None = Field(default=None, max_length=64, description="A string value.")
    # DRA attribute values as a ResourceSlice holds them: int64, and a version the DRA
    # CEL layer can read (the pattern; uint64 range is checked by the class composer).
    int_: int | None = Field(
        default=None, alias="int", ge=-(2**63), le=2**63 - 1, description="An integer value."
    )
    bool_: bool | None = Field(default=None, alias="bool", description="A boolean value.")
    version: str | None = Field(
        default=None,
        max_length=64,
        pattern=c.SEMVER_PATTERN,
        description="A semantic version without leading zeros, e.g. 12.4.0.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> DeviceAttribute:
        set_ = [v for v in (self.string, self.int_, self.bool_, self.version) if v is not None]
        if len(set_) != 1:
            raise ValueError("exactly one of string, int, bool or version must be set")
        return self


class DeviceCapacity(KubeModel):
    """A capacity of a device, as a Kubernetes quantity."""

    value: QuantityString = Field(description="The capacity as a Kubernetes quantity, e.g. 80Gi.")


class Device(KubeModel):
    """One kind of device on a node, like an entry of a DRA ResourceSlice."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.claim != 'DRA' || has(self.deviceClassName)",
                "deviceClassName is required when claim is DRA",
            )
        )
    }

    name: DNSLabel = Field(description="Name of this kind of device within the class.")
    claim: Literal["DRA", "Synthetic"] = Field(
        default="DRA", description="DRA devices are claimed through DRA; Synthetic ones only match."
    )
    driver: DNSSubdomain = Field(
        description="The DRA driver that publishes the device, e.g. gpu.nvidia.com."
    )
    device_class_name: DNSSubdomain | None = Field(
        default=None, description="The DRA DeviceClass to claim from; required when claim is DRA."
    )
    count: int = Field(
        default=1, ge=1, le=128, description="Identical devices of this kind on one node."
    )
    attributes: dict[QualifiedName, DeviceAttribute] | None = Field(
        default=None,
        max_length=32,
        description="Typed attributes by qualified name, as DRA selectors read them.",
    )
    capacity: dict[QualifiedName, DeviceCapacity] | None = Field(
        default=None,
        max_length=32,
        description="Capacities by qualified name, as Kubernetes quantities.",
    )

    @model_validator(mode="after")
    def _class_for_dra(self) -> Device:
        if self.claim == "DRA" and not self.device_class_name:
            raise ValueError("deviceClassName is required when claim is DRA")
        return self


class Provisioning(KubeModel):
    """Cloud provisioning of the class's nodes; absent for bring-your-own pools."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(*source_rules("provider"))
    }

    provider: CloudName = Field(description="The cloud that provisions the nodes.")
    # One block per registered cloud (api/clouds/), named by its `block`.
    eks: EKSProvisioning | None = None
    gke: GKEProvisioning | None = None
    aks: AKSProvisioning | None = None

    def block(self) -> KubeModel | None:
        """The block of the cloud `provider` names."""
        cloud = cloud_named(self.provider)
        found: KubeModel | None = getattr(self, cloud.block) if cloud is not None else None
        return found

    @model_validator(mode="after")
    def _block_for_provider(self) -> Provisioning:
        cloud = cloud_named(self.provider)
        if cloud is not None and self.block() is None:
            raise ValueError(f"{cloud.block} is required when provider is {cloud.name}")
        return self


CapacityType = Literal["OnDemand", "Spot"]
"""How a pool's nodes are bought: on demand, or spot (the cloud may reclaim them)."""


class InferenceClassSpec(KubeModel):
    """The devices on one node of a pool of this class."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.devices.all(d, self.devices.exists_one(e, e.name == d.name))",
                "device names must be unique",
            )
        )
    }

    devices: list[Device] = Field(
        min_length=1,
        max_length=16,
        description="The devices on one node, one entry per kind of device.",
    )
    provisioning: Provisioning | None = None
    price_per_device_hour: float | None = Field(
        default=None,
        ge=0,
        description="What one device of this class costs per hour (any currency, the same "
        "across the fleet); the LowestCost placement preference reads it.",
    )
    capacity_type: CapacityType | None = Field(
        default=None,
        description="OnDemand (the default) or Spot: only deployments with "
        "placement.allowSpot run on a Spot pool.",
    )

    def pool_capacity(self, pool_capacity: CapacityType | None) -> CapacityType | None:
        """How a pool of this class is bought, the one answer both the cloud's node pool and
        the scheduler read: Spot when the pool's capacityType (else the class's) says so,
        or when the class's provisioning block asks the cloud for Spot VMs (GKE, AKS
        `spot: true`), since that is what the cloud then sells; None: on demand, unset."""
        block = self.provisioning.block() if self.provisioning is not None else None
        capacity = pool_capacity or self.capacity_type
        return "Spot" if getattr(block, "spot", None) is True else capacity

    @model_validator(mode="after")
    def _unique_names(self) -> InferenceClassSpec:
        seen: set[str] = set()
        for d in self.devices:
            if d.name in seen:
                raise ValueError(f"device names must be unique: {d.name!r} appears twice")
            seen.add(d.name)
        return self


class InferenceClassStatus(ConditionedStatus):
    """Status of an InferenceClass."""

    dra_devices: int | None = Field(default=None, description="Claimable devices per node.")
