"""ModelReplica rules no other test pinned: Ray probes, template shapes, the engine port.

Each expectation is written by hand from SPEC §4 and the rule's reason, not
read back from the code.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from replicas import cluster, cond, manifest, replica, run

from modelplane.compose.replica import workload

VLLM = "vllm/vllm-openai:v0.9.0"
PROBE = {"httpGet": {"path": "/v1/models", "port": 8000}, "periodSeconds": 5}
DEFAULT_PROBE = {
    "httpGet": {"path": "/health", "port": 8000},
    "periodSeconds": 10,
    "failureThreshold": 3,
}


def _engine(pod_template: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(
        x for x in pod_template["spec"]["containers"] if x["name"] == "engine"
    )
    return found


def _multi_node(image: str, probe: dict[str, Any] | None) -> dict[str, Any]:
    engine: dict[str, Any] = {"name": "engine", "image": image}
    if probe is not None:
        engine["readinessProbe"] = copy.deepcopy(probe)
    return replica(
        workers={
            "count": 1,
            "topology": {"pipeline": 2},
            "template": {"spec": {"containers": [engine]}},
        }
    )


def _leader_and_worker(xr: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    lwt = manifest(run(xr, cluster()), "unified-leaderworkerset")["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == 2
    return _engine(lwt["leaderTemplate"]), _engine(lwt["workerTemplate"])


# --- Ray: workers serve nothing, so they probe nothing --------------------------------------


@pytest.mark.parametrize(
    ("probe", "leader_probe"),
    [
        (PROBE, PROBE),  # the user's probe stays on the leader, untouched
        (None, DEFAULT_PROBE),  # none given: the leader gets the default one
    ],
)
def test_ray_workers_drop_the_readiness_probe_the_leader_keeps(
    probe: dict[str, Any] | None, leader_probe: dict[str, Any]
) -> None:
    # A LeaderWorkerSet group is Ready only when every pod is; a Ray worker
    # never serves HTTP, so a probe there would keep the group unready forever.
    leader, worker = _leader_and_worker(_multi_node(VLLM, probe))
    assert leader["readinessProbe"] == leader_probe
    assert leader["command"][:2] == ["/bin/sh", "-c"]
    assert "readinessProbe" not in worker
    assert "ports" not in worker
    assert worker["command"][:2] == ["/bin/sh", "-c"] and "args" not in worker


def test_non_ray_workers_keep_the_users_probe() -> None:
    # Not vLLM: no Ray bootstrap, so the worker runs the user's engine as given
    # (its probe included); only the leader is given the serving port.
    leader, worker = _leader_and_worker(_multi_node("lmsysorg/sglang:v0.4.6", PROBE))
    assert leader["readinessProbe"] == PROBE
    assert worker["readinessProbe"] == PROBE
    assert "command" not in worker and "ports" not in worker


# --- template shapes Modelplane cannot stamp ------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"name": "x"}, "spec.workers.template.spec.resourceClaims: must be a list"),
        ("devices", "spec.workers.template.spec.resourceClaims: must be a list"),
        (["devices"], "spec.workers.template.spec.resourceClaims[0]: must be an object"),
    ],
)
def test_resource_claims_that_are_not_a_list_of_objects_are_refused(
    claims: Any, message: str
) -> None:
    xr = replica()
    xr["spec"]["workers"]["template"]["spec"]["resourceClaims"] = claims
    first = run(replica(), cluster())
    observed = {k: copy.deepcopy(d.resource) for k, d in first.desired.items()}
    res = run(xr, cluster(), observed=observed)
    assert cond(res, "Valid") == ("False", "InvalidSpec", message)
    assert [(e.severity, e.reason, e.message) for e in res.events] == [
        ("Warning", "InvalidSpec", message)
    ]
    # Refused, never half-stamped: what exists is kept exactly as observed.
    assert {k: d.resource for k, d in res.desired.items()} == observed
    assert res.ready == "False" and res.fatal is None


@pytest.mark.parametrize("template", ["spec: {}", ["spec"], 7])
def test_a_template_that_is_not_an_object_is_refused(template: Any) -> None:
    # The API type refuses it first, naming the field...
    xr = replica()
    xr["spec"]["workers"]["template"] = template
    res = run(xr, cluster())
    assert cond(res, "Valid") == (
        "False",
        "InvalidSpec",
        "spec.workers.template: Input should be a valid dictionary",
    )
    assert res.desired == {} and res.fatal is None
    # ... and the shape check, which the ModelDeployment side runs on raw
    # templates, says the same in its own words.
    assert workload.template_errors(template, "spec.decode.workers.template") == [
        "spec.decode.workers.template: must be an object"
    ]


def test_a_disaggregated_role_is_named_by_its_own_path() -> None:
    role = {
        "nodePoolName": "l4",
        "workers": {"template": {"spec": {"containers": [{"name": "engine"}], "volumes": "x"}}},
    }
    xr = replica(prefill=role, decode=copy.deepcopy(role))
    for key in ("nodePoolName", "deviceRequests", "workers"):
        xr["spec"].pop(key)
    status, reason, message = cond(run(xr, cluster()), "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert message == (
        "spec.prefill.workers.template.spec.volumes: must be a list; "
        "spec.decode.workers.template.spec.volumes: must be a list"
    )


# --- the engine's port: only an integer in 1..65535 is a declared port ----------------------

ADDED = {"name": "http", "containerPort": 8000, "protocol": "TCP"}


@pytest.mark.parametrize(
    ("declared", "port", "added"),
    [
        (0, 8000, True),  # not a port
        (1, 1, False),  # the lowest port
        (65535, 65535, False),  # the highest port
        (65536, 8000, True),  # beyond the range
        (True, 8000, True),  # a boolean is not a number here
        ("8000", 8000, True),  # a string is not a port number (nor a port name here)
        ("9000", 8000, True),  # ... whatever it says
    ],
)
def test_engine_port_boundaries(declared: Any, port: int, added: bool) -> None:
    xr = replica()
    given = [{"containerPort": declared}]
    xr["spec"]["workers"]["template"]["spec"]["containers"][0]["ports"] = copy.deepcopy(given)
    res = run(xr, cluster())
    engine = _engine(manifest(res, "unified-deployment")["spec"]["template"])
    assert engine["ports"] == given + ([ADDED] if added else [])
    assert engine["readinessProbe"]["httpGet"]["port"] == port
    svc = manifest(res, "unified-service")["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in svc] == [(port, port)]
    backend = manifest(res, "route")["spec"]["rules"][0]["backendRefs"]
    assert backend == [{"name": svc_name(res), "port": port}]


def svc_name(res: Any) -> str:
    name: str = manifest(res, "unified-service")["metadata"]["name"]
    return name
