"""Helpers every composer shares: parsing the XR, keeping state safe."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from modelplane.api.common import format_validation_error
from modelplane.api.frozen import memoized
from modelplane.compose.types import ComposeInput, DesiredResource, Resource

M = TypeVar("M", bound=BaseModel)

# Crossplane v2 writes its own bookkeeping under spec.crossplane; it is not
# part of any Modelplane kind's schema.
_CROSSPLANE_SPEC_KEY = "crossplane"


def spec_body(composite: Resource) -> dict[str, Any] | None:
    """The composite's spec without Crossplane's bookkeeping, or None if it is not a mapping."""
    return _body(composite.get("spec"))


def _body(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    return {k: v for k, v in raw.items() if k != _CROSSPLANE_SPEC_KEY}


def without_crossplane_spec(composite: Resource) -> Resource:
    """The composite with `spec.crossplane` removed (what the Modelplane types describe)."""
    body = spec_body(composite)
    if body is None or _CROSSPLANE_SPEC_KEY not in composite["spec"]:
        return composite
    return {**composite, "spec": body}


def parse_spec(model: type[M], composite: Resource) -> tuple[M | None, str]:
    """Validate the composite's spec; return `(spec, "")` or `(None, message naming the field)`.

    Remembered on a decoded (read-only) spec, so a spec many calls see is
    validated once; callers never change the model they get.
    """
    key, parse = _parser(model)
    return memoized(composite.get("spec"), key, parse)


@functools.cache
def _parser(model: type[M]) -> tuple[str, Callable[[Any], tuple[M | None, str]]]:
    """The memo key and the parse of one spec model (built once per model)."""

    def parse(raw: Any) -> tuple[M | None, str]:
        spec = _body(raw)
        if spec is None:
            return None, "spec: must be an object"
        try:
            return model.model_validate(spec), ""
        except ValidationError as err:
            return None, format_validation_error(err, "spec")

    return f"parse_spec:{model.__module__}.{model.__qualname__}", parse


def meta(obj: Resource) -> dict[str, Any]:
    """The object's metadata, or an empty dict."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def as_desired(observed: Resource) -> Resource:
    """An observed composed resource reduced to what a desired copy may carry.

    Desired state is server-side-apply intent: only identity, labels,
    annotations and content. Echoing status or server-owned metadata
    (finalizers, owner references, uid) would make the function co-own them.
    """
    m = meta(observed)
    out: Resource = {
        "apiVersion": observed.get("apiVersion"),
        "kind": observed.get("kind"),
        "metadata": {k: m[k] for k in ("name", "namespace", "labels", "annotations") if k in m},
    }
    for key, value in observed.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def keep_observed(inp: ComposeInput) -> dict[str, DesiredResource]:
    """Desired state that changes nothing: every observed composed resource as it is.

    Used while required inputs are still being fetched, because a composed
    resource left out of desired state is deleted.
    """
    return {name: DesiredResource(as_desired(obj)) for name, obj in inp.observed.items()}
