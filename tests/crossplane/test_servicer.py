"""The RunFunction servicer: request in, composer dispatch, response out."""

from __future__ import annotations

import asyncio
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
from google.protobuf import json_format

from modelplane.compose import registry
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    ConditionOut,
    DesiredResource,
    EventOut,
    Requirement,
)
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct, struct_to_dict

XR = {
    "apiVersion": "test.modelplane.ai/v1alpha1",
    "kind": "Widget",
    "metadata": {"name": "w1", "namespace": "team-a"},
    "spec": {"replicas": 3, "ratio": 0.5},
}


def request(
    composite: dict[str, Any] | None = None,
    observed: dict[str, dict[str, Any]] | None = None,
    desired: dict[str, dict[str, Any]] | None = None,
    desired_status: dict[str, Any] | None = None,
    required: dict[str, list[dict[str, Any]]] | None = None,
    extra: dict[str, list[dict[str, Any]]] | None = None,
) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t-1"))
    if composite is not None:
        req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    for name, r in (observed or {}).items():
        req.observed.resources[name].resource.CopyFrom(dict_to_struct(r))
    for name, r in (desired or {}).items():
        req.desired.resources[name].resource.CopyFrom(dict_to_struct(r))
    if desired_status is not None:
        req.desired.composite.resource.CopyFrom(dict_to_struct({"status": desired_status}))
    for name, items in (required or {}).items():
        req.required_resources[name].items.extend(
            fnv1.Resource(resource=dict_to_struct(i)) for i in items
        )
    for name, items in (extra or {}).items():
        req.extra_resources[name].items.extend(
            fnv1.Resource(resource=dict_to_struct(i)) for i in items
        )
    return req


def run(req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    return asyncio.run(FunctionRunner().RunFunction(req, None))


def as_dict(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return json_format.MessageToDict(rsp)


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch):
    """Install a composer for the test Widget kind; returns the list of inputs it saw."""
    seen: list[ComposeInput] = []

    def install(result: ComposeResult | Exception) -> list[ComposeInput]:
        def composer(inp: ComposeInput) -> ComposeResult:
            seen.append(inp)
            if isinstance(result, Exception):
                raise result
            return result

        real = registry.composer_for

        def lookup(api_version: str, kind: str):
            if (api_version, kind) == (XR["apiVersion"], XR["kind"]):
                return composer
            return real(api_version, kind)

        monkeypatch.setattr(registry, "composer_for", lookup)
        return seen

    return install


def test_dispatch_builds_compose_input(inject) -> None:
    seen = inject(ComposeResult())
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}
    run(
        request(
            XR,
            observed={"cm": cm},
            required={"classes": [cm], "missing": []},
            extra={"legacy": [cm], "classes": []},
        )
    )
    assert len(seen) == 1
    inp = seen[0]
    # Integral numbers survive the protobuf round trip as ints.
    assert inp.composite == XR
    assert isinstance(inp.composite["spec"]["replicas"], int)
    assert inp.observed == {"cm": cm}
    # required_resources wins over the legacy map for the same name.
    assert inp.required == {"classes": [cm], "missing": [], "legacy": [cm]}
    assert inp.fetched("missing") and not inp.fetched("never-asked")


def test_unknown_kind_is_fatal_naming_it() -> None:
    rsp = run(
        request({"apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g"}})
    )
    assert len(rsp.results) == 1
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL
    assert "example.org/v1" in rsp.results[0].message
    assert "Gadget" in rsp.results[0].message
    assert not rsp.requirements.resources and not rsp.conditions


def test_missing_composite_is_fatal() -> None:
    rsp = run(request())
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]


def test_composer_fatal_returns_only_the_fatal_result(inject) -> None:
    inject(
        ComposeResult(
            desired={"x": DesiredResource({"apiVersion": "v1", "kind": "ConfigMap"})},
            conditions=[ConditionOut("Valid", "False", "Bad")],
            fatal="cannot compute placements safely",
        )
    )
    kept = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    rsp = run(request(XR, desired={"prior": kept}))
    assert as_dict(rsp)["results"] == [
        {
            "severity": "SEVERITY_FATAL",
            "message": "cannot compute placements safely",
            "target": "TARGET_COMPOSITE",
        }
    ]
    assert not rsp.conditions and not rsp.requirements.resources
    # What earlier pipeline steps desired passes through untouched.
    assert list(rsp.desired.resources) == ["prior"]


