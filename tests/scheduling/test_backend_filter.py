"""The serving-backend filter: a KServe deployment goes only to clusters that run KServe,
a Dynamo deployment only to clusters that say Dynamo is present."""

from __future__ import annotations

from typing import Any

import pytest
from schedfleet import (
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

from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.scheduling import schedule
from modelplane.scheduling.framework import Eviction, Rejection, read_input
from modelplane.scheduling.rules.backend import BackendFilter

NODE_1X = [request("gpu", L4)]
KSERVE_ON = {"kserve": {"enabled": True}}
KSERVE_OFF = {"kserve": {"enabled": False}}
DYNAMO_ON = {"dynamo": {"present": True, "namespace": "dynamo-system"}}
DYNAMO_OFF = {"dynamo": {"present": False}}


def _cluster(name: str, stack: Any) -> dict[str, Any]:
    cl = cluster(name, {"l4": ("l4-1x", 2)})
    if stack is not None:
        cl["spec"]["servingStack"] = stack
    return cl


def _deployment(backend: str | None, replicas: int = 1) -> dict[str, Any]:
    dep = deployment(replicas, NODE_1X)
    if backend is not None:
        dep["spec"]["backend"] = backend
    if backend == "Dynamo":
        dep["spec"]["framework"] = "vllm"
    return dep


@pytest.mark.parametrize(
    ("backend", "stack", "admit", "evict"),
    [
        # Native runs on every cluster, whatever its serving stack says.
        (None, None, None, None),
        ("Native", KSERVE_OFF, None, None),
        ("Native", {"kserve": "yes"}, None, None),
        # KServe only where the serving stack enables it.
        ("KServe", KSERVE_ON, None, None),
        ("KServe", {"enabled": False, **KSERVE_ON}, None, None),  # installed by the platform team
        (
            "KServe",
            None,
            Rejection("BackendUnsupported", ("KServe", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "KServe")),
        ),
        (
            "KServe",
            KSERVE_OFF,
            Rejection("BackendUnsupported", ("KServe", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "KServe")),
        ),
        # An unreadable servingStack cannot be verified: nothing new, nothing evicted.
        (
            "KServe",
            {"kserve": "yes"},
            Rejection("BackendUnsupported", ("KServe", "unreadable")),
            None,
        ),
        # Dynamo only where the platform team's Dynamo is declared present.
        ("Dynamo", DYNAMO_ON, None, None),
        ("Dynamo", {"enabled": False, **DYNAMO_ON}, None, None),
        (
            "Dynamo",
            None,
            Rejection("BackendUnsupported", ("Dynamo", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "Dynamo")),
        ),
        (
            "Dynamo",
            DYNAMO_OFF,
            Rejection("BackendUnsupported", ("Dynamo", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "Dynamo")),
        ),
        # KServe's setting does not stand in for Dynamo's, nor Dynamo's for KServe's.
        (
            "Dynamo",
            KSERVE_ON,
            Rejection("BackendUnsupported", ("Dynamo", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "Dynamo")),
        ),
        (
            "KServe",
            DYNAMO_ON,
            Rejection("BackendUnsupported", ("KServe", "not-enabled")),
            Eviction("BackendUnsupported", ("a", "KServe")),
        ),
        (
            "Dynamo",
            {"dynamo": {"present": True, "namespace": "Not_A_Namespace"}},
            Rejection("BackendUnsupported", ("Dynamo", "unreadable")),
            None,
        ),
    ],
)
def test_backend_filter(
    backend: str | None, stack: Any, admit: Rejection | None, evict: Eviction | None
) -> None:
    cl = _cluster("a", stack)
    dep = _deployment(backend)
    inp = read_input(dep, [cl], [], None)
    observed = read_inference_cluster(cl)
    assert observed is not None
    r = read_model_replica(replica("llm", "a", 0, "l4", [resolved("gpu")]))
    assert r is not None
    rule = BackendFilter()
    assert (rule.admit(inp, observed), rule.evict(inp, observed, r)) == (admit, evict)
    # A refused cluster is among the rule's suspects: a cycle asks no other.
    assert admit is None or "a" in rule.suspects(inp)


def test_a_cluster_without_kserve_is_never_chosen_and_the_explanation_says_so() -> None:
    # "a" would win every tie by name and has room for all three replicas.
    fleet = [_cluster("a", None), _cluster("b", KSERVE_ON), _cluster("c", KSERVE_OFF)]
    result = schedule(_deployment("KServe", replicas=6), fleet, [])
    assert {cl for cl, _, _ in placements(result)} == {"b"}
    assert len(result.replicas) == 2  # b holds two nodes; the rest cannot be placed
    assert verdicts(result)["a"] == "BackendUnsupported"
    assert verdicts(result)["c"] == "BackendUnsupported"
    why = {v.cluster: v.message for v in result.clusters}
    assert "spec.backend KServe" in why["a"]
    assert "spec.servingStack.kserve.enabled is not true" in why["c"]


def test_a_cluster_without_dynamo_never_receives_a_dynamo_replica() -> None:
    # "a" would win every tie by name and has room for all of them; only "b" runs Dynamo.
    fleet = [
        _cluster("a", None),
        _cluster("b", DYNAMO_ON),
        _cluster("c", DYNAMO_OFF),
        _cluster("d", KSERVE_ON),
    ]
    result = schedule(_deployment("Dynamo", replicas=8), fleet, [])
    assert {cl for cl, _, _ in placements(result)} == {"b"}
    assert len(result.replicas) == 2  # b holds two nodes; the rest cannot be placed
    assert {k: v for k, v in verdicts(result).items() if k != "b"} == dict.fromkeys(
        "acd", "BackendUnsupported"
    )
    why = {v.cluster: v.message for v in result.clusters}
    for name in "acd":
        assert why[name] == (
            "spec.backend Dynamo: the cluster does not run it "
            "(spec.servingStack.dynamo.present is not true)"
        )


def test_a_disaggregated_dynamo_deployment_needs_no_inference_pool_support() -> None:
    # Dynamo's frontend routes prefill → decode; a KServe one routes through an InferencePool.
    no_pools = {"inferencePool": {"enabled": False}}
    fleet = [_cluster("a", {**DYNAMO_ON, **no_pools}), _cluster("b", {**KSERVE_ON, **no_pools})]
    roles = {"prefill": (NODE_1X, workers()), "decode": (NODE_1X, workers())}
    dynamo = deployment(1, **roles)
    dynamo["spec"].update(backend="Dynamo", framework="vllm")
    assert placements(schedule(dynamo, fleet, [])) == [("a", 0, "l4", "l4")]
    kserve = deployment(1, **roles)
    kserve["spec"]["backend"] = "KServe"
    result = schedule(kserve, fleet, [])
    assert placements(result) == []
    why = {v.cluster: v.message for v in result.clusters}
    assert why["b"].startswith("disaggregated serving routes through an InferencePool")


def test_the_same_fleet_places_a_native_deployment_everywhere() -> None:
    fleet = [_cluster("a", None), _cluster("b", KSERVE_ON), _cluster("c", KSERVE_OFF)]
    result = schedule(_deployment(None, replicas=3), fleet, [])
    assert sorted(cl for cl, _, _ in placements(result)) == ["a", "b", "c"]


def test_a_third_backend_is_read_and_refused_by_its_own_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The reader and the refusal text follow the backend's declaration; nothing
    # points a third backend's users at KServe's setting. (A stand-in enabled by
    # an existing block with an `enabled` field, `servingStack.inventory`.)
    from modelplane.api import backends as api_backends
    from modelplane.api.readers import read_backends
    from modelplane.scheduling.words import rejection_text

    third = api_backends.BackendDeclaration("Third", "inventory")
    monkeypatch.setitem(api_backends.DECLARED, "Third", third)
    on, _ = read_backends({"servingStack": {"inventory": {"enabled": True}}})
    off, _ = read_backends({"servingStack": {"kserve": {"enabled": True}}})
    assert on is not None and "Third" in on and "KServe" not in on
    assert off is not None and "Third" not in off and "KServe" in off
    text = rejection_text(Rejection("BackendUnsupported", ("Third", "not-enabled")))
    assert text == (
        "spec.backend Third: the cluster does not run it "
        "(spec.servingStack.inventory.enabled is not true)"
    )
