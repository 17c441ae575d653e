"""The status every provisioning composite (EKSCluster, GKECluster, AKSCluster) reports.

An InferenceCluster whose `source` is a cloud (`api/clouds/`) composes that
cloud's composite in the function's system namespace, with every pool's
InferenceClass already resolved into machine types and accelerators, so the
provisioning composers never look a class up. Their status is the contract
back to the InferenceCluster: the kubeconfig Secret once the control plane is
reachable, and per pool the nodes asked for, the nodes actually up and any
cloud stock-out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationError

from modelplane.api import constants as c
from modelplane.api.common import ConditionedStatus, StatusModel, format_validation_error


class StockOut(StatusModel):
    """The cloud could not find capacity for a pool."""

    zone: str | None = Field(default=None, description="The zone without capacity.")
    accelerator: str | None = Field(default=None, description="The accelerator type asked for.")
    message: str = Field(default="", description="The cloud's own error message.")


class ProvisionedPoolStatus(StatusModel):
    """One pool as the cloud reports it."""

    name: str = Field(description="The pool.")
    desired_nodes: int = Field(description="Nodes the pool asked for.")
    nodes_up: int | None = Field(
        default=None, description="Ready nodes observed on the cluster; absent if not observed."
    )
    ready: bool = Field(default=False, description="Whether the cloud reports the pool Ready.")
    stock_out: StockOut | None = Field(
        default=None, description="Set while the cloud has no capacity for the pool."
    )


class KubeconfigSecret(StatusModel):
    """Where the reachable cluster's kubeconfig is (never the credential itself)."""

    namespace: str = Field(description="Namespace of the Secret.")
    name: str = Field(description="Name of the Secret.")
    key: str = Field(default=c.KUBECONFIG_CONNECTION_KEY, description="Key holding the kubeconfig.")


class SecretKey(StatusModel):
    """One key of a Secret (never its value)."""

    namespace: str = Field(description="Namespace of the Secret.")
    name: str = Field(description="Name of the Secret.")
    key: str = Field(description="Key of the Secret's data.")


class ProviderIdentity(StatusModel):
    """The cloud identity provider-kubernetes and provider-helm add to the kubeconfig.

    Their provider configs' `identity`: the kubeconfig then only names the API
    server and its CA, and the identity supplies a short-lived token.
    """

    type: str = Field(description="Identity type, e.g. GoogleApplicationCredentials.")
    source: str = Field(description="Secret, or InjectedIdentity (the providers' own).")
    secret_ref: SecretKey | None = Field(
        default=None, description="The identity's credentials when `source` is Secret."
    )


class ProvisionedClusterStatus(ConditionedStatus):
    """What a provisioning composite tells its InferenceCluster."""

    kubeconfig_secret: KubeconfigSecret | None = Field(
        default=None, description="The kubeconfig Secret, once the cluster is reachable."
    )
    identity: ProviderIdentity | None = Field(
        default=None,
        description="The cloud identity the providers add to the kubeconfig, when it needs one.",
    )
    reachable: bool | None = Field(
        default=None, description="Whether the control plane is Ready and its kubeconfig exists."
    )
    pools: list[ProvisionedPoolStatus] | None = Field(
        default=None, description="Each pool as the cloud reports it."
    )
    network: str | None = Field(default=None, description="The VPC id or network name.")
    shared_filesystem_id: str | None = Field(
        default=None, description="The shared file system (EFS) id, when one was created."
    )


@dataclass(frozen=True)
class ProvisionedClusterView:
    """The tolerant reading of a provisioned cluster's status.

    `status` is None when the status could not be read; `problem` then says
    why, so a caller can surface it instead of treating the cluster as absent.
    """

    status: ProvisionedClusterStatus | None
    problem: str | None = None

    @property
    def reachable(self) -> bool:
        """Whether the control plane is up and its kubeconfig Secret exists."""
        return bool(self.status and self.status.reachable and self.status.kubeconfig_secret)

    def pool(self, name: str) -> ProvisionedPoolStatus | None:
        """The status of pool `name`, if reported."""
        for p in (self.status.pools or []) if self.status else []:
            if p.name == name:
                return p
        return None


def read_provisioned_cluster(obj: Mapping[str, Any] | None) -> ProvisionedClusterView:
    """Read a provisioning composite's status; a malformed status is kept as unknown."""
    raw = (obj or {}).get("status")
    if raw is None:
        return ProvisionedClusterView(ProvisionedClusterStatus())
    try:
        return ProvisionedClusterView(ProvisionedClusterStatus.model_validate(raw))
    except ValidationError as err:
        return ProvisionedClusterView(None, format_validation_error(err, "status"))
