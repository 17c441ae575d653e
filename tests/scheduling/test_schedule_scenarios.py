"""Scenario tables: hand-written fleets and the placements the scheduler must produce."""

from __future__ import annotations

import random

import pytest
from schedfleet import (
    A100,
    ANY_GPU,
    FAST,
    H100,
    IB,
    L4,
    cluster,
    deployment,
    placements,
    replica,
    request,
    resolved,
    verdicts,
    workers,
)

from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.dra import cel
from modelplane.scheduling import replica_name, schedule
from modelplane.scheduling.matching import SHARED

T1, T2 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
NODE_1X = [request("gpu", L4)]


def name(cluster_name: str, index: int, dep: str = "llm", ns: str = "team-a") -> str:
    return replica_name(ns, dep, cluster_name, index)


# ── Spread and pack ─────────────────────────────────────────────────────────


def test_spread_first():
    fleet = [cluster(n, {"l4": ("l4-1x", 2)}) for n in ("c", "a", "b")]
    result = schedule(deployment(3, NODE_1X), fleet, [])
    assert placements(result) == [("a", 0, "l4"), ("b", 0, "l4"), ("c", 0, "l4")]
    assert [p.name for p in result.replicas] == [name("a", 0), name("b", 0), name("c", 0)]
    assert not any(p.retained for p in result.replicas)


@pytest.mark.parametrize(
    ("replicas", "expected", "missing"),
    [
        (2, [("a", 0, "l4"), ("b", 0, "l4")], 0),
        (
            5,
            [("a", 0, "l4"), ("a", 1, "l4"), ("a", 2, "l4"), ("a", 3, "l4"), ("b", 0, "l4")],
            0,
        ),
        (
            6,
            [("a", 0, "l4"), ("a", 1, "l4"), ("a", 2, "l4"), ("a", 3, "l4"), ("b", 0, "l4")],
            1,
        ),
    ],
)
def test_pack_only_when_capacity_forces_it(replicas, expected, missing):
    fleet = [
        cluster("a", {"l4": ("l4-1x", 4)}),
        cluster("b", {"l4": ("l4-1x", 1)}),
        cluster("c", {"h100": ("h100-8x", 1)}),
    ]
    result = schedule(deployment(replicas, NODE_1X), fleet, [])
    assert placements(result) == expected
    assert result.missing == missing
    assert verdicts(result)["c"] == "NoMatchingPool"


# ── Retain and replace ──────────────────────────────────────────────────────


def test_selector_edit_rolls_exactly_the_replicas_whose_pool_no_longer_matches():
    fleet = [
        cluster("a", {"h100": ("h100-8x", 1), "a100": ("a100-4x", 1)}),
        cluster("b", {"a100": ("a100-4x", 2)}),
    ]
    gpu1 = [resolved("gpu")]
    observed = [
        replica("llm", "a", 0, "h100", gpu1),
        replica("llm", "a", 1, "a100", gpu1, ready=True),
        replica("llm", "b", 0, "a100", gpu1),
    ]
    # Was ANY_GPU; now only A100s qualify: the H100 replica is replaced, on a new index.
    result = schedule(deployment(3, [request("gpu", A100)]), fleet, observed)
    assert placements(result) == [("a", 1, "a100"), ("a", 2, "a100"), ("b", 0, "a100")]
    assert [p.retained for p in result.replicas] == [True, False, True]
    assert [p.name for p in result.replicas] == [name("a", 1), name("a", 2), name("b", 0)]
    assert [p.ready for p in result.replicas] == [True, False, False]
    assert [r for r, _ in result.replaced] == [name("a", 0)]
    assert "pool h100 no longer matches spec.nodeSelector" in result.replaced[0][1]
    # The kept replicas resolve the edited request.
    assert result.replicas[0].roles[0].device_requests == (
        ResolvedDeviceRequest.model_validate(
            {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": A100}]}
        ),
    )


def test_existing_replica_keeps_its_observed_name():
    fleet = [cluster("a", {"l4": ("l4-1x", 2)})]
    observed = [replica("llm", "a", 0, "l4", [resolved("gpu")], name="llm-legacy")]
    result = schedule(deployment(1, NODE_1X), fleet, observed)
    assert [(p.name, p.retained) for p in result.replicas] == [("llm-legacy", True)]


DRAIN = {"key": "maintenance", "value": "true", "effect": "NoExecute"}
CORDON = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taint", "tolerations", "replicas", "expected", "replaced"),
    [
        # NoExecute drains: replaced elsewhere.
        (DRAIN, None, 1, [("b", 0, "l4")], [name("a", 0)]),
        # A tolerated drain keeps it.
        (DRAIN, [{"key": "maintenance", "operator": "Exists"}], 1, [("a", 0, "l4")], []),
        # A toleration for the other effect does not help.
        (
            DRAIN,
            [{"key": "maintenance", "value": "true", "effect": "NoSchedule"}],
            1,
            [("b", 0, "l4")],
            [name("a", 0)],
        ),
        # NoSchedule keeps what runs and blocks only new placements (a has room).
        (CORDON, None, 2, [("a", 0, "l4"), ("b", 0, "l4")], []),
    ],
)
def test_taints(taint, tolerations, replicas, expected, replaced):
    fleet = [
        cluster("a", {"l4": ("l4-1x", 4)}, taints=[taint]),
        cluster("b", {"l4": ("l4-1x", 1)}),
    ]
    observed = [replica("llm", "a", 0, "l4", [resolved("gpu")])]
    dep = deployment(replicas, NODE_1X, tolerations=tolerations)
    result = schedule(dep, fleet, observed)
    assert placements(result) == expected
    assert [r for r, _ in result.replaced] == replaced


