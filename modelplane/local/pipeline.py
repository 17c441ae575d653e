"""Calling the function for one XR: Crossplane's fetching function runner, embedded.

Crossplane calls a Composition's function with the observed state, fetches
the resources its response requires, and calls it again until the
requirements stop changing (at most `MAX_REQUIREMENTS_ITERATIONS` times).
`Pipeline` does the same through the servicer `modelplane function serve`
runs: by default its composers are called in-process on the read-only copies
`Fetcher` keeps (`reply_of` copies their results as a Struct would carry
them); given a `runner`, every call goes through its gRPC entry point,
protobuf both ways (`decoded`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.api.frozen import Interner
from modelplane.compose.types import ComposeInput, ComposeResult, Resource
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import (
    add_outcome,
    as_json,
    as_shared_fields,
    as_stored,
    struct_to_dict,
)
from modelplane.local.apply import Applicator, Applied, digest
from modelplane.local.fetch import Fetch, Fetched, Fetcher
from modelplane.local.store import Key, Obj

__all__ = [
    "MAX_REQUIREMENTS_ITERATIONS",
    "PIPELINE_STEP",
    "READY_FROM_PB",
    "Pipeline",
    "Reply",
    "decoded",
    "reply_of",
]

PIPELINE_STEP = "compose"
"""The name of the Compositions' one pipeline step."""
MAX_REQUIREMENTS_ITERATIONS = 5
"""As Crossplane: how many times one reconcile calls the function at most."""
READY_FROM_PB = {fnv1.READY_TRUE: True, fnv1.READY_FALSE: False}
"""A response's readiness as the engine keeps it (unspecified: None)."""
_READY_FROM_RESULT: dict[str, bool] = {"True": True, "False": False}


class Reply(NamedTuple):
    """A function's answer, its desired objects as dicts of the caller's own.

    `rsp` holds the rest (results, conditions, requirements, the composite's
    readiness); its desired objects are not read.
    """

    rsp: fnv1.RunFunctionResponse
    resources: dict[str, tuple[Obj | None, bool | None]]
    """Desired composed resources by name, each with the function's readiness.
    None: the composer's object equals the one last applied under that name
    (`Applied`), and is converted only if it must be applied again."""
    status: dict[str, Any]
    """The desired composite's status."""
    raw: Mapping[str, tuple[Any, bytes]] = {}
    """The composer's own desired objects by name, each with its digest (`digest`;
    in-process calls only)."""
    status_text: bytes | None = None
    """A digest of the composer's own desired status (`digest`; in-process calls only)."""


def decoded(rsp: fnv1.RunFunctionResponse) -> Reply:
    """A response from the servicer, its desired objects decoded."""
    resources: dict[str, tuple[Obj | None, bool | None]] = {
        name: (struct_to_dict(entry.resource), READY_FROM_PB.get(entry.ready))
        for name, entry in sorted(rsp.desired.resources.items())
    }
    desired_xr = struct_to_dict(rsp.desired.composite.resource)
    return Reply(rsp, resources, dict(desired_xr.get("status") or {}))


def reply_of(
    runner: FunctionRunner,
    composite: Resource,
    result: ComposeResult,
    last: Mapping[str, Applied] | None = None,
    interner: Interner | None = None,
    last_status: tuple[bytes | None, dict[str, Any]] | None = None,
) -> Reply:
    """A composer's result as the servicer would answer it, without protobuf Structs.

    The desired objects are copied exactly as a Struct would carry them
    (`convert.as_json`); a result no Struct could carry is fatal, as it is
    in `FunctionRunner.run`. An object equal to the one `last` applied under
    its name is left unconverted (None): an equal object converts the same.
    Through `interner`, equal read-only containers of the objects are shared.
    A status equal to the one `last_status` digested is that one.
    """
    rsp = fnv1.RunFunctionResponse()
    if result.fatal is None:
        last = last or {}
        texts = {name: digest(d.resource) for name, d in result.desired.items()}
        try:
            resources = {
                name: (
                    _converted(d.resource, texts[name], last.get(name), interner),
                    _READY_FROM_RESULT.get(d.ready),
                )
                for name, d in sorted(result.desired.items())
            }
            status_text = digest(dict(result.status)) if result.status else None
            if status_text is not None and last_status and status_text == last_status[0]:
                # Equal to the last call's: its read-only fields, not new copies of them.
                status = last_status[1]
            else:
                status = _status_of(result, interner)
        except (TypeError, ValueError) as exc:
            result = ComposeResult(fatal=runner.not_json(composite, exc))
        else:
            add_outcome(rsp, result)
            raw = {name: (d.resource, texts[name]) for name, d in result.desired.items()}
            return Reply(rsp, resources, status, raw, status_text)
    rsp.results.append(
        fnv1.Result(
            severity=fnv1.SEVERITY_FATAL, message=result.fatal, target=fnv1.TARGET_COMPOSITE
        )
    )
    return Reply(rsp, {}, {})


