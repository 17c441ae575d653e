"""XRD defaults the API server accepts: a default must satisfy its schema's CEL rules as written.

kube-apiserver validates a structural default against the rules of the schema
it sits in without applying the nested schemas' defaults to it first, so a
default object that leaves out a field a rule reads (`self.protocol`) makes the
whole CRD invalid. The InferenceGateway XRD shipped such a default: its CRD was
refused on a real API server and the XRD never became Established.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from modelplane.api.kinds import KINDS
from modelplane.api.xrd import xrd

_SELF_FIELD = re.compile(r"(?<![\w.])self\.(\w+)")
_GUARDED = re.compile(r"has\(self\.(\w+)\)")


def _schemas(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    if not isinstance(node, dict):
        return
    yield path, node
    for name, sub in (node.get("properties") or {}).items():
        yield from _schemas(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from _schemas(node["items"], f"{path}[]")


def _objects(default: Any) -> list[dict[str, Any]]:
    if isinstance(default, dict):
        return [default]
    if isinstance(default, list):
        return [d for d in default if isinstance(d, dict)]
    return []


def _read_fields(schema: dict[str, Any]) -> set[str]:
    """The fields a schema's rules read without first asking has()."""
    fields: set[str] = set()
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule["rule"]
        fields |= set(_SELF_FIELD.findall(text)) - set(_GUARDED.findall(text))
    return fields & set(schema.get("properties") or {})


def _cases() -> list[Any]:
    out = []
    for kind in KINDS:
        for version in xrd(kind)["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            for path, schema in _schemas(root, kind.kind):
                if "default" in schema:
                    out.append(pytest.param(path, schema, id=path))
    return out


CASES = _cases()


def test_there_are_defaults_to_check() -> None:
    assert len(CASES) > 20


@pytest.mark.parametrize(("path", "schema"), CASES)
def test_a_default_object_spells_out_every_field_its_rules_read(
    path: str, schema: dict[str, Any]
) -> None:
    item = schema["items"] if isinstance(schema.get("items"), dict) else schema
    needed = _read_fields(item)
    for value in _objects(schema["default"]):
        missing = needed - set(value)
        assert not missing, f"{path}: default {value} leaves out {sorted(missing)}"


def test_the_gateway_listener_default_is_complete() -> None:
    from modelplane.api.inference_gateway import InferenceGatewaySpec

    default = InferenceGatewaySpec.model_fields["listeners"].default_factory()  # type: ignore[misc]
    assert default == [{"name": "http", "protocol": "HTTP", "port": 80}]
