"""End to end on a real fleet: the package installs, a fleet becomes Ready, replicas land for real.

Scenarios run in file order on the one fleet of the run (`world`); each uses
its own namespace and cluster names.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e import manifests as m
from e2e import parity
from e2e.conftest import CLASS, CLASS8, CLUSTERS, e2e_pools
from e2e.harness import COUNTS, TIMINGS, World

from modelplane.api.kinds import KINDS
from modelplane.dev import xpkg
from modelplane.dev.kubeapi import condition

pytestmark = pytest.mark.e2e
# The labels LeaderWorkerSet's pod webhook gives a group's Pods.
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def test_the_package_installs(world: World) -> None:
    fn = world.cp.get("pkg.crossplane.io/v1", "Function", xpkg.FUNCTION_NAME)
    conf = world.cp.get("pkg.crossplane.io/v1", "Configuration", xpkg.CONFIGURATION_NAME)
    assert condition(fn, "Healthy") == "True"
    assert condition(conf, "Healthy") == "True"
    xrds = world.cp.list("apiextensions.crossplane.io/v2", "CompositeResourceDefinition")
    assert len(xrds) == len(KINDS)
    assert {condition(x, "Established") for x in xrds} == {"True"}
    compositions = world.cp.list("apiextensions.crossplane.io/v1", "Composition")
    assert len(compositions) == len(KINDS)
    functions = {f["metadata"]["name"] for f in world.cp.list("pkg.crossplane.io/v1", "Function")}
    refs = {
        step["functionRef"]["name"] for comp in compositions for step in comp["spec"]["pipeline"]
    }
    assert refs and refs <= functions


def test_the_fleet_becomes_ready_and_publishes_its_pools(fleet: World) -> None:
    def observed(name: str) -> dict[str, Any] | None:
        ready = fleet.ready(m.API, "InferenceCluster", name)
        # The inventory agent (a process of the fleet) has reported the nodes.
        return ready if ready and condition(ready, "HardwareDrift") == "False" else None

    for name in CLUSTERS:
        ready = fleet.settle(
            f"InferenceCluster {name} Ready, its inventory observed without drift",
            lambda n=name: observed(n),
        )
        pools = ready["status"]["gpuPools"]
        assert sorted((p["name"], p["className"], p["nodes"]) for p in pools) == [
            ("l4", CLASS, 4),
            ("l4x8", CLASS8, 1),
        ]


def _replicas(world: World, ns: str, deployment: str) -> list[dict[str, Any]]:
    return [
        r
        for r in world.cp.list(m.API, "ModelReplica", ns)
        if r["metadata"]["name"].startswith(f"{deployment}-")
    ]


def test_a_deployment_lands_in_the_workload_clusters(fleet: World) -> None:
    ns = "e2e-one"
    fleet.apply([m.namespace(ns), m.deployment("qwen", ns, replicas=2)])
    replicas = fleet.settle(
        "two ModelReplicas composed",
        lambda: r if len(r := _replicas(fleet, ns, "qwen")) == 2 else None,
    )
    clusters = sorted(r["spec"]["clusterName"] for r in replicas)
    assert clusters == sorted(CLUSTERS)  # spread over both clusters' l4 pools
    for replica in replicas:
        api = fleet.workloads[CLUSTERS[replica["spec"]["clusterName"]]]
        name = replica["metadata"]["name"]

        def landed(api: Any = api, name: str = name) -> bool | None:
            kinds = [
                api.get("apps/v1", "Deployment", name, ns),
                api.get("v1", "Service", f"{name}-engine", ns),
                api.get("gateway.networking.k8s.io/v1", "HTTPRoute", name, ns),
            ]
            claims = api.list("resource.k8s.io/v1", "ResourceClaimTemplate", ns)
            mine = [c for c in claims if c["metadata"]["name"].startswith(f"{name}-")]
            return True if all(kinds) and mine else None

        fleet.settle(f"{name}'s objects in {CLUSTERS[replica['spec']['clusterName']]}", landed)
    ready = fleet.settle(
        "ModelDeployment qwen Ready", lambda: fleet.ready(m.API, "ModelDeployment", "qwen", ns)
    )
    TIMINGS.setdefault("dev up → first Ready ModelDeployment", time.monotonic() - fleet.started)
    assert condition(ready, "Scheduled") == "True"


def test_a_multi_node_replica_is_a_leader_worker_set(fleet: World) -> None:
    ns = "e2e-multi"
    fleet.apply(
        [
            m.namespace(ns),
            m.deployment("big", ns, replicas=1, topology={"tensor": 1, "pipeline": 2}),
        ]
    )
    replica = fleet.settle(
        "one ModelReplica composed",
        lambda: r[0] if len(r := _replicas(fleet, ns, "big")) == 1 else None,
    )
    api = fleet.workloads[CLUSTERS[replica["spec"]["clusterName"]]]
    lws = fleet.settle(
        "the LeaderWorkerSet in the workload cluster",
        lambda: api.get(
            "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", replica["metadata"]["name"], ns
        ),
    )
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    started = time.monotonic()

    def group() -> dict[str, str] | None:
        # The real controller's pod webhook labels each Pod with its place in the
        # group; its worker StatefulSet's Pod comes from kube-controller-manager.
        pods = api.list("v1", "Pod", ns, selector=f"{LWS_NAME}={lws['metadata']['name']}")
        ready = {
            str(p["metadata"]["labels"].get(LWS_WORKER_INDEX)): p["spec"].get("nodeName") or ""
            for p in pods
            if condition(p, "Ready") == "True"
        }
        return ready if set(ready) == {"0", "1"} else None

    nodes = fleet.settle("the group's leader and worker Pods Ready", group)
    assert nodes["0"] != nodes["1"], nodes  # one GPU each, on one-GPU nodes
    fleet.settle(
        "ModelDeployment big Ready from its LeaderWorkerSet",
        lambda: fleet.ready(m.API, "ModelDeployment", "big", ns),
    )
    available = api.get(
        "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", lws["metadata"]["name"], ns
    )
    assert condition(available, "Available") == "True"
    TIMINGS["LeaderWorkerSet → leader and worker Ready, deployment Ready"] = (
        time.monotonic() - started
    )
    COUNTS["multi-node group: Pods made by the LeaderWorkerSet controller"] = len(nodes)


def test_a_model_cache_creates_its_claim_and_job(fleet: World) -> None:
    ns = "e2e-cache"
    fleet.apply([m.namespace(ns), m.model_cache("weights", ns)])

    def staged() -> bool | None:
        for api in (fleet.workloads[wl] for wl in CLUSTERS.values()):
            if not api.list("v1", "PersistentVolumeClaim", ns) or not api.list(
                "batch/v1", "Job", ns
            ):
                return None
        return True

    fleet.settle("a PVC and a hydration Job in each workload cluster", staged)


EG_API = "gateway.envoyproxy.io/v1alpha1"


def test_a_model_service_gives_replicas_it_cannot_reach_weight_0(fleet: World) -> None:
    """This fleet's clusters run the platform's serving stack (`servingStack.enabled:
    false`): Modelplane mints no client certificate for their Gateways, so the fleet
    gateway cannot reach a replica there. The service lists each Ready replica's
    endpoint at weight 0 saying why (issue 41, item 4), composes nothing toward it, and
    no Secret holding a key lands in the tenant's namespace (issue 40, finding 1)."""
    ns = "e2e-routing"
    fleet.apply(
        [m.namespace(ns), m.deployment("svc", ns, replicas=1, labels={"model": "svc-model"})]
    )
    # The namespace the Envoy Gateway Release would create (no Helm here).
    fleet.apply([m.namespace("envoy-gateway-system"), m.inference_gateway()])
    fleet.apply([m.model_service("svc", ns, "svc-model")])

    def judged() -> dict[str, Any] | None:
        svc = fleet.cp.get(m.API, "ModelService", "svc", ns) or {}
        listed = (svc.get("status") or {}).get("endpoints") or []
        return svc if listed and condition(svc, "EndpointsRoutable") == "False" else None

    svc = fleet.settle("the ModelService judges its replica's endpoint", judged)
    (entry,) = svc["status"]["endpoints"]
    assert entry["weight"] == 0 and "no hop credentials" in entry["message"], entry
    reasons = {x["type"]: x["reason"] for x in svc["status"]["conditions"]}
    assert reasons["EndpointsRoutable"] == "EndpointUnreachable"
    backends = fleet.cp.list(EG_API, "Backend", ns) + fleet.cp.list(
        EG_API, "Backend", "modelplane-system", f"modelplane.ai/service-namespace={ns}"
    )
    assert backends == []
    keys = [s for s in fleet.cp.list("v1", "Secret", ns) if "tls.key" in (s.get("data") or {})]
    assert keys == []


