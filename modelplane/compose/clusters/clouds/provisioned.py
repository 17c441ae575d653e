"""What every cloud's composer shares: inputs, status, conditions, readiness.

Each composer (`eks`, `gke`, `aks`) builds its cloud's managed resources and
hands them here with the names of the control plane and of each pool's node
group. A cloud's composer is registered as a `Provisioner`: its `Cloud`
declaration, its compose function, and what its provider reports back
(`ProviderReports`, which the render simulation plays). This module
fetches the connection Secret and the cluster's observed inventory (the
Observe-only Object the InferenceCluster composes of the inventory agent's
ConfigMap, `clusters/inventory.py`), publishes
`status.kubeconfigSecret` only once the control plane is Ready and its Secret
exists, reports each pool's nodes and stock-out, and sets ControlPlaneReady,
NodePoolsReady and InsufficientGPUCapacity.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds import Cloud
from modelplane.api.clouds.base import CloudProviderConfigRef
from modelplane.api.inventory import InventorySummary
from modelplane.api.provisioning import (
    KubeconfigSecret,
    ProviderIdentity,
    ProvisionedClusterStatus,
    ProvisionedPoolStatus,
)
from modelplane.api.provisioning import StockOut as StockOutStatus
from modelplane.api.reasons import (
    ControlPlaneReadyReason,
    InsufficientGPUCapacityReason,
    NodePoolsReadyReason,
    ValidReason,
)
from modelplane.compose import outcome
from modelplane.compose.clusters.clouds.capacity import StockOut, nodes_up, pool_stockout
from modelplane.compose.clusters.inventory import inventory_object_name, observed_inventory
from modelplane.compose.clusters.managed import (
    Ref,
    cluster_usage,
    labels,
    managed,
    ready,
    resource_name,
)
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)

SECRET_REQUIREMENT = "connection-secret"
INVENTORY_REQUIREMENT = "observed-inventory"
CONTROL_PLANE_KEY = "cluster"
SYSTEM_POOL_KEY = "nodepool-system"


def pool_key(pool: str) -> str:
    """The composition resource name of a pool's node group / node pool."""
    return f"nodepool-{pool}"


def connection_secret_name(cluster: str) -> str:
    """The Secret the cloud's provider writes the cluster's kubeconfig to.

    Written by the managed resource that holds the credential: the control plane
    itself (GKE, AKS) or EKS's ClusterAuth.
    """
    return resource_name(cluster, "kubeconfig")


def simulated_ca(name: str) -> str:
    """A stand-in CA certificate (PEM framing, no real key) for a render's connection Secrets."""
    body = base64.b64encode(f"simulated cluster CA of {name}".encode()).decode()
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"


