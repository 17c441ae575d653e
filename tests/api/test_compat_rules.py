"""The compatibility gate's rules (modelplane/api/compat.py), one table row each way.

Every rule has a breaking example (the gate must name the field and the rule) and a
compatible one (the gate must find nothing), on small hand-written schemas.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.compat import (
    RULES,
    AcceptedBreak,
    Break,
    ExceptionsError,
    breaking_changes,
    read_exceptions,
    schema_breaks,
)


def obj(**props: Any) -> dict[str, Any]:
    """An object schema with the given properties."""
    return {"type": "object", "properties": props}


S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741

# rule, old schema, breaking new schema (path the gate must name), compatible new schema.
SCHEMA_TABLE: list[tuple[str, dict[str, Any], dict[str, Any], str, dict[str, Any]]] = [
    ("field-removed", obj(a=S, b=S), obj(a=S), "b", obj(a=S, b=S, c=S)),
    # A rename is a removal of the old name (the new one is only an addition).
    ("field-removed", obj(old=S), obj(new=S), "old", obj(old=S, new=S)),
    (
        "field-removed",
        obj(m={"type": "object", "additionalProperties": S}),
        obj(m=obj()),
        "m.*",
        obj(m={"type": "object", "additionalProperties": S}),
    ),
    ("type-changed", obj(a=S), obj(a=I), "a", obj(a={**S, "description": "d"})),
    (
        "type-changed",
        obj(a={"x-kubernetes-int-or-string": True}),
        obj(a=I),
        "a",
        obj(a={"x-kubernetes-int-or-string": True}),
    ),
    (
        "type-changed",
        obj(l={"type": "array", "items": S}),
        obj(l={"type": "array", "items": I}),
        "l[*]",
        obj(l={"type": "array", "items": S}),
    ),
    (
        "enum-value-removed",
        obj(a={**S, "enum": ["x", "y"]}),
        obj(a={**S, "enum": ["x"]}),
        "a",
        obj(a={**S, "enum": ["x", "y", "z"]}),
    ),
    ("enum-added", obj(a=S), obj(a={**S, "enum": ["x"]}), "a", obj(a=S)),
    (
        "required-without-default",
        obj(a=S),
        {**obj(a=S, b=S), "required": ["b"]},
        "b",
        {**obj(a=S, b={**S, "default": "v"}), "required": ["b"]},
    ),
    # An optional field made required breaks objects that omit it.
    (
        "required-without-default",
        obj(a=S),
        {**obj(a=S), "required": ["a"]},
        "a",
        {**obj(a=S, n={**obj(x=S), "required": ["x"]})},
    ),
    (
        "cel-rule-added",
        obj(a=I),
        obj(a={**I, "x-kubernetes-validations": [{"rule": "self > 1"}]}),
        "a",
        obj(a=I, n={**I, "x-kubernetes-validations": [{"rule": "self > 1"}]}),
    ),
    # A changed rule is a new rule; a changed message only is not.
    (
        "cel-rule-added",
        obj(a={**I, "x-kubernetes-validations": [{"rule": "self > 1", "message": "m"}]}),
        obj(a={**I, "x-kubernetes-validations": [{"rule": "self > 2", "message": "m"}]}),
        "a",
        obj(a={**I, "x-kubernetes-validations": [{"rule": "self > 1", "message": "other"}]}),
    ),
    (
        "bound-tightened",
        obj(a={**I, "minimum": 1}),
        obj(a={**I, "minimum": 2}),
        "a",
        obj(a={**I, "minimum": 0}),
    ),
    ("bound-tightened", obj(a={**I, "maximum": 9}), obj(a={**I, "maximum": 8}), "a", obj(a=I)),
    ("bound-tightened", obj(a=S), obj(a={**S, "maxLength": 63}), "a", obj(a={**S, "minLength": 0})),
    ("bound-tightened", obj(a={**S, "minLength": 1}), obj(a={**S, "minLength": 2}), "a", obj(a=S)),
    (
        "bound-tightened",
        obj(l={"type": "array", "items": S, "maxItems": 4}),
        obj(l={"type": "array", "items": S, "maxItems": 3}),
        "l",
        obj(l={"type": "array", "items": S, "maxItems": 5}),
    ),
    (
        "bound-tightened",
        obj(l={"type": "array", "items": S}),
        obj(l={"type": "array", "items": S, "minItems": 1}),
        "l",
        obj(l={"type": "array", "items": S}),
    ),
    (
        "bound-tightened",
        obj(m={"type": "object", "maxProperties": 4}),
        obj(m={"type": "object", "maxProperties": 2}),
        "m",
        obj(m={"type": "object", "maxProperties": 8}),
    ),
    (
        "bound-tightened",
        obj(a={**S, "pattern": "^[a-z]+$"}),
        obj(a={**S, "pattern": "^[a-z]{1,5}$"}),
        "a",
        obj(a={**S, "pattern": "^[a-z]+$"}),
    ),
    ("bound-tightened", obj(a=S), obj(a={**S, "pattern": "^x"}), "a", obj(a=S)),
    (
        "bound-tightened",
        obj(a=S),
        obj(a={**S, "format": "date-time"}),
        "a",
        obj(a={**S, "description": "documented now"}),
    ),
    (
        "bound-tightened",
        obj(a={**I, "minimum": 0}),
        obj(a={**I, "minimum": 0, "exclusiveMinimum": True}),
        "a",
        obj(a={**I, "minimum": 0, "exclusiveMinimum": False}),
    ),
    # An object that omits the field read no default before, and reads one now.
    ("default-changed", obj(a=S), obj(a={**S, "default": "x"}), "a", obj(a=S)),
    (
        "default-changed",
        obj(a={**S, "default": "x"}),
        obj(a={**S, "default": "y"}),
        "a",
        obj(a={**S, "default": "x"}),
    ),
    (
        "unknown-fields-pruned",
        obj(o={"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        obj(o={"type": "object"}),
        "o",
        obj(
            o={
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"k": S},
            }
        ),
    ),
]


def _row_id(row: tuple[Any, ...]) -> str:
    return f"{row[0]}:{row[3]}"


@pytest.mark.parametrize("row", SCHEMA_TABLE, ids=_row_id)
def test_a_breaking_change_is_named_by_field_and_rule(row: tuple[Any, ...]) -> None:
    rule, old, breaking, path, _ = row
    found = schema_breaks(old, breaking)
    assert [(p, r) for p, r, _ in found] == [(path, rule)], found


@pytest.mark.parametrize("row", SCHEMA_TABLE, ids=_row_id)
def test_the_compatible_change_passes(row: tuple[Any, ...]) -> None:
    _, old, _, _, compatible = row
    assert schema_breaks(old, compatible) == []


def xrd(
    kind: str = "Thing",
    versions: tuple[tuple[str, bool], ...] = (("v1alpha1", True),),
    schema: dict[str, Any] | None = None,
    columns: tuple[str, ...] = (".status.phase",),
    plural: str = "things",
    scope: str = "Namespaced",
) -> dict[str, Any]:
    """A small XRD: each version with the same schema and printer columns."""
    return {
        "spec": {
            "group": "example.org",
            "names": {"kind": kind, "plural": plural},
            "scope": scope,
            "versions": [
                {
                    "name": name,
                    "served": served,
                    "additionalPrinterColumns": [
                        {"name": p, "type": "string", "jsonPath": p} for p in columns
                    ],
                    "schema": {"openAPIV3Schema": schema or obj(spec=obj(a=S))},
                }
                for name, served in versions
            ],
        }
    }


# rule, old XRD, breaking new XRD (None: the kind is gone), compatible new XRD.
XRD_TABLE: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any]]] = [
    (
        "served-version-removed",
        xrd(versions=(("v1alpha1", True), ("v1beta1", True))),
        xrd(versions=(("v1beta1", True),)),
        xrd(versions=(("v1alpha1", True), ("v1beta1", True), ("v1", True))),
    ),
    (
        "served-version-removed",
        xrd(),
        xrd(versions=(("v1alpha1", False),)),
        xrd(versions=(("v1alpha1", True), ("v1beta1", False))),
    ),
    ("served-version-removed", xrd(), None, xrd()),
    # A version the old XRD did not serve may go.
    (
        "served-version-removed",
        xrd(),
        xrd(versions=()),
        xrd(versions=(("v1alpha1", True), ("v0", False))),
    ),
    ("kind-identity-changed", xrd(), xrd(plural="thingz"), xrd()),
    ("kind-identity-changed", xrd(), xrd(scope="Cluster"), xrd()),
    (
        "printer-column-removed",
        xrd(columns=(".status.phase", ".spec.a")),
        xrd(columns=(".spec.a",)),
        xrd(columns=(".spec.a", ".status.phase", ".status.x")),
    ),
]


@pytest.mark.parametrize("row", XRD_TABLE, ids=lambda row: row[0])
def test_an_xrd_level_break_is_named(row: tuple[Any, ...]) -> None:
    rule, old, breaking, _ = row
    found = breaking_changes(old, breaking)
    assert found and {b.rule for b in found} == {rule}, found
    assert all(b.kind == "Thing" for b in found)


@pytest.mark.parametrize("row", XRD_TABLE, ids=lambda row: row[0])
def test_an_xrd_level_compatible_change_passes(row: tuple[Any, ...]) -> None:
    _, old, _, compatible = row
    assert breaking_changes(old, compatible) == []


def test_every_rule_has_a_breaking_and_a_compatible_row() -> None:
    assert {row[0] for row in SCHEMA_TABLE} | {row[0] for row in XRD_TABLE} == set(RULES)


def test_only_served_versions_are_compared_and_each_break_names_its_version() -> None:
    old = xrd(versions=(("v1alpha1", False), ("v1beta1", True)), schema=obj(spec=obj(a=S)))
    new = xrd(versions=(("v1alpha1", False), ("v1beta1", True)), schema=obj(spec=obj()))
    found = breaking_changes(old, new)
    assert found == [Break("Thing", "v1beta1", "spec.a", "field-removed", "not in the new schema")]
    assert found[0].message() == ("Thing v1beta1 spec.a: field-removed (not in the new schema)")


def test_a_new_kind_breaks_nothing() -> None:
    assert breaking_changes(None, xrd()) == []


def test_a_field_under_a_new_field_is_not_compared() -> None:
    # A new optional object may require its own fields: no stored object has it.
    new = obj(a=S, n={**obj(x=S), "required": ["x"], "x-kubernetes-validations": [{"rule": "r"}]})
    assert schema_breaks(obj(a=S), new) == []


def test_an_exception_covers_exactly_its_break() -> None:
    brk = Break("Thing", "v1alpha1", "spec.a", "field-removed", "")
    accept = AcceptedBreak("Thing", "v1alpha1", "spec.a", "field-removed", "never set")
    assert accept.covers(brk)
    assert not AcceptedBreak("Thing", "v1alpha1", "spec.b", "field-removed", "x").covers(brk)
    assert not AcceptedBreak("Thing", "v1alpha1", "spec.a", "type-changed", "x").covers(brk)


@pytest.mark.parametrize(
    "doc, complaint",
    [
        ({"exceptions": {}}, "must be a list"),
        (
            {"exceptions": [{"kind": "T", "version": "v1", "path": "p", "rule": "field-removed"}]},
            "needs non-empty",
        ),
        (
            {
                "exceptions": [
                    {"kind": "T", "version": "v1", "path": "p", "rule": "nope", "reason": "r"}
                ]
            },
            "unknown rule",
        ),
    ],
)
def test_a_malformed_exceptions_file_is_refused(doc: Any, complaint: str) -> None:
    with pytest.raises(ExceptionsError, match=complaint):
        read_exceptions(doc)


def test_an_exceptions_file_reads_into_entries() -> None:
    entry = {"kind": "T", "version": "v1", "path": "p", "rule": "field-removed", "reason": "r"}
    assert read_exceptions({"exceptions": [entry]}) == [
        AcceptedBreak("T", "v1", "p", "field-removed", "r")
    ]
    assert read_exceptions({"exceptions": []}) == []
    assert read_exceptions(None) == []
