"""EKS: an InferenceCluster provisioned on AWS through provider-upjet-aws.

Its blocks (the InferenceCluster's `spec.eks`, the InferenceClass's
`spec.provisioning.eks`), the EKSCluster composite's spec, and the `Cloud`
declaration the rest of Modelplane reads (`compose/clusters/clouds/eks.py`
composes the managed resources).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator

from modelplane.api import constants as c
from modelplane.api.clouds.base import (
    Accelerator,
    CloudProviderConfigRef,
    CloudSource,
    CSIDriver,
    ManagedKind,
    SizedPool,
    StorageClassSpec,
    StorageFact,
)
from modelplane.api.clouds.base import Cloud as CloudDeclaration
from modelplane.api.common import DNSLabel, KubeModel, cel_rules


class EKSNodePool(SizedPool):
    """One managed node group for one InferenceCluster pool."""

    instance_type: str = Field(min_length=1, max_length=128, description="EC2 instance type.")
    disk_size_gb: int | None = Field(
        default=None, ge=20, le=16384, description="Root volume size in GiB; the AMI's if absent."
    )
    spot: bool | None = Field(
        default=None,
        description="Buy the group's nodes as Spot instances (capacityType SPOT); set from the "
        "pool's capacityType.",
    )


class EKSSystemPool(KubeModel):
    """The small untainted node group for system components (gateway, controllers)."""

    instance_type: str = Field(
        default="m7i.xlarge", min_length=1, max_length=128, description="EC2 instance type."
    )
    node_count: int = Field(default=2, ge=1, le=100, description="Nodes of the system group.")


class ExistingAWSNetwork(KubeModel):
    """A VPC the cluster joins instead of creating one."""

    vpc_id: str = Field(min_length=1, max_length=64, description="Id of the VPC.")
    subnet_ids: list[str] = Field(
        min_length=2, max_length=16, description="Subnets (in two zones or more) nodes run in."
    )


class EKSNetwork(KubeModel):
    """The cluster's network: a new VPC over `zones`, or an existing one by id."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.existing) || (has(self.zones) && size(self.zones) >= 2)",
                "zones needs at least two availability zones unless existing is set",
            )
        )
    }

    vpc_cidr: str = Field(
        default="10.0.0.0/16",
        max_length=32,
        description="CIDR of a new VPC; each zone gets a public and a private sixteenth.",
    )
    zones: list[str] | None = Field(
        default=None, max_length=6, description="Availability zones of a new VPC (two or more)."
    )
    existing: ExistingAWSNetwork | None = Field(
        default=None, description="Join this VPC instead of creating one."
    )

    @model_validator(mode="after")
    def _zones(self) -> EKSNetwork:
        if self.existing is None and len(self.zones or []) < 2:
            raise ValueError("zones needs at least two availability zones unless existing is set")
        return self


class EKSClusterSpec(KubeModel):
    """An EKS cluster: network, control plane, one node group per pool, a system group."""

    cluster_name: DNSLabel = Field(description="The InferenceCluster this cluster serves.")
    region: str = Field(min_length=1, max_length=64, description="AWS region.")
    kubernetes_version: str = Field(
        default=c.DEFAULT_KUBERNETES_VERSION,
        max_length=16,
        description="Kubernetes version of the control plane.",
    )
    network: EKSNetwork = Field(description="The cluster's network.")
    pools: list[EKSNodePool] = Field(
        min_length=1, max_length=16, description="One managed node group per pool."
    )
    system_pool: EKSSystemPool = Field(
        default_factory=EKSSystemPool, description="The untainted node group for system pods."
    )
    access_principal_arns: list[str] | None = Field(
        default=None,
        max_length=8,
        description="IAM principals granted cluster admin through access entries "
        "(the role Crossplane's providers run as).",
    )
    csi_drivers: list[CSIDriver] | None = Field(
        default=None, max_length=3, description="CSI drivers to install as EKS add-ons."
    )
    provider_config_ref: CloudProviderConfigRef = Field(
        default_factory=CloudProviderConfigRef,
        description="The provider-upjet-aws config the managed resources use.",
    )