def test_replace_on_deleted_or_unselected_cluster_and_keep_on_not_ready():
    fleet = [
        cluster("a", {"l4": ("l4-1x", 2)}, labels={"tier": "gpu"}),
        cluster("old", {"l4": ("l4-1x", 2)}, labels={"tier": "retired"}),
        cluster("sick", {"l4": ("l4-1x", 2)}, labels={"tier": "gpu"}, ready=False),
    ]
    gpu1 = [resolved("gpu")]
    observed = [
        replica("llm", "gone", 0, "l4", gpu1),
        replica("llm", "old", 0, "l4", gpu1),
        replica("llm", "sick", 0, "l4", gpu1),
    ]
    dep = deployment(3, NODE_1X, selector={"matchLabels": {"tier": "gpu"}})
    result = schedule(dep, fleet, observed)
    assert placements(result) == [("a", 0, "l4"), ("a", 1, "l4"), ("sick", 0, "l4")]
    assert dict(result.replaced) == {
        name("gone", 0): "cluster gone no longer exists",
        name("old", 0): "cluster old no longer matches spec.clusterSelector",
    }
    assert verdicts(result) == {
        "a": "InsufficientCapacity",
        "old": "NotSelected",
        "sick": "NotReady",
    }


# ── Scale down ──────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("held", "desired", "kept", "dropped"),
    [
        # a is most loaded: drop a/2; then a and c tie at 2 (c, last by name); then a/1.
        (
            {"a": 3, "b": 1, "c": 2},
            3,
            [("a", 0), ("b", 0), ("c", 0)],
            [("a", 2), ("c", 1), ("a", 1)],
        ),
        # The sole replica on a survives while b holds several.
        ({"a": 1, "b": 3}, 2, [("a", 0), ("b", 0)], [("b", 2), ("b", 1)]),
        ({"a": 1, "b": 1}, 1, [("a", 0)], [("b", 0)]),
        ({"a": 2}, 0, [], [("a", 1), ("a", 0)]),
    ],
)
def test_scale_down_order(held, desired, kept, dropped):
    fleet = [cluster(n, {"l4": ("l4-1x", 4)}) for n in ("a", "b", "c")]
    observed = [
        replica("llm", c_, i, "l4", [resolved("gpu")]) for c_, n in held.items() for i in range(n)
    ]
    result = schedule(deployment(desired, NODE_1X), fleet, observed)
    assert [(p.cluster, p.index) for p in result.replicas] == kept
    assert all(p.retained for p in result.replicas)
    assert sorted(result.scaled_down) == sorted(name(c_, i) for c_, i in dropped)


# ── Device-granular ledger ──────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("count", "nodes", "replicas", "placed"),
    [
        (1, 1, 9, 8),  # eight 1-GPU replicas share one 8-GPU node
        (4, 2, 5, 4),  # two 4-GPU replicas per node
        (8, 2, 3, 2),  # a full node each
        (3, 1, 3, 2),  # 3+3 fit, a third needs 3 of the 2 left
    ],
)
def test_small_replicas_share_big_nodes(count, nodes, replicas, placed):
    fleet = [cluster("a", {"h100": ("h100-8x", nodes)})]
    dep = deployment(replicas, [request("gpu", H100, count=count)])
    result = schedule(dep, fleet, [])
    assert placements(result) == [("a", i, "h100") for i in range(placed)]
    (v,) = result.clusters
    assert (v.reason, v.pools[0].needed_nodes, v.pools[0].free_nodes) == (
        "InsufficientCapacity",
        1,
        0,
    )


