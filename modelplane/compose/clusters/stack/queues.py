"""The queues and PriorityClasses a cluster's pods name, composed from its `spec.scheduling`.

A replica's pods carry the queue its cluster's `defaultLabels` /
`defaultAnnotations` name, rendered for the replica's namespace, deployment and
cluster (compose/replica/schedulers.py). The stack renders the same templates
(`SchedulingConfig.queue_templates`, `render_template`) for every ModelReplica
placed on the cluster, so each queue a pod names exists:

- **KAI** (`scheduling.run.ai/v2` Queue, cluster-scoped): pods go to leaf
  queues, so each rendered name is a leaf under one parent queue `modelplane`;
  quotas and limits are unlimited (-1): the fleet scheduler already decides
  what fits each pool, KAI orders and gangs what it placed;
- **Volcano** (`scheduling.volcano.sh/v1beta1` Queue, cluster-scoped), reclaimable,
  weight 1;
- **Kueue**: one ResourceFlavor and one ClusterQueue `modelplane` admitting every
  namespace, and a LocalQueue per rendered name in the replica's namespace.
  Kueue admits a workload only when every resource it requests is covered, so
  the ClusterQueue covers cpu and memory with a quota no cluster reaches:
  Modelplane uses Kueue as the admission gate and order, the fleet scheduler
  owns capacity (GPUs are DRA claims, which Kueue does not count by default).

Only for the systems the stack installs (`spec.queues`): a platform team that
runs its own scheduler keeps its own queues. PriorityClasses come from
`spec.scheduling.priorityClasses` whatever the scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.inference_cluster import render_template
from modelplane.api.objects import LABEL_VALUE_PATTERN, MAX_LABEL_VALUE, label_value
from modelplane.api.readers import ObservedModelReplica
from modelplane.api.serving_stack import PriorityClassSpec, QueueSystem, ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.objects import Item, wrap
from modelplane.compose.readiness import EXISTS
from modelplane.compose.types import Resource

PARENT_QUEUE = "modelplane"
CLUSTER_QUEUE = "modelplane"
RESOURCE_FLAVOR = "modelplane"
KAI_QUEUE_API_VERSION = "scheduling.run.ai/v2"
VOLCANO_QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
# Far above any cluster: Kueue gates and orders, the fleet scheduler sizes.
KUEUE_QUOTA = {"cpu": "1000000", "memory": "1000Ti"}


@dataclass(frozen=True)
class QueueName:
    """One queue a replica's pods name: the system, its name, the replica's namespace."""

    system: QueueSystem
    name: str
    namespace: str


def queue_names(
    spec: ServingStackSpec, replicas: Iterable[ObservedModelReplica]
) -> list[QueueName]:
    """Every queue the replicas on this cluster name, rendered as their pods render it.

    A name that is not a valid label value is skipped: the replica holds itself
    with InvalidSchedulingTemplate and its pods never name it.
    """
    found: set[QueueName] = set()
    for replica in replicas:
        for queue in spec.queues or []:
            name = render_template(
                queue.template, replica.namespace, replica.deployment, spec.cluster_name
            )
            if len(name) <= MAX_LABEL_VALUE and LABEL_VALUE_PATTERN.match(name):
                found.add(QueueName(queue.system, name, replica.namespace))
    return sorted(found, key=lambda q: (q.system, q.namespace, q.name))


def _kai_queue(name: str, parent: str | None) -> Resource:
    spec: dict[str, Any] = {"resources": {k: dict(UNLIMITED) for k in ("gpu", "cpu", "memory")}}
    if parent is not None:
        spec["parentQueue"] = parent
    return {
        "apiVersion": KAI_QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def _volcano_queue(name: str) -> Resource:
    return {
        "apiVersion": VOLCANO_QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": True},
    }


def _local_queue(name: str, namespace: str) -> Resource:
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": CLUSTER_QUEUE},
    }


def _kueue_shared() -> list[tuple[str, Resource]]:
    flavor = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": RESOURCE_FLAVOR},
    }
    resources = [{"name": r, "nominalQuota": q} for r, q in KUEUE_QUOTA.items()]
    cluster_queue = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": CLUSTER_QUEUE},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": list(KUEUE_QUOTA),
                    "flavors": [{"name": RESOURCE_FLAVOR, "resources": resources}],
                }
            ],
        },
    }
    return [("kueue-resource-flavor", flavor), ("kueue-cluster-queue", cluster_queue)]


def _shared(systems: set[QueueSystem]) -> list[tuple[str, Resource]]:
    """The cluster-wide objects each installed system's queues hang from."""
    out: list[tuple[str, Resource]] = []
    if "KAI" in systems:
        out.append(("kai-parent-queue", _kai_queue(PARENT_QUEUE, None)))
    if "Kueue" in systems:
        out += _kueue_shared()
    return out


def _leaf(queue: QueueName) -> tuple[str, Resource]:
    if queue.system == "KAI":
        return f"kai-queue-{queue.name}", _kai_queue(queue.name, PARENT_QUEUE)
    if queue.system == "Volcano":
        return f"volcano-queue-{queue.name}", _volcano_queue(queue.name)
    return (
        f"kueue-local-queue-{queue.namespace}-{queue.name}",
        _local_queue(queue.name, queue.namespace),
    )


def priority_class(pc: PriorityClassSpec) -> Resource:
    """A `scheduling.k8s.io/v1` PriorityClass from its declaration."""
    out: dict[str, Any] = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": pc.name},
        "value": pc.value,
    }
    if pc.preemption_policy is not None:
        out["preemptionPolicy"] = pc.preemption_policy
    if pc.description is not None:
        out["description"] = pc.description
    return out


def scheduling_objects(
    spec: ServingStackSpec, namespace: str, replicas: Iterable[ObservedModelReplica]
) -> dict[str, Resource]:
    """The queues and PriorityClasses, each wrapped in a provider-kubernetes Object."""
    systems = {q.system for q in spec.queues or []}
    manifests = _shared(systems) + [_leaf(q) for q in queue_names(spec, replicas)]
    manifests += [
        (f"priority-class-{p.name}", priority_class(p)) for p in spec.priority_classes or []
    ]
    out = {}
    for key, manifest in manifests:
        item = Item(key, resource_name(spec.cluster_name, key), manifest, EXISTS, manifest["kind"])
        out[key] = wrap(
            item, namespace, spec.provider_config_name, labels(spec.cluster_name, "scheduling")
        )
    return out


def replicas_label(cluster: str) -> dict[str, str]:
    """The label selector of the ModelReplicas placed on `cluster`."""
    return {c.LABEL_CLUSTER: label_value(cluster)}
