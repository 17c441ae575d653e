"""Real workload clusters: the DRA allocator of kube-scheduler, kwok's nodes, faults for real.

Runs after test_fleet.py (file order) on the same fleet: e2e-a and e2e-b each
have four one-L4 nodes (pool l4) and one eight-L4 node (pool l4x8); wl-3 is
given random pools by the placement-vs-allocation property.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from e2e import manifests as m
from e2e.conftest import CLASS, CLASS8, CLUSTERS, publish_declared
from e2e.harness import COUNTS, NOTES, TIMINGS, World
from e2e.workloads import DRA, replica_pods

from modelplane.api import constants as c
from modelplane.dev.fleet import Fleet, State
from modelplane.dev.kubeapi import Api, condition
from modelplane.dev.nodes import PoolNodes, class_devices, publish
from modelplane.kube.client import KubeError

pytestmark = pytest.mark.e2e

TIMEOUT = 300.0


def _md(world: World, ns: str, name: str) -> dict[str, Any]:
    return world.cp.get(m.API, "ModelDeployment", name, ns) or {}


def _placements(world: World, ns: str, name: str) -> list[dict[str, Any]]:
    return list((_md(world, ns, name).get("status") or {}).get("placements") or [])


def _ready_count(world: World, ns: str, name: str) -> int:
    return int((_md(world, ns, name).get("status") or {}).get("readyReplicas") or 0)


def _workload(world: World, cluster: str) -> Api:
    ic = world.cp.get(m.API, "InferenceCluster", cluster)
    assert ic is not None, f"InferenceCluster {cluster} not found"
    return world.workloads[world.workload_of(ic)]


def _wait_ready(world: World, ns: str, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    return world.settle(
        f"ModelDeployment {ns}/{name} Ready",
        lambda: world.ready(m.API, "ModelDeployment", name, ns),
        timeout,
    )


def _check_allocated(world: World, ns: str, name: str, gpus: int) -> int:
    """Every placement's Pods Ready on the pool our scheduler chose, each with `gpus` devices."""
    checked = 0
    for placement in _placements(world, ns, name):
        api = _workload(world, placement["cluster"])
        (chosen,) = {p["pool"] for p in placement["pools"]}
        pods = replica_pods(api, ns, placement["replicaName"])
        assert pods, f"no Pods for {placement['replicaName']}"
        for pod in pods:
            assert pod.ready, f"{pod.name} not Ready"
            assert pod.pool == chosen, f"{pod.name} on pool {pod.pool}, placed on {chosen}"
            assert len(pod.devices) == gpus, f"{pod.name} got {pod.devices}, asked {gpus}"
            # The NVIDIA driver names each node's slice pool after the node.
            assert {d[0] for d in pod.devices} == {pod.node}
            checked += 1
    return checked