def kubeconfig_text(name: str, server: str, ca_pem: str, user: Mapping[str, str]) -> str:
    """A kubeconfig in the shape client-go's `clientcmd.Write` gives the providers' own.

    `user` is the credential as its provider writes it (a token, client
    certificate data), empty when an identity supplies it instead.
    """
    ca = base64.b64encode(ca_pem.encode()).decode()
    lines = [
        "apiVersion: v1",
        "clusters:",
        "- cluster:",
        f"    certificate-authority-data: {ca}",
        f"    server: {server}",
        f"  name: {name}",
        "contexts:",
        "- context:",
        f"    cluster: {name}",
        f"    user: {name}",
        f"  name: {name}",
        f"current-context: {name}",
        "kind: Config",
        "preferences: {}",
        "users:",
        f"- name: {name}",
    ]
    lines += ["  user:", *(f"    {k}: {v}" for k, v in user.items())] if user else ["  user: {}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PoolPlan:
    """A pool as its composer planned it: what to compare the cloud's answer with."""

    name: str
    accelerator: str | None
    requested: int
    zone: str | None = None


@dataclass
class Plan:
    """Everything a cloud composer decided for one call."""

    resources: dict[str, Resource] = field(default_factory=dict)
    pools: list[PoolPlan] = field(default_factory=list)
    network: str | None = None
    shared_filesystem_id: str | None = None
    system_pool_key: str = SYSTEM_POOL_KEY
    """The resource the system nodes belong to (a cloud may keep them in its control plane)."""
    identity: ProviderIdentity | None = None
    """The cloud identity the providers add to the kubeconfig (GKE), else None."""


@dataclass
class CloudBuild:
    """What every cloud's build shares: resource names, managed resources, deletion Usages.

    A cloud's build adds its spec (keyword-only) and may place cloud-wide
    fields (a region, a project) into each resource through `located`.
    """

    cluster: str
    namespace: str
    inp: ComposeInput
    plan: Plan
    provider_config: CloudProviderConfigRef

    def ref(self, api_version: str, kind: str, *suffix: str) -> Ref:
        """A managed resource named after the cluster."""
        return Ref(api_version, kind, resource_name(self.cluster, *suffix))

    def located(self, ref: Ref, for_provider: dict[str, object]) -> dict[str, object]:
        """The resource's forProvider with what the cloud adds to every resource."""
        return for_provider

    def add(
        self,
        key: str,
        ref: Ref,
        component: str,
        for_provider: dict[str, object],
        extra_labels: dict[str, str] | None = None,
        **kwargs: object,
    ) -> Ref:
        """Add one managed resource to the plan under `key`."""
        self.plan.resources[key] = managed(
            ref,
            self.namespace,
            labels(self.cluster, component, **(extra_labels or {})),
            self.located(ref, for_provider),
            self.provider_config,
            **kwargs,  # type: ignore[arg-type]
        )
        return ref

    def use(self, of: Ref, by: Ref, reason: str) -> None:
        """A Usage named after its user (`by`): `of` waits for `by` to be deleted."""
        cluster_usage(self.plan.resources, self.cluster, self.namespace, of, by, reason)


Lookup = Callable[[str, str], dict[str, Any]]
"""(kind, name) → that managed resource's simulated `status.atProvider`."""

Builder = Callable[[Any, str, str, ComposeInput], Plan]
"""(spec, cluster name, namespace, input) → plan; raises ValueError on a spec it cannot build."""


@dataclass(frozen=True)
class ProviderReports:
    """What a cloud's provider writes back on its managed resources.

    The render simulation (`local/simulate_cloud.py`) plays it on the cloud's
    managed kinds (`Cloud.render_kinds`), and the tests check the composer
    recognises it (a stock-out is found in `stockout`'s text).
    """

    at_provider: Callable[[Resource, str], dict[str, Any]]
    """(managed resource, a stable digest of it) → a plausible `status.atProvider`."""
    stockout: Callable[[Resource, str, str], str]
    """(node pool's managed resource, cluster, zone) → the cloud's capacity error message."""
    connection: Callable[[Resource, Lookup], dict[str, str]]
    """(managed resource, lookup) → the connection details its provider writes into its
    `writeConnectionSecretToRef` Secret (text values; empty when it writes none).
    `lookup(kind, name)` is the simulated `status.atProvider` of another of the
    cloud's managed resources in the same namespace."""


@dataclass(frozen=True)
class Provisioner:
    """One cloud's composer as the registry lists it."""

    cloud: Cloud
    compose: Callable[[ComposeInput], ComposeResult]
    reports: ProviderReports


def compose_provisioned(inp: ComposeInput, cloud: Cloud, build: Builder) -> ComposeResult:
    """Compose one provisioned cluster: parse, fetch, build, publish status."""
    result = ComposeResult()
    kind = cloud.composite_kind
    spec, error = parse_spec(cloud.spec_model, inp.composite)
    if spec is None:
        return outcome.hold(
            inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, f"invalid {kind}: {error}"
        )
    cluster = str(spec.cluster_name)  # type: ignore[attr-defined]
    namespace = str(meta(inp.composite).get("namespace") or c.SYSTEM_NAMESPACE)
    result.requirements[SECRET_REQUIREMENT] = Requirement(
        "v1", "Secret", match_name=connection_secret_name(cluster), namespace=namespace
    )
    result.requirements[INVENTORY_REQUIREMENT] = Requirement(
        c.PROVIDER_KUBERNETES_API_VERSION,
        "Object",
        match_name=inventory_object_name(cluster),
        namespace=c.SYSTEM_NAMESPACE,
    )
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)
    try:
        plan = build(spec, cluster, namespace, inp)
    except ValueError as err:
        return outcome.hold(inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, str(err))
    result.condition(c.CONDITION_VALID, True, ValidReason.VALID, f"{kind} spec is valid")
    for key, resource in plan.resources.items():
        obs = inp.observed.get(key)
        is_usage = resource.get("kind") == "Usage"
        result.desired[key] = DesiredResource(
            resource, "True" if is_usage or ready(obs) else "False"
        )
    _publish(inp, result, cloud, cluster, namespace, plan)
    return result


