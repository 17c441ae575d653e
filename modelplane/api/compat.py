"""The API compatibility gate: what in a new XRD rejects or loses objects the old one kept.

A release keeps its XRDs (`snapshot`, without descriptions) under `api-compat/<version>/`;
`breaking_changes` compares a kept XRD with the current one, version by version, and
names every change that could make an object stored under the old schema invalid,
pruned or read differently: the rules of `RULES`. The comparison is conservative: a
CEL rule that is new or reworded on a field that existed counts as breaking even when
it happens to accept every stored object, since that cannot be decided from schemas.
A breaking change ships only with a new API version and a conversion, or as a listed
exception (`Exception`, `api-compat/exceptions.yaml`) that says why it is safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Rule name → what it means; the names are what the exceptions file cites.
RULES: dict[str, str] = {
    "served-version-removed": "a version the old XRD served is gone or no longer served",
    "kind-identity-changed": "the group, kind, plural or scope changed",
    "field-removed": "a field the old schema had is gone (removed or renamed)",
    "type-changed": "the field's type changed",
    "enum-value-removed": "a value the old enum accepted is no longer accepted",
    "enum-added": "a field that took any value now takes only an enum's",
    "required-without-default": "a field is newly required and has no default",
    "cel-rule-added": "a CEL rule (x-kubernetes-validations) is new or changed on a field "
    "that existed",
    "bound-tightened": "a bound rejects values the old one accepted",
    "default-changed": "the default of a field was added, changed or removed",
    "unknown-fields-pruned": "x-kubernetes-preserve-unknown-fields was dropped",
    "printer-column-removed": "a printer column's jsonPath is gone",
}

# Bounds that tighten when they grow (or appear), and those that tighten when they shrink.
_LOWER_BOUNDS = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "maxLength", "maxItems", "maxProperties")
# Keywords any new or changed value of which may reject an old value.
_EXACT_BOUNDS = ("pattern", "format", "multipleOf")
_EXCLUSIVE = ("exclusiveMinimum", "exclusiveMaximum")


@dataclass(frozen=True, order=True)
class Break:
    """One breaking change: where it is, which rule, and what changed."""

    kind: str
    version: str
    path: str
    rule: str
    detail: str

    def message(self) -> str:
        """One line naming the kind, version, field path and rule."""
        return f"{self.kind} {self.version} {self.path}: {self.rule} ({self.detail})"


@dataclass(frozen=True)
class AcceptedBreak:
    """A breaking change accepted on purpose, and why (an entry of the exceptions file)."""

    kind: str
    version: str
    path: str
    rule: str
    reason: str

    def covers(self, brk: Break) -> bool:
        """Whether this exception accepts the breaking change."""
        return (self.kind, self.version, self.path, self.rule) == (
            brk.kind,
            brk.version,
            brk.path,
            brk.rule,
        )


class ExceptionsError(ValueError):
    """The exceptions file is malformed."""


def read_exceptions(doc: Any) -> list[AcceptedBreak]:
    """The exceptions of a parsed exceptions file (`{exceptions: [...]}`); raise on bad entries."""
    entries = (doc or {}).get("exceptions") if isinstance(doc, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ExceptionsError("exceptions: must be a list")
    out = []
    for i, entry in enumerate(entries):
        fields = ("kind", "version", "path", "rule", "reason")
        if not isinstance(entry, dict) or any(
            not isinstance(entry.get(f), str) or not entry[f].strip() for f in fields
        ):
            raise ExceptionsError(f"exceptions[{i}]: needs non-empty {', '.join(fields)}")
        if entry["rule"] not in RULES:
            raise ExceptionsError(f"exceptions[{i}]: unknown rule {entry['rule']!r}")
        out.append(AcceptedBreak(*(entry[f] for f in fields)))
    return out


def _strip(value: Any) -> Any:
    """A schema without its descriptions (they cannot break an object).

    Only text is dropped: a property named `description` is a schema, and stays.
    """
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if not (k == "description" and isinstance(v, str))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def snapshot(xrd: Mapping[str, Any]) -> dict[str, Any]:
    """The part of an XRD a release keeps: all of it but descriptions."""
    return dict(_strip(dict(xrd)))


def _kind(xrd: Mapping[str, Any]) -> str:
    return str(((xrd.get("spec") or {}).get("names") or {}).get("kind", "?"))


def _versions(xrd: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {v["name"]: v for v in (xrd.get("spec") or {}).get("versions") or []}


def _identity(xrd: Mapping[str, Any]) -> dict[str, Any]:
    spec = xrd.get("spec") or {}
    names = spec.get("names") or {}
    return {
        "group": spec.get("group"),
        "kind": names.get("kind"),
        "plural": names.get("plural"),
        "scope": spec.get("scope"),
    }


def breaking_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[Break]:
    """Every breaking change from the old XRD to the new one (None: the kind is absent).

    Only versions the old XRD served are compared; a kind that is gone breaks each of them.
    """
    if old is None:
        return []
    kind = _kind(old)
    served = [name for name, v in _versions(old).items() if v.get("served")]
    if new is None:
        return [Break(kind, v, "", "served-version-removed", "the kind is gone") for v in served]
    out: list[Break] = []
    before, after = _identity(old), _identity(new)
    for key in before:
        if before[key] != after[key]:
            detail = f"{key} {before[key]!r} -> {after[key]!r}"
            out.append(Break(kind, "*", "", "kind-identity-changed", detail))
    versions = _versions(new)
    for name in served:
        now = versions.get(name)
        if now is None or not now.get("served"):
            out.append(Break(kind, name, "", "served-version-removed", "not served any more"))
            continue
        out += _version_breaks(kind, name, _versions(old)[name], now)
    return sorted(out)


def _version_breaks(
    kind: str, version: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[Break]:
    """The breaking changes of one served version: its schema and its printer columns."""
    out = [
        Break(kind, version, f"column {p}", "printer-column-removed", "no column reads it")
        for p in sorted(_column_paths(old) - _column_paths(new))
    ]
    old_schema = (old.get("schema") or {}).get("openAPIV3Schema") or {}
    new_schema = (new.get("schema") or {}).get("openAPIV3Schema") or {}
    out += [
        Break(kind, version, path, rule, detail)
        for path, rule, detail in schema_breaks(old_schema, new_schema)
    ]
    return out


def _column_paths(version: Mapping[str, Any]) -> set[str]:
    return {c.get("jsonPath", "") for c in version.get("additionalPrinterColumns") or []}


Found = tuple[str, str, str]
"""A breaking change in a schema: field path, rule, detail."""


def schema_breaks(old: Mapping[str, Any], new: Mapping[str, Any], path: str = "") -> list[Found]:
    """Every breaking change from the old structural schema node to the new one, recursively."""
    where = path or "<root>"
    old_type, new_type = _type_of(old), _type_of(new)
    if old_type != new_type:
        return [(where, "type-changed", f"{old_type} -> {new_type}")]
    out: list[Found] = []
    out += [(where, rule, detail) for rule, detail in _node_breaks(old, new)]
    out += _required_breaks(old, new, path)
    for name, child in (old.get("properties") or {}).items():
        sub = f"{path}.{name}" if path else name
        now = (new.get("properties") or {}).get(name)
        if now is None:
            out.append((sub, "field-removed", "not in the new schema"))
        else:
            out += schema_breaks(child, now, sub)
    out += _nested(old, new, "items", f"{where}[*]")
    out += _nested(old, new, "additionalProperties", f"{where}.*")
    return out


def _nested(old: Mapping[str, Any], new: Mapping[str, Any], key: str, sub: str) -> list[Found]:
    """Compare the schemas of list items or map values, when the old node has one."""
    before, after = old.get(key), new.get(key)
    if not isinstance(before, dict):
        return []
    if not isinstance(after, dict):
        return [(sub, "field-removed", f"{key} schema gone")]
    return schema_breaks(before, after, sub)


def _type_of(node: Mapping[str, Any]) -> str:
    """The node's type as an object stored under it sees it (int-or-string is its own type)."""
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(node.get("type", "any"))


