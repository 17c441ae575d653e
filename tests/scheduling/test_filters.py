"""Each cluster filter on its own: admit (may a new replica go here) and evict
(must an existing replica leave), with the reason code each answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.scheduling.framework import ClusterFilter, Eviction, Rejection, read_input
from modelplane.scheduling.rules import FILTERS, POOL_FILTERS
from modelplane.scheduling.rules.caches import CacheFilter
from modelplane.scheduling.rules.cluster_selector import ClusterSelectorFilter
from modelplane.scheduling.rules.pod_security import PodSecurityFilter
from modelplane.scheduling.rules.readiness import ReadinessFilter
from modelplane.scheduling.rules.taints import TaintFilter
from tests.scheduling.schedfleet import L4, cluster, deployment, replica, request, resolved

NODE_1X = [request("gpu", L4)]

NOSCHED = {"key": "gpu-maint", "value": "true", "effect": "NoSchedule"}
DRAIN = {"key": "drain", "effect": "NoExecute"}


def _cache(name: str, *copies: tuple[str, str]) -> dict[str, Any]:
    """A ModelCache with a copy (cluster, phase) per entry in its status."""
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "status": {"clusters": [{"cluster": c, "phase": p} for c, p in copies]},
    }


def _answer(
    rule: ClusterFilter,
    cl: dict[str, Any],
    dep: dict[str, Any],
    caches: set[str] | list[dict[str, Any]] | None = None,
) -> tuple[Rejection | None, Eviction | None]:
    if isinstance(caches, set):
        caches = [_cache(name, ("a", "Ready")) for name in sorted(caches)]
    inp = read_input(dep, [cl], [], caches)
    observed = read_inference_cluster(cl)
    assert observed is not None
    r = read_model_replica(replica("llm", observed.name, 0, "l4", [resolved("gpu")]))
    assert r is not None
    admitted = rule.admit(inp, observed)
    suspects = rule.suspects(inp)
    # A cluster the rule refuses is always among its suspects: a cycle asks no other.
    assert admitted is None or suspects is None or observed.name in suspects
    return admitted, rule.evict(inp, observed, r)


def test_the_registry_order_is_the_reporting_order() -> None:
    assert [f.name for f in FILTERS] == [
        "ClusterSelector",
        "Taints",
        "Readiness",
        "Backend",
        "PodSecurity",
        "Caches",
        "Unschedulable",
        "Spot",
        "Preemption",
    ]
    assert [f.name for f in POOL_FILTERS] == ["Unschedulable", "Spot"]


@pytest.mark.parametrize(
    ("labels", "selector", "admit", "evict"),
    [
        ({"tier": "gold"}, None, None, None),
        ({"tier": "gold"}, {"matchLabels": {"tier": "gold"}}, None, None),
        (
            {"tier": "dev"},
            {"matchLabels": {"tier": "gold"}},
            Rejection("NotSelected"),
            Eviction("Deselected", ("a",)),
        ),
        (
            {},
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            Rejection("NotSelected"),
            Eviction("Deselected", ("a",)),
        ),
    ],
)
def test_cluster_selector(
    labels: dict[str, str],
    selector: dict[str, Any] | None,
    admit: Rejection | None,
    evict: Eviction | None,
) -> None:
    dep = deployment(1, NODE_1X, selector=selector)
    cl = cluster("a", {"l4": ("l4-1x", 1)}, labels=labels)
    assert _answer(ClusterSelectorFilter(), cl, dep) == (admit, evict)


@pytest.mark.parametrize(
    ("taints", "tolerations", "admit", "evict"),
    [
        ([], [], None, None),
        # NoSchedule repels new replicas but keeps existing ones.
        ([NOSCHED], [], Rejection("Tainted", ("gpu-maint=true:NoSchedule",)), None),
        (
            [DRAIN],
            [],
            Rejection("Tainted", ("drain:NoExecute",)),
            Eviction("NoExecuteTaint", ("a", "drain:NoExecute")),
        ),
        ([DRAIN], [{"key": "drain", "operator": "Exists"}], None, None),
        (
            [NOSCHED, DRAIN],
            [{"key": "drain", "operator": "Exists", "effect": "NoExecute"}],
            Rejection("Tainted", ("gpu-maint=true:NoSchedule",)),
            None,
        ),
        ([NOSCHED], [{"operator": "Exists"}], None, None),
    ],
)
def test_taints(
    taints: list[dict[str, Any]],
    tolerations: list[dict[str, Any]],
    admit: Rejection | None,
    evict: Eviction | None,
) -> None:
    dep = deployment(1, NODE_1X, tolerations=tolerations)
    cl = cluster("a", {"l4": ("l4-1x", 1)}, taints=taints)
    assert _answer(TaintFilter(), cl, dep) == (admit, evict)


@pytest.mark.parametrize(
    ("ready", "pools", "admit"),
    [
        (True, {"l4": ("l4-1x", 1)}, None),
        (False, {"l4": ("l4-1x", 1)}, Rejection("NotReady", ("not-ready",))),
        (True, {}, Rejection("NotReady", ("no-pools",))),
    ],
)
def test_readiness_refuses_new_replicas_and_never_evicts(
    ready: bool, pools: dict[str, tuple[str, int]], admit: Rejection | None
) -> None:
    cl = cluster("a", pools, ready=ready)
    assert _answer(ReadinessFilter(), cl, deployment(1, NODE_1X)) == (admit, None)


@pytest.mark.parametrize(
    ("caches", "found", "admit"),
    [
        (None, None, None),
        ([{"name": "w"}], None, None),  # not looked up: no opinion
        ([{"name": "w"}], {"w"}, None),
        ([{"name": "w"}], set(), Rejection("WaitingForCache", ("w",))),
        ([{"name": "w"}], {"other"}, Rejection("WaitingForCache", ("w",))),
    ],
)
def test_cache_holds_new_replicas_and_never_evicts(
    caches: list[dict[str, str]] | None, found: set[str] | None, admit: Rejection | None
) -> None:
    dep = deployment(1, NODE_1X)
    if caches is not None:
        dep["spec"]["caches"] = caches
    cl = cluster("a", {"l4": ("l4-1x", 1)})
    assert _answer(CacheFilter(), cl, dep, found) == (admit, None)


@pytest.mark.parametrize(
    ("copies", "admit"),
    [
        ((("a", "Ready"),), None),
        ((("a", "Hydrating"),), None),  # covered: the score, not the filter, prefers Ready
        ((("a", "Failed"),), None),
        ((("a", "Exploded"),), None),  # unreadable entry: kept as unknown, still covered
        ((("b", "Ready"),), Rejection("CacheNotOnCluster", ("w",))),
        ((), Rejection("CacheNotOnCluster", ("w",))),
    ],
)
def test_cache_admits_only_clusters_it_covers_and_never_evicts(
    copies: tuple[tuple[str, str], ...], admit: Rejection | None
) -> None:
    dep = deployment(1, NODE_1X)
    dep["spec"]["caches"] = [{"name": "w"}]
    cl = cluster("a", {"l4": ("l4-1x", 1)})
    assert _answer(CacheFilter(), cl, dep, [_cache("w", *copies)]) == (admit, None)


HOST = "spec.workers.template.spec.hostNetwork: must be unset or false"
ESCALATE = "spec.workers.template.spec.containers[0].securityContext.allowPrivilegeEscalation"


@pytest.mark.parametrize(
    ("level", "pod", "admit"),
    [
        (None, {}, None),  # the default level, baseline: a plain template passes
        ("restricted", {}, Rejection("PodSecurityForbidden", ("restricted", f"{ESCALATE}: ..."))),
        ("privileged", {"hostNetwork": True}, None),
        ("baseline", {"hostNetwork": True}, Rejection("PodSecurityForbidden", ("baseline", HOST))),
        ("restricted", {"hostNetwork": True}, "restricted"),
        ("nonsense", {}, "restricted"),  # a level that does not read is restricted
    ],
)
def test_pod_security_refuses_clusters_whose_level_forbids_and_never_evicts(
    level: str | None, pod: dict[str, Any], admit: Rejection | str | None
) -> None:
    dep = deployment(1, NODE_1X)
    template = copy.deepcopy(dep["spec"]["workers"]["template"])
    template["spec"].update(pod)
    dep["spec"]["workers"]["template"] = template
    cl = cluster("a", {"l4": ("l4-1x", 1)})
    if level is not None:
        cl["spec"]["podSecurity"] = level
    got, evicted = _answer(PodSecurityFilter(), cl, dep)
    assert evicted is None
    if admit is None or isinstance(admit, str):
        assert (got is None) is (admit is None)
        assert got is None or (got.reason, got.detail[0]) == ("PodSecurityForbidden", admit)
    elif admit.detail[1].endswith(": ..."):
        assert got is not None and got.detail[0] == admit.detail[0]
        assert got.detail[1].startswith(admit.detail[1][: -len(" ...")])
    else:
        assert got == admit


def _mixed_fleet() -> list[dict[str, Any]]:
    """Clusters each of which some filter refuses for some deployment below."""
    kserve = cluster("e-kserve", {"l4": ("l4-1x", 1)}, labels={"tier": "gold"})
    kserve["spec"]["servingStack"] = {"kserve": {"enabled": True}}
    unreadable = cluster("f-unreadable", {"l4": ("l4-1x", 1)})
    unreadable["spec"]["servingStack"] = {"kserve": "yes"}
    restricted = cluster("h-restricted", {"l4": ("l4-1x", 1)}, labels={"tier": "gold"})
    restricted["spec"]["podSecurity"] = "restricted"  # the plain engine template breaks it
    return [
        restricted,
        cluster("a-gold", {"l4": ("l4-1x", 1)}, labels={"tier": "gold"}),
        cluster("b-tainted", {"l4": ("l4-1x", 1)}, labels={"tier": "gold"}, taints=[NOSCHED]),
        cluster("c-notready", {"l4": ("l4-1x", 1)}, ready=False),
        cluster("d-nopools", {}, labels={"tier": "gold"}),
        kserve,
        unreadable,
        cluster("g-drain", {"l4": ("l4-1x", 1)}, taints=[DRAIN]),
    ]


def _deployments() -> list[tuple[dict[str, Any], list[dict[str, Any]] | None]]:
    gold = deployment(1, NODE_1X, selector={"matchLabels": {"tier": "gold"}})
    tolerant = deployment(1, NODE_1X, tolerations=[{"operator": "Exists"}])
    kserve = deployment(1, NODE_1X)
    kserve["spec"]["backend"] = "KServe"
    cached = deployment(1, NODE_1X)
    cached["spec"]["caches"] = [{"name": "w"}]
    return [
        (deployment(1, NODE_1X), None),
        (gold, None),
        (tolerant, None),
        (kserve, None),
        (cached, [_cache("w", ("a-gold", "Ready"), ("c-notready", "Ready"))]),
        (cached, []),  # the cache is missing: every cluster waits
    ]


@pytest.mark.parametrize("case", range(6))
def test_the_cycle_asks_only_suspects_and_reaches_every_rules_verdict(case: int) -> None:
    from modelplane.scheduling.scheduler import filter_clusters
    from modelplane.scheduling.state import new_state

    dep, caches = _deployments()[case]
    inp = read_input(dep, _mixed_fleet(), [], caches)
    # Independently: every rule asked about every cluster, the first refusal wins.
    expected = {}
    for name, cl in inp.clusters.items():
        found = (rule.admit(inp, cl) for rule in FILTERS)
        expected[name] = next((r.reason for r in found if r is not None), None)
    state = new_state(inp)
    filter_clusters(state)
    got = {name: v.reason for name, v in state.verdicts.items()}
    got.update(dict.fromkeys(state.schedulable))
    assert got == expected
    assert sorted(state.schedulable) == sorted(k for k, v in expected.items() if v is None)
    assert any(v is not None for v in expected.values())  # the case refuses something