def test_other_deployments_are_charged_from_their_observed_requests():
    fleet = [cluster("a", {"h100": ("h100-8x", 1)}), cluster("b", {"h100": ("h100-8x", 1)})]
    other = replica("chat", "a", 0, "h100", [resolved("gpu", 6)], namespace="team-b")
    result = schedule(deployment(2, [request("gpu", H100, count=4)]), fleet, [other])
    assert placements(result) == [("b", 0, "h100"), ("b", 1, "h100")]
    a = next(v for v in result.clusters if v.cluster == "a")
    assert a.reason == "InsufficientCapacity"
    assert (a.pools[0].needed_nodes, a.pools[0].free_nodes) == (1, 0)
    # Without the other deployment's replica, spreading puts one on each.
    result = schedule(deployment(2, [request("gpu", H100, count=4)]), fleet, [])
    assert placements(result) == [("a", 0, "h100"), ("b", 0, "h100")]


def test_multi_node_worker_costs_whole_nodes():
    # pipeline 2 × 2 workers = 4 nodes per replica.
    dep = deployment(2, [request("gpu", H100, count=8)], work=workers(count=2, pipeline=2))
    result = schedule(dep, [cluster("a", {"h100": ("h100-8x", 5)})], [])
    assert placements(result) == [("a", 0, "h100")]
    assert result.replicas[0].roles[0].nodes == 4
    (v,) = result.clusters
    assert (v.reason, v.pools[0].needed_nodes, v.pools[0].free_nodes) == (
        "InsufficientCapacity",
        4,
        1,
    )


def test_multi_node_worker_cannot_use_a_partly_used_node():
    fleet = [cluster("a", {"h100": ("h100-8x", 2)})]
    dep = deployment(1, [request("gpu", H100)], work=workers(pipeline=2))
    other = replica("chat", "a", 0, "h100", [resolved("gpu", 1)], namespace="team-b")
    assert placements(schedule(dep, fleet, [other])) == []
    assert placements(schedule(dep, fleet, [])) == [("a", 0, "h100")]


# ── Device matching ─────────────────────────────────────────────────────────


def test_count_is_consumed_across_requests():
    fleet = [cluster("a", {"a100": ("a100-4x", 2)})]
    two = [request("left", A100, count=2), request("right", A100, count=2)]
    result = schedule(deployment(3, two), fleet, [])
    # Both requests take 2 of the node's 4 GPUs: one replica per node.
    assert placements(result) == [("a", 0, "a100"), ("a", 1, "a100")]
    assert [
        (d.name, d.device_class_name, d.count) for d in result.replicas[0].roles[0].device_requests
    ] == [
        ("left", "gpu.nvidia.com", 2),
        ("right", "gpu.nvidia.com", 2),
    ]
    three = [*two, request("extra", A100, count=2)]
    result = schedule(deployment(1, three), fleet, [])
    assert placements(result) == []
    (v,) = result.clusters
    assert v.reason == "NoMatchingPool"
    extra = v.pools[0].requests[2]
    assert (extra.request, extra.matched) == ("extra", False)
    gpu = next(d for d in extra.devices if d.device == "gpu")
    assert gpu.insufficient_count == (2, 0)
    assert "not enough devices" in extra.message


def test_two_requests_cannot_share_a_single_count_device():
    fleet = [cluster("a", {"dual": ("dual-1x", 1)})]
    # "fast" only matches gpu-a; "any" matches both: the search must put any on gpu-b.
    reqs = [request("any", L4), request("fast", FAST)]
    result = schedule(deployment(1, reqs), fleet, [])
    assert placements(result) == [("a", 0, "dual")]
    (v,) = result.clusters
    assert [(r.request, r.device) for r in v.pools[0].requests] == [
        ("any", "gpu-b"),
        ("fast", "gpu-a"),
    ]
    three = [request("x", L4), request("y", L4), request("z", L4)]
    result = schedule(deployment(1, three), fleet, [])
    assert placements(result) == []
    assert verdicts(result) == {"a": "NoMatchingPool"}


