"""A malformed object is unknown: what depends on it is kept, and the condition names it.

Table tests over the real requests the examples send (`xr_fuzz.capture`), one
kind of malformed input at a time.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from xr_fuzz import answer, capture, scenarios

from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.crossplane import FunctionRunner

EXAMPLES = [p for p in scenarios() if p.name in ("routing", "quickstart")]


@pytest.fixture(scope="module")
def requests() -> list[ComposeInput]:
    return capture(EXAMPLES)


def _of(requests: list[ComposeInput], kind: str) -> list[ComposeInput]:
    return [r for r in requests if r.composite.get("kind") == kind]


def _condition(result: ComposeResult, type_: str) -> tuple[str, str, str] | None:
    found = [x for x in result.conditions if x.type == type_]
    return (found[0].status, found[0].reason, found[0].message) if found else None


def _with_required(inp: ComposeInput, name: str, i: int, obj: dict[str, Any]) -> ComposeInput:
    objs = list(inp.required[name])
    objs[i] = obj
    return ComposeInput(inp.composite, inp.observed, {**inp.required, name: objs})


BAD_STATUS = [
    pytest.param(lambda s: {**s, "conditions": 7}, "status.conditions", id="conditions-a-number"),
    pytest.param(lambda s: {**s, "conditions": [None]}, "status.conditions", id="entry-null"),
    pytest.param(lambda s: {**s, "ready": "yes"}, "status.ready", id="ready-a-string"),
    pytest.param(lambda s: [s], "status", id="status-a-list"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_STATUS)
def test_an_endpoint_whose_status_does_not_read_keeps_its_route(
    requests: list[ComposeInput], bad: Any, field: str
) -> None:
    cases = 0
    for inp in _of(requests, "ModelService"):
        base, _ = answer(inp)
        assert base is not None
        for i, endpoint in enumerate(inp.required.get("endpoints") or []):
            name = endpoint["metadata"]["name"]
            if f"backend-{name}" not in inp.observed or base.fatal:
                continue  # judged where the endpoint is routed to today
            broken = copy.deepcopy(endpoint)
            broken["status"] = bad(broken.get("status") or {})
            result, escape = answer(_with_required(inp, "endpoints", i, broken))
            assert escape is None and result is not None and result.fatal is None
            assert set(result.desired) == set(base.desired)
            status, reason, message = _condition(result, "InputsReadable") or ("", "", "")
            assert (status, reason) == ("False", "Unreadable")
            assert f"ModelEndpoint {name}: {field}" in message
            assert any(e.severity == "Warning" and name in e.message for e in result.events)
            cases += 1
    assert cases > 0, "no request routes to an endpoint"


def test_an_endpoint_whose_metadata_does_not_read_holds_the_route_as_it_is(
    requests: list[ComposeInput],
) -> None:
    cases = 0
    for inp in _of(requests, "ModelService"):
        endpoints = inp.required.get("endpoints") or []
        if not endpoints or not any(k.startswith("backend-") for k in inp.observed):
            continue
        broken = copy.deepcopy(endpoints[0])
        broken["metadata"]["labels"] = ["not", "a", "map"]
        result, escape = answer(_with_required(inp, "endpoints", 0, broken))
        assert escape is None and result is not None and result.fatal is None
        assert set(result.desired) == set(inp.observed)
        status, reason, message = _condition(result, "InputsReadable") or ("", "", "")
        assert (status, reason) == ("False", "Unreadable")
        assert "metadata.labels" in message
        cases += 1
    assert cases > 0


@pytest.mark.parametrize(
    "conditions", [5, [None], [{"type": 3, "status": "True"}]], ids=["number", "null", "type"]
)
def test_a_cluster_whose_conditions_do_not_read_keeps_the_replicas_usages(
    requests: list[ComposeInput], conditions: Any
) -> None:
    cases = 0
    for inp in _of(requests, "ModelReplica"):
        usages = {k for k in inp.observed if k.startswith("usage-")}
        if not usages or not inp.required.get("cluster"):
            continue
        cluster = copy.deepcopy(inp.required["cluster"][0])
        cluster["status"]["conditions"] = conditions
        result, escape = answer(_with_required(inp, "cluster", 0, cluster))
        assert escape is None and result is not None and result.fatal is None
        assert usages <= set(result.desired)
        status, reason, message = _condition(result, "InputsReadable") or ("", "", "")
        assert (status, reason) == ("False", "Unreadable")
        assert message.startswith(f"InferenceCluster {cluster['metadata']['name']}: status.")
        cases += 1
    assert cases > 0


BAD_XR_METADATA = [
    pytest.param(lambda m: "x", "metadata is a str, not an object", id="metadata-string"),
    pytest.param(lambda m: None, "metadata is a NoneType, not an object", id="metadata-null"),
    pytest.param(
        lambda m: {**m, "name": 5}, "metadata.name is 5 (a number), not a DNS subdomain", id="name"
    ),
    pytest.param(lambda m: {**m, "name": "Bad_Name"}, "metadata.name is 'Bad_Name'", id="pattern"),
    pytest.param(
        lambda m: {**m, "namespace": ["a"]}, "metadata.namespace is a list", id="namespace"
    ),
    pytest.param(
        lambda m: {**m, "labels": {"a": 1}}, "metadata.labels[a] is 1 (a number)", id="label"
    ),
]


@pytest.mark.parametrize(("bad", "says"), BAD_XR_METADATA)
def test_an_xr_whose_metadata_does_not_read_is_fatal_naming_the_field(
    requests: list[ComposeInput], bad: Any, says: str
) -> None:
    kinds = set()
    for inp in requests:
        kind = inp.composite["kind"]
        if kind in kinds:
            continue
        kinds.add(kind)
        xr = {**inp.composite, "metadata": bad(dict(inp.composite["metadata"]))}
        result = FunctionRunner(log_errors=False).compose(xr, lambda xr=xr: ComposeInput(xr))
        assert result.fatal is not None and says in result.fatal, (kind, result.fatal)
    assert len(kinds) >= 8
