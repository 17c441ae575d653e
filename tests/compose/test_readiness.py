"""Readiness rules: declared on each item, recovered from the Object, never guessed from a kind."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from replicas import cluster, cond, observed_from, replica, run

from modelplane.compose import readiness
from modelplane.compose.objects import Item, wrap


def _object(manifest: dict[str, Any], rule: readiness.ReadinessRule, **status: Any) -> dict:
    obj = wrap(Item("k", "o", manifest, rule, "x"), "ns", "pc", {})
    obj["status"] = status
    return obj


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
READY = {"conditions": [{"type": "Ready", "status": "True"}]}


def test_the_rules_wire_forms() -> None:
    assert readiness.EXISTS.wire() == {"policy": "SuccessfulCreate"}
    assert readiness.WORKLOAD_AVAILABLE.wire() == {
        "policy": "DeriveFromCelQuery",
        "celQuery": "has(object.status) && has(object.status.conditions) && "
        "object.status.conditions.exists(x, x.type == 'Available' && x.status == 'True')",
    }
    # A fresh copy each time: an edited Object never changes the rule.
    wire = readiness.EXISTS.wire()
    wire["policy"] = "x"
    assert readiness.EXISTS.wire() == {"policy": "SuccessfulCreate"}


@pytest.mark.parametrize(
    ("rule", "status", "expected"),
    [
        # Declared "exists": a Deployment that is created but not Available is ready.
        (readiness.EXISTS, {"atProvider": {"manifest": DEPLOYMENT}}, True),
        # Declared "Available": the same observation is not.
        (readiness.WORKLOAD_AVAILABLE, {"atProvider": {"manifest": DEPLOYMENT}}, False),
        # An unknown policy: the provider's own verdict (the Object's Ready).
        (readiness.OBJECT_READY, READY, True),
        (readiness.OBJECT_READY, {"atProvider": {"manifest": DEPLOYMENT}}, False),
    ],
)
def test_an_observed_object_is_read_by_the_rule_it_declared(
    rule: readiness.ReadinessRule, status: dict[str, Any], expected: bool
) -> None:
    obj = _object(DEPLOYMENT, readiness.EXISTS, **status)
    obj["spec"]["readiness"] = rule.wire() or {"policy": "SomeFuturePolicy"}
    assert readiness.declared(obj) is rule
    assert readiness.observed_ready(obj) is expected


def test_an_object_without_a_declared_policy_reads_its_ready_condition() -> None:
    obj = _object(DEPLOYMENT, readiness.EXISTS, **READY)
    del obj["spec"]["readiness"]
    assert readiness.declared(obj) is readiness.OBJECT_READY
    obj["spec"] = "garbage"
    assert readiness.declared(obj) is readiness.OBJECT_READY
    assert readiness.observed_ready(obj) is True


def test_a_wire_form_has_one_rule() -> None:
    twin = readiness.ReadinessRule("Twin", readiness.EXISTS.wire(), lambda _: True)
    with pytest.raises(ValueError, match="same policy as 'Exists'"):
        readiness.register(twin)
    assert readiness.register(readiness.EXISTS) is readiness.EXISTS  # idempotent


@pytest.mark.parametrize(
    ("wrapped_status", "object_ready", "expected"),
    [
        ({"conditions": [{"type": "Ready", "status": "True"}]}, None, True),
        ({"conditions": [{"type": "Ready", "status": "False"}]}, "True", False),  # wrapped wins
        ({"conditions": [{"type": "Available", "status": "True"}]}, None, False),
        (None, "True", True),  # not reported yet: the Object's Ready
        (None, None, False),
    ],
)
def test_condition_rule_reads_the_wrapped_condition_first(
    wrapped_status: dict[str, Any] | None, object_ready: str | None, expected: bool
) -> None:
    rule = readiness.condition_rule("ServiceReady", "Ready")
    assert "x.type == 'Ready'" in rule.wire()["celQuery"]
    manifest = copy.deepcopy(DEPLOYMENT)
    if wrapped_status is not None:
        manifest["status"] = wrapped_status
    status: dict[str, Any] = {"atProvider": {"manifest": manifest}}
    if object_ready is not None:
        status["conditions"] = [{"type": "Ready", "status": object_ready}]
    assert rule.reads(_object(DEPLOYMENT, rule, **status)) is expected
    assert rule.ready(None) == "False"


def test_condition_rule_query_evaluates() -> None:
    from cel_expr_python import cel
    from google.protobuf import descriptor_pool

    env = cel.NewEnv(descriptor_pool.Default(), variables={"object": cel.Type.DYN})
    query = env.compile(readiness.condition_rule("R", "Ready").wire()["celQuery"])
    for wrapped, expected in [
        ({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, True),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, False),
        ({"metadata": {}}, False),
    ]:
        result = query.eval(env.Activation({"object": wrapped}))
        assert result.value() is expected


def test_a_held_replica_reads_each_kept_object_by_its_declared_rule() -> None:
    # Every workload Available, every route Accepted: everything observed is ready.
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    # The Deployment's Object now declares "exists" (as an older function might
    # have written it) and its Deployment is not Available: the hold must read
    # it by what it declares, not guess "workload" from its kind.
    observed["unified-deployment"]["spec"]["readiness"] = readiness.EXISTS.wire()
    wrapped = observed["unified-deployment"]["status"]["atProvider"]["manifest"]
    wrapped["status"] = {"conditions": [{"type": "Available", "status": "False"}]}
    broken = replica(index=-1)
    res = run(broken, cluster(), observed=observed)
    assert cond(res, "Valid")[:2] == ("False", "InvalidSpec")
    assert {k: d.ready for k, d in res.desired.items()} == dict.fromkeys(observed, "True")
    # ... and the same Object declaring "Available" is not ready.
    observed["unified-deployment"]["spec"]["readiness"] = readiness.WORKLOAD_AVAILABLE.wire()
    res = run(broken, cluster(), observed=observed)
    assert res.desired["unified-deployment"].ready == "False"
    assert res.ready == "False"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"conditions": [{"type": "Ready", "status": "True"}]}, True),
        # The Object's verdict wins over a reported manifest.
        (
            {"conditions": [{"type": "Ready", "status": "False"}], "atProvider": {"manifest": {}}},
            False,
        ),
        ({"atProvider": {"manifest": {"kind": "Service"}}}, True),  # applied, no verdict yet
        ({"conditions": [{"type": "Synced", "status": "True"}]}, False),  # nothing applied yet
        ({}, False),
    ],
)
def test_exists_reads_the_verdict_else_the_applied_manifest(
    status: dict[str, Any], expected: bool
) -> None:
    assert readiness.EXISTS.reads(_object(DEPLOYMENT, readiness.EXISTS, **status)) is expected


def _parent(accepted: str) -> dict[str, Any]:
    return {"parentRef": {"name": "gw"}, "conditions": [{"type": "Accepted", "status": accepted}]}


@pytest.mark.parametrize(
    ("parents", "object_ready", "expected"),
    [
        ([_parent("True")], None, True),
        ([_parent("False"), _parent("True")], None, True),  # some parent (its Gateway) accepted it
        ([_parent("False")], "True", False),  # the route's own status wins
        ([_parent("Unknown")], None, False),
        ([], "True", True),  # not reported yet: the Object's Ready
        ([], None, False),
    ],
)
def test_route_accepted_reads_the_parents_first(
    parents: list[dict[str, Any]], object_ready: str | None, expected: bool
) -> None:
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute"}
    status: dict[str, Any] = {"atProvider": {"manifest": {**route, "status": {"parents": parents}}}}
    if object_ready is not None:
        status["conditions"] = [{"type": "Ready", "status": object_ready}]
    obj = _object(route, readiness.ROUTE_ACCEPTED, **status)
    assert readiness.ROUTE_ACCEPTED.reads(obj) is expected


def _route(*parents: dict[str, Any]) -> dict[str, Any]:
    manifest = {"kind": "HTTPRoute", "status": {"parents": list(parents)}}
    return {"status": {"atProvider": {"manifest": manifest}}}


def _parent(*conditions: dict[str, Any]) -> dict[str, Any]:
    return {"parentRef": {"name": "gw"}, "conditions": list(conditions)}


@pytest.mark.parametrize(
    ("observed", "expected"),
    [
        (None, None),
        (_route(), None),  # no Gateway answered yet
        (_route(_parent()), None),  # a parent without an Accepted condition
        (_route(_parent({"type": "Accepted", "status": "True"})), None),
        (
            _route(
                _parent({"type": "ResolvedRefs", "status": "False", "reason": "X"}),
                _parent(
                    {
                        "type": "Accepted",
                        "status": "False",
                        "reason": "NotAllowedByListeners",
                        "message": "no listener allows namespace ml-team",
                    }
                ),
            ),
            "NotAllowedByListeners: no listener allows namespace ml-team",
        ),
        (_route(_parent({"type": "Accepted", "status": "False"})), "Accepted=False"),
    ],
)
def test_route_rejection_says_why_a_gateway_refused_the_route(
    observed: dict[str, Any] | None, expected: str | None
) -> None:
    assert readiness.route_rejection(observed) == expected


def _deployment_obj(spec_replicas: int | None, generation: int | None, **status: int) -> dict:
    obj: dict = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}, "spec": {}}
    if spec_replicas is not None:
        obj["spec"]["replicas"] = spec_replicas
    if generation is not None:
        obj["metadata"]["generation"] = generation
    # Available=True whatever the counts: what a one-replica Deployment with
    # maxUnavailable 1 reports while its only Pod waits for a node (seen on the
    # real stack: kube-scheduler could not allocate the claim).
    obj["status"] = {**status, "conditions": [{"type": "Available", "status": "True"}]}
    return obj


ROLLED_OUT_CASES = [
    # (spec.replicas, metadata.generation, status counts, ready?)
    (
        1,
        2,
        {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
        True,
    ),
    (1, 2, {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1}, False),
    (
        1,
        2,
        {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
        False,
    ),
    (
        2,
        1,
        {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 2, "availableReplicas": 2},
        False,
    ),
    (
        None,
        1,
        {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
        True,
    ),
    (0, 1, {"observedGeneration": 1}, True),
    (1, None, {"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}, True),
]


@pytest.mark.parametrize(("want", "generation", "counts", "expected"), ROLLED_OUT_CASES)
def test_a_deployment_is_ready_when_every_replica_runs_not_when_it_says_available(
    want: int | None, generation: int | None, counts: dict, expected: bool
) -> None:
    from cel_expr_python import cel
    from google.protobuf import descriptor_pool

    obj = _deployment_obj(want, generation, **counts)
    observed = {"status": {"atProvider": {"manifest": obj}}}
    assert readiness.DEPLOYMENT_ROLLED_OUT.reads(observed) is expected
    # provider-kubernetes evaluates the same verdict from the Object's CEL query.
    env = cel.NewEnv(descriptor_pool.Default(), variables={"object": cel.Type.DYN})
    query = env.compile(readiness.DEPLOYMENT_ROLLED_OUT.wire()["celQuery"])
    assert query.eval(env.Activation({"object": obj})).value() is expected
    assert (
        readiness.declared({"spec": {"readiness": readiness.DEPLOYMENT_ROLLED_OUT.wire()}})
        is readiness.DEPLOYMENT_ROLLED_OUT
    )
