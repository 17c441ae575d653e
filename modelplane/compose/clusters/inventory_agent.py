"""The inventory agent the ServingStack installs on its workload cluster.

One Deployment running the function image's `modelplane inventory`
(`modelplane/agent`) in `modelplane-system`, with exactly the rights it needs:
a ClusterRole to get/list/watch Nodes, Pods and ResourceSlices, and a Role to
get/create/patch only the ConfigMap `modelplane-inventory` it writes (server-
side apply creates it under that name). The container runs as non-root with a
read-only root filesystem, no privilege escalation and no capabilities; its
settings travel as whole arguments (validated durations), never through a shell.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.serving_stack import InventoryConfig, ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.objects import Item, wrap
from modelplane.compose.readiness import DEPLOYMENT_ROLLED_OUT, EXISTS
from modelplane.compose.types import Resource

AGENT_NAME = c.INVENTORY_CONFIGMAP  # the ServiceAccount, roles and Deployment share it
AGENT_LABELS = {"app.kubernetes.io/name": AGENT_NAME, c.LABEL_MANAGED_BY: c.MANAGED_BY}
RUN_AS = 65532  # the image's numeric `nonroot` user
RESOURCES = {
    "requests": {"cpu": "10m", "memory": "96Mi"},
    "limits": {"cpu": "250m", "memory": "256Mi"},
}
DEPLOYMENT_KEY = "inventory-agent"
RBAC = "rbac.authorization.k8s.io/v1"
READ = ["get", "list", "watch"]


def _meta(kind_namespaced: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": AGENT_NAME, "labels": dict(AGENT_LABELS)}
    if kind_namespaced:
        meta["namespace"] = c.INVENTORY_NAMESPACE
    return meta


def _subjects() -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": c.INVENTORY_NAMESPACE}]


def _rbac() -> list[tuple[str, Resource]]:
    cluster_role = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": _meta(False),
        "rules": [
            {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": READ},
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": READ},
        ],
    }
    role = {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": _meta(True),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [c.INVENTORY_CONFIGMAP],
                "verbs": ["get", "create", "patch"],
            }
        ],
    }
    return [
        ("inventory-cluster-role", cluster_role),
        (
            "inventory-cluster-role-binding",
            {
                "apiVersion": RBAC,
                "kind": "ClusterRoleBinding",
                "metadata": _meta(False),
                "roleRef": {
                    "apiGroup": RBAC.split("/")[0],
                    "kind": "ClusterRole",
                    "name": AGENT_NAME,
                },
                "subjects": _subjects(),
            },
        ),
        ("inventory-role", role),
        (
            "inventory-role-binding",
            {
                "apiVersion": RBAC,
                "kind": "RoleBinding",
                "metadata": _meta(True),
                "roleRef": {"apiGroup": RBAC.split("/")[0], "kind": "Role", "name": AGENT_NAME},
                "subjects": _subjects(),
            },
        ),
    ]


def deployment(config: InventoryConfig, image: str) -> Resource:
    """The agent's Deployment: one replica of `modelplane inventory` in `image`, locked down."""
    container = {
        "name": "agent",
        "image": image,
        "command": ["modelplane", "inventory"],
        "args": [f"--interval={config.interval}", f"--grace={config.unschedulable_after}"]
        + (["--engine-metrics"] if config.engine_metrics else []),
        "resources": RESOURCES,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    selector = {"app.kubernetes.io/name": AGENT_NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(True),
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": dict(AGENT_LABELS)},
                "spec": {
                    "serviceAccountName": AGENT_NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                },
            },
        },
    }


def agent_objects(spec: ServingStackSpec, namespace: str, image: str) -> dict[str, Resource]:
    """The agent's namespace, ServiceAccount, RBAC and Deployment, as provider-kubernetes
    Objects on the cluster's provider config (none when the inventory is disabled).

    The agent runs the cluster's `modelplaneImage` when set, else `image` (the function's).
    """
    if not spec.inventory.enabled:
        return {}
    cluster = spec.cluster_name
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": c.INVENTORY_NAMESPACE}}
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(True)}
    items = [
        # Shared with anything else Modelplane puts there: never deleted with the stack.
        Item(
            "inventory-namespace",
            resource_name(cluster, "inventory-namespace"),
            ns,
            EXISTS,
            "Namespace",
            deletable=False,
        ),
        Item(
            "inventory-service-account",
            resource_name(cluster, "inventory-sa"),
            sa,
            EXISTS,
            "ServiceAccount",
        ),
    ]
    for key, manifest in _rbac():
        items.append(
            Item(key, resource_name(cluster, key), manifest, EXISTS, str(manifest["kind"]))
        )
    items.append(
        Item(
            DEPLOYMENT_KEY,
            resource_name(cluster, DEPLOYMENT_KEY),
            deployment(spec.inventory, spec.modelplane_image or image),
            DEPLOYMENT_ROLLED_OUT,
            "Deployment",
        )
    )
    obj_labels = labels(cluster, "inventory-agent")
    return {i.key: wrap(i, namespace, spec.provider_config_name, obj_labels) for i in items}
