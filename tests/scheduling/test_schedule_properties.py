"""Property tests: random fleets and deployments against invariants checked independently."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from nodepack import admitted, oversubscribed, roles_of
from schedfleet import (
    A100,
    ANY_GPU,
    CLASSES,
    FAST,
    H100,
    IB,
    L4,
    NIC,
    cluster,
    deployment,
    materialize,
    request,
    workers,
)

from modelplane.scheduling import schedule

Obj = dict[str, Any]
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Request sets a deployment role may ask for (count drawn separately).
REQUESTS = [
    lambda n: [request("gpu", ANY_GPU, count=n)],
    lambda n: [request("gpu", H100, count=n)],
    lambda n: [request("gpu", L4)],
    lambda n: [request("gpu", A100, count=min(n, 4)), request("nic", NIC)],
    lambda n: [request("gpu", ANY_GPU, count=n), request("fabric", IB)],
    lambda n: [request("gpu", FAST)],
]


@st.composite
def fleets(draw: st.DrawFn) -> list[Obj]:
    out = []
    for i in range(draw(st.integers(2, 4))):
        names = draw(st.lists(st.sampled_from(sorted(CLASSES)), min_size=1, max_size=3))
        pools = {
            f"p{j}-{k}": (k, draw(st.sampled_from([0, 1, 2, 3, 4]))) for j, k in enumerate(names)
        }
        taint = draw(st.sampled_from([None] * 8 + ["NoSchedule", "NoExecute"]))
        out.append(
            cluster(
                f"c{i}",
                pools,
                labels={"tier": draw(st.sampled_from(["a", "b"]))},
                taints=[{"key": "t", "effect": taint}] if taint else [],
                ready=draw(st.sampled_from([True] * 9 + [False])),
            )
        )
    return out


@st.composite
def roles(draw: st.DrawFn) -> tuple[list[Obj], Obj]:
    reqs = draw(st.sampled_from(REQUESTS))(draw(st.sampled_from([1, 1, 2, 4, 8])))
    work = workers(count=draw(st.integers(1, 2)), pipeline=draw(st.sampled_from([1, 1, 2])))
    return reqs, work


@st.composite
def deployments(draw: st.DrawFn, name: str = "llm", max_replicas: int = 8) -> Obj:
    replicas = draw(st.integers(1, max_replicas))
    selector = draw(st.sampled_from([None, None, {"matchLabels": {"tier": "a"}}]))
    tolerations = draw(st.sampled_from([None, [{"key": "t", "operator": "Exists"}]]))
    if draw(st.integers(0, 3)) == 0:
        return deployment(
            replicas,
            name=name,
            prefill=draw(roles()),
            decode=draw(roles()),
            selector=selector,
            tolerations=tolerations,
        )
    reqs, work = draw(roles())
    return deployment(
        replicas, reqs, name=name, work=work, selector=selector, tolerations=tolerations
    )


def apply(fleet: list[Obj], dep: Obj, result: Any, clock: int) -> list[Obj]:
    """The fleet's replicas after the deployment's composer applied `result`."""
    ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]

    def mine(r: Obj) -> bool:
        return (r["metadata"]["namespace"], r["spec"]["deploymentName"]) == (ns, name)

    own = [r for r in fleet if mine(r)]
    return [r for r in fleet if not mine(r)] + materialize(dep, result, own, clock)


def _ready(r: Obj) -> bool:
    return r["status"]["conditions"][0]["status"] == "True"


def _set_ready(r: Obj) -> Obj:
    return {**r, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


@SETTINGS
@given(fleets(), st.lists(deployments(name="other", max_replicas=4), max_size=3), deployments())
# A random-profile find: the fill charged two new replicas in placement order, the
# cluster runs them by name (test_packing pins it by hand).
@example(
    clusters=[
        cluster("c0", {"p0-a100-4x": ("a100-4x", 0)}, labels={"tier": "a"}),
        cluster("c1", {"p0-a100-4x": ("a100-4x", 0)}, labels={"tier": "a"}),
        cluster(
            "c2", {"p0-a100-4x": ("a100-4x", 4), "p1-a100-4x": ("a100-4x", 2)}, labels={"tier": "a"}
        ),
    ],
    others=[],
    dep=deployment(
        2,
        prefill=([request("gpu", ANY_GPU)], workers(2)),
        decode=([request("gpu", ANY_GPU)], workers(1, pipeline=2)),
    ),
)
def test_no_pool_is_over_capacity_after_fill(clusters, others, dep):
    fleet: list[Obj] = []
    for i, other in enumerate(others):
        other["metadata"]["name"] = f"other-{i}"
        fleet = apply(fleet, other, schedule(other, clusters, fleet), i)
    assert oversubscribed(clusters, fleet) == set()
    result = schedule(dep, clusters, fleet)
    fleet = apply(fleet, dep, result, 99)
    assert oversubscribed(clusters, fleet) == set()
    assert len(result.replicas) <= dep["spec"]["replicas"]
    assert len({p.name for p in result.replicas}) == len(result.replicas)
    assert len({(p.cluster, p.index) for p in result.replicas}) == len(result.replicas)


@st.composite
def edits(draw: st.DrawFn, dep: Obj) -> Obj:
    """The deployment after a user edit: a new replica count, maybe new hardware."""
    spec = dict(dep["spec"], replicas=draw(st.integers(0, 10)))
    if "nodeSelector" in spec and draw(st.booleans()):
        reqs, work = draw(roles())
        spec["nodeSelector"] = {"devices": reqs}
        spec["workers"] = work
    if draw(st.integers(0, 3)) == 0:
        spec["clusterSelector"] = {"matchLabels": {"tier": "b"}}
    return {**dep, "spec": spec}


@SETTINGS
@given(fleets(), st.data(), st.integers(0, 5), st.booleans())
def test_retained_replicas_never_move(clusters, data, drop, drain):
    before = data.draw(deployments())
    after = data.draw(edits(before))
    fleet = apply([], before, schedule(before, clusters, []), 0)
    fleet = [_set_ready(r) if i % 2 else r for i, r in enumerate(fleet)]
    # The platform changes too: a cluster goes away or is drained.
    changed = [c for i, c in enumerate(clusters) if i != drop]
    if drain and changed:
        changed[0] = {**changed[0], "spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}}
    result = schedule(after, changed, fleet)
    previous = {r["metadata"]["name"]: r for r in fleet}
    for p in result.replicas:
        if p.retained:
            old = previous[p.name]["spec"]
            assert (p.cluster, p.index) == (old["clusterName"], old["index"])
            assert [r.pool for r in p.roles] == [
                role["nodePoolName"] for role in roles_of(previous[p.name])
            ]
        else:
            assert p.name not in previous
    # Every existing replica is kept unless a rule dropped it, with its reason.
    kept = {p.name for p in result.replicas if p.retained}
    dropped = (
        {n for n, _ in result.replaced}
        | set(result.scaled_down)
        | {w.name for w in result.withdrawn}
    )
    assert kept | dropped == set(previous)
    assert not kept & dropped
    # Scale-down only when over the desired count; never below it.
    # (Draining replicas, make-before-break, are kept but not counted.)
    if result.scaled_down:
        assert result.placed == after["spec"]["replicas"]


def _shuffled(objs: list[Obj], rng: random.Random) -> list[Obj]:
    out = []
    for o in objs:
        o = dict(o)
        if "gpuPools" in o.get("status", {}):
            pools = list(o["status"]["gpuPools"])
            rng.shuffle(pools)
            o["status"] = {**o["status"], "gpuPools": pools}
        out.append(o)
    rng.shuffle(out)
    return out


@SETTINGS
@given(
    fleets(),
    st.lists(deployments(name="other", max_replicas=4), max_size=3),
    deployments(),
    st.randoms(use_true_random=False),
)
def test_same_answer_for_any_input_order(clusters, others, dep, rng):
    fleet: list[Obj] = []
    for i, other in enumerate(others):
        other["metadata"]["name"] = f"other-{i}"
        fleet = apply(fleet, other, schedule(other, clusters, fleet), i)
    # Some replicas of `dep` already exist, some Ready.
    fleet = apply(fleet, dep, schedule(dep, clusters, fleet), 50)
    fleet = [_set_ready(r) if rng.random() < 0.3 else r for r in fleet]
    expected = schedule(dep, clusters, fleet)
    for _ in range(3):
        assert schedule(dep, _shuffled(clusters, rng), _shuffled(fleet, rng)) == expected


@st.composite
def tight_fleets(draw: st.DrawFn) -> list[Obj]:
    """Small, healthy fleets: every cluster Ready and untainted, few nodes per pool,
    each cluster bin-packing or spreading (the oracle, `nodepack`, models both)."""
    out = []
    for i in range(draw(st.integers(2, 4))):
        names = draw(
            st.lists(st.sampled_from(["h100-8x", "a100-4x", "l4-1x"]), min_size=1, max_size=2)
        )
        pools = {f"p{j}-{k}": (k, draw(st.integers(1, 2))) for j, k in enumerate(names)}
        packing = draw(st.sampled_from(["BinPack", "Spread"]))
        out.append(cluster(f"c{i}", pools, packing=packing))
    return out


@st.composite
def contenders(draw: st.DrawFn) -> Obj:
    """A deployment of a few replicas that any GPU pool could host."""
    n = draw(st.sampled_from([1, 2, 4, 8]))
    work = workers(count=draw(st.integers(1, 2)), pipeline=draw(st.sampled_from([1, 1, 2])))
    replicas = draw(st.integers(1, 3))
    if draw(st.integers(0, 3)) == 0:
        return deployment(
            replicas,
            prefill=([request("gpu", ANY_GPU, count=n)], work),
            decode=([request("gpu", ANY_GPU)], workers()),
        )
    return deployment(replicas, [request("gpu", ANY_GPU, count=n)], work=work)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tight_fleets(),
    st.lists(contenders(), min_size=10, max_size=10),
    st.lists(st.integers(0, 4), min_size=30, max_size=30),
    st.randoms(use_true_random=False),
)
def test_concurrent_deployments_converge_to_no_oversubscribed_pool(clusters, deps, lags, rng):
    for i, dep in enumerate(deps):
        dep["metadata"]["name"] = f"d{i}"
        dep["metadata"]["namespace"] = f"team-{i % 3}"
    history: list[list[Obj]] = [[]]
    clock = 0

    def step(i: int, lag: int) -> None:
        nonlocal clock
        clock += 1
        dep = deps[i % len(deps)]
        snapshot = history[max(0, len(history) - 1 - lag)]
        # Its own replicas are fresh (observed composed resources); others' may be stale.
        ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
        current = history[-1]
        own = [
            r
            for r in current
            if (r["metadata"]["namespace"], r["spec"]["deploymentName"]) == (ns, name)
        ]
        view = [
            r
            for r in snapshot
            if (r["metadata"]["namespace"], r["spec"]["deploymentName"]) != (ns, name)
        ] + own
        before_ready = {r["metadata"]["name"] for r in own if _ready(r)}
        result = schedule(dep, clusters, view)
        # A Ready replica is never withdrawn.
        assert not before_ready & {w.name for w in result.withdrawn}
        fleet = apply(current, dep, result, clock)
        # The workload clusters run what fits, node by node as each packs (`nodepack`):
        # some of the replicas they run turn Ready.
        running = admitted(clusters, fleet)
        fleet = [
            _set_ready(r) if r["metadata"]["name"] in running and rng.random() < 0.5 else r
            for r in fleet
        ]
        history.append(fleet)

    # Stale phase: each deployment sees the fleet as it was up to `lag` steps ago.
    for i, lag in enumerate(lags):
        step(i, lag)
    # Then everyone reconciles from fresh state until a whole round changes nothing.
    for _ in range(12):
        start = history[-1]
        for i in range(len(deps)):
            step(i, 0)
        if _names(history[-1]) == _names(start):
            break
    assert _names(history[-1]) == _names(start), "did not converge"
    assert oversubscribed(clusters, history[-1]) == set()


def _names(fleet: list[Obj]) -> list[str]:
    return sorted(r["metadata"]["name"] for r in fleet)
