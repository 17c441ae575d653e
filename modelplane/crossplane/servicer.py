"""The RunFunction servicer: one function for every Modelplane Composition.

It dispatches on the observed composite's apiVersion/kind to the composer the
registry names. The embedded control plane (`modelplane.local`) calls the very
same object in-process, so `modelplane render` exercises this code path.
"""

from __future__ import annotations

import datetime
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import crossplane.function.proto.v1.run_function_pb2_grpc as grpcv1
from crossplane.function import logging as fnlogging

from modelplane.compose import registry
from modelplane.crossplane import convert

log = fnlogging.get_logger()


class FunctionRunner(grpcv1.FunctionRunnerServiceServicer):
    """Serves RunFunction by translating to and from a pure composer."""

    def __init__(
        self, ttl: datetime.timedelta = convert.DEFAULT_TTL, *, log_errors: bool = True
    ) -> None:
        """Create a runner whose responses may be cached for `ttl`.

        `log_errors=False` silences the error log for in-process callers
        (the fatal result already names the exception).
        """
        self.ttl = ttl
        self.log_errors = log_errors

    def run(self, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
        """Handle one request synchronously (the gRPC method wraps this)."""
        composite = convert.observed_composite(req)
        api_version = str(composite.get("apiVersion", ""))
        kind = str(composite.get("kind", ""))
        name = str((composite.get("metadata") or {}).get("name", ""))
        if not api_version or not kind:
            return convert.fatal_response(
                req, "the request has no observed composite resource (apiVersion/kind missing)"
            )
        # Looked up through the module so tests can monkeypatch the registry.
        composer = registry.composer_for(api_version, kind)
        if composer is None:
            return convert.fatal_response(
                req,
                f"function-modelplane has no composer for {api_version}, Kind={kind}: "
                "is the Composition pointing at the right function?",
                self.ttl,
            )
        try:
            result = composer(convert.to_input(req))
        except Exception as exc:
            # Composers turn bad input into conditions; an exception here is a
            # bug. Fail safe: a fatal result keeps every composed resource.
            if self.log_errors:
                log.exception("composer raised", apiVersion=api_version, kind=kind, name=name)
            return convert.fatal_response(
                req,
                f"composer for {kind} {name!r} failed: {type(exc).__name__}: {exc}",
                self.ttl,
            )
        try:
            return convert.to_response(req, result, self.ttl)
        except (TypeError, ValueError) as exc:
            if self.log_errors:
                log.exception("cannot encode composer result", kind=kind, name=name)
            return convert.fatal_response(
                req,
                f"composer for {kind} {name!r} returned a value that is not JSON: {exc}",
                self.ttl,
            )

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: Any
    ) -> fnv1.RunFunctionResponse:
        """Run the function for one composite (the gRPC entry point)."""
        return self.run(req)