class EKSSource(CloudSource):
    """An EKS cluster Modelplane provisions."""

    region: str = Field(min_length=1, max_length=64, description="AWS region of the cluster.")
    kubernetes_version: str = Field(
        default=c.DEFAULT_KUBERNETES_VERSION,
        max_length=16,
        description="Kubernetes version of the cluster.",
    )
    vpc_cidr: str | None = Field(
        default=None, max_length=32, description="CIDR block of the cluster's VPC."
    )
    zones: list[str] | None = Field(
        default=None,
        max_length=6,
        description="Availability zones of a new VPC (two or more; required without existingVpc).",
    )
    existing_vpc: ExistingAWSNetwork | None = Field(
        default=None, description="Join this VPC and its subnets instead of creating one."
    )
    access_principal_arns: list[str] | None = Field(
        default=None,
        max_length=8,
        description="IAM principals given cluster admin through access entries.",
    )
    system_pool: EKSSystemPool | None = Field(
        default=None, description="The untainted node group for system pods."
    )
    provider_config_ref: CloudProviderConfigRef | None = Field(
        default=None, description="The provider-upjet-aws config; `default` if absent."
    )

    def composite_spec(self, name: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
        """The EKSCluster's spec: the network block gathers the VPC settings."""
        network: dict[str, Any] = {}
        if self.vpc_cidr:
            network["vpcCidr"] = self.vpc_cidr
        if self.zones:
            network["zones"] = list(self.zones)
        if self.existing_vpc is not None:
            network["existing"] = self.existing_vpc.to_dict()
        body: dict[str, Any] = {
            "clusterName": name,
            "region": self.region,
            "kubernetesVersion": self.kubernetes_version,
            "network": network,
            "pools": pools,
        }
        for key, value in (
            ("systemPool", self.system_pool),
            ("providerConfigRef", self.provider_config_ref),
        ):
            if value is not None:
                body[key] = value.to_dict()
        if self.access_principal_arns:
            body["accessPrincipalArns"] = list(self.access_principal_arns)
        return body


class EKSProvisioning(KubeModel):
    """How EKS provisions a node of this class."""

    instance_type: str = Field(
        min_length=1, max_length=128, description="EC2 instance type, e.g. p5.48xlarge."
    )
    accelerator: Accelerator | None = None


CLOUD = CloudDeclaration(
    name="EKS",
    block="eks",
    composite_kind="EKSCluster",
    composite_plural="eksclusters",
    description="An EKS cluster an InferenceCluster provisions (internal).",
    source_model=EKSSource,
    class_model=EKSProvisioning,
    spec_model=EKSClusterSpec,
    node_pool=ManagedKind("eks.aws.m.upbound.io/v1beta1", "NodeGroup"),
    system_pool=ManagedKind("eks.aws.m.upbound.io/v1beta1", "NodeGroup"),
    system_pool_suffix="system",
    # An Auto Scaling launch failure EKS reports as the node group health issue
    # `AsgInstanceLaunchFailures`.
    stockout_codes=("InsufficientInstanceCapacity",),
    # "... capacity in the Availability Zone you requested (us-east-1a)"; an EC2
    # zone name anywhere else in the message.
    zone_pattern=re.compile(r"\b([a-z]{2}(?:-gov)?-[a-z]+-\d[a-z])\b"),
    storage_classes={
        "SharedFilesystem": StorageClassSpec(
            "efs.csi.aws.com",
            {"provisioningMode": "efs-ap", "directoryPerms": "700"},
            StorageFact("fileSystemId", "shared_filesystem_id", "the EFS file system id"),
        ),
        "ObjectStorageMount": StorageClassSpec("s3.csi.aws.com"),
        "BlockDevice": StorageClassSpec("ebs.csi.aws.com", {"type": "gp3"}),
    },
    upjet_providers={
        "provider-aws-eks": (
            "clusters.eks.aws.m.upbound.io",
            "nodegroups.eks.aws.m.upbound.io",
            "addons.eks.aws.m.upbound.io",
            "accessentries.eks.aws.m.upbound.io",
            "accesspolicyassociations.eks.aws.m.upbound.io",
            "clusterauths.eks.aws.m.upbound.io",
        ),
        "provider-aws-ec2": (
            "vpcs.ec2.aws.m.upbound.io",
            "subnets.ec2.aws.m.upbound.io",
            "internetgateways.ec2.aws.m.upbound.io",
            "eips.ec2.aws.m.upbound.io",
            "natgateways.ec2.aws.m.upbound.io",
            "routetables.ec2.aws.m.upbound.io",
            "routes.ec2.aws.m.upbound.io",
            "routetableassociations.ec2.aws.m.upbound.io",
        ),
        "provider-aws-iam": (
            "roles.iam.aws.m.upbound.io",
            "rolepolicyattachments.iam.aws.m.upbound.io",
        ),
        "provider-aws-efs": (
            "filesystems.efs.aws.m.upbound.io",
            "mounttargets.efs.aws.m.upbound.io",
        ),
    },
    render_kinds={
        "eks.aws.m.upbound.io": (
            "Cluster",
            "NodeGroup",
            "Addon",
            "AccessEntry",
            "AccessPolicyAssociation",
            "PodIdentityAssociation",
            "ClusterAuth",
        ),
        "ec2.aws.m.upbound.io": (
            "VPC",
            "Subnet",
            "InternetGateway",
            "RouteTable",
            "Route",
            "RouteTableAssociation",
            "SecurityGroup",
            "NATGateway",
            "EIP",
        ),
        "iam.aws.m.upbound.io": ("Role", "RolePolicyAttachment"),
        "efs.aws.m.upbound.io": ("FileSystem", "MountTarget", "AccessPoint"),
    },
    provider_group="aws.m.upbound.io",
    provider="provider-upjet-aws",
    # The EKS Cluster publishes no kubeconfig: its ClusterAuth does, with a
    # token provider-upjet-aws refreshes (`refreshPeriod`, at most 10 minutes).
    connection_keys=("kubeconfig", "endpoint", "clusterCA"),
)
