"""Issue 40, finding 4: a tenant writes a ModelReplica itself.

A ModelReplica is the fleet's record of a placement: its `spec.preempts` makes
another deployment withdraw the replicas it names at once. Before the defence a
replica created directly — owned by no deployment, priority of its choosing —
was trusted fleet-wide. Now a preemption is honoured only for a replica its own
ModelDeployment exists, placed (its status lists it) and outranks the victim
with, and a replica no deployment placed is composed onto no cluster.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.compose.replica.model_replica import owner_problem
from modelplane.local import RenderResult
from tests.security.tenants import (
    condition,
    placements,
    render,
    replicas,
    warned,
    workloads,
)

TENANCY = "examples/tenancy"
ULTRA = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "ultra"},
    "value": 1000000,
}


@pytest.fixture(scope="module")
def quiet() -> RenderResult:
    return render(TENANCY)


def _forge(quiet: RenderResult, victim: str, deployment: str) -> dict[str, Any]:
    """A replica of namespace lab written by hand: a copy of the lab's real one under
    another name, owned by nothing, at a class above every other, preempting `victim`."""
    [real] = replicas(quiet, "lab")
    spec = copy.deepcopy(real["spec"])
    spec.update(
        deploymentName=deployment,
        priority="ultra",
        preempts=[{"namespace": "team-a", "name": victim}],
    )
    # Only the label every listing selects on: a replica carrying its deployment's
    # labels is that deployment's to adopt, and its spec becomes the deployment's.
    labels = {c.LABEL_MANAGED_BY: c.MANAGED_BY}
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelReplica",
        "metadata": {"name": "forged-0", "namespace": "lab", "labels": labels},
        "spec": spec,
    }


def _serve_replica(quiet: RenderResult) -> str:
    return next(name for name, dep, _ in placements(quiet, "team-a") if dep == "serve")


def _team_a_unchanged(quiet: RenderResult, rendered: RenderResult) -> None:
    assert placements(rendered, "team-a") == placements(quiet, "team-a")
    assert workloads(rendered, "team-a") == workloads(quiet, "team-a")
    serve = rendered.get(c.API_VERSION, "ModelDeployment", "serve", "team-a")
    assert serve is not None
    assert condition(serve, "Preemption")[1] == "Preempting"  # its own, of nightly


def test_replica_of_no_deployment_preempts_no_one_and_lands_nowhere(quiet: RenderResult) -> None:
    rendered = render(TENANCY, ULTRA, _forge(quiet, _serve_replica(quiet), "ghost"))
    _team_a_unchanged(quiet, rendered)
    mine = rendered.get(c.API_VERSION, "ModelReplica", "forged-0", "lab")
    assert mine is not None
    status, reason, message = condition(mine, c.CONDITION_VALID)
    assert (status, reason) == ("False", "NotPlacedByDeployment")
    assert message.startswith("spec.deploymentName: ModelDeployment lab/ghost not found")
    assert warned(rendered, "ModelReplica", "lab", "forged-0", "NotPlacedByDeployment")
    assert not [n for n in workloads(rendered, "lab") if n.startswith("forged-0")]


def test_replica_naming_a_real_deployment_gets_that_deployments_decision(
    quiet: RenderResult,
) -> None:
    # The deployment takes a replica naming it as its own slot and writes its own spec
    # over the forged one: its priority, no victims. Nobody else is preempted meanwhile.
    rendered = render(TENANCY, ULTRA, _forge(quiet, _serve_replica(quiet), "experiments"))
    _team_a_unchanged(quiet, rendered)
    mine = rendered.get(c.API_VERSION, "ModelReplica", "forged-0", "lab")
    if mine is not None:
        assert mine["spec"]["priority"] == "batch"
        assert not mine["spec"].get("preempts")


def _spec() -> ModelReplicaSpec:
    return ModelReplicaSpec.model_validate(
        {
            "deploymentName": "chat",
            "clusterName": "east",
            "nodePoolName": "l4",
            "index": 0,
            "workers": {"template": {"spec": {"containers": [{"name": "engine"}]}}},
        }
    )


def _dep(placed: list[str], uid: str = "u-1") -> dict[str, Any]:
    return {
        "metadata": {"name": "chat", "namespace": "team-a", "uid": uid},
        "spec": {},
        "status": {"placements": [{"replicaName": n} for n in placed]},
    }


def _replica(owner_uid: str | None) -> dict[str, Any]:
    refs = (
        [{"kind": "ModelDeployment", "name": "chat", "uid": owner_uid, "controller": True}]
        if owner_uid
        else []
    )
    return {"metadata": {"name": "chat-0", "namespace": "team-a", "ownerReferences": refs}}


@pytest.mark.parametrize(
    ("deployments", "owner", "placed"),
    [
        ([], None, False),  # no deployment
        ([_dep([])], None, False),  # a deployment that did not place it
        ([_dep([])], "u-other", False),  # an owner reference that is not its uid
        ([_dep(["chat-0"])], None, True),  # listed in status.placements
        ([_dep([])], "u-1", True),  # its controller (just created, status not yet written)
    ],
)
def test_which_replicas_a_deployment_vouches_for(
    deployments: list[dict[str, Any]], owner: str | None, placed: bool
) -> None:
    problem = owner_problem(_replica(owner), deployments, _spec(), "chat-0", "team-a")
    assert (problem is None) is placed