def test_synthetic_devices_refine_but_are_never_claimed():
    fleet = [cluster("a", {"h100": ("h100-8x", 1), "l4": ("l4-1x", 1)})]
    reqs = [request("gpu", ANY_GPU), request("fabric", IB)]
    result = schedule(deployment(1, reqs), fleet, [])
    # l4 has no fabric: only h100 matches; the fabric is not in the DRA requests.
    assert placements(result) == [("a", 0, "h100")]
    assert [d.name for d in result.replicas[0].roles[0].device_requests] == ["gpu"]


def test_a_pool_matching_only_synthetic_devices_does_not_match():
    fleet = [cluster("a", {"h100": ("h100-8x", 1)})]
    result = schedule(deployment(1, [request("fabric", IB)]), fleet, [])
    assert placements(result) == []
    (v,) = result.clusters
    assert v.reason == "NoMatchingPool"
    assert "Synthetic devices only" in v.message
    assert v.pools[0].requests[0].device == "fabric"


def test_evaluation_error_is_a_non_match_with_its_explanation():
    fleet = [cluster("a", {"l4": ("l4-1x", 1)}), cluster("b", {"dual": ("dual-1x", 1)})]
    result = schedule(deployment(2, [request("gpu", FAST)]), fleet, [])
    assert placements(result) == [("b", 0, "dual")]
    a = next(v for v in result.clusters if v.cluster == "a")
    assert a.reason == "NoMatchingPool"
    (dv,) = a.pools[0].requests[0].devices
    (sv,) = dv.selectors
    assert (dv.device, dv.matched, sv.expression, sv.value) == ("gpu", False, FAST, None)
    assert "fast" in (sv.error or "")
    assert "selectors[0] errored" in a.message


def test_which_selector_was_false():
    fleet = [cluster("a", {"l4": ("l4-1x", 1)})]
    result = schedule(deployment(1, [request("gpu", ANY_GPU, H100)]), fleet, [])
    (v,) = result.clusters
    (dv,) = v.pools[0].requests[0].devices
    assert [(s.expression, s.value) for s in dv.selectors] == [(ANY_GPU, True), (H100, False)]
    assert "gpu: selectors[1] is false" in v.message


# ── Disaggregated serving ───────────────────────────────────────────────────


def test_both_roles_of_a_disaggregated_replica_land_on_one_cluster():
    fleet = [
        cluster("a", {"h100": ("h100-8x", 1)}),
        cluster("b", {"l4": ("l4-1x", 2)}),
        cluster("c", {"h100": ("h100-8x", 1), "l4": ("l4-1x", 1)}),
    ]
    dep = deployment(
        2,
        prefill=([request("gpu", H100, count=8)], workers()),
        decode=([request("gpu", L4)], workers()),
    )
    result = schedule(dep, fleet, [])
    assert placements(result) == [("c", 0, "h100", "l4")]
    assert [r.role for r in result.replicas[0].roles] == ["prefill", "decode"]
    assert verdicts(result) == {
        "a": "NoMatchingPool",
        "b": "NoMatchingPool",
        "c": "InsufficientCapacity",
    }
    a = next(v for v in result.clusters if v.cluster == "a")
    assert "spec.decode.nodeSelector" in a.message


def test_disaggregated_roles_share_a_pool_when_it_has_room():
    dep = deployment(
        3,
        prefill=([request("gpu", H100, count=4)], workers()),
        decode=([request("gpu", H100, count=2)], workers(count=2)),
    )
    # Each replica needs 4 + 2×2 = 8 GPUs; two nodes hold two replicas.
    result = schedule(dep, [cluster("a", {"h100": ("h100-8x", 2)})], [])
    assert placements(result) == [("a", 0, "h100", "h100"), ("a", 1, "h100", "h100")]


# ── Contention ──────────────────────────────────────────────────────────────


def _contended(llm_ready: bool, chat_ready: bool):
    fleet = [cluster("a", {"h100": ("h100-8x", 1)}), cluster("b", {"h100": ("h100-8x", 1)})]
    full = [resolved("gpu", 8)]
    observed = [
        replica("llm", "a", 0, "h100", full, created=T1, ready=llm_ready),
        replica("chat", "a", 0, "h100", full, created=T2, ready=chat_ready, namespace="team-b"),
    ]
    llm = deployment(1, [request("gpu", H100, count=8)])
    chat = deployment(1, [request("gpu", H100, count=8)], name="chat", namespace="team-b")
    return schedule(llm, fleet, observed), schedule(chat, fleet, observed)