def test_render_parity(fleet: World, tmp_path: Path) -> None:
    """The same inputs rendered offline predict what the real fleet holds (e2e-one)."""
    ns = "e2e-one"
    fleet.settle(
        "ModelDeployment qwen Ready", lambda: fleet.ready(m.API, "ModelDeployment", "qwen", ns)
    )
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    docs = [
        m.namespace("modelplane-system"),
        *[
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{wl}-kubeconfig", "namespace": "modelplane-system"},
                "type": "Opaque",
                "stringData": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
            }
            for wl in CLUSTERS.values()
        ],
        m.inference_class(CLASS),
        m.inference_class(CLASS8, gpus=8),
        *[
            m.inference_cluster(name, fleet.secret_ref(wl), CLASS, pools=e2e_pools())
            for name, wl in CLUSTERS.items()
        ],
        m.namespace(ns),
        m.deployment("qwen", ns, replicas=2),
    ]
    (inputs / "fleet.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    out = tmp_path / "out"
    parity.render(inputs, out)
    counts: dict[str, int] = {}
    diffs: list[parity.Difference] = []

    def check(part: str, api: Any) -> None:
        n, found = parity.differences(out, part, api)
        counts[part] = n
        diffs.extend(found)

    # Settle once more so every composite has had a reconcile after its last change.
    fleet.settle("a quiet round", lambda: True if fleet.play() == 0 else None, 60)
    check("control-plane", fleet.cp)
    for name, wl in CLUSTERS.items():
        check(f"clusters/{name}", fleet.workloads[wl])
    COUNTS["render parity: objects compared"] = sum(counts.values())
    assert counts["control-plane"] >= 15 and all(counts[f"clusters/{n}"] >= 5 for n in CLUSTERS)
    assert not diffs, "\n".join(str(d) for d in diffs)


def test_deleting_the_deployment_removes_its_objects_from_the_workload_clusters(
    fleet: World,
) -> None:
    ns = "e2e-one"
    before = {wl: fleet.workloads[wl].list("apps/v1", "Deployment", ns) for wl in CLUSTERS.values()}
    assert all(before.values())
    assert fleet.cp.delete(m.API, "ModelDeployment", "qwen", ns)

    def gone() -> bool | None:
        if fleet.cp.list(m.API, "ModelReplica", ns):
            return None
        for api in fleet.workloads.values():
            kinds = [
                api.list("apps/v1", "Deployment", ns),
                api.list("v1", "Service", ns),
                api.list("gateway.networking.k8s.io/v1", "HTTPRoute", ns),
                api.list("resource.k8s.io/v1", "ResourceClaimTemplate", ns),
            ]
            if any(kinds):
                return None
        return True

    fleet.settle("the replicas and their workload objects gone", gone)
