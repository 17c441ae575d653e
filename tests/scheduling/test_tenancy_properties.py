"""Properties of quotas, preemption and Spot on random fleets, each checked against a
count or a lookup made here, not by the scheduler's own code."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedfleet import (
    ANY_GPU,
    BIG_MEMORY,
    H100,
    L4,
    cluster,
    deployment,
    materialize,
    request,
    resolved,
)
from schedfleet import replica as observed_replica
from tenancy import priced, priority_class, quota, run, with_priority

Obj = dict[str, Any]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Independent facts about the test classes: devices per node and ≥ 40Gi of memory.
BIG = {"h100-8x": True, "l4-1x": False}
ASKS = [(H100, 1), (H100, 2), (H100, 4), (H100, 8), (L4, 1), (ANY_GPU, 1)]


def _class_of(clusters: list[Obj], cl: str, pool: str) -> str:
    for c in clusters:
        if c["metadata"]["name"] == cl:
            for p in c["status"]["gpuPools"]:
                if p["name"] == pool:
                    return str(p["className"])
    return ""


def _use(clusters: list[Obj], replicas: list[Obj], namespace: str) -> dict[str, int]:
    """Devices held per limit of `LIMITS`, counted from the replica objects."""
    out = {"h100": 0, "any": 0, "big": 0}
    for r in replicas:
        if r["metadata"]["namespace"] != namespace:
            continue
        spec = r["spec"]
        klass = _class_of(clusters, spec["clusterName"], spec["nodePoolName"])
        n = sum(d["count"] for d in spec["deviceRequests"])
        out["any"] += n
        out["h100"] += n if klass == "h100-8x" else 0
        out["big"] += n if BIG.get(klass) else 0
    return out


@st.composite
def quota_cases(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], dict[str, int], list[int]]:
    clusters = [
        cluster(
            f"c{i}",
            {
                "h100": ("h100-8x", draw(st.integers(0, 3))),
                "l4": ("l4-1x", draw(st.integers(0, 4))),
            },
        )
        for i in range(draw(st.integers(1, 3)))
    ]
    deps = []
    for i in range(draw(st.integers(2, 4))):
        cel, count = draw(st.sampled_from(ASKS))
        deps.append(
            deployment(draw(st.integers(1, 4)), [request("gpu", cel, count=count)], name=f"d{i}")
        )
    hard = {
        "h100": draw(st.integers(0, 40)),
        "any": draw(st.integers(0, 60)),
        "big": draw(st.integers(0, 50)),
    }
    order = draw(st.permutations(list(range(len(deps)))))
    return clusters, deps, hard, order


@SETTINGS
@given(quota_cases())
def test_a_quota_is_never_exceeded_whatever_the_order_of_arrivals(case: Any) -> None:
    clusters, deps, hard, order = case
    limits = quota(
        "team-a",
        h100={"devices": hard["h100"], "inferenceClasses": ["h100-8x"]},
        any={"devices": hard["any"]},
        big={"devices": hard["big"], "selector": BIG_MEMORY},
    )
    replicas: list[Obj] = []
    clock = 0
    for _ in range(4):  # rounds until nothing changes
        changed = False
        for i in order:
            dep = deps[i]
            mine = [r for r in replicas if r["spec"]["deploymentName"] == dep["metadata"]["name"]]
            rest = [r for r in replicas if r not in mine]
            result = run(dep, clusters, replicas, [limits])
            clock += 1
            new = materialize(dep, result, mine, clock)
            changed |= sorted(r["metadata"]["name"] for r in new) != sorted(
                r["metadata"]["name"] for r in mine
            )
            replicas = rest + new
            use = _use(clusters, replicas, "team-a")
            assert all(use[k] <= hard[k] for k in hard), (use, hard)
        if not changed:
            break


PRIOS = {"low": 10, "mid": 50, "high": 500, "critical": 1000}
PRIORITY_CLASSES = [priority_class(k, v) for k, v in PRIOS.items()]


@st.composite
def preemption_cases(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], Obj]:
    clusters = [
        cluster(f"c{i}", {"h100": ("h100-8x", draw(st.integers(1, 2)))})
        for i in range(draw(st.integers(1, 3)))
    ]
    held = []
    for i in range(draw(st.integers(0, 8))):
        cl = draw(st.integers(0, len(clusters) - 1))
        prio = draw(st.sampled_from([None, *PRIOS]))
        n = draw(st.sampled_from([1, 2, 4, 8]))
        r = observed_replica(
            f"o{i}",
            f"c{cl}",
            0,
            "h100",
            [resolved("gpu", n, cel=H100)],
            namespace="team-b",
            ready=draw(st.booleans()),
            created=f"2026-01-01T00:00:{i:02d}Z",
        )
        held.append(with_priority(r, prio))
    dep = deployment(
        draw(st.integers(1, 3)), [request("gpu", H100, count=draw(st.sampled_from([2, 4, 8])))]
    )
    return clusters, held, with_priority(dep, draw(st.sampled_from([None, *PRIOS])))


@SETTINGS
@given(preemption_cases())
def test_preemption_never_takes_a_replica_of_equal_or_higher_priority(case: Any) -> None:
    clusters, held, dep = case
    own = PRIOS.get(dep["spec"].get("priority"), 0)
    value = {r["metadata"]["name"]: PRIOS.get(r["spec"].get("priority"), 0) for r in held}
    where = {r["metadata"]["name"]: (r["spec"]["clusterName"], "h100") for r in held}
    result = run(dep, clusters, held, priorities=PRIORITY_CLASSES)
    named = [v for r in result.replicas for _, v in r.preempts]
    assert sorted(named) == sorted(v.name for p in result.preemptions for v in p.victims)
    for p in result.preemptions:
        assert p.victims
        for v in p.victims:
            assert value[v.name] < own
            assert where[v.name] == (p.cluster, p.pool)  # one pool per preemption
    assert len(named) == len(set(named))  # nobody is preempted twice


SPOT_POOLS = ["od", "spot"]


@st.composite
def spot_cases(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], Obj]:
    clusters = []
    for i in range(draw(st.integers(1, 3))):
        cl = cluster(f"c{i}", {p: ("l4-1x", draw(st.integers(0, 3))) for p in SPOT_POOLS})
        kinds = {p: (None, draw(st.sampled_from(["Spot", "OnDemand", None]))) for p in SPOT_POOLS}
        clusters.append(priced(cl, **kinds))
    dep = deployment(draw(st.integers(1, 4)), [request("gpu", L4)], name="chat")
    if draw(st.booleans()):
        dep["spec"]["placement"] = {"preference": draw(st.sampled_from(["Spread", "LowestCost"]))}
    held = [
        observed_replica(
            "chat",
            f"c{draw(st.integers(0, len(clusters) - 1))}",
            i,
            draw(st.sampled_from(SPOT_POOLS)),
            [resolved("gpu", 1, cel=L4)],
            ready=draw(st.booleans()),
        )
        for i in range(draw(st.integers(0, 4)))
    ]
    return clusters, held, dep


@SETTINGS
@given(spot_cases())
def test_no_replica_stays_on_a_spot_pool_without_allow_spot(case: Any) -> None:
    clusters, held, dep = case
    spot = {
        (c["metadata"]["name"], p["name"])
        for c in clusters
        for p in c["status"]["gpuPools"]
        if p.get("capacityType") == "Spot"
    }
    result = run(dep, clusters, held)
    for r in result.replicas:
        on_spot = any((r.cluster, ra.pool) in spot for ra in r.roles)
        # Only a Ready replica may linger, draining, until its replacement serves.
        assert not on_spot or (r.draining and r.ready), r