@pytest.mark.parametrize(
    ("llm_ready", "chat_ready", "llm_expected", "chat_expected"),
    [
        # Neither Ready: the older (llm) keeps its place; chat withdraws and moves to b.
        (False, False, [("a", 0, True)], [("b", 0, False)]),
        # Ready first: chat is Ready, so llm withdraws though it is older.
        (False, True, [("b", 0, False)], [("a", 0, True)]),
        (True, False, [("a", 0, True)], [("b", 0, False)]),
        # A Ready replica is never withdrawn: the pool stays oversubscribed.
        (True, True, [("a", 0, True)], [("a", 0, True)]),
    ],
)
def test_contention_verdict(llm_ready, chat_ready, llm_expected, chat_expected):
    llm, chat = _contended(llm_ready, chat_ready)
    assert [(p.cluster, p.index, p.retained) for p in llm.replicas] == llm_expected
    assert [(p.cluster, p.index, p.retained) for p in chat.replicas] == chat_expected
    loser = None if llm_ready and chat_ready else ("llm" if chat_ready else "chat")
    for dep, result in (("llm", llm), ("chat", chat)):
        if dep == loser:
            (w,) = result.withdrawn
            ns = "team-a" if dep == "llm" else "team-b"
            assert (w.cluster, w.index, w.pool, w.name) == ("a", 0, "h100", name("a", 0, dep, ns))
        else:
            assert result.withdrawn == ()


# ── Invalid selectors ───────────────────────────────────────────────────────


def test_compile_error_names_the_field_and_places_nothing_new():
    fleet = [cluster("a", {"l4": ("l4-1x", 4)})]
    observed = [replica("llm", "a", 0, "l4", [resolved("gpu", cel=L4)])]
    reqs = [request("gpu", L4), request("nic", ANY_GPU, "device.nope ==")]
    result = schedule(deployment(3, reqs), fleet, observed)
    assert placements(result) == [("a", 0, "l4")]
    assert result.replicas[0].retained
    ((path, message),) = result.invalid_selectors
    assert path == "spec.nodeSelector.devices[1].selectors[1].cel"
    assert message.startswith("compilation failed")
    assert verdicts(result) == {"a": "InvalidNodeSelector"}
    # The kept replica keeps the requests it had.
    assert [d.selectors[0].cel for d in result.replicas[0].roles[0].device_requests] == [L4]


def test_compile_error_path_in_a_disaggregated_role():
    dep = deployment(
        1,
        prefill=([request("gpu", H100)], workers()),
        decode=([request("gpu", L4, "device.driver == 1")], workers()),
    )
    result = schedule(dep, [cluster("a", {"l4": ("l4-1x", 4)})], [])
    assert [p for p, _ in result.invalid_selectors] == [
        "spec.decode.nodeSelector.devices[0].selectors[1].cel"
    ]
    assert result.replicas == ()


# ── Explanation ─────────────────────────────────────────────────────────────


def test_a_verdict_for_every_cluster():
    fleet = [
        cluster("eu", {"l4": ("l4-1x", 1)}, labels={"region": "eu"}),
        cluster("drained", {"l4": ("l4-1x", 1)}, labels={"region": "us"}, taints=[DRAIN]),
        cluster("down", {"l4": ("l4-1x", 1)}, labels={"region": "us"}, ready=False),
        cluster("h100s", {"h100": ("h100-8x", 1)}, labels={"region": "us"}),
        cluster("full", {"l4": ("l4-1x", 1)}, labels={"region": "us"}),
        cluster("roomy", {"l4": ("l4-1x", 3)}, labels={"region": "us"}),
    ]
    busy = replica("chat", "full", 0, "l4", [resolved("gpu")], namespace="team-b")
    dep = deployment(
        1,
        NODE_1X,
        selector={"matchExpressions": [{"key": "region", "operator": "In", "values": ["us"]}]},
    )
    result = schedule(dep, fleet, [busy])
    assert placements(result) == [("roomy", 0, "l4")]
    assert verdicts(result) == {
        "down": "NotReady",
        "drained": "Tainted",
        "eu": "NotSelected",
        "full": "InsufficientCapacity",
        "h100s": "NoMatchingPool",
        "roomy": None,
    }
    by = {v.cluster: v for v in result.clusters}
    assert by["drained"].message == "untolerated taint maintenance=true:NoExecute"
    assert by["roomy"].eligible and by["roomy"].pools[0].free_nodes == 2
    assert by["full"].message == "unified needs 1 node(s); free: l4 0"
    req = by["h100s"].pools[0].requests[0]
    assert (req.request, req.matched) == ("gpu", False)
    assert [(d.device, d.matched) for d in req.devices] == [("gpu", False), ("fabric", False)]


