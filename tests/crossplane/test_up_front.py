"""What a Composition fetches up front, and how many calls a reconcile then takes.

Crossplane (v2.3, `xfn.FetchingFunctionRunner`) calls a function, and while the
response asks for resources it fetches them and calls again, until two responses
in a row ask for the same. A step's `requirements` are fetched before the first
call and delivered at every one. So a composer that asks for anything is called
twice per reconcile unless all it asks for came up front, and then it must not
ask again. `reconcile` below is that loop, written from Crossplane's code, over
a list of objects standing in for its cache.
"""

from __future__ import annotations

import asyncio
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import yaml

from modelplane.api import constants as c
from modelplane.api import kinds
from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.api.xrd import composition
from modelplane.compose.deployments import model_deployment
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, to_input
from tests.compose.test_model_deployment_protocol import API, ROOT, spread_fleet

MAX_ITERATIONS = 5  # Crossplane's MaxRequirementsIterations


def _matches(obj: dict[str, Any], sel: dict[str, Any]) -> bool:
    m = obj.get("metadata") or {}
    if (obj["apiVersion"], obj["kind"]) != (sel["apiVersion"], sel["kind"]):
        return False
    if sel.get("namespace") and m.get("namespace") != sel["namespace"]:
        return False
    if "name" in sel:
        return bool(m.get("name") == sel["name"])
    labels = m.get("labels") or {}
    return all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items())


def _fetch(store: list[dict[str, Any]], sel: dict[str, Any]) -> fnv1.Resources:
    out = fnv1.Resources()
    for obj in store:
        if _matches(obj, sel):
            out.items.add().resource.CopyFrom(dict_to_struct(obj))
    return out


def _wire(sel: fnv1.ResourceSelector) -> dict[str, Any]:
    """A response's selector as the step's would be written."""
    out: dict[str, Any] = {"apiVersion": sel.api_version, "kind": sel.kind}
    if sel.namespace:
        out["namespace"] = sel.namespace
    if sel.WhichOneof("match") == "match_name":
        out["name"] = sel.match_name
    elif sel.WhichOneof("match") == "match_labels":
        out["matchLabels"] = dict(sel.match_labels.labels)
    return out


