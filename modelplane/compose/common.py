"""Helpers every composer shares: parsing the XR, keeping state safe."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.frozen import memoized
from modelplane.api.memo import Memo, memo_function
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

    Remembered on a decoded (read-only) spec, and by the spec's content
    (`content_key`): a composite's decoded spec is a new object whenever
    Crossplane's bookkeeping under it changes, and equal specs parse alike. So
    a spec many calls see is validated once; callers never change the model
    they get.
    """
    key, parse = _parser(model)

    def parse_by_content(raw: Any) -> tuple[M | None, str]:
        return _PARSED.get((key, _raw_key(raw)), lambda: parse(raw))

    return memoized(composite.get("spec"), key, parse_by_content)


def _raw_key(raw: Any) -> str:
    """`content_key` of a composite whose spec is `raw`."""
    return repr(_body(raw))


@memo_function("compose.common._parser", "constant")
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


_SUBDOMAIN = re.compile(c.DNS_SUBDOMAIN_PATTERN)
_LABEL = re.compile(c.DNS_LABEL_PATTERN)
_MAX_NAME = 253
_MAX_NAMESPACE = 63


def _shown(value: Any) -> str:
    """A value and its JSON type, for a message."""
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    for base, word in kinds.items():
        if type(value) is base:
            return f"{value!r} ({word})"
    if value is None:
        return "null"
    return "a list" if isinstance(value, list) else "an object"


def _name_problem(value: Any, field: str, pattern: re.Pattern[str], limit: int) -> str | None:
    if isinstance(value, str) and value and len(value) <= limit and pattern.match(value):
        return None
    what = "a DNS subdomain" if pattern is _SUBDOMAIN else "a DNS label"
    return f"{field} is {_shown(value)}, not {what} of at most {limit} characters"


def _map_problem(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{field} is {_shown(value)}, not an object of strings"
    for key, item in value.items():
        if not isinstance(item, str):
            return f"{field}[{key}] is {_shown(item)}, not a string"
    return None


def identity_problem(composite: Resource) -> str | None:
    """What is wrong with the composite's own metadata, naming the field; None when it reads.

    The API server never admits such a composite; a composer must still not
    compose from one (every composed name derives from it). `metadata` must be
    an object, `metadata.name` a DNS subdomain, `metadata.namespace` (when set)
    a DNS label, labels and annotations objects of strings. A missing
    namespace is each composer's own check (it knows whether its kind is
    namespaced).
    """
    m = composite.get("metadata")
    if not isinstance(m, dict):
        return f"metadata is {_shown(m)}, not an object"
    checks = [
        _name_problem(m.get("name"), "metadata.name", _SUBDOMAIN, _MAX_NAME),
        _map_problem(m.get("labels"), "metadata.labels"),
        _map_problem(m.get("annotations"), "metadata.annotations"),
    ]
    if m.get("namespace") not in (None, ""):
        namespace = m["namespace"]
        checks.insert(1, _name_problem(namespace, "metadata.namespace", _LABEL, _MAX_NAMESPACE))
    return next((p for p in checks if p is not None), None)


def meta(obj: Resource) -> dict[str, Any]:
    """The object's metadata, or an empty dict."""
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def as_desired(observed: Resource) -> Resource:
    """An observed composed resource reduced to what a desired copy may carry.

    Desired state is server-side-apply intent: only identity, labels,
    annotations and content. Echoing status or server-owned metadata
    (finalizers, owner references, uid) would make the function co-own them;
    the one finalizer kept is the one a kind is composed with (the provider's
    on an Object, Crossplane's on one of Modelplane's composites).
    """
    m = meta(observed)
    out: Resource = {
        "apiVersion": observed.get("apiVersion"),
        "kind": observed.get("kind"),
        "metadata": {k: m[k] for k in ("name", "namespace", "labels", "annotations") if k in m},
    }
    kept = _composed_with_finalizer(observed, m)
    if kept is not None:
        # Objects and composites are composed with the finalizer their controller
        # writes (objects.object_metadata, composite_metadata); a copy kept without
        # it would have the apply take it off, and the controller put it back in an
        # update of its own.
        out["metadata"]["finalizers"] = [kept]
    for key, value in observed.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def composite_metadata(name: str, namespace: str, labels: dict[str, Any]) -> Resource:
    """A composed composite's metadata: its identity and labels, and the finalizer
    Crossplane would otherwise write onto it in an update of its own (a watch event
    for the composite that composes it, and a reconcile of both)."""
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "finalizers": [c.COMPOSITE_FINALIZER],
    }


def _composed_finalizer(observed: Resource) -> str | None:
    """The finalizer composers put on a composed resource of this kind, if any."""
    api_version, kind = observed.get("apiVersion"), observed.get("kind")
    if api_version == c.PROVIDER_KUBERNETES_API_VERSION and kind == "Object":
        return c.PROVIDER_FINALIZER
    if api_version in (c.API_VERSION, c.INFRA_API_VERSION):
        return c.COMPOSITE_FINALIZER
    return None


def _composed_with_finalizer(observed: Resource, m: dict[str, Any]) -> str | None:
    wanted = _composed_finalizer(observed)
    finalizers = m.get("finalizers")
    present = isinstance(finalizers, list) and wanted in finalizers
    return wanted if present else None


def keep_observed(inp: ComposeInput) -> dict[str, DesiredResource]:
    """Desired state that changes nothing: every observed composed resource as it is.

    Used while required inputs are still being fetched, because a composed
    resource left out of desired state is deleted.
    """
    return {name: DesiredResource(as_desired(obj)) for name, obj in inp.observed.items()}


def content_key(composite: Resource) -> str:
    """The composite's spec without Crossplane's bookkeeping, rendered exactly.

    `repr` of JSON values is a Python literal that reads back to the same values
    and types (1, 1.0 and True differ), so equal keys are equal specs.
    """
    return _raw_key(composite.get("spec"))


_PARSED: Memo[Any] = Memo("compose.common._PARSED")
"""`parse_spec`'s answers by model and spec content."""
