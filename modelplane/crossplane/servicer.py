"""The RunFunction servicer: one function for every Modelplane Composition.

It dispatches on the observed composite's apiVersion/kind to the composer the
registry names. The embedded control plane (`modelplane.local`) calls the very
same object in-process, so `modelplane render` exercises this code path. Under
`modelplane function serve` each call runs in a worker process of a
`WorkerPool`, under a deadline, so no call can stall the event loop or another.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf.message import DecodeError

from modelplane.compose import registry
from modelplane.compose.common import identity_problem
from modelplane.compose.types import ComposeInput, ComposeResult, Resource
from modelplane.crossplane import convert

if TYPE_CHECKING:
    from modelplane.crossplane.metrics import FunctionMetrics
    from modelplane.crossplane.pool import WorkerPool


def _log() -> Any:
    # The SDK's logging pulls in structlog and rich (a third of a second);
    # `modelplane render` runs this servicer in-process and never logs.
    from crossplane.function import logging as fnlogging

    return fnlogging.get_logger()


class BadRequestError(ValueError):
    """The request does not have the shape every composite has."""


def _identity(composite: dict[str, Any]) -> tuple[str, str, str, str]:
    """Return (apiVersion, kind, namespace, name) of a composite, or raise BadRequestError."""
    api_version, kind = composite.get("apiVersion"), composite.get("kind")
    if not composite:
        raise BadRequestError("the request has no observed composite resource")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        raise BadRequestError(
            "the observed composite resource has no apiVersion/kind strings "
            f"(apiVersion={api_version!r}, kind={kind!r})"
        )
    metadata = composite.get("metadata", {})
    if not isinstance(metadata, dict):
        raise BadRequestError(
            f"the observed {kind}'s metadata is a {_type_name(metadata)}, not an object"
        )
    namespace, name = metadata.get("namespace", ""), metadata.get("name", "")
    return api_version, kind, str(namespace or ""), str(name or "")


def _type_name(value: Any) -> str:
    # Decoded objects may be read-only subclasses of list and dict (FrozenList).
    for base in (list, dict):
        if isinstance(value, base):
            return base.__name__
    return type(value).__name__


def describe(composite: dict[str, Any]) -> str:
    """Name a composite for a message: `Kind namespace/name`, never raising."""
    try:
        _, kind, namespace, name = _identity(composite)
    except BadRequestError:
        return "the composite"
    return " ".join(part for part in (kind, f"{namespace}/{name}" if namespace else name) if part)


class FunctionRunner:
    """Serves RunFunction by translating to and from a pure composer.

    It has the shape of the generated `FunctionRunnerServiceServicer` (one
    `RunFunction` coroutine), which is all gRPC registration needs; not
    subclassing it keeps gRPC out of `modelplane render`.
    """

    def __init__(
        self,
        ttl: datetime.timedelta = convert.DEFAULT_TTL,
        *,
        log_errors: bool = True,
        pool: WorkerPool | None = None,
        metrics: FunctionMetrics | None = None,
        clock: Callable[[], datetime.datetime] | None = None,
        record_once: bool = False,
    ) -> None:
        """Create a runner whose responses may be cached for `ttl`.

        `log_errors=False` silences the error log for in-process callers
        (the fatal result already names the exception). With a `pool`, the
        gRPC method runs each call in the pool's worker processes; without
        one it runs inline (the embedded control plane and tests). With a
        `clock`, each call's input carries its time (`ComposeInput.now`), which
        composers compare reported times against; without one it carries none.
        With `record_once` (the served function), an event a condition of the
        observed composite already states is left out of the response
        (`ComposeResult.unrepeated`): Crossplane would record it again at every
        call. So are Crossplane's own "not yet ready" events, one per composed
        resource at every call, when the composite's readiness is the
        composer's (`ComposeResult.readiness_stated_once`). The embedded control
        plane shows each object's last call's events and each composed
        resource's readiness, which is what stands on it, so it keeps them.
        """
        self.ttl = ttl
        self.log_errors = log_errors
        self.pool = pool
        self.metrics = metrics  # counted around each gRPC call (`crossplane/metrics.py`)
        self.clock = clock
        self.record_once = record_once

    def run(self, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
        """Handle one request synchronously; never raises, whatever the request holds."""
        try:
            composite = convert.observed_composite(req, convert.DECODE_CACHE)
        except Exception as exc:  # a request no composite could produce
            return self._failed(req, "cannot read the observed composite", exc)
        now = None if self.clock is None else rfc3339(self.clock())
        result = self.compose(
            composite, lambda: convert.to_input(req, composite=composite, now=now)
        )
        if self.record_once:
            # Crossplane records every result of every call as an event, and a
            # "not yet ready" one per unready composed resource: what a standing
            # condition already states was recorded when it was set.
            result = result.unrepeated(composite).readiness_stated_once()
        try:
            return convert.to_response(req, result, self.ttl)
        except (TypeError, ValueError) as exc:
            return convert.fatal_response(req, self.not_json(composite, exc), self.ttl)

    def compose(self, composite: Resource, read: Callable[[], ComposeInput]) -> ComposeResult:
        """Run the composer for `composite` on the input `read()` builds; never raises.

        What cannot be composed — a composite without identity or whose
        metadata does not read (`compose.common.identity_problem`), a kind no
        composer serves, a composer that raises (a bug: composers turn bad
        input into conditions) — is a fatal result, which keeps every
        composed resource. The embedded control plane calls this directly,
        with input it built without protobuf.
        """
        try:
            api_version, kind, _, _ = _identity(composite)
        except BadRequestError as exc:
            return ComposeResult(fatal=f"{exc}: cannot compose it")
        problem = identity_problem(composite)
        if problem is not None:
            return ComposeResult(
                fatal=f"the observed {kind}'s {problem}: cannot compose it; every composed "
                "resource is kept as it is"
            )
        # Looked up through the module so tests can monkeypatch the registry.
        composer = registry.composer_for(api_version, kind)
        if composer is None:
            return ComposeResult(
                fatal=f"function-modelplane has no composer for {api_version}, Kind={kind}: "
                "is the Composition pointing at the right function?"
            )
        try:
            return composer(read())
        except Exception as exc:
            what = f"composer for {describe(composite)} failed"
            if self.log_errors:
                _log().exception(what)
            return ComposeResult(fatal=f"{what}: {type(exc).__name__}: {exc}")

    def not_json(self, composite: Resource, exc: Exception) -> str:
        """The fatal message for a composer result that cannot be encoded (logged too)."""
        if self.log_errors:
            _log().exception("cannot encode composer result", composite=describe(composite))
        return f"composer for {describe(composite)} returned a value that is not JSON: {exc}"

    def _failed(
        self, req: fnv1.RunFunctionRequest, what: str, exc: Exception
    ) -> fnv1.RunFunctionResponse:
        if self.log_errors:
            _log().exception(what)
        return convert.fatal_response(req, f"{what}: {type(exc).__name__}: {exc}", self.ttl)

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: Any
    ) -> fnv1.RunFunctionResponse:
        """Run the function for one composite (the gRPC entry point)."""
        started = time.monotonic()
        if self.pool is None:
            rsp = self.run(req)
        else:
            rsp = await self._run_in_pool(self.pool, req)
        if self.metrics is not None:
            self.metrics.observe(req, rsp, time.monotonic() - started)
        return rsp

    async def _run_in_pool(
        self, pool: WorkerPool, req: fnv1.RunFunctionRequest
    ) -> fnv1.RunFunctionResponse:
        from modelplane.crossplane.pool import PoolError

        started = time.monotonic()
        data = req.SerializeToString()
        try:
            answer = await pool.call(data, tenant_of(req))
            rsp = fnv1.RunFunctionResponse.FromString(answer)
        except (PoolError, DecodeError) as exc:
            return self._pool_failed(req, exc)
        _log().debug(
            "RunFunction",
            composite=_safe_describe(req),
            seconds=round(time.monotonic() - started, 3),
            request_bytes=len(data),
            response_bytes=len(answer),
        )
        return rsp

    def _pool_failed(
        self, req: fnv1.RunFunctionRequest, exc: Exception
    ) -> fnv1.RunFunctionResponse:
        who = _safe_describe(req)
        if self.log_errors:
            _log().error("RunFunction failed", composite=who, error=str(exc))
        # No desired state of ours: Crossplane keeps every composed resource
        # as it is and calls again, rather than deleting what we left out.
        return convert.fatal_response(
            req, f"composing {who} {exc}; every composed resource is kept as it is", self.ttl
        )


def tenant_of(req: fnv1.RunFunctionRequest) -> str:
    """The tenant a call is for: its composite's namespace, or its name when cluster-scoped.

    The worker pool's fairness rule shares workers between tenants by it.
    Read from the protobuf without decoding the composite; "" when the
    request names neither (such a call is answered with a fatal result).
    """
    composite = req.observed.composite.resource.fields
    if "metadata" not in composite:
        return ""
    metadata = composite["metadata"].struct_value.fields
    for key in ("namespace", "name"):
        if key in metadata and metadata[key].WhichOneof("kind") == "string_value":
            value = metadata[key].string_value
            if value:
                return value
    return ""


def _safe_describe(req: fnv1.RunFunctionRequest) -> str:
    try:
        return describe(convert.observed_composite(req))
    except Exception:  # the message must be built whatever the request holds
        return "the composite"


def run_serialized(data: bytes) -> bytes:
    """Run one serialized RunFunctionRequest and return the serialized response.

    What a pool's worker process runs. An undecodable request becomes a fatal
    response too, so a worker answers every call it receives.
    """
    try:
        req = fnv1.RunFunctionRequest.FromString(data)
    except DecodeError as exc:
        req = fnv1.RunFunctionRequest()
        rsp = convert.fatal_response(req, f"cannot decode the RunFunctionRequest: {exc}")
        return rsp.SerializeToString()
    return FunctionRunner(clock=utc_now, record_once=True).run(req).SerializeToString()


def utc_now() -> datetime.datetime:
    """The wall clock, in UTC: the time a served call carries."""
    return datetime.datetime.now(datetime.UTC)


def rfc3339(moment: datetime.datetime) -> str:
    """An RFC 3339 time in UTC, to the second (as the inventory agent stamps its reports)."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