def test_composer_exception_becomes_fatal(inject) -> None:
    inject(KeyError("spec"))
    rsp = run(request(XR))
    assert len(rsp.results) == 1
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL
    assert "KeyError" in rsp.results[0].message and "spec" in rsp.results[0].message


def test_result_translation(inject) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": "1"}}
    inject(
        ComposeResult(
            desired={
                "ready": DesiredResource(cm, "True"),
                "unready": DesiredResource(cm, "False"),
                "unknown": DesiredResource(cm),
            },
            status={"gpuPools": [{"name": "p", "nodes": 4}], "nested": {"b": 2}},
            conditions=[
                ConditionOut("Valid", "True", "Valid"),
                ConditionOut("PoolsResolved", "False", "ClassNotFound", "spec.pools[0]: no class"),
                ConditionOut("Ready", "True", "Sneaky"),
            ],
            events=[
                EventOut("Warning", "ClassNotFound", "spec.pools[0].className: x not found"),
                EventOut("Normal", "Composed", "ok"),
            ],
            requirements={
                "by-name": Requirement("modelplane.ai/v1alpha1", "InferenceClass", match_name="l4"),
                "by-labels": Requirement("v1", "Secret", match_labels={"a": "b"}, namespace="ns1"),
                "all": Requirement("v1", "Namespace"),
            },
            ready="True",
        )
    )
    prior = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    rsp = run(request(XR, desired={"prior": prior}, desired_status={"nested": {"a": 1}}))
    got = as_dict(rsp)
    assert got["meta"] == {"tag": "t-1", "ttl": "60s"}
    assert set(rsp.desired.resources) == {"prior", "ready", "unready", "unknown"}
    assert struct_to_dict(rsp.desired.resources["ready"].resource) == cm
    assert rsp.desired.resources["ready"].ready == fnv1.READY_TRUE
    assert rsp.desired.resources["unready"].ready == fnv1.READY_FALSE
    assert rsp.desired.resources["unknown"].ready == fnv1.READY_UNSPECIFIED
    assert struct_to_dict(rsp.desired.composite.resource) == {
        "status": {"gpuPools": [{"name": "p", "nodes": 4}], "nested": {"a": 1, "b": 2}}
    }
    assert rsp.desired.composite.ready == fnv1.READY_TRUE
    assert got["conditions"] == [
        {
            "type": "Valid",
            "status": "STATUS_CONDITION_TRUE",
            "reason": "Valid",
            "target": "TARGET_COMPOSITE",
        },
        {
            "type": "PoolsResolved",
            "status": "STATUS_CONDITION_FALSE",
            "reason": "ClassNotFound",
            "message": "spec.pools[0]: no class",
            "target": "TARGET_COMPOSITE",
        },
    ]
    assert got["results"] == [
        {
            "severity": "SEVERITY_WARNING",
            "message": "spec.pools[0].className: x not found",
            "reason": "ClassNotFound",
            "target": "TARGET_COMPOSITE",
        },
        {
            "severity": "SEVERITY_NORMAL",
            "message": "ok",
            "reason": "Composed",
            "target": "TARGET_COMPOSITE",
        },
    ]
    assert got["requirements"] == {
        "resources": {
            "all": {"apiVersion": "v1", "kind": "Namespace", "matchLabels": {}},
            "by-labels": {
                "apiVersion": "v1",
                "kind": "Secret",
                "matchLabels": {"labels": {"a": "b"}},
                "namespace": "ns1",
            },
            "by-name": {
                "apiVersion": "modelplane.ai/v1alpha1",
                "kind": "InferenceClass",
                "matchName": "l4",
            },
        }
    }


