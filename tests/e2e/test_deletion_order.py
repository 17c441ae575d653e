"""Deletion ordering on the real fleet: a replica's Usage keeps its cache's claim.

A replica that mounts a ModelCache composes a Crossplane Usage: its serving
workload Object uses the cache's claim Object. Crossplane's Usage controller
labels the claim Object in use, and its webhook (served by `crossplane core
start`, registered as a URL webhook) denies the API server every DELETE of it
while the Usage stands. So the cache deleted first keeps its claim, on the
control plane and in the workload cluster, until the replica that mounts it is
gone; then the claim goes too. On a fleet with Crossplane's webhooks off
nothing of this runs: the direct DELETE succeeds and the claim goes at once.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from e2e import manifests as m
from e2e.conftest import CLUSTERS
from e2e.harness import NOTES, World

from modelplane.api.model_cache import HydrateEnv, HydrationResult
from modelplane.dev.kubeapi import Api, condition
from modelplane.kube.client import KubeError

pytestmark = pytest.mark.e2e

NS = "e2e-order"
CACHE = "order-weights"
OBJECT_API = "kubernetes.m.crossplane.io/v1alpha1"
USAGE_API = "protection.crossplane.io/v1beta1"
# What Crossplane v2.3's Usage controller and webhook write on a used resource.
IN_USE = "crossplane.io/in-use"
DELETION_ATTEMPT = "usage.crossplane.io/deletion-attempt-with-policy"


def hydrate(api: Api, ns: str) -> int:
    """Write each completed hydration Job's result as the hydrator would (the Job's pod
    never runs under kwok); how many results were written."""
    written = 0
    for job in api.list("batch/v1", "Job", ns):
        if condition(job, "Complete") != "True":
            continue
        env = {
            e["name"]: e["value"]
            for e in job["spec"]["template"]["spec"]["containers"][0].get("env") or []
            if "value" in e
        }
        name = env.get(HydrateEnv.RESULT_CONFIGMAP)
        cm = api.get("v1", "ConfigMap", name, ns) if name else None
        if cm is None or cm.get("data"):
            continue
        result = HydrationResult(
            source_hash=env.get(HydrateEnv.SOURCE_HASH, ""),
            phase="Ready",
            resolved_digest="e2e:staged",
            bytes_staged="1000000000",
            message="written by the end-to-end suite in place of the hydrator",
        )
        doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}
        api.apply({**doc, "data": result.to_data()}, manager="e2e-hydrator")
        written += 1
    return written


def _manifest_kind(obj: dict[str, Any] | None) -> str:
    manifest = ((obj or {}).get("spec") or {}).get("forProvider", {}).get("manifest") or {}
    return str(manifest.get("kind", ""))


def _describe(fleet: World, names: dict[str, str]) -> str:
    """The Usages, the two Objects and the workload claim, for a timeout's message."""
    lines = []
    for usage in fleet.cp.list(USAGE_API, "Usage", NS):
        conds = {c["type"]: c["status"] for c in usage.get("status", {}).get("conditions", [])}
        meta = usage["metadata"]
        lines.append(f"Usage {meta['name']}: {conds} finalizers={meta.get('finalizers')}")
    for role in ("of", "by"):
        obj = fleet.cp.get(OBJECT_API, "Object", names.get(role, "?"), NS)
        meta = (obj or {}).get("metadata") or {}
        lines.append(
            f"{role} Object {names.get(role)}: "
            + (
                "absent"
                if obj is None
                else f"labels={meta.get('labels')} annotations="
                f"{ {k: v for k, v in (meta.get('annotations') or {}).items() if 'usage' in k} } "
                f"deleting={'deletionTimestamp' in meta}"
            )
        )
    cache = fleet.cp.get(m.API, "ModelCache", CACHE, NS)
    lines.append(f"ModelCache {CACHE}: {'absent' if cache is None else 'present'}")
    left = [o["metadata"] for o in fleet.cp.list(OBJECT_API, "Object", NS)]
    lines.append(
        "Objects: "
        + ", ".join(f"{o['name']}{' (deleting)' * ('deletionTimestamp' in o)}" for o in left)
    )
    wl = names.get("cluster")
    if wl:
        found = fleet.workloads[wl].list("v1", "PersistentVolumeClaim", NS)
        claims = [
            f"{c['metadata']['name']} finalizers={c['metadata'].get('finalizers')} "
            f"deleting={'deletionTimestamp' in c['metadata']}"
            for c in found
        ]
        lines.append(f"claims in {wl}/{NS}: {claims}")
    return "\n".join(lines)


def _ready(obj: dict[str, Any]) -> bool:
    return condition(obj, "Ready") == "True"


