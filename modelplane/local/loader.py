"""Load manifests for the embedded control plane and reject what a cluster would.

Every YAML document under the given paths is read (directories recursively,
files in sorted order). A document that is not YAML, lacks apiVersion/kind or
metadata.name, is a Modelplane kind failing validation, or is of a kind
Modelplane neither owns, composes nor finds in Kubernetes raises `LoadError`
with a message naming the file, the (1-based) document and the field.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from modelplane.api import constants as c
from modelplane.api.common import format_validation_error
from modelplane.api.kinds import kind_for
from modelplane.compose import registry
from modelplane.compose.common import spec_body
from modelplane.local.kinds import group_of, known_scope

YAML_SUFFIXES = (".yaml", ".yml")


class LoadError(Exception):
    """Invalid input: the message names the file, document and field."""


def _files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in YAML_SUFFIXES)
        elif p.is_file():
            out.append(p)
        else:
            raise LoadError(f"{p}: no such file or directory")
    return out


def is_composite(api_version: str, kind: str) -> bool:
    """Whether a kind is a composite resource the function composes."""
    return registry.composer_for(api_version, kind) is not None


def scope_of(obj: dict[str, Any]) -> str | None:
    """The scope ("Namespaced"/"Cluster") of an object's kind, or None if unknown."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    k = kind_for(api_version, kind)
    if k is not None:
        return k.scope
    return known_scope(api_version, kind)


def _require_identity(doc: Any, where: str) -> tuple[str, str, dict[str, Any]]:
    """apiVersion, kind and metadata (a mapping with a name), or LoadError."""
    if not isinstance(doc, dict):
        raise LoadError(f"{where}: a manifest must be a mapping, got {type(doc).__name__}")
    for field in ("apiVersion", "kind"):
        if not isinstance(doc.get(field), str) or not doc[field]:
            raise LoadError(f"{where}: {field}: required (a non-empty string)")
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise LoadError(f"{where} ({doc['kind']}): metadata: required (a mapping with a name)")
    if not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise LoadError(f"{where} ({doc['kind']}): metadata.name: required (a non-empty string)")
    return doc["apiVersion"], doc["kind"], metadata


def _check_name(api_version: str, name: str, what: str) -> None:
    # RBAC objects are the one common exception: any path segment (e.g. "system:x").
    rbac = group_of(api_version) == "rbac.authorization.k8s.io"
    name_ok = re.match(c.DNS_SUBDOMAIN_PATTERN, name) or (
        rbac and "/" not in name and name not in (".", "..")
    )
    if len(name) > 253 or not name_ok:
        raise LoadError(
            f"{what}: metadata.name: {name!r} is not a DNS subdomain "
            "(lower-case alphanumerics, '-' and '.', at most 253 characters)"
        )