def _status_of(result: ComposeResult, interner: Interner | None) -> dict[str, Any]:
    """The composite's desired status as a Struct would carry it; its fields
    read-only and shared through `interner` (the copy a call reads of the
    composite then shares them, instead of copying them once more)."""
    if not result.status:
        return {}
    if interner is None:
        return dict(as_json({"status": dict(result.status)})["status"])
    return as_shared_fields(result.status, interner)


def _converted(
    desired: Resource, text: bytes, last: Applied | None, interner: Interner | None
) -> Obj | None:
    """`as_stored(desired)`, or None when its digest is the one `last` applied had."""
    if last is not None and last.text == text:
        return None
    return as_stored(desired, interner)


Called = tuple["Reply | None", str, tuple[tuple[Fetch, ...], ...]]
"""A reconcile's calls: the last reply (None: the requirements never settled, and
why), and what each iteration fetched, by version."""


class Pipeline:
    """Calls the function for an XR until its requirements settle, like Crossplane.

    It reads through `fetcher`, and leaves unconverted what `applicator` last
    applied unchanged. `function_input` is the step's input, `image` the
    function's own image; with `runner`, calls go through its gRPC entry point.
    """

    def __init__(
        self,
        fetcher: Fetcher,
        applicator: Applicator,
        interner: Interner,
        function_input: Mapping[str, Any],
        image: str,
        runner: FunctionRunner | None = None,
    ) -> None:
        """Call the function through `runner`, or in-process without one."""
        self.fetcher = fetcher
        self.applicator = applicator
        self._interner = interner
        self.function_input = function_input
        self._image = image
        self.runner = runner
        # Its error log would only land on stdout here, and the fatal result
        # names the exception anyway.
        self._composer = FunctionRunner(log_errors=False)
        self.settled: dict[Key, fnv1.Requirements] = {}
        """The requirements each XR's last call settled on."""
        self._statuses: dict[Key, tuple[bytes | None, dict[str, Any]]] = {}
        """Per composite, its composer's last desired status and that status's digest."""
        self.calls = 0
        """Function calls made (each iteration of a requirements loop counts)."""

    def wrote_status(self, key: Key, reply: Reply) -> None:
        """Remember the status `reply` desired for `key` (its next equal one is reused)."""
        if reply.status_text is not None:
            self._statuses[key] = (reply.status_text, reply.status)

    def call(self, key: Key, xr: Obj, observed: Mapping[str, Obj]) -> Called:
        """Call the function until its requirements stabilize, like Crossplane.

        Unlike Crossplane, the first call already gets what the requirements
        the XR's last call settled on fetch now: when the function asks for
        the same again, its answer is the one Crossplane's last iteration
        would get (the function is pure), without the iterations before it.
        Also returns what each iteration fetched, by version.
        """
        ask = self._asker(key, xr, observed)
        require = self.fetcher.require
        previous = self.settled.get(key)
        required: Fetched = require(previous) if previous is not None else []
        fetched = [tuple(fetch for fetch, _ in required)] if required else []
        for _ in range(MAX_REQUIREMENTS_ITERATIONS):
            self.calls += 1
            reply = ask(required)
            rsp = reply.rsp
            if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
                return reply, "", tuple(fetched)
            if previous is not None and rsp.requirements == previous:
                return reply, "", tuple(fetched)
            previous = fnv1.Requirements()
            previous.CopyFrom(rsp.requirements)
            self.settled[key] = previous
            if not rsp.requirements.resources and not rsp.requirements.extra_resources:
                return reply, "", tuple(fetched)
            required = require(rsp.requirements)
            fetched.append(tuple(fetch for fetch, _ in required))
        return (
            None,
            (
                f'step "{PIPELINE_STEP}" requirements didn\'t stabilize after the maximum '
                f"number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
            ),
            tuple(fetched),
        )

    def _asker(self, key: Key, xr: Obj, observed: Mapping[str, Obj]) -> Callable[[Fetched], Reply]:
        """How to call the function for `xr` (at `key`): given what was fetched, its reply."""
        if self.runner is None:
            return self._in_process(key, xr, observed)
        runner = self.runner
        req = self.request(xr, observed)

        def over_grpc(required: Fetched) -> Reply:
            self._fill(req, required)
            rsp = run_function(runner, req)
            req.context.CopyFrom(rsp.context)
            return decoded(rsp)

        return over_grpc

    def request(self, xr: Obj, observed: Mapping[str, Obj]) -> fnv1.RunFunctionRequest:
        """The request Crossplane would send for `xr`, without required resources."""
        req = fnv1.RunFunctionRequest(
            meta=fnv1.RequestMeta(
                tag=str(Key.of(xr)),
                capabilities=[
                    fnv1.CAPABILITY_CAPABILITIES,
                    fnv1.CAPABILITY_REQUIRED_RESOURCES,
                    fnv1.CAPABILITY_CONDITIONS,
                ],
            )
        )
        struct = self.fetcher.struct
        req.observed.composite.resource.CopyFrom(struct(xr))
        req.input.update(self.function_input)
        for name, obj in sorted(observed.items()):
            req.observed.resources[name].resource.CopyFrom(struct(obj))
        return req

    def _fill(self, req: fnv1.RunFunctionRequest, required: Fetched) -> None:
        """Put what was fetched into the request's required (or extra) resources."""
        req.required_resources.clear()
        req.extra_resources.clear()
        struct = self.fetcher.struct
        for fetch, objs in required:
            target = req.required_resources if fetch.field == "required" else req.extra_resources
            items = target[fetch.name].items
            for obj in objs:
                items.add().resource.CopyFrom(struct(obj))

    def _in_process(
        self, key: Key, xr: Obj, observed: Mapping[str, Obj]
    ) -> Callable[[Fetched], Reply]:
        """Call the composer directly on read-only dicts: what the servicer would
        decode from the request `request` builds, without building it."""
        runner = self._composer
        image = self._image
        fetcher = self.fetcher
        interner = self._interner
        composite = fetcher.frozen(xr, key)
        keys = fetcher.observed_keys(key, observed)
        seen = {name: fetcher.frozen(obj, keys[name]) for name, obj in sorted(observed.items())}
        last = self.applicator.last(xr)
        last_status = self._statuses.get(key)

        def in_process(required: Fetched) -> Reply:
            got: dict[str, list[Resource]] = {}
            # As `convert.to_input`: the required map first, then the
            # deprecated extra one for names the first lacks.
            for field_name in ("required", "extra"):
                for fetch, objs in required:
                    if fetch.field == field_name and fetch.name not in got:
                        got[fetch.name] = fetcher.frozen_all(fetch, objs)
            inp = ComposeInput(composite=composite, observed=seen, required=got, image=image)
            result = runner.compose(composite, lambda: inp)
            return reply_of(runner, composite, result, last, interner, last_status)

        return in_process


def run_function(runner: FunctionRunner, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
    """Call the servicer's gRPC entry point, `RunFunction`, in-process.

    Without a worker pool the coroutine finishes without ever waiting, so
    it is driven to its end directly rather than by an event loop (asyncio
    alone would add a noticeable share of a small render's start-up).
    """
    call = runner.RunFunction(req, None)
    try:
        call.send(None)
    except StopIteration as done:
        return cast(fnv1.RunFunctionResponse, done.value)
    call.close()
    raise RuntimeError(
        "the function runner waited on something: the embedded control plane runs "
        "the function inline, without a worker pool"
    )