def _the_usage(fleet: World, names: dict[str, str]) -> dict[str, Any]:
    """The replica's Usage of its cache's claim, once the Usage controller has it Ready.

    The replica need not be Ready: its serving workload Object exists (and so its
    Usage) once the cache's copy is; the fleet's played claim has no volume, so
    the engine Pod is never scheduled.
    """

    def usage() -> dict[str, Any] | None:
        for wl in CLUSTERS.values():
            hydrate(fleet.workloads[wl], NS)
        found = [u for u in fleet.cp.list(USAGE_API, "Usage", NS) if _ready(u)]
        return found[0] if found else None

    return fleet.settle(
        "the replica's Usage of its cache's claim Ready (the Usage controller runs)",
        usage,
        timeout=300,
        describe=lambda: _describe(fleet, names),
    )


def _check_usage(fleet: World, found: dict[str, Any], names: dict[str, str]) -> None:
    """The Usage is the one an independent reader expects: the replica's serving
    workload uses the claim, on the replica's cluster; the claim is labelled in use."""
    (replica,) = fleet.cp.list(m.API, "ModelReplica", NS)
    names["cluster"] = CLUSTERS[replica["spec"]["clusterName"]]
    names["of"] = found["spec"]["of"]["resourceRef"]["name"]
    names["by"] = found["spec"]["by"]["resourceRef"]["name"]
    used = fleet.cp.get(OBJECT_API, "Object", names["of"], NS)
    user = fleet.cp.get(OBJECT_API, "Object", names["by"], NS)
    assert _manifest_kind(used) == "PersistentVolumeClaim", used
    assert _manifest_kind(user) in ("Deployment", "LeaderWorkerSet"), user
    assert (used or {})["metadata"].get("labels", {}).get(IN_USE) == "true", used
    assert fleet.workloads[names["cluster"]].list("v1", "PersistentVolumeClaim", NS)


def test_a_used_cache_claim_outlives_the_cache_until_its_replica_goes(fleet: World) -> None:
    try:
        _scenario(fleet)
    finally:
        # Whatever happened, nothing of this scenario is left for the next
        # (a pending replica would show in their inventory parity).
        fleet.cp.delete(m.API, "ModelDeployment", "ordered", NS)
        fleet.cp.delete(m.API, "ModelCache", CACHE, NS)


def _scenario(fleet: World) -> None:
    fleet.apply([m.namespace(NS), m.model_cache(CACHE, NS)])
    fleet.apply([m.deployment("ordered", NS, replicas=1, cache=CACHE)])
    names: dict[str, str] = {}
    _check_usage(fleet, _the_usage(fleet, names), names)
    wl = fleet.workloads[names["cluster"]]

    # The webhook denies a direct DELETE of the used claim Object.
    with pytest.raises(KubeError) as denied:
        fleet.cp.delete(OBJECT_API, "Object", names["of"], NS)
    assert "in-use" in str(denied.value), denied.value
    NOTES["deletion order: a DELETE of a used claim Object"] = f"denied (HTTP {denied.value.code})"

    # The cache deleted first: the garbage collector's DELETE of its claim
    # Object is denied too, so the claim stays in the workload cluster.
    fleet.cp.delete(m.API, "ModelCache", CACHE, NS)

    def cache_gone_claim_kept() -> bool | None:
        if fleet.cp.get(m.API, "ModelCache", CACHE, NS) is not None:
            return None
        left = [o["metadata"]["name"] for o in fleet.cp.list(OBJECT_API, "Object", NS)]
        if [n for n in left if n.startswith(f"{CACHE}-")] != [names["of"]]:
            return None  # the cache's other Objects (the unused copy's claim too) still going
        assert wl.list("v1", "PersistentVolumeClaim", NS), "the claim went while mounted"
        return True

    fleet.settle(
        "the ModelCache and its other Objects gone, its used claim Object and claim kept",
        cache_gone_claim_kept,
        describe=lambda: _describe(fleet, names),
    )
    assert fleet.cp.get(OBJECT_API, "Object", names["by"], NS) is not None

    # The user goes: the Usage goes with it, and then the claim (the Usage's
    # replayDeletion re-issues the denied deletion at once, rather than the
    # garbage collector's back-off).
    started = time.monotonic()
    fleet.cp.delete(m.API, "ModelDeployment", "ordered", NS)

    def claim_gone() -> bool | None:
        if fleet.cp.get(OBJECT_API, "Object", names["of"], NS) is not None:
            return None
        return None if wl.list("v1", "PersistentVolumeClaim", NS) else True

    fleet.settle(
        "the claim Object and the workload claim gone after the replica",
        claim_gone,
        timeout=300,
        describe=lambda: _describe(fleet, names),
    )
    assert fleet.cp.get(OBJECT_API, "Object", names["by"], NS) is None
    NOTES["deletion order: the claim gone after its replica's deletion"] = (
        f"{time.monotonic() - started:.1f} s"
    )
