"""Rendering examples/operations/platform-stack: a replica the fleet gateway cannot reach
(its cluster's serving stack is the platform's, so no hop certificate exists) gets weight
0 and says why, and the service stays Ready on the other (issue 41, item 4)."""

from __future__ import annotations

from pathlib import Path

from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "operations" / "platform-stack"
API = "modelplane.ai/v1alpha1"


def test_the_replica_behind_the_platforms_stack_gets_weight_0_and_the_service_stays_ready() -> None:
    result = ControlPlane(load_paths([str(EXAMPLE)])).run()
    clusters = {
        r["metadata"]["name"]: r["spec"]["clusterName"]
        for r in result.store.list(API, "ModelReplica", "ml-team")
    }
    assert sorted(clusters.values()) == ["eu-west", "us-east"]
    service = result.get(API, "ModelService", "llama", "ml-team")
    assert service is not None
    conditions = {x["type"]: x for x in service["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    far = next(n for n, cl in clusters.items() if cl == "eu-west")
    near = next(n for n, cl in clusters.items() if cl == "us-east")
    why = (
        f"{far}: spec.cluster: no hop credentials for InferenceCluster 'eu-west': its "
        "spec.servingStack.enabled is false, so Modelplane mints no client certificate for "
        "its Gateway"
    )
    assert sorted(service["status"]["endpoints"], key=lambda e: e["name"] != far) == [
        {"name": far, "weight": 0, "ready": False, "message": why},
        {"name": near, "weight": 1000, "ready": True},
    ]
    routable = conditions["EndpointsRoutable"]
    assert (routable["status"], routable["reason"]) == ("False", "EndpointUnreachable")
    assert routable["message"] == f"weight 0 (no traffic): {why}"
    events = result.events.get((API, "ModelService", "ml-team", "llama"), [])
    assert [e.reason for e in events if e.type == "Warning"] == ["EndpointUnreachable"]
