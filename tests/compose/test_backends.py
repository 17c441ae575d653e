"""The serving-backend seam: a backend is a module plus one registry entry.

A stand-in backend (one custom resource with a custom readiness rule, the way
a KServe backend would compose an LLMInferenceService) is registered in place
of the native one; the composer around it is unchanged: namespace, route to the
backend's entry, PodGroup sized by the backend, readiness from the declared
rules, conditions naming the backend's items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

import pytest
from replicas import NAME, cluster, cond, manifest, observed_from, replica, run

from modelplane.api import constants as c
from modelplane.api.backends import DECLARED, BackendDeclaration
from modelplane.api.model_deployment import Backend
from modelplane.api.model_replica import PlacedRole
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import backends, workload
from modelplane.compose.replica.backends.base import BackendBuild, Entry
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource

# Not registered: a hold would read it through the Object's Ready condition;
# a real backend registers its rule (`readiness.register`) in its module.
SERVICE_READY = readiness.condition_rule("StandInReady", "Ready")


class StandIn:
    """One `example.com/v1 Server` per replica, ready on its `Ready` condition."""

    name = "StandIn"
    declaration = BackendDeclaration("StandIn", "kserve")

    def build(
        self,
        ctx: ReplicaContext,
        roles: Sequence[PlacedRole],
        observed: Mapping[str, Resource],
    ) -> BackendBuild:
        [role] = roles
        pod, _ = workload.pod_template(ctx, role, "single")
        server = {
            "apiVersion": "example.com/v1",
            "kind": "Server",
            "metadata": workload.metadata(ctx.base, ctx),
            "spec": {"template": pod},
        }
        item = Item(
            "server",
            workload.object_name(ctx, None, "server"),
            server,
            SERVICE_READY,
            f"Server {ctx.base}",
            serves=True,
        )
        return BackendBuild([item], Entry(f"{ctx.base}-svc", 9000), pods=3)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(backends.BACKENDS, backends.DEFAULT, StandIn())


def test_the_native_backend_is_registered_by_name() -> None:
    backend = backends.backend(None)
    assert backend is not None and backend.name == "Native" == backends.DEFAULT
    assert backends.backend("Native") is backend
    assert backends.backend("KServe") is not None and backends.backend("Other") is None
    assert backends.backend("Dynamo") is not None


def test_a_registered_backend_composes_through_the_same_phases(stand_in: None) -> None:
    res = run(replica(), cluster({"schedulerName": "kai-scheduler"}))
    assert list(res.desired) == ["namespace", "server", "route", "podgroup"]
    server = res.desired["server"].resource
    assert server["spec"]["readiness"] == SERVICE_READY.wire()
    # The shared stamping still applies: pool pin, DRA-free (no claim given), scheduler.
    pod = manifest(res, "server")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"modelplane.ai/pool": "l4"}
    assert pod["schedulerName"] == "kai-scheduler"
    backend_ref = manifest(res, "route")["spec"]["rules"][0]["backendRefs"]
    assert [(b["name"], b["port"]) for b in backend_ref] == [(f"{NAME}-svc", 9000)]
    assert manifest(res, "podgroup")["spec"]["minMember"] == 3
    status, reason, message = cond(res, "WorkloadReady")
    assert (status, reason) == ("False", "WorkloadNotAvailable")
    assert message.startswith("Server ") and "not created yet" in message


def test_its_declared_rule_decides_readiness(stand_in: None) -> None:
    first = run(replica(), cluster())
    observed: dict[str, Any] = observed_from(first, available=None)
    wrapped = observed["server"]["status"]["atProvider"]["manifest"]
    wrapped["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
    res = run(replica(), cluster(), observed=observed)
    assert res.desired["server"].ready == "True"
    assert res.ready == "True"
    assert cond(res, "WorkloadReady")[:2] == ("True", "Available")
    wrapped["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    res = run(replica(), cluster(), observed=observed)
    assert res.desired["server"].ready == "False" and res.ready == "False"


def test_the_backend_enum_the_declarations_and_the_registry_name_the_same_backends() -> None:
    # `spec.backend`'s enum (the XRD's), the API's declarations (what the reader
    # and the scheduler's words use) and the composer's registry must agree:
    # a backend in one and not the others would be accepted and never served,
    # or served and never placed.
    assert get_args(Backend) == tuple(DECLARED) == c.BACKENDS
    assert set(backends.BACKENDS) == set(DECLARED)
    for name, backend in backends.BACKENDS.items():
        assert backend.name == name
        assert backend.declaration is DECLARED[name]
    assert backends.DEFAULT in DECLARED


def test_each_backend_but_native_names_the_cluster_setting_that_enables_it() -> None:
    settings = {name: d.setting for name, d in DECLARED.items()}
    assert settings == {
        "Native": None,
        "KServe": "spec.servingStack.kserve.enabled",
        # Never installed by the stack: the platform team's Dynamo is declared present.
        "Dynamo": "spec.servingStack.dynamo.present",
    }
