"""examples/tenancy with PriorityClass mistakes: a class that exists nowhere, and clusters
that do not create the class the pods name. Each is refused out loud (issue 41)."""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.local import ControlPlane, Key, RenderResult, load_paths

Obj = dict[str, Any]


def _tenancy() -> list[Obj]:
    return load_paths(["examples/tenancy"])


def _find(objs: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def _scheduled(rendered: RenderResult, namespace: str, name: str) -> tuple[str, str, str]:
    dep = rendered.get(c.API_VERSION, "ModelDeployment", name, namespace)
    assert dep is not None
    found = next(x for x in dep["status"]["conditions"] if x["type"] == "Scheduled")
    return found["status"], found["reason"], found.get("message", "")


def _placed(rendered: RenderResult, namespace: str, name: str) -> int:
    return sum(
        1
        for r in rendered.store.list(c.API_VERSION, "ModelReplica", namespace)
        if r["spec"]["deploymentName"] == name
    )


def test_a_class_that_exists_nowhere_holds_the_deployment_with_a_warning() -> None:
    objs = _tenancy()
    # Misspelled the same way in the grant and in the deployment: the quota allows it,
    # but no PriorityClass of that name exists on the control plane or any cluster.
    _find(objs, "FleetQuota", "team-a")["spec"]["priorityClasses"] = ["critcal", "batch"]
    serve = _find(objs, "ModelDeployment", "serve")
    serve["spec"]["priority"] = "critcal"
    rendered = ControlPlane(objs).run(50)
    status, reason, message = _scheduled(rendered, "team-a", "serve")
    assert (status, reason) == ("False", "PriorityClassNotFound")
    assert message.startswith("spec.priority: PriorityClass critcal exists neither")
    assert _placed(rendered, "team-a", "serve") == 0
    events = rendered.events[Key.of(serve)]
    assert [(e.type, e.reason) for e in events] == [("Warning", "PriorityClassNotFound")]


def test_no_replica_lands_on_clusters_lacking_the_class_and_the_render_says_why() -> None:
    objs = _tenancy()
    for cl in (o for o in objs if o["kind"] == "InferenceCluster"):
        cl["spec"].pop("scheduling")  # the clusters create no PriorityClass
    rendered = ControlPlane(objs).run(50)
    for namespace, name in (("team-a", "serve"), ("lab", "experiments")):
        status, reason, message = _scheduled(rendered, namespace, name)
        assert status == "False", (name, reason, message)
        assert "PriorityClassMissing on central, east, west" in message, message
        assert _placed(rendered, namespace, name) == 0
        dep = rendered.get(c.API_VERSION, "ModelDeployment", name, namespace)
        assert dep is not None
        words = {u["cluster"]: u["message"] for u in dep["status"]["unschedulable"]}
        assert sorted(words) == ["central", "east", "west"]
        assert words["east"].startswith("PriorityClass ")
        assert "does not exist on the cluster" in words["east"]
    # A deployment naming no class is unaffected.
    assert _placed(rendered, "team-a", "nightly") == 1
