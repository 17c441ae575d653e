"""Helpers every composer shares: parsing the XR, keeping state safe."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from modelplane.api.common import format_validation_error
from modelplane.compose.types import ComposeInput, DesiredResource, Resource

M = TypeVar("M", bound=BaseModel)

# Crossplane v2 writes its own bookkeeping under spec.crossplane; it is not
# part of any Modelplane kind's schema.
_CROSSPLANE_SPEC_KEY = "crossplane"


def parse_spec(model: type[M], composite: Resource) -> tuple[M | None, str]:
    """Validate the composite's spec; return `(spec, "")` or `(None, message naming the field)`."""
    raw = composite.get("spec")
    if not isinstance(raw, dict):
        return None, "spec: must be an object"
    spec = {k: v for k, v in raw.items() if k != _CROSSPLANE_SPEC_KEY}
    try:
        return model.model_validate(spec), ""
    except ValidationError as err:
        return None, format_validation_error(err, "spec")


def meta(obj: Resource) -> dict[str, Any]:
    """The object's metadata, or an empty dict."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def keep_observed(inp: ComposeInput) -> dict[str, DesiredResource]:
    """Desired state that changes nothing: every observed composed resource as it is.

    Used while required inputs are still being fetched, because a composed
    resource left out of desired state is deleted.
    """
    desired: dict[str, DesiredResource] = {}
    for name, obj in inp.observed.items():
        kept = {k: v for k, v in obj.items() if k != "status"}
        m = dict(meta(kept))
        for noisy in ("resourceVersion", "uid", "generation", "managedFields", "creationTimestamp"):
            m.pop(noisy, None)
        kept["metadata"] = m
        desired[name] = DesiredResource(kept)
    return desired