def _objects_left(api: Api, ns: str) -> list[str]:
    kinds = [
        ("v1", "Pod"),
        (DRA, "ResourceClaim"),
        (DRA, "ResourceClaimTemplate"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Service"),
        ("gateway.networking.k8s.io/v1", "HTTPRoute"),
    ]
    return [f"{k} {o['metadata']['name']}" for v, k in kinds for o in api.list(v, k, ns)]


# --- one and eight GPUs, then deleted -------------------------------------------------


def test_one_and_eight_gpu_replicas_run_where_placed_and_leave_nothing_when_deleted(
    fleet: World,
) -> None:
    ns = "e2e-real"
    fleet.apply(
        [
            m.namespace(ns),
            m.deployment("one", ns, replicas=1, gpus=1),
            m.deployment("eight", ns, replicas=1, gpus=8),
        ]
    )
    started = time.monotonic()
    for name in ("one", "eight"):
        _wait_ready(fleet, ns, name)
    TIMINGS["apply → one- and eight-GPU deployments Ready"] = time.monotonic() - started
    pods = _check_allocated(fleet, ns, "one", 1) + _check_allocated(fleet, ns, "eight", 8)
    (eight,) = _placements(fleet, ns, "eight")
    assert [p["pool"] for p in eight["pools"]] == ["l4x8"]
    COUNTS["pods allocated by kube-scheduler where placed (1 and 8 GPUs)"] = pods

    for name in ("one", "eight"):
        assert fleet.cp.delete(m.API, "ModelDeployment", name, ns)

    def gone() -> bool | None:
        if fleet.cp.list(m.API, "ModelReplica", ns):
            return None
        left = {wl: _objects_left(api, ns) for wl, api in fleet.workloads.items()}
        return True if not any(left.values()) else None

    fleet.settle("every Pod, claim and object of the deleted deployments gone", gone)


# --- our placement vs Kubernetes' allocation ------------------------------------------

PROP = "e2e-prop"
PROP_WL = "wl-3"
PROP_LABEL = {"e2e.modelplane.ai/prop": "yes"}
SIZES = (1, 2, 4, 8)
A100 = "NVIDIA A100"


def _a100_class(gpus: int) -> dict[str, Any]:
    return m.inference_class(f"e2e-a100x{gpus}", gpus=gpus, product=A100)


@dataclass
class Agreement:
    """How often our scheduler and kube-scheduler agreed."""

    placed_and_allocated: int = 0
    placed_not_allocated: list[str] = field(default_factory=list)
    refused_and_unallocatable: int = 0
    refused_but_allocatable: list[str] = field(default_factory=list)


def _random_case(seed: int) -> tuple[list[dict[str, Any]], list[tuple[str, int, int]]]:
    rng = random.Random(seed)
    pools = [
        {
            "name": f"p{i}",
            "className": f"e2e-a100x{rng.choice(SIZES)}",
            "nodeCount": rng.randint(1, 3),
        }
        for i in range(rng.randint(1, 2))
    ]
    deployments = [
        (f"d{j}", rng.choice(SIZES), rng.randint(1, 3)) for j in range(rng.randint(2, 4))
    ]
    return pools, deployments


def _prop_cluster(world: World, pools: list[dict[str, Any]]) -> dict[str, Any]:
    doc = m.inference_cluster(PROP, world.secret_ref(PROP_WL), "", pools=pools)
    doc["metadata"]["labels"] = dict(PROP_LABEL)
    return doc


def _pools_published(world: World, pools: list[dict[str, Any]]) -> bool | None:
    ic = world.ready(m.API, "InferenceCluster", PROP)
    if ic is None or condition(ic, "HardwareDrift") != "False":
        return None
    got = sorted((p["name"], p["nodes"]) for p in ic["status"].get("gpuPools") or [])
    return True if got == sorted((p["name"], p["nodeCount"]) for p in pools) else None


def _settled(world: World, ns: str, deployments: list[tuple[str, int, int]]) -> bool | None:
    for name, _gpus, replicas in deployments:
        status = _md(world, ns, name).get("status") or {}
        placements = status.get("placements") or []
        if any(not p.get("ready") or p.get("draining") for p in placements):
            return None
        if len(placements) < replicas and not status.get("unschedulable"):
            return None
        # A cluster not Ready at the deployment's last call is no verdict on
        # capacity: wait for the call that sees it Ready (the response's TTL).
        if any(u.get("reason") == "NotReady" for u in status.get("unschedulable") or []):
            return None
        # Each Pod's readiness is its engine's (the fleet's kubelet probes it a
        # moment after kwok starts the Pod): judge allocation once they answer.
        for placement in placements:
            pods = replica_pods(
                _workload(world, placement["cluster"]), ns, placement["replicaName"]
            )
            if not pods or not all(pod.ready for pod in pods):
                return None
    return True


def _probe(api: Api, ns: str, pool: str, gpus: int) -> bool:
    """Whether kube-scheduler allocates one more `gpus`-A100 Pod on `pool` (by hand)."""
    claim = {
        "apiVersion": DRA,
        "kind": "ResourceClaim",
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu.nvidia.com",
                            "allocationMode": "ExactCount",
                            "count": gpus,
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": 'device.attributes["gpu.nvidia.com"]'
                                        f'.productName == "{A100}"'
                                    }
                                }
                            ],
                        },
                    }
                ]
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": ns},
        "spec": {
            "nodeSelector": {c.LABEL_POOL: pool},
            "tolerations": [{"key": c.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "probe", "image": "probe", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "probe"}],
        },
    }
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    api.apply(claim)
    api.apply(pod)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = api.get("v1", "Pod", "probe", ns) or {}
            if (got.get("spec") or {}).get("nodeName"):
                return True
            for cond in (got.get("status") or {}).get("conditions") or []:
                if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
                    return False
            time.sleep(0.5)
        raise AssertionError(f"kube-scheduler never answered the probe on {pool}")
    finally:
        api.delete("v1", "Pod", "probe", ns)
        api.delete(DRA, "ResourceClaim", "probe", ns)
        _wait_gone(api, ns, "probe")