# ── CEL work per call ───────────────────────────────────────────────────────


def test_cel_runs_once_per_distinct_selector_and_device(monkeypatch):
    calls: list[str] = []
    real = cel.Selector.evaluate

    def counting(self, device):
        calls.append(self.expression)
        return real(self, device)

    monkeypatch.setattr(cel.Selector, "evaluate", counting)
    SHARED.reset()  # as a fresh process: nothing evaluated yet
    fleet = [
        cluster(f"c{i:02d}", {"h": ("h100-8x", 2), "l": ("l4-1x", 2), "x": ("a100-4x", 2)})
        for i in range(20)
    ]
    observed = [replica("llm", "c00", 0, "h", [resolved("gpu")])]
    result = schedule(deployment(30, [request("gpu", ANY_GPU, H100)]), fleet, observed)
    assert len(result.replicas) == 30
    # ANY_GPU on 5 distinct devices (3 are GPUs), then H100 on those 3 GPUs.
    assert sorted(calls) == sorted([ANY_GPU] * 5 + [H100] * 3)
    # The process's next call, with the same selectors over the same (equal,
    # freshly read) clusters, evaluates nothing again.
    calls.clear()
    again = schedule(deployment(3, [request("gpu", ANY_GPU, H100)]), fleet, observed)
    assert len(again.replicas) == 3
    assert calls == []


# ── Names and determinism ───────────────────────────────────────────────────


def test_replica_names_are_opaque_stable_and_short():
    n = replica_name("team-a", "llm", "us-east", 0)
    assert n == replica_name("team-a", "llm", "us-east", 0)
    assert n.startswith("llm-") and len(n) == len("llm-") + 10
    assert "us-east" not in n
    assert len({replica_name("team-a", "llm", "us-east", i) for i in range(100)}) == 100
    assert replica_name("team-a", "llm", "a-b", 0) != replica_name("team-a", "llm-a", "b", 0)
    assert replica_name("team-b", "llm", "us-east", 0) != n
    long = replica_name("ns", "x" * 60 + ".y", "c", 0)
    assert len(long) == 63 and long.startswith("x" * 52 + "-")
    dotted = replica_name("ns", "a" * 51 + ".b", "c", 0)
    assert ".-" not in dotted and len(dotted) <= 63


def test_input_order_does_not_matter():
    fleet = [
        cluster("a", {"h100": ("h100-8x", 1), "l4": ("l4-1x", 2)}),
        cluster("b", {"l4": ("l4-1x", 1)}),
        cluster("c", {"a100": ("a100-4x", 1), "l4": ("l4-1x", 1)}),
    ]
    observed = [
        replica("llm", "a", 0, "l4", [resolved("gpu")]),
        replica("chat", "c", 0, "l4", [resolved("gpu")], namespace="team-b"),
        replica("llm", "b", 3, "l4", [resolved("gpu")]),
    ]
    dep = deployment(5, [request("gpu", ANY_GPU)])
    expected = schedule(dep, fleet, observed)
    rng = random.Random(7)
    for _ in range(5):
        f2, o2 = list(fleet), list(observed)
        rng.shuffle(f2)
        rng.shuffle(o2)
        assert schedule(dep, f2, o2) == expected


def test_interchangeable_devices_serve_replicas_through_any_matching_assignment():
    # A dual node has two single-count L4s; a claim for one L4 can be served by
    # either, so two 1-GPU replicas share the node and a third does not fit.
    fleet = [cluster("a", {"dual": ("dual-1x", 1)})]
    result = schedule(deployment(3, [request("gpu", L4)]), fleet, [])
    assert placements(result) == [("a", 0, "dual"), ("a", 1, "dual")]
    other = replica("chat", "a", 0, "dual", [resolved("gpu", cel=L4)], namespace="team-b")
    result = schedule(deployment(3, [request("gpu", L4)]), fleet, [other])
    assert placements(result) == [("a", 0, "dual")]


