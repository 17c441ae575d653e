"""The pipeline: calling the function for one XR until its requirements settle.

Hand-written composers over hand-built stores: the number of calls Crossplane
would make, the fetched objects each call gets, the limit on iterations, and
the in-process reply equal to the one through the gRPC entry point.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api.frozen import Interner
from modelplane.api.function_input import function_input, read_image
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Requirement
from modelplane.crossplane import FunctionRunner
from modelplane.local.apply import Applicator, Applied, digest
from modelplane.local.conditions import Clock
from modelplane.local.deletion import Collector
from modelplane.local.fetch import Fetcher
from modelplane.local.pipeline import MAX_REQUIREMENTS_ITERATIONS, Pipeline, reply_of
from modelplane.local.store import Key, Obj, ObjectStore
from tests.local.conftest import TEST_API, Install

WIDGET = Key(TEST_API, "Widget", "default", "w")


def widget() -> Obj:
    return {
        "apiVersion": TEST_API,
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "uid-w"},
        "spec": {"start": "a"},
    }


def link(name: str, to: str | None) -> Obj:
    """A ConfigMap naming the next one in a chain (`to`), or ending it."""
    data = {"next": to} if to else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


def follow_chain(inp: ComposeInput) -> ComposeResult:
    """Require the chain's links one at a time, from spec.start; report the path."""
    res = ComposeResult()
    name: str | None = inp.composite["spec"]["start"]
    path: list[str] = []
    while name is not None:
        res.requirements[f"link-{name}"] = Requirement(
            "v1", "ConfigMap", match_name=name, namespace="default"
        )
        got = inp.required.get(f"link-{name}")
        if not got:
            break  # not fetched yet, or the chain ends in a missing link
        path.append(name)
        name = got[0]["data"].get("next")
    res.status = {"path": path}
    res.desired["cm"] = DesiredResource(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made"}}, ready="True"
    )
    return res


def pipeline_of(*objects: Obj, runner: FunctionRunner | None = None) -> Pipeline:
    store = ObjectStore()
    for obj in objects:
        store.put(obj)
    interner = Interner()
    fetcher = Fetcher(store, interner)
    applicator = Applicator(store, interner, Clock(), Collector(store), {}, lambda obj: None)
    fn_input = function_input(c.FUNCTION_PACKAGE)
    return Pipeline(fetcher, applicator, interner, fn_input, read_image(fn_input), runner)


def call(pipeline: Pipeline) -> Any:
    xr = pipeline.fetcher.store.get(WIDGET)
    assert xr is not None
    return pipeline.call(WIDGET, xr, pipeline.fetcher.observed(xr))


CHAIN = (link("a", "b"), link("b", "c"), link("c", None))


def test_the_function_is_called_until_its_requirements_settle(install: Install) -> None:
    install({"Widget": follow_chain})
    pipeline = pipeline_of(widget(), *CHAIN)
    reply, error, fetched = call(pipeline)
    assert error == "" and reply.status == {"path": ["a", "b", "c"]}
    # Nothing, then a; a and b; a, b and c; the last asks for the same again.
    assert pipeline.calls == 4
    assert [sorted(f.name for f in iteration) for iteration in fetched] == [
        ["link-a"],
        ["link-a", "link-b"],
        ["link-a", "link-b", "link-c"],
    ]


def test_a_call_starts_from_what_the_last_one_settled_on(install: Install) -> None:
    install({"Widget": follow_chain})
    pipeline = pipeline_of(widget(), *CHAIN)
    call(pipeline)
    before = pipeline.calls
    reply, _, _ = call(pipeline)
    assert pipeline.calls - before == 1 and reply.status == {"path": ["a", "b", "c"]}


def test_requirements_that_never_settle_fail_after_crossplanes_limit(install: Install) -> None:
    install({"Widget": follow_chain})
    chain = [link(str(i), str(i + 1)) for i in range(MAX_REQUIREMENTS_ITERATIONS + 2)]
    pipeline = pipeline_of({**widget(), "spec": {"start": "0"}}, *chain)
    reply, error, _ = call(pipeline)
    assert reply is None and pipeline.calls == MAX_REQUIREMENTS_ITERATIONS == 5
    assert error == (
        'step "compose" requirements didn\'t stabilize after the maximum number of iterations (5)'
    )


def test_a_fatal_result_ends_the_calls(install: Install) -> None:
    install({"Widget": lambda inp: ComposeResult(fatal="no")})
    pipeline = pipeline_of(widget())
    reply, error, _ = call(pipeline)
    assert error == "" and pipeline.calls == 1
    assert [r.message for r in reply.rsp.results] == ["no"]


def test_in_process_replies_as_the_grpc_entry_point_does(install: Install) -> None:
    install({"Widget": follow_chain})
    local, _, _ = call(pipeline_of(widget(), *CHAIN))
    remote, _, _ = call(pipeline_of(widget(), *CHAIN, runner=FunctionRunner(log_errors=False)))
    assert local.status == remote.status and local.resources == remote.resources
    assert local.rsp.requirements == remote.rsp.requirements


def test_an_object_equal_to_the_last_applied_is_left_unconverted() -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made"}}
    result = ComposeResult(desired={"cm": DesiredResource(desired, ready="True")})
    runner = FunctionRunner(log_errors=False)
    fresh = reply_of(runner, widget(), result)
    assert fresh.resources["cm"] == (desired, True)
    last = {"cm": Applied(digest(desired), Key("v1", "ConfigMap", "default", "made"), 1, None)}
    assert reply_of(runner, widget(), result, last).resources["cm"] == (None, True)
    other = {**desired, "data": {"x": "1"}}
    changed = ComposeResult(desired={"cm": DesiredResource(other, ready="True")})
    assert reply_of(runner, widget(), changed, last).resources["cm"] == (other, True)


@pytest.mark.parametrize("value", [{1, 2}, object()])
def test_a_result_no_struct_could_carry_is_fatal(value: object) -> None:
    result = ComposeResult(status={"bad": value})
    reply = reply_of(FunctionRunner(log_errors=False), widget(), result)
    assert reply.resources == {} and "not JSON" in reply.rsp.results[0].message
