"""ModelReplica test builders: a replica, its cluster, a run, and reading the result.

Shared by this folder's ModelReplica tests (the conftest makes it importable).
"""

from __future__ import annotations

import copy
from typing import Any

from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput, ComposeResult

NS = "team-a"
NAME = "llama-5e1f0c2a"


def replica(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "deploymentName": "llama",
        "clusterName": "east",
        "index": 0,
        "nodePoolName": "l4",
        "deviceRequests": [
            {
                "name": "gpu",
                "deviceClassName": "gpu.nvidia.com",
                "count": 1,
                "selectors": [{"cel": "device.driver == 'gpu.nvidia.com'"}],
            }
        ],
        "workers": {
            "count": 1,
            "template": {
                "spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.9.0"}]}
            },
        },
    }
    base.update(spec)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": base,
    }


def cluster(scheduling: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"source": "Existing", "pools": [{"name": "l4", "className": "l4"}]}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "east"},
        "spec": spec,
        "status": {"providerConfigName": "east", **status},
    }


def placed_by(xr: dict[str, Any]) -> list[dict[str, Any]]:
    """The ModelDeployment that placed replica `xr` (it lists it in status.placements),
    as the replica composer's `deployment` requirement delivers it."""
    name, ns = xr["metadata"]["name"], xr["metadata"]["namespace"]
    return [
        {
            "apiVersion": "modelplane.ai/v1alpha1",
            "kind": "ModelDeployment",
            "metadata": {"name": xr["spec"]["deploymentName"], "namespace": ns, "uid": "d-1"},
            "spec": {},
            "status": {"placements": [{"replicaName": name}]},
        }
    ]


def run(
    xr: dict[str, Any],
    cl: dict[str, Any] | None = None,
    observed: dict[str, Any] | None = None,
    fetched: bool = True,
) -> ComposeResult:
    required = (
        {"cluster": [cl] if cl is not None else [], "deployment": placed_by(xr)} if fetched else {}
    )
    return compose(ComposeInput(composite=xr, observed=observed or {}, required=required))


def cond(res: ComposeResult, type_: str) -> tuple[str, str, str]:
    found = {c.type: c for c in res.conditions}[type_]
    return found.status, found.reason, found.message


def manifest(res: ComposeResult, key: str) -> dict[str, Any]:
    m: dict[str, Any] = res.desired[key].resource["spec"]["forProvider"]["manifest"]
    return m


def observed_from(
    res: ComposeResult, available: bool | None, accepted: bool | None = True
) -> dict[str, Any]:
    """What Crossplane would observe after applying `res`: each Object with status.

    `available` is the workloads' Available condition, `accepted` the HTTPRoute
    parent's Accepted condition (None: no such status reported).
    """
    out = {}
    for key, d in res.desired.items():
        obj = copy.deepcopy(d.resource)
        obj["metadata"]["uid"] = "1234"
        wrapped = copy.deepcopy(obj["spec"]["forProvider"]["manifest"])
        if wrapped["kind"] in ("Deployment", "LeaderWorkerSet") and available is not None:
            wrapped["status"] = {
                "conditions": [{"type": "Available", "status": "True" if available else "False"}]
            }
            if wrapped["kind"] == "Deployment":
                # A Deployment is judged by its counts: every replica updated and available.
                n = wrapped["spec"].get("replicas", 1) if available else 0
                wrapped["status"].update(
                    {"replicas": n, "updatedReplicas": n, "availableReplicas": n}
                )
        if wrapped["kind"] == "HTTPRoute" and accepted is not None:
            wrapped["status"] = {"parents": [parent(accepted)]}
        obj["status"] = {
            "atProvider": {"manifest": wrapped},
            "conditions": [{"type": "Synced", "status": "True"}],
        }
        out[key] = obj
    return out


def parent(accepted: bool, reason: str = "Accepted", message: str = "") -> dict[str, Any]:
    return {
        "parentRef": {"name": "modelplane-inference", "namespace": "modelplane-system"},
        "controllerName": "example.com/gateway-controller",
        "conditions": [
            {
                "type": "Accepted",
                "status": "True" if accepted else "False",
                "reason": reason,
                "message": message,
            }
        ],
    }


def ready_caches(replica: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The required ModelCache of a replica that names one, with a Ready copy on its cluster
    (in the cache's own PVC), as the `model-cache` requirement; empty when it names none."""
    spec = replica["spec"]
    if not spec.get("caches"):
        return {}
    name = spec["caches"][0]["name"]
    cluster = spec["clusterName"]
    return {
        "model-cache": [
            {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "ModelCache",
                "metadata": {"name": name, "namespace": replica["metadata"]["namespace"]},
                "spec": {"storage": {"backend": "PVC"}},
                "status": {"clusters": [{"cluster": cluster, "phase": "Ready", "claimName": name}]},
            }
        ]
    }