def test_dropped_replicas_are_not_charged():
    # The old replica's prefill pool no longer matches, so it is replaced; its
    # decode pool (one L4 node) is not charged, so the replacement can use it.
    fleet = [cluster("a", {"h100": ("h100-8x", 1), "a100": ("a100-4x", 1), "l4": ("l4-1x", 1)})]
    old = replica("pd", "a", 0, "h100", [])
    spec = old["spec"]
    for key in ("nodePoolName", "deviceRequests", "workers"):
        del spec[key]
    spec["prefill"] = {
        "nodePoolName": "h100",
        "deviceRequests": [resolved("gpu", 8)],
        "workers": workers(),
    }
    spec["decode"] = {
        "nodePoolName": "l4",
        "deviceRequests": [resolved("gpu")],
        "workers": workers(),
    }
    edited = deployment(
        1,
        name="pd",
        prefill=([request("gpu", A100, count=4)], workers()),
        decode=([request("gpu", L4)], workers()),
    )
    result = schedule(edited, fleet, [old])
    assert placements(result) == [("a", 1, "a100", "l4")]
    assert [n for n, _ in result.replaced] == [name("a", 0, "pd")]
    assert "pool h100 no longer matches spec.prefill.nodeSelector" in result.replaced[0][1]
    # Unedited, the old replica is kept and the decode pool counts as held.
    same = deployment(
        2,
        name="pd",
        prefill=([request("gpu", ANY_GPU, count=4)], workers()),
        decode=([request("gpu", L4)], workers()),
    )
    result = schedule(same, fleet, [old])
    assert placements(result) == [("a", 0, "h100", "l4")]
    assert result.replicas[0].retained


def test_malformed_observed_objects_never_crash_the_scheduler():
    good = cluster("ok", {"l4": ("l4-1x", 2)})
    junk_clusters = [
        {"metadata": {"name": "no-status"}},
        {"metadata": {"name": "bad-pools"}, "status": {"gpuPools": "nope"}},
        {
            "metadata": {"name": "bad-devices"},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "gpuPools": [
                    {"name": "p", "nodes": "x", "devices": [None, {"count": "many"}]},
                    {"nodes": 1},
                ],
            },
        },
        {"metadata": {}},
        good,
    ]
    junk_replicas = [
        {},
        {"metadata": {"name": "r1", "namespace": "team-a"}, "spec": {"clusterName": "ok"}},
        {
            "metadata": {"name": "r2", "namespace": "team-b"},
            "spec": {
                "deploymentName": "x",
                "clusterName": "ok",
                "nodePoolName": "l4",
                "deviceRequests": [{"count": 1.0}, "junk"],
                "workers": {"count": "two", "topology": {"dataLocal": 0}},
            },
        },
        {
            "metadata": {"name": "r3", "namespace": "team-a"},
            "spec": {"deploymentName": "llm", "clusterName": "ok", "index": 0},
        },
    ]
    result = schedule(deployment(2, NODE_1X), junk_clusters, junk_replicas)
    assert verdicts(result) == {
        "bad-devices": "NoMatchingPool",
        "bad-pools": "NotReady",
        "no-status": "NotReady",
        "ok": "InsufficientCapacity",
    }
    # r2's request names no device class, so it holds nothing; r3 names no pool and
    # is replaced, its index left alone.
    assert placements(result) == [("ok", 1, "l4"), ("ok", 2, "l4")]
    assert dict(result.replaced) == {"r3": "replica names no node pool"}


def test_every_request_is_explained_when_one_runs_out_of_devices():
    fleet = [cluster("a", {"a100": ("a100-4x", 1)})]
    reqs = [
        request("all", A100, count=4),
        request("one-more", A100),
        request("nic", 'device.driver == "rdma.example.com"', count=2),
    ]
    (v,) = schedule(deployment(1, reqs), fleet, []).clusters
    assert v.reason == "NoMatchingPool"
    assert [(r.request, r.matched, r.device) for r in v.pools[0].requests] == [
        ("all", True, "gpu"),
        ("one-more", False, None),
        ("nic", True, "nic"),
    ]
    gpu = v.pools[0].requests[1].devices[0]
    assert (gpu.device, gpu.insufficient_count) == ("gpu", (1, 0))
    assert v.message == (
        "no pool matches spec.nodeSelector: pool a100: request one-more: "
        "not enough devices (gpu: needs 1, 0 unconsumed)"
    )
