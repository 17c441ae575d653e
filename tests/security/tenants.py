"""What the hostile-tenant render tests share: the example fleets, a hostile
namespace's objects, and the readings they compare."""

from __future__ import annotations

import copy
from typing import Any

from modelplane.api import constants as c
from modelplane.local import ControlPlane, RenderResult, load_paths

HOSTILE = "mallory"
OBJECT_API = "kubernetes.m.crossplane.io/v1alpha1"
H100 = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'
L4 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
SYSTEM_CRITICAL = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "system-node-critical"},
    "value": 2000001000,
}


def namespace(name: str = HOSTILE) -> dict[str, Any]:
    """A Namespace object."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def deployment(
    name: str,
    selector: str,
    *,
    count: int = 8,
    priority: str | None = None,
    pod: dict[str, Any] | None = None,
    ns: str = HOSTILE,
) -> dict[str, Any]:
    """A one-replica ModelDeployment of namespace `ns` asking `count` devices `selector` picks."""
    spec: dict[str, Any] = {
        "replicas": 1,
        "nodeSelector": {
            "devices": [{"name": "gpu", "count": count, "selectors": [{"cel": selector}]}]
        },
        "workers": {
            "count": 1,
            "template": {
                "spec": {
                    "containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}],
                    **(pod or {}),
                }
            },
        },
    }
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelDeployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def quota(name: str, limits: list[dict[str, Any]], ns: str = HOSTILE, **extra: Any) -> Any:
    """A FleetQuota of namespace `ns`."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": "FleetQuota",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"limits": limits, **extra},
    }


def render(example: str, *extra: dict[str, Any]) -> RenderResult:
    """`example` rendered to its fixed point with `extra` objects added."""
    return ControlPlane([*load_paths([example]), *copy.deepcopy(list(extra))]).run(60)


def get(rendered: RenderResult, kind: str, ns: str, name: str) -> dict[str, Any]:
    """A Modelplane object of the render; it must exist."""
    obj = rendered.get(c.API_VERSION, kind, name, ns)
    assert obj is not None, (kind, ns, name)
    return obj


def condition(obj: dict[str, Any], type_: str) -> tuple[str, str, str]:
    """(status, reason, message) of the object's condition `type_`."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == type_:
            return cond["status"], cond["reason"], cond.get("message", "")
    raise AssertionError(f"no {type_} condition")


def warned(rendered: RenderResult, kind: str, ns: str, name: str, reason: str) -> bool:
    """Whether the render recorded a warning event `reason` on the object."""
    events = rendered.events.get((c.API_VERSION, kind, ns, name), [])
    return any(e.type == "Warning" and e.reason == reason for e in events)


def replicas(rendered: RenderResult, ns: str) -> list[dict[str, Any]]:
    """The ModelReplicas of namespace `ns`."""
    return list(rendered.store.list(c.API_VERSION, "ModelReplica", ns))


def placements(rendered: RenderResult, ns: str) -> list[tuple[str, str, str]]:
    """(replica, deployment, cluster) of each ModelReplica of `ns`, sorted."""
    return sorted(
        (r["metadata"]["name"], r["spec"]["deploymentName"], r["spec"]["clusterName"])
        for r in replicas(rendered, ns)
    )


def workloads(rendered: RenderResult, ns: str) -> dict[str, Any]:
    """What reaches workload clusters for namespace `ns`: each provider Object's spec,
    by name, whose manifest is in `ns` or is the Namespace `ns` itself."""
    out = {}
    for obj in rendered.store.list(OBJECT_API, "Object", None):
        manifest = obj["spec"]["forProvider"]["manifest"]
        meta = manifest.get("metadata", {})
        if meta.get("namespace") == ns or (
            manifest.get("kind") == "Namespace" and meta.get("name") == ns
        ):
            out[obj["metadata"]["name"]] = obj["spec"]
    return out