def reconcile(
    composite: dict[str, Any], store: list[dict[str, Any]], step: dict[str, Any]
) -> tuple[int, fnv1.RunFunctionResponse]:
    """One reconcile's calls, as Crossplane makes them for a Composition `step`."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    bootstrap = (step.get("requirements") or {}).get("requiredResources") or []
    for sel in bootstrap:
        req.required_resources[sel["requirementName"]].CopyFrom(_fetch(store, sel))
    asked: fnv1.Requirements | None = None
    runner = FunctionRunner(log_errors=False)
    for calls in range(1, MAX_ITERATIONS + 2):
        rsp = asyncio.run(runner.RunFunction(req, None))
        new = rsp.requirements if rsp.HasField("requirements") else None
        # Go's proto.Equal: none equals none only; a message equals its like.
        if new == asked:
            return calls, rsp
        asked = new
        keep = {s["requirementName"] for s in bootstrap}
        for name in list(req.required_resources):
            if name not in keep:
                del req.required_resources[name]
        for name, sel in (new.resources if new is not None else {}).items():
            req.required_resources[name].CopyFrom(_fetch(store, _wire(sel)))
    raise AssertionError("requirements did not stabilise")


def _step(kind: kinds.Kind) -> dict[str, Any]:
    step: dict[str, Any] = composition(kind)["spec"]["pipeline"][0]
    return step


def _quota(namespace: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "FleetQuota",
        "metadata": {"name": "quota", "namespace": namespace},
        "spec": {"limits": [{"deviceClassName": "gpu.nvidia.com", "maxDevices": gpus}]},
    }


def _store(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    _, clusters = spread_fleet()
    return [*clusters, *extra]


def test_the_deployment_composition_fetches_what_its_composer_always_asks_for() -> None:
    packaged = yaml.safe_load(
        (ROOT / "package/configuration/apis/modeldeployments/composition.yaml").read_text()
    )
    step = packaged["spec"]["pipeline"][0]
    assert step["requirements"] == {
        "requiredResources": [u.selector() for u in kinds.MODEL_DEPLOYMENT.up_front]
    }
    # Each one is what the composer asks for under its own name, whatever the spec.
    spec = ModelDeploymentSpec.model_validate(spread_fleet()[0]["spec"])
    asked = model_deployment.requirements("ml-team", spec)
    for up in kinds.MODEL_DEPLOYMENT.up_front:
        r = asked[up.name]
        assert (r.api_version, r.kind, r.match_name) == (up.api_version, up.kind, None)
        assert dict(r.match_labels or {}) == dict(up.match_labels)
        assert r.namespace == ("ml-team" if up.own_namespace else None)
    # No other kind's Composition fetches anything up front.
    assert [k.kind for k in kinds.KINDS if k.up_front] == ["ModelDeployment"]


def test_a_deployment_is_composed_in_one_call_with_the_composition_and_two_without() -> None:
    deployment, _ = spread_fleet()
    store = _store()
    calls, rsp = reconcile(deployment, store, _step(kinds.MODEL_DEPLOYMENT))
    plain = {k: v for k, v in _step(kinds.MODEL_DEPLOYMENT).items() if k != "requirements"}
    calls_before, before = reconcile(deployment, store, plain)
    assert (calls, calls_before) == (1, 2)
    assert not rsp.HasField("requirements")
    # The same answer either way.
    assert rsp.desired == before.desired
    assert list(rsp.conditions) == list(before.conditions)
    assert len(rsp.desired.resources) == 3


def test_what_is_asked_for_besides_comes_in_a_second_call() -> None:
    deployment, _ = spread_fleet()
    urgent = {**deployment, "spec": {**deployment["spec"], "priority": "critical"}}
    priority = {
        "apiVersion": c.PRIORITY_CLASS_API_VERSION,
        "kind": c.KIND_PRIORITY_CLASS,
        "metadata": {"name": "critical"},
        "value": 1000,
    }
    calls, rsp = reconcile(urgent, _store(priority), _step(kinds.MODEL_DEPLOYMENT))
    assert calls == 2
    assert set(rsp.requirements.resources) == {"priority-classes"}


def test_quotas_fetched_from_every_namespace_reach_the_composer_for_its_own_only() -> None:
    deployment, clusters = spread_fleet()
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.CopyFrom(dict_to_struct(deployment))
    ours, theirs = _quota("ml-team", 8), _quota("other-team", 1)
    for sel in _step(kinds.MODEL_DEPLOYMENT)["requirements"]["requiredResources"]:
        req.required_resources[sel["requirementName"]].CopyFrom(
            _fetch([*clusters, ours, theirs], sel)
        )
    assert len(req.required_resources["up-front-fleet-quotas"].items) == 2
    # Decoded afresh, and read-only through the cache the served function uses.
    for inp in (to_input(req, None), to_input(req)):
        assert [q["metadata"]["namespace"] for q in inp.required["fleet-quotas"]] == ["ml-team"]
        assert len(inp.required["inference-clusters"]) == len(clusters)
        assert inp.required["model-replicas"] == []
        assert not [n for n in inp.required if n.startswith(kinds.UP_FRONT_PREFIX)]


def test_another_kind_ignores_keys_that_look_up_front() -> None:
    req = fnv1.RunFunctionRequest()
    endpoint = {
        "apiVersion": API,
        "kind": "ModelEndpoint",
        "metadata": {"name": "e", "namespace": "ml-team"},
        "spec": {"url": "http://10.0.0.1:8000"},
    }
    req.observed.composite.resource.CopyFrom(dict_to_struct(endpoint))
    req.required_resources["up-front-fleet-quotas"].items.add().resource.CopyFrom(
        dict_to_struct(_quota("other-team", 1))
    )
    inp = to_input(req, None)
    assert "fleet-quotas" not in inp.required
