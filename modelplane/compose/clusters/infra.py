"""What an InferenceCluster composes for its infrastructure, as pure builders.

The InferenceCluster composer decides; these functions build: the provisioning
composite of its cloud (EKSCluster, GKECluster, AKSCluster) from the cluster's
pools and their classes' `provisioning` blocks, the ServingStack composite, the
ClusterProviderConfigs (provider-kubernetes and provider-helm) that reach the
workload cluster, the capacity a pool publishes while the cloud is stocked out, and the Usage that
keeps a replica's workload from outliving the releases it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds import Cloud
from modelplane.api.frozen import thaw
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import Pool
from modelplane.api.objects import condition
from modelplane.api.provisioning import ProviderIdentity, ProvisionedClusterView
from modelplane.api.serving_stack import COMPONENT_RELEASES, NodePoolRef
from modelplane.compose.clusters.managed import resource_name
from modelplane.compose.objects import USAGE_API_VERSION
from modelplane.compose.types import Resource

# The Releases a replica's workload cannot run without (ServingStack chart keys).
WORKLOAD_RELEASES = ("nvidia-dra-driver", "leaderworkerset", "envoy-gateway", "kserve-llmisvc")
# A release only some workloads need, by the release: the wrapped kinds that need it.
RELEASE_ONLY_FOR = {
    "leaderworkerset": frozenset({"LeaderWorkerSet"}),
    "kserve-llmisvc": frozenset({"LLMInferenceService"}),
}


def releases_for(kind: str) -> tuple[str, ...]:
    """The releases of `WORKLOAD_RELEASES` a workload Object wrapping a `kind` needs.

    Every workload needs the DRA driver and the gateway; only a LeaderWorkerSet
    needs the LeaderWorkerSet controller, only an LLMInferenceService KServe's.
    """
    return tuple(
        r for r in WORKLOAD_RELEASES if r not in RELEASE_ONLY_FOR or kind in RELEASE_ONLY_FOR[r]
    )


@dataclass(frozen=True)
class PoolProblem:
    """Why a pool cannot be provisioned: the field and a message naming it."""

    field: str
    message: str


def node_pools(
    cloud: Cloud, pools: list[Pool], classes: Mapping[str, InferenceClassSpec]
) -> tuple[list[dict[str, Any]], list[PoolProblem]]:
    """The provisioning composite's `pools` (wire form) from each pool's class.

    A pool whose class has no `provisioning` block, or one for another cloud,
    cannot be provisioned here: it is reported, never silently dropped.
    """
    out, problems = [], []
    for i, pool in enumerate(pools):
        field = f"spec.pools[{i}].className"
        klass = classes.get(pool.class_name)
        prov = klass.provisioning if klass else None
        block = prov.block() if prov is not None and prov.provider == cloud.name else None
        if block is None:
            problems.append(
                PoolProblem(
                    field,
                    f"{field}: InferenceClass {pool.class_name!r} of pool {pool.name!r} has no "
                    f"spec.provisioning for {cloud.name}; a {cloud.name} cluster can only "
                    "provision pools whose class says how",
                )
            )
            continue
        entry = block.to_dict()
        entry.update(name=pool.name, nodeCount=pool.node_count)
        if klass is not None and klass.pool_capacity(pool.capacity_type) == "Spot":
            entry["spot"] = True  # the same answer the scheduler reads for the pool
        if pool.max_node_count is not None:
            entry["maxNodeCount"] = pool.max_node_count
        out.append(entry)
    return out, problems


def node_pool_refs(cloud: Cloud, cluster: str, pools: list[Pool]) -> list[NodePoolRef]:
    """The node groups / node pools a provisioning composite names (for the stack's Usages).

    The last is what the system nodes belong to: a system node pool, or the
    control plane when the cloud keeps them there.
    """
    pool, system = cloud.node_pool, cloud.system_pool
    refs = [
        NodePoolRef(
            api_version=pool.api_version,
            kind=pool.kind,
            name=resource_name(cluster, "pool", p.name),
            gpu=True,
        )
        for p in pools
    ]
    refs.append(
        NodePoolRef(
            api_version=system.api_version,
            kind=system.kind,
            name=resource_name(cluster, cloud.system_pool_suffix),
        )
    )
    return refs


def provider_configs(
    cluster: str,
    name: str,
    secret: Mapping[str, str],
    identity: ProviderIdentity | None = None,
) -> dict[str, Resource]:
    """provider-kubernetes and provider-helm ClusterProviderConfigs reading one kubeconfig Secret.

    `secret` is `{namespace, name, key}`; the credential itself is never copied.
    With an `identity` (GKE) the kubeconfig names only the server and its CA and
    the providers add the identity's token.
    """
    ref = {"namespace": secret["namespace"], "name": secret["name"], "key": secret["key"]}
    spec: dict[str, Any] = {"credentials": {"source": "Secret", "secretRef": ref}}
    if identity is not None:
        spec["identity"] = identity.to_dict()
    out = {}
    for key, api_version in (
        ("provider-config", c.PROVIDER_KUBERNETES_API_VERSION),
        ("provider-config-helm", c.PROVIDER_HELM_API_VERSION),
    ):
        out[key] = {
            "apiVersion": api_version,
            "kind": "ClusterProviderConfig",
            "metadata": {
                "name": name,
                "labels": {c.LABEL_CLUSTER: cluster, c.LABEL_MANAGED_BY: c.MANAGED_BY},
            },
            "spec": thaw(spec),
        }
    return out


def published_nodes(view: ProvisionedClusterView, pool: Pool) -> int:
    """Nodes a pool offers the scheduler: its capacity, or only the nodes up while stocked out."""
    status = view.pool(pool.name)
    if status is not None and status.stock_out is not None:
        return status.nodes_up or 0
    return pool.capacity_nodes


def stockout_message(view: ProvisionedClusterView, pool: str) -> str | None:
    """One sentence naming the stocked-out pool, zone, accelerator and nodes up (else None)."""
    p = view.pool(pool)
    if p is None or p.stock_out is None:
        return None
    zone = f" in zone {p.stock_out.zone}" if p.stock_out.zone else ""
    what = f" {p.stock_out.accelerator}" if p.stock_out.accelerator else ""
    return (
        f"pool {p.name!r}: the cloud has no{what} capacity{zone}; "
        f"{p.nodes_up or 0} of {p.desired_nodes} node(s) up"
    )


def stockout_messages(view: ProvisionedClusterView) -> list[str]:
    """One sentence per stocked-out pool: pool, zone, accelerator, nodes up."""
    pools = view.status.pools or [] if view.status else []
    return [m for p in pools if (m := stockout_message(view, p.name)) is not None]


def has_serving_stack(cluster: Resource | None) -> bool:
    """Whether an InferenceCluster runs Modelplane's ServingStack (its Releases exist to use).

    Read from its `ServingStackReady` condition: present and not `Disabled`.
    """
    cond = condition(cluster, c.CONDITION_SERVING_STACK_READY)
    return cond is not None and cond.get("reason") != "Disabled"


def present_releases(cluster: Resource | None) -> frozenset[str]:
    """The releases an InferenceCluster's stack lacks because the cluster already runs
    their component (`spec.servingStack.present`); entries that do not read name none."""
    spec = (cluster or {}).get("spec")
    stack = spec.get("servingStack") if isinstance(spec, dict) else None
    present = stack.get("present") if isinstance(stack, dict) else None
    names = present if isinstance(present, list) else []
    return frozenset(COMPONENT_RELEASES[n] for n in names if n in COMPONENT_RELEASES)


def workload_usages(
    namespace: str,
    cluster: str,
    workload_objects: Mapping[str, str],
    absent: frozenset[str] = frozenset(),
) -> dict[str, Resource]:
    """Every Usage keeping the replica's workload Objects from outliving the releases they need.

    `workload_objects` maps each workload Object's name to the kind of the
    manifest it wraps (`releases_for` says which releases that kind needs);
    `absent` are releases the stack does not install (`present_releases`).
    """
    return {
        f"usage-{obj}-{release}": workload_usage(namespace, obj, cluster, release)
        for obj, kind in workload_objects.items()
        for release in releases_for(kind)
        if release not in absent
    }


def workload_usage(namespace: str, workload_object: str, cluster: str, release: str) -> Resource:
    """A Usage keeping a replica's workload Object from outliving one of its cluster's releases.

    Lives beside the workload (the replica's namespace); the Release is in the
    function's system namespace, named as ServingStack names it.
    """
    release_name = resource_name(cluster, release)
    return {
        "apiVersion": USAGE_API_VERSION,
        "kind": "Usage",
        "metadata": {
            "name": resource_name(workload_object, "uses", release),
            "namespace": namespace,
        },
        "spec": {
            "of": {
                "apiVersion": c.PROVIDER_HELM_API_VERSION,
                "kind": "Release",
                "resourceRef": {"name": release_name, "namespace": c.SYSTEM_NAMESPACE},
            },
            "by": {
                "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
                "kind": "Object",
                "resourceRef": {"name": workload_object},
            },
            "reason": "replica workloads go before the cluster's serving stack",
            "replayDeletion": True,
        },
    }