def _wait_gone(api: Api, ns: str, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (
            api.get("v1", "Pod", name, ns) is None
            and api.get(DRA, "ResourceClaim", name, ns) is None
        ):
            return
        time.sleep(0.5)


def _judge(
    world: World, ns: str, pools: list[dict[str, Any]], deployments: list[tuple[str, int, int]]
) -> Agreement:
    found = Agreement()
    api = world.workloads[PROP_WL]
    sizes = {p["name"]: int(p["className"].rsplit("x", 1)[1]) for p in pools}
    for name, gpus, replicas in deployments:
        try:
            found.placed_and_allocated += _check_allocated(world, ns, name, gpus)
        except AssertionError as err:
            found.placed_not_allocated.append(f"{ns}/{name}: {err}")
        refused = replicas - len(_placements(world, ns, name))
        if refused <= 0:
            continue
        # Refused for capacity where a node is big enough: Kubernetes must agree there is no room.
        for pool in (p for p, size in sizes.items() if size >= gpus):
            if _probe(api, f"{ns}-probe", pool, gpus):
                found.refused_but_allocatable.append(f"{ns}/{name} ({gpus} GPUs) fits on {pool}")
            else:
                found.refused_and_unallocatable += refused
    return found


def test_every_placed_replica_is_allocatable_and_every_refused_one_is_not(fleet: World) -> None:
    fleet.apply([_a100_class(g) for g in SIZES])
    total = Agreement()
    for seed in (101, 202, 303):
        pools, deployments = _random_case(seed)
        classes = [_a100_class(g) for g in SIZES]
        cluster = _prop_cluster(fleet, pools)
        publish_declared(fleet, cluster, classes)
        fleet.apply([cluster])
        fleet.settle(
            f"seed {seed}: {PROP} publishes {pools}", lambda p=pools: _pools_published(fleet, p)
        )
        ns = f"e2e-prop-{seed}"
        fleet.apply([m.namespace(ns)])
        fleet.apply(
            [
                m.deployment(n, ns, replicas=r, gpus=g, product=A100, clusters=PROP_LABEL)
                for n, g, r in deployments
            ]
        )
        fleet.settle(
            f"seed {seed}: {deployments} placed and Ready or refused",
            lambda n=ns, d=deployments: _settled(fleet, n, d),
            TIMEOUT,
        )
        found = _judge(fleet, ns, pools, deployments)
        total.placed_and_allocated += found.placed_and_allocated
        total.placed_not_allocated += found.placed_not_allocated
        total.refused_and_unallocatable += found.refused_and_unallocatable
        total.refused_but_allocatable += found.refused_but_allocatable
        for name, _g, _r in deployments:
            fleet.cp.delete(m.API, "ModelDeployment", name, ns)
        # Its ModelReplicas gone too: one still finalizing is charged to the pool
        # of that name by the next seed's first call, which then refuses for
        # capacity until its next call (up to a minute later).
        fleet.settle(
            f"seed {seed}: its replicas and Pods gone",
            lambda n=ns: (
                None
                if fleet.workloads[PROP_WL].list("v1", "Pod", n)
                or fleet.cp.list(m.API, "ModelReplica", n)
                else True
            ),
        )
    COUNTS["property: placed replicas' pods allocated by kube-scheduler"] = (
        total.placed_and_allocated
    )
    COUNTS["property: placed replicas' pods NOT allocated"] = len(total.placed_not_allocated)
    COUNTS["property: refused replicas kube-scheduler also refused"] = (
        total.refused_and_unallocatable
    )
    COUNTS["property: refused replicas kube-scheduler would allocate"] = len(
        total.refused_but_allocatable
    )
    assert not total.placed_not_allocated, total.placed_not_allocated
    assert not total.refused_but_allocatable, total.refused_but_allocatable
    assert total.placed_and_allocated > 0


# --- drift moves a replica, make-before-break -----------------------------------------


def test_a_pool_that_publishes_fewer_devices_drifts_and_its_replica_moves(fleet: World) -> None:
    ns = "e2e-drift"
    fleet.apply([m.namespace(ns), m.deployment("moved", ns, replicas=1, gpus=8)])
    _wait_ready(fleet, ns, "moved")
    (before,) = _placements(fleet, ns, "moved")
    source = before["cluster"]
    api = _workload(fleet, source)
    # The eight-L4 node now publishes four: the driver lost half its GPUs.
    eight = class_devices(m.inference_class(CLASS8, gpus=8))
    four = tuple({**d, "count": 4} for d in eight)
    publish(api, [PoolNodes("l4x8", 1, four)])
    drift = fleet.settle(
        f"{source} reports HardwareDrift on l4x8",
        lambda: (
            ic
            if condition(
                ic := fleet.cp.get(m.API, "InferenceCluster", source) or {}, "HardwareDrift"
            )
            == "True"
            else None
        ),
    )
    message = next(
        x["message"] for x in drift["status"]["conditions"] if x["type"] == "HardwareDrift"
    )
    assert "l4x8" in message
    try:
        # The replica's Pod restarts and can no longer be allocated there.
        for pod in replica_pods(api, ns, before["replicaName"]):
            api.delete("v1", "Pod", pod.name, ns)
        samples: list[tuple[bool, bool]] = []

        def moved() -> bool | None:
            placements = _placements(fleet, ns, "moved")
            new = [p for p in placements if p["cluster"] != source]
            old = [p for p in placements if p["cluster"] == source]
            samples.append((bool(old), bool(new)))
            return True if new and new[0].get("ready") and not old else None

        fleet.settle(
            "the replica moved to the other cluster and Ready",
            moved,
            TIMEOUT,
            describe=lambda: _deployment_state(fleet, ns, "moved"),
        )
        # Never without a placement: the old one goes only once the new one is placed.
        assert all(old or new for old, new in samples), samples
        assert _ready_count(fleet, ns, "moved") == 1
        assert _check_allocated(fleet, ns, "moved", 8) == 1
        NOTES["drift: the stuck replica moved"] = (
            f"from {source} to {_placements(fleet, ns, 'moved')[0]['cluster']}, "
            f"{len(samples)} status samples, none without a placement"
        )
    finally:
        publish(api, [PoolNodes("l4x8", 1, eight)])
        fleet.cp.delete(m.API, "ModelDeployment", "moved", ns)


def _deployment_state(world: World, ns: str, name: str) -> str:
    """A deployment's placements, conditions and replicas' conditions, for a timeout."""
    md = world.cp.get(m.API, "ModelDeployment", name, ns) or {}
    status = md.get("status") or {}
    lines = [
        f"placements: {status.get('placements')}",
        f"unschedulable: {status.get('unschedulable')}",
    ]
    lines += [
        f"{x['type']}={x['status']} {x.get('reason')}: {x.get('message')}"
        for x in status.get("conditions") or []
    ]
    for r in world.cp.list(m.API, "ModelReplica", ns):
        conds = (r.get("status") or {}).get("conditions") or []
        lines.append(
            f"replica {r['metadata']['name']} on {r['spec'].get('clusterName')}: "
            + "; ".join(f"{x['type']}={x['status']} {x.get('message', '')[:160]}" for x in conds)
        )
    return "\n".join(lines)


# --- faults on the real stack: nothing Ready lost --------------------------------------

FAULTS_NS = "e2e-faults"
STEADY = "steady"
STEADY_REPLICAS = 4


@dataclass
class Drill:
    """Ready replicas of the steady deployment before, during (lowest) and after a fault."""

    before: int
    lowest: int
    after: int
    removed: int


SEEN: list[int] = []  # every Ready count sampled, in order


def _sample(
    world: World, seconds: float, lowest: int, also: Callable[[], None] | None = None
) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        world.play()
        with contextlib.suppress(KubeError):
            SEEN.append(_ready_count(world, FAULTS_NS, STEADY))
            lowest = min(lowest, SEEN[-1])
        if also:
            also()
        time.sleep(1.0)
    return lowest


def _kill(world: World, process: str) -> None:
    proc = State.load(world.state.directory).procs[process]
    os.kill(proc.pid, signal.SIGKILL)


def _restart(world: World) -> None:
    Fleet(world.state.directory).up(clusters=len(world.workloads))


def _drill(world: World, name: str, fault: Callable[[], int], heal: Callable[[], None]) -> Drill:
    before = _ready_count(world, FAULTS_NS, STEADY)
    mark = len(SEEN)
    try:
        removed = fault()
        lowest = min([before, *SEEN[mark:]])
        lowest = _sample(world, 20, lowest)
    finally:
        # Healed even when the fault's own checks fail: a stopped API server left
        # down would fail every later scenario on the shared fleet.
        heal()
    world.settle(
        f"after {name}: every steady replica Ready",
        lambda: True if _ready_count(world, FAULTS_NS, STEADY) == STEADY_REPLICAS else None,
        TIMEOUT,
    )
    lowest = _sample(world, 5, lowest)
    drill = Drill(before, lowest, _ready_count(world, FAULTS_NS, STEADY), removed)
    NOTES[f"fault {name}: Ready replicas before / lowest during / after"] = (
        f"{drill.before} / {drill.lowest} / {drill.after} (the fault itself removed {removed})"
    )
    return drill


@pytest.fixture(scope="module")
def steady(fleet: World) -> World:
    """Four one-GPU replicas over both clusters, Ready before any fault."""
    fleet.apply([m.namespace(FAULTS_NS), m.deployment(STEADY, FAULTS_NS, replicas=STEADY_REPLICAS)])
    _wait_ready(fleet, FAULTS_NS, STEADY)
    return fleet


def _assert_kept(drill: Drill) -> None:
    assert drill.before == STEADY_REPLICAS
    assert drill.lowest >= drill.before - drill.removed, drill
    assert drill.after == STEADY_REPLICAS, drill


def test_the_function_killed_mid_reconcile(steady: World) -> None:
    def fault() -> int:
        # A change to reconcile, then the function gone while it is composed.
        steady.apply([m.deployment("extra", FAULTS_NS, replicas=1)])
        time.sleep(1.0)
        _kill(steady, "function")
        return 0

    _assert_kept(_drill(steady, "function killed", fault, lambda: _restart(steady)))
    _wait_ready(steady, FAULTS_NS, "extra")
    steady.cp.delete(m.API, "ModelDeployment", "extra", FAULTS_NS)


def test_crossplane_restarted(steady: World) -> None:
    def fault() -> int:
        _kill(steady, "crossplane")
        return 0

    _assert_kept(_drill(steady, "Crossplane restarted", fault, lambda: _restart(steady)))


def test_a_workload_api_server_stopped_for_a_minute(steady: World) -> None:
    victim = "e2e-b"
    wl = CLUSTERS[victim]
    on_victim = sum(p["cluster"] == victim for p in _placements(steady, FAULTS_NS, STEADY))
    placed_there: set[str] = set()
    detected: list[float] = []

    def not_ready() -> bool | None:
        SEEN.append(_ready_count(steady, FAULTS_NS, STEADY))
        ic = steady.cp.get(m.API, "InferenceCluster", victim) or {}
        return True if condition(ic, "Ready") == "False" else None

    def watch() -> None:
        placed_there.update(
            p["replicaName"]
            for p in _placements(steady, FAULTS_NS, "during")
            if p["cluster"] == victim
        )

    def fault() -> int:
        _kill(steady, f"{wl}-apiserver")
        started = time.monotonic()
        steady.settle(f"{victim} reported not Ready", not_ready, 60)
        detected.append(time.monotonic() - started)
        # Known to be down: a deployment applied now must land elsewhere.
        steady.apply([m.deployment("during", FAULTS_NS, replicas=2)])
        _sample(steady, max(15.0, 60 - (time.monotonic() - started)), STEADY_REPLICAS, watch)
        return on_victim

    try:
        _assert_kept(
            _drill(steady, f"{wl} API server stopped 60 s", fault, lambda: _restart(steady))
        )
        assert not placed_there, f"placed on {victim} while it was down: {placed_there}"
        _wait_ready(steady, FAULTS_NS, "during")
        NOTES[f"fault {wl} API server stopped: reported not Ready after"] = f"{detected[0]:.0f} s"
    finally:
        steady.cp.delete(m.API, "ModelDeployment", "during", FAULTS_NS)


def test_an_inference_class_deleted_and_restored(steady: World) -> None:
    def fault() -> int:
        steady.cp.delete(m.API, "InferenceClass", CLASS)
        return 0

    _assert_kept(
        _drill(
            steady,
            "InferenceClass deleted and restored",
            fault,
            lambda: steady.apply([m.inference_class(CLASS)]),
        )
    )


def test_a_node_deleted_under_a_running_replica(steady: World) -> None:
    placement = _placements(steady, FAULTS_NS, STEADY)[0]
    api = _workload(steady, placement["cluster"])
    (pod,) = replica_pods(api, FAULTS_NS, placement["replicaName"])
    assert pod.node

    def fault() -> int:
        api.delete("v1", "Node", pod.node or "")
        return 1

    def heal() -> None:
        # Kubernetes' pod GC removes the Pod of a node that is gone, the
        # ReplicaSet makes another, kube-scheduler binds it elsewhere (or the
        # replica moves, if its pool has no room).
        # Node names repeat across workload clusters (each has an l4-0), so
        # a Pod is on the deleted node only if it is on that cluster too.
        def replaced() -> bool | None:
            pods = [
                (other["cluster"], p)
                for other in _placements(steady, FAULTS_NS, STEADY)
                for p in replica_pods(
                    _workload(steady, other["cluster"]), FAULTS_NS, other["replicaName"]
                )
            ]
            gone = (placement["cluster"], pod.node)
            on_gone = [p for cluster, p in pods if (cluster, p.node) == gone]
            ready = all(p.ready for _, p in pods)
            return True if pods and not on_gone and ready else None

        steady.settle("the Pod on the deleted node replaced elsewhere", replaced, TIMEOUT)

    try:
        _assert_kept(_drill(steady, "node deleted under a replica", fault, heal))
    finally:
        cluster = steady.cp.get(m.API, "InferenceCluster", placement["cluster"]) or {}
        publish_declared(
            steady, cluster, [m.inference_class(CLASS), m.inference_class(CLASS8, gpus=8)]
        )


def test_the_pools_are_whole_again(fleet: World) -> None:
    for name in CLUSTERS:
        fleet.settle(
            f"{name} Ready without drift",
            lambda n=name: (
                ic
                if condition(ic := fleet.ready(m.API, "InferenceCluster", n) or {}, "HardwareDrift")
                == "False"
                else None
            ),
        )
    steady_left = fleet.cp.delete(m.API, "ModelDeployment", STEADY, FAULTS_NS)
    assert steady_left
