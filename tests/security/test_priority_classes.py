"""Issue 40, finding 3: a tenant names a PriorityClass the platform never granted it.

Before the defence any namespace could name any PriorityClass — among them
`system-node-critical` — and preempt every other namespace's replicas fleet-wide,
and a template's own `priorityClassName` reached the pods when `spec.priority`
was unset. Now a namespace may name only what its FleetQuotas list in
`spec.priorityClasses` (all of them: the tightest wins), never a `system-` class,
and the pods carry the fleet's decision only.
"""

from __future__ import annotations

import pytest

from modelplane.api.fleet_quota import priority_problem
from modelplane.local import RenderResult
from tests.security.tenants import (
    H100,
    HOSTILE,
    L4,
    SYSTEM_CRITICAL,
    condition,
    deployment,
    get,
    namespace,
    placements,
    quota,
    render,
    replicas,
    warned,
    workloads,
)

TENANCY = "examples/tenancy"


@pytest.fixture(scope="module")
def quiet() -> RenderResult:
    return render(TENANCY)


def _refused(rendered: RenderResult, name: str) -> str:
    dep = get(rendered, "ModelDeployment", HOSTILE, name)
    status, reason, message = condition(dep, "Scheduled")
    assert (status, reason) == ("False", "PriorityNotAllowed"), message
    assert warned(rendered, "ModelDeployment", HOSTILE, name, "PriorityNotAllowed")
    assert replicas(rendered, HOSTILE) == []
    return message


def _others_unchanged(quiet: RenderResult, rendered: RenderResult) -> None:
    for ns in ("team-a", "lab"):
        assert placements(rendered, ns) == placements(quiet, ns)
        assert workloads(rendered, ns) == workloads(quiet, ns)


def test_system_node_critical_is_refused_and_preempts_no_one(quiet: RenderResult) -> None:
    attack = deployment("takeover", H100, priority="system-node-critical")
    grant = quota("mallory", [{"name": "all", "devices": 64}], priorityClasses=["batch"])
    rendered = render(TENANCY, SYSTEM_CRITICAL, namespace(), grant, attack)
    message = _refused(rendered, "takeover")
    assert message.startswith("spec.priority: PriorityClass 'system-node-critical' is reserved")
    _others_unchanged(quiet, rendered)


def test_a_class_no_fleet_quota_grants_is_refused(quiet: RenderResult) -> None:
    # No FleetQuota in the namespace: no class at all may be named.
    rendered = render(TENANCY, namespace(), deployment("jump", H100, priority="critical"))
    message = _refused(rendered, "jump")
    assert "no FleetQuota of the namespace lists it in spec.priorityClasses" in message
    _others_unchanged(quiet, rendered)


def test_every_quota_must_grant_the_class(quiet: RenderResult) -> None:
    # One quota lists critical, another (the platform's) only batch: the tightest wins.
    loose = quota("a-loose", [{"name": "all", "devices": 64}], priorityClasses=["critical"])
    strict = quota("b-platform", [{"name": "all", "devices": 64}], priorityClasses=["batch"])
    attack = deployment("jump", H100, priority="critical")
    rendered = render(TENANCY, namespace(), loose, strict, attack)
    message = _refused(rendered, "jump")
    assert "FleetQuota b-platform does not list it in spec.priorityClasses" in message
    _others_unchanged(quiet, rendered)


def test_the_templates_own_priority_class_never_reaches_the_pods() -> None:
    pod = {"priorityClassName": "system-node-critical", "priority": 2000001000}
    rendered = render("examples/quickstart", namespace(), deployment("quiet", L4, count=1, pod=pod))
    [replica] = replicas(rendered, HOSTILE)
    assert condition(replica, "Ready")[0] == "True"
    pods = [
        spec["forProvider"]["manifest"]["spec"]["template"]["spec"]
        for spec in workloads(rendered, HOSTILE).values()
        if spec["forProvider"]["manifest"]["kind"] == "Deployment"
    ]
    assert len(pods) == 1
    assert "priorityClassName" not in pods[0] and "priority" not in pods[0]


@pytest.mark.parametrize(
    ("lists", "priority", "allowed"),
    [
        ([["batch"]], "batch", True),
        ([["batch"], None], "batch", True),  # a quota without the field says nothing
        ([["batch"], ["critical"]], "batch", False),
        ([None], "batch", False),  # no list at all: nothing granted
        ([], "batch", False),
        ([["system-node-critical"]], "system-node-critical", False),  # never
        ([["system-cluster-critical"]], "system-cluster-critical", False),
    ],
)
def test_which_priority_classes_a_namespace_may_use(
    lists: list[list[str] | None], priority: str, allowed: bool
) -> None:
    quotas = [
        quota(
            f"q{i}",
            [{"name": "all", "devices": 1}],
            **({} if pcs is None else {"priorityClasses": pcs}),
        )
        for i, pcs in enumerate(lists)
    ]
    assert (priority_problem(quotas, HOSTILE, priority) is None) is allowed