def _control_plane(
    inp: ComposeInput, result: ComposeResult, cloud: Cloud, cluster: str, namespace: str
) -> KubeconfigSecret | None:
    """ControlPlaneReady, and the kubeconfig Secret once the cluster is reachable."""
    up = ready(inp.observed.get(CONTROL_PLANE_KEY))
    secret = bool(inp.required.get(SECRET_REQUIREMENT))
    name = connection_secret_name(cluster)
    if up and secret:
        result.condition(
            c.CONDITION_CONTROL_PLANE_READY,
            True,
            ControlPlaneReadyReason.READY,
            f"control plane is Ready; kubeconfig in Secret {namespace}/{name}",
        )
        return KubeconfigSecret(namespace=namespace, name=name, key=cloud.kubeconfig_key)
    if up:
        reason, message = (
            ControlPlaneReadyReason.CONNECTION_SECRET_MISSING,
            f"control plane is Ready but its connection Secret {namespace}/{name} does not exist",
        )
    else:
        reason, message = ControlPlaneReadyReason.PROVISIONING, "waiting for the control plane"
    result.condition(c.CONDITION_CONTROL_PLANE_READY, False, reason, message)
    return None


def _pool_status(
    inp: ComposeInput, cloud: Cloud, pool: PoolPlan, inventory: InventorySummary | None
) -> tuple[ProvisionedPoolStatus, StockOut | None]:
    managed = inp.observed.get(pool_key(pool.name))
    up = nodes_up(pool.name, inventory)
    stock = pool_stockout(
        cloud,
        pool.name,
        pool.accelerator,
        pool.requested,
        managed,
        declared_zone=pool.zone,
        up=up,
    )
    status = ProvisionedPoolStatus(
        name=pool.name,
        desired_nodes=pool.requested,
        nodes_up=stock.nodes_up if stock else up,
        ready=ready(managed) and stock is None,
        stock_out=(
            StockOutStatus(zone=stock.zone, accelerator=stock.accelerator, message=stock.message)
            if stock
            else None
        ),
    )
    return status, stock


def _pools(
    inp: ComposeInput, result: ComposeResult, cloud: Cloud, plan: Plan
) -> tuple[list[ProvisionedPoolStatus], bool]:
    """Per-pool status plus NodePoolsReady and InsufficientGPUCapacity; True if all ready."""
    observed = inp.required.get(INVENTORY_REQUIREMENT) or []
    inventory, _ = observed_inventory(observed[0] if observed else None)
    statuses, stockouts = [], []
    for pool in plan.pools:
        status, stock = _pool_status(inp, cloud, pool, inventory)
        statuses.append(status)
        if stock is not None:
            stockouts.append(stock)
    waiting = [s.name for s in statuses if not s.ready]
    if not ready(inp.observed.get(plan.system_pool_key)):
        waiting.append("system")
    if stockouts:
        message = "; ".join(s.describe() for s in stockouts)
        result.condition(
            c.CONDITION_INSUFFICIENT_GPU_CAPACITY,
            True,
            InsufficientGPUCapacityReason.STOCK_OUT,
            message,
        )
        result.warn(str(InsufficientGPUCapacityReason.STOCK_OUT), message)
    else:
        result.condition(
            c.CONDITION_INSUFFICIENT_GPU_CAPACITY,
            False,
            InsufficientGPUCapacityReason.CAPACITY_AVAILABLE,
            "no pool reports a cloud stock-out",
        )
    if not waiting:
        result.condition(
            c.CONDITION_NODE_POOLS_READY,
            True,
            NodePoolsReadyReason.READY,
            "every node pool is Ready",
        )
    else:
        reason = NodePoolsReadyReason.DEGRADED if stockouts else NodePoolsReadyReason.PROVISIONING
        result.condition(
            c.CONDITION_NODE_POOLS_READY,
            False,
            reason,
            f"node pool(s) not Ready: {', '.join(waiting)}",
        )
    return statuses, not waiting


def _publish(
    inp: ComposeInput, result: ComposeResult, cloud: Cloud, cluster: str, namespace: str, plan: Plan
) -> None:
    secret = _control_plane(inp, result, cloud, cluster, namespace)
    pools, pools_ready = _pools(inp, result, cloud, plan)
    status = ProvisionedClusterStatus(
        kubeconfig_secret=secret,
        identity=plan.identity,
        reachable=secret is not None,
        pools=pools,
        network=plan.network,
        shared_filesystem_id=plan.shared_filesystem_id,
    )
    result.status.update(status.to_dict())
    result.ready = "True" if secret is not None and pools_ready else "False"