def _node_breaks(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """The breaking changes of the node itself (not its children): rule, detail."""
    yield from _enum_breaks(old, new)
    yield from _bound_breaks(old, new)
    before = {r.get("rule") for r in old.get("x-kubernetes-validations") or []}
    for rule in new.get("x-kubernetes-validations") or []:
        if rule.get("rule") not in before:
            yield "cel-rule-added", str(rule.get("rule"))
    # An object that omits the field reads the default: adding one changes it too.
    if ("default" in old or "default" in new) and old.get("default") != new.get("default"):
        before, after = old.get("default", "<none>"), new.get("default", "<none>")
        yield "default-changed", f"{before!r} -> {after!r}"
    if old.get("x-kubernetes-preserve-unknown-fields") and not new.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        yield "unknown-fields-pruned", "unknown fields kept before are pruned now"


def _enum_breaks(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    if "enum" not in new:
        return
    if "enum" not in old:
        yield "enum-added", f"only {new['enum']!r}"
        return
    for value in old["enum"]:
        if value not in new["enum"]:
            yield "enum-value-removed", repr(value)


def _bound_breaks(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    for key in _LOWER_BOUNDS:
        # A missing length or count bound is 0; a missing minimum is none at all.
        floor = None if key == "minimum" else 0
        before = old.get(key, floor)
        if key in new and (before is None or new[key] > before):
            yield "bound-tightened", f"{key} {old.get(key, '<none>')} -> {new[key]}"
    for key in _UPPER_BOUNDS:
        if key in new and (key not in old or new[key] < old[key]):
            yield "bound-tightened", f"{key} {old.get(key, '<none>')} -> {new[key]}"
    for key in _EXACT_BOUNDS + _EXCLUSIVE:
        if key in new and new[key] != old.get(key) and new[key] is not False:
            yield "bound-tightened", f"{key} {old.get(key, '<none>')!r} -> {new[key]!r}"


def _required_breaks(old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> list[Found]:
    """Fields newly required at this node that an old object may lack and no default fills."""
    out = []
    for name in new.get("required") or []:
        if name in (old.get("required") or []):
            continue
        if "default" in ((new.get("properties") or {}).get(name) or {}):
            continue
        sub = f"{path}.{name}" if path else name
        out.append((sub, "required-without-default", "newly required"))
    return out