@pytest.mark.parametrize(
    ("recall", "ttl"),
    [(None, "60s"), (10, "10s"), (0, "1s"), (3600, "60s")],
)
def test_a_result_that_waits_asks_to_be_called_again_sooner(
    inject, recall: int | None, ttl: str
) -> None:
    # A composer waiting on what Crossplane does not watch shortens the response's
    # TTL; never below a second, never beyond the function's own.
    inject(ComposeResult(recall_seconds=recall))
    assert as_dict(run(request(XR)))["meta"]["ttl"] == ttl


@pytest.mark.parametrize(
    ("ready", "expected"),
    [
        ("True", fnv1.READY_TRUE),
        ("False", fnv1.READY_FALSE),
        ("Unspecified", fnv1.READY_UNSPECIFIED),
    ],
)
def test_composite_readiness(inject, ready: str, expected: int) -> None:
    inject(ComposeResult(ready=ready))  # type: ignore[arg-type]
    rsp = run(request(XR))
    assert rsp.desired.composite.ready == expected
    # No status from the composer: the desired composite stays empty (never spec).
    assert struct_to_dict(rsp.desired.composite.resource) == {}


def test_serve_requires_credentials_or_insecure() -> None:
    from click.testing import CliRunner

    from modelplane.cli.main import cli

    result = CliRunner().invoke(cli, ["function", "serve"], env={"TLS_SERVER_CERTS_DIR": ""})
    assert result.exit_code == 2
    assert "--tls-certs-dir" in result.output and "--insecure" in result.output


def test_unencodable_result_becomes_fatal(inject) -> None:
    inject(ComposeResult(status={"when": object()}))
    rsp = run(request(XR))
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]
    assert "not JSON" in rsp.results[0].message
    assert not rsp.conditions


def test_struct_round_trip_keeps_json_types() -> None:
    value = {"i": 3, "f": 0.25, "b": True, "n": None, "s": "x", "l": [1, {"k": [False]}], "e": {}}
    back = struct_to_dict(dict_to_struct(value))
    assert back == value
    assert type(back["i"]) is int and type(back["l"][0]) is int and type(back["b"]) is bool


@pytest.mark.parametrize(
    ("composite", "expected"),
    [
        ({**XR, "metadata": ["w1"]}, "the observed Widget's metadata is a list, not an object"),
        ({**XR, "metadata": "w1"}, "the observed Widget's metadata is a str, not an object"),
        ({**XR, "metadata": 7}, "the observed Widget's metadata is a int, not an object"),
        ({**XR, "kind": {"k": "Widget"}}, "no apiVersion/kind strings"),
        ({**XR, "apiVersion": 1}, "no apiVersion/kind strings (apiVersion=1, kind='Widget')"),
        ({"metadata": {"name": "w1"}}, "no apiVersion/kind strings"),
    ],
)
def test_a_malformed_request_is_a_fatal_result_not_a_grpc_error(
    inject, composite: dict[str, Any], expected: str
) -> None:
    seen = inject(ComposeResult())
    rsp = run(request(composite))
    [result] = rsp.results
    assert result.severity == fnv1.SEVERITY_FATAL
    assert expected in result.message and "cannot compose it" in result.message
    assert seen == [] and not rsp.conditions


def test_a_composer_failure_names_the_composite(inject) -> None:
    inject(RuntimeError("boom"))
    [result] = run(request(XR)).results
    assert result.message == "composer for Widget team-a/w1 failed: RuntimeError: boom"


def test_a_worker_answers_even_bytes_that_are_not_a_request() -> None:
    from modelplane.crossplane.servicer import run_serialized

    rsp = fnv1.RunFunctionResponse.FromString(run_serialized(b"\xff\xff\xff"))
    [result] = rsp.results
    assert result.severity == fnv1.SEVERITY_FATAL
    assert result.message.startswith("cannot decode the RunFunctionRequest")
    ok = fnv1.RunFunctionResponse.FromString(run_serialized(request(XR).SerializeToString()))
    assert ok.meta.tag == "t-1" and "Widget" in ok.results[0].message