def _check_string_maps(metadata: dict[str, Any], what: str) -> None:
    for field in ("labels", "annotations"):
        value = metadata.get(field)
        if value is not None and (
            not isinstance(value, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
        ):
            raise LoadError(f"{what}: metadata.{field}: must map strings to strings")


def _integral_floats_to_ints(value: Any) -> Any:
    """2.0 -> 2: JSON has one number type, and the API server takes 2.0 as an integer."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral_floats_to_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_to_ints(v) for v in value]
    return value


def spec_error(model: type[BaseModel], spec: Any) -> str:
    """Why the API server would refuse this spec ("" when it would not).

    Validation is strict, as the XRD's OpenAPI types are: `true` is not an integer,
    `"2"` is not a number, `1` is not a string (pydantic's default lax mode, which the
    composers use on what the API server already checked, would convert them).
    """
    try:
        model.model_validate(_integral_floats_to_ints(spec), strict=True)
    except ValidationError as err:
        return format_validation_error(err, "spec")
    return ""


def _check_kind(doc: dict[str, Any], api_version: str, kind: str, what: str) -> None:
    mp_kind = kind_for(api_version, kind)
    if mp_kind is not None:
        name = doc["metadata"]["name"]
        if len(name) > c.MAX_COMPOSITE_NAME:
            raise LoadError(f"{what}: {c.COMPOSITE_NAME_MESSAGE} ({len(name)} given)")
        if not isinstance(doc.get("spec"), dict):
            raise LoadError(f"{what}: spec: required (a mapping)")
        # What the API server would refuse, render refuses up front rather than
        # leaving it to become a condition.
        # Crossplane's own bookkeeping under spec.crossplane (present in a snapshot
        # exported from a control plane or by `render --output-dir`) is not part of
        # any Modelplane type.
        error = spec_error(mp_kind.spec, spec_body(doc))
        if error:
            raise LoadError(f"{what}: {error}")
    elif known_scope(api_version, kind) is None and not is_composite(api_version, kind):
        group = group_of(api_version) or "core"
        raise LoadError(
            f"{what}: apiVersion {api_version!r} kind {kind!r} is not a Modelplane kind, "
            f"a Kubernetes built-in, nor a kind Modelplane composes (group {group!r})"
        )


def _namespace(doc: dict[str, Any], kind: str, what: str) -> str | None:
    """The namespace to store the object in (defaulted like kubectl), or LoadError."""
    namespace = doc["metadata"].get("namespace")
    if namespace is not None and (
        not isinstance(namespace, str)
        or len(namespace) > 63
        or not re.match(c.DNS_LABEL_PATTERN, namespace)
    ):
        raise LoadError(f"{what}: metadata.namespace: {namespace!r} is not a DNS label")
    scope = scope_of(doc)
    if scope == "Cluster" and namespace:
        raise LoadError(f"{what}: metadata.namespace: {kind} is cluster-scoped; remove it")
    if scope == "Namespaced" and not namespace:
        # What kubectl does for a namespaced object without a namespace.
        return "default"
    return namespace


def check_document(doc: Any, where: str) -> dict[str, Any]:
    """Validate one document; return it with defaults (namespace) applied."""
    api_version, kind, metadata = _require_identity(doc, where)
    what = f"{where} ({kind})"
    _check_name(api_version, metadata["name"], what)
    _check_string_maps(metadata, what)
    _check_kind(doc, api_version, kind, what)
    namespace = _namespace(doc, kind, what)
    out = copy.deepcopy(doc)
    if namespace is not None and metadata.get("namespace") != namespace:
        out["metadata"]["namespace"] = namespace
    return out


def load_paths(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read and validate every manifest under `paths` (recursively, sorted by path).

    Raises LoadError naming file, document and field for invalid input, and for
    two documents that declare the same object.
    """
    objects: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str, str], str] = {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for f in _files(paths):
        try:
            docs = list(yaml.load_all(f.read_text(encoding="utf-8"), Loader=loader))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise LoadError(f"{f}:{at}: not valid YAML: {problem}") from None
        except UnicodeDecodeError as err:
            raise LoadError(f"{f}: not a UTF-8 text file: {err.reason}") from None
        except ValueError as err:  # e.g. an integer past Python's 4,300-digit limit
            raise LoadError(f"{f}: not valid YAML: {str(err).split(';')[0]}") from None
        for i, doc in enumerate(docs, start=1):
            if doc is None:
                continue
            where = f"{f}: document {i}"
            is_list = (
                isinstance(doc, dict)
                and doc.get("apiVersion") == "v1"
                and doc.get("kind") == "List"
                and isinstance(doc.get("items"), list)
            )
            items = doc["items"] if is_list else [doc]
            for j, item in enumerate(items):
                at = f"{where} items[{j}]" if is_list else where
                obj = check_document(item, at)
                m = obj["metadata"]
                key = (obj["apiVersion"], obj["kind"], m.get("namespace") or "", m["name"])
                if key in seen:
                    raise LoadError(
                        f"{at}: {obj['kind']} {_display(key)} is already declared in {seen[key]}"
                    )
                seen[key] = at
                objects.append(obj)
    return objects


def _display(key: tuple[str, str, str, str]) -> str:
    return f"{key[2]}/{key[3]}" if key[2] else key[3]
