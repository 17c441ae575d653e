"""What providers and workload clusters would report, simulated.

provider-kubernetes Objects become Synced and Ready, their
`status.atProvider.manifest` the wrapped manifest with a plausible status for
its kind (a Deployment or LeaderWorkerSet Available with every replica ready,
a PersistentVolumeClaim Bound, a Job Complete; Envoy Gateway resources on the
control plane as `gateway_sim.py` describes); an Object whose provider
config does not exist fails to sync, as the real provider would. provider-helm
Releases become deployed and Ready. Everything simulated is derived from the
object itself (timestamps from its creationTimestamp), so a second pass over
an unchanged object changes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from modelplane.local.conditions import Clock, set_condition
from modelplane.local.gateway_sim import GATEWAY_STATUS
from modelplane.local.loader import scope_of
from modelplane.local.simulate_cloud import simulate_cloud
from modelplane.local.store import Key, Obj, ObjectStore

OBJECT_GROUPS = ("kubernetes.m.crossplane.io", "kubernetes.crossplane.io")
RELEASE_GROUPS = ("helm.m.crossplane.io", "helm.crossplane.io")


def _group(obj: Obj) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _replicas(manifest: Obj) -> int:
    value = (manifest.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) and value >= 0 else 1


def _deployment(manifest: Obj, at: str) -> dict[str, Any]:
    n = _replicas(manifest)
    return {
        "observedGeneration": 1,
        "replicas": n,
        "updatedReplicas": n,
        "readyReplicas": n,
        "availableReplicas": n,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": at,
                "lastTransitionTime": at,
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "True",
                "lastUpdateTime": at,
                "lastTransitionTime": at,
                "reason": "NewReplicaSetAvailable",
                "message": "ReplicaSet has successfully progressed.",
            },
        ],
    }


def _leader_worker_set(manifest: Obj, at: str) -> dict[str, Any]:
    n = _replicas(manifest)
    return {
        "replicas": n,
        "readyReplicas": n,
        "updatedReplicas": n,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": at,
                "reason": "AllGroupsReady",
                "message": "All replicas are ready",
            }
        ],
    }


def _pvc(manifest: Obj, at: str) -> dict[str, Any]:
    spec = manifest.get("spec") or {}
    status: dict[str, Any] = {"phase": "Bound"}
    if spec.get("accessModes"):
        status["accessModes"] = list(spec["accessModes"])
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage:
        status["capacity"] = {"storage": storage}
    return status


def _job(manifest: Obj, at: str) -> dict[str, Any]:
    return {
        "startTime": at,
        "completionTime": at,
        "succeeded": 1,
        "conditions": [
            {
                "type": "SuccessCriteriaMet",
                "status": "True",
                "lastProbeTime": at,
                "lastTransitionTime": at,
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
            },
            {
                "type": "Complete",
                "status": "True",
                "lastProbeTime": at,
                "lastTransitionTime": at,
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
            },
        ],
    }


def _namespace(manifest: Obj, at: str) -> dict[str, Any]:
    return {"phase": "Active"}


def _llm_inference_service(manifest: Obj, at: str) -> dict[str, Any]:
    meta = manifest.get("metadata") or {}
    host = f"{meta.get('name')}-kserve-workload-svc.{meta.get('namespace')}.svc.cluster.local"
    ready = {"status": "True", "lastTransitionTime": at}
    return {
        "url": f"http://{host}",
        "address": {"url": f"http://{host}"},
        "conditions": [
            {"type": t, **ready} for t in ("MainWorkloadReady", "WorkloadsReady", "Ready")
        ],
    }


WORKLOAD_STATUS: dict[tuple[str, str], Callable[[Obj, str], dict[str, Any]]] = {
    ("apps", "Deployment"): _deployment,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _leader_worker_set,
    ("", "PersistentVolumeClaim"): _pvc,
    ("batch", "Job"): _job,
    ("", "Namespace"): _namespace,
    **GATEWAY_STATUS,
    ("serving.kserve.io", "LLMInferenceService"): _llm_inference_service,
}
"""Plausible observed status per wrapped kind; kinds not listed just exist."""


def observed_manifest(manifest: Obj, at: str) -> Obj:
    """The wrapped manifest as the workload cluster would return it."""
    out = copy.deepcopy(manifest)
    meta = out.setdefault("metadata", {})
    if scope_of(out) == "Namespaced" and not meta.get("namespace"):
        meta["namespace"] = "default"
    make = WORKLOAD_STATUS.get((_group(out), str(out.get("kind", ""))))
    if make is not None:
        out["status"] = _warming_up(out, make(out, at))
    return out


WARMING_UP_ANNOTATION = "render.modelplane.ai/warming-up"
"""A pod-template annotation (value "true") that keeps a simulated workload warming up."""


def _warming_up(workload: Obj, status: dict[str, Any]) -> dict[str, Any]:
    """The status of a workload whose pods never become ready, if its template asks for it.

    Render only: it lets an example show a replica that is placed but not yet
    serving (the engine still loading weights). Real clusters ignore it.
    """
    spec = workload.get("spec") or {}
    template = spec.get("template") or (spec.get("leaderWorkerTemplate") or {}).get(
        "workerTemplate"
    )
    annotations = ((template or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(WARMING_UP_ANNOTATION) != "true" or "conditions" not in status:
        return status
    status = {k: v for k, v in status.items() if k not in ("readyReplicas", "availableReplicas")}
    status["conditions"] = [
        {**x, "status": "False", "reason": "MinimumReplicasUnavailable", "message": "warming up"}
        if x.get("type") == "Available"
        else x
        for x in status["conditions"]
    ]
    return status


def _provider_config_exists(store: ObjectStore, obj: Obj) -> tuple[bool, str]:
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {"name": "default"}
    name = str(ref.get("name", "default"))
    api_version = str(obj.get("apiVersion", ""))
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    if _group(obj).endswith(".m.crossplane.io"):
        kind = str(ref.get("kind") or "ClusterProviderConfig")
        ns = namespace if kind == "ProviderConfig" else ""
    else:
        kind, ns = "ProviderConfig", ""
    if store.get(Key(api_version, kind, ns, name)) is not None:
        return True, ""
    where = f"{ns}/{name}" if ns else name
    return False, f"cannot get referenced {kind} {where}: not found"


def _simulate_object(store: ObjectStore, obj: Obj, clock: Clock) -> None:
    ok, message = _provider_config_exists(store, obj)
    if not ok:
        set_condition(obj, "Synced", "False", "ReconcileError", message, clock)
        return
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    if not isinstance(manifest, dict):
        set_condition(
            obj, "Synced", "False", "ReconcileError", "spec.forProvider.manifest: required", clock
        )
        return
    at = str((obj.get("metadata") or {}).get("creationTimestamp") or clock.stamp())
    status = obj.setdefault("status", {})
    status["atProvider"] = {"manifest": observed_manifest(manifest, at)}
    set_condition(obj, "Synced", "True", "ReconcileSuccess", "", clock)
    set_condition(obj, "Ready", "True", "Available", "", clock)


def _simulate_release(obj: Obj, clock: Clock) -> None:
    chart = ((obj.get("spec") or {}).get("forProvider") or {}).get("chart") or {}
    at_provider: dict[str, Any] = {
        "state": "deployed",
        "revision": 1,
        "releaseDescription": "Install complete",
    }
    if chart.get("version"):
        at_provider["version"] = str(chart["version"])
    status = obj.setdefault("status", {})
    status["atProvider"] = at_provider
    status["synced"] = True
    set_condition(obj, "Synced", "True", "ReconcileSuccess", "", clock)
    set_condition(obj, "Ready", "True", "Available", "", clock)


def simulate(store: ObjectStore, clock: Clock) -> None:
    """Update, in place, every provider object in the store as its provider would."""
    for _, obj in store.items():
        group, kind = _group(obj), obj.get("kind")
        if group in OBJECT_GROUPS and kind == "Object":
            _simulate_object(store, obj, clock)
        elif group in RELEASE_GROUPS and kind == "Release":
            _simulate_release(obj, clock)
    simulate_cloud(store, clock)
