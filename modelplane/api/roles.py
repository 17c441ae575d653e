"""Where a role's fields live on the wire: the one home of "unified vs <role>".

A unified deployment or replica carries its role's fields at the top of its
spec (`spec.nodeSelector`, `spec.workers`, `spec.nodePoolName`); a
disaggregated one nests them under the role's name (`spec.prefill.workers`).
Every path in a message and every body a composer writes goes through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import constants as c

DISAGGREGATED_ROLES = (c.ROLE_PREFILL, c.ROLE_DECODE)
"""The roles of a disaggregated deployment, in their fixed order."""


def role_path(role: str) -> str:
    """The wire path of a role's fields: `spec` for unified, `spec.<role>` otherwise."""
    return "spec" if role == c.ROLE_UNIFIED else f"spec.{role}"


def is_disaggregated(spec: Mapping[str, Any]) -> bool:
    """Whether a raw spec body uses the disaggregated form (any role block present)."""
    return any(role in spec for role in DISAGGREGATED_ROLES)


def role_fields(spec: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    """The raw fields of `role` inside a spec body (empty when absent or malformed)."""
    if role == c.ROLE_UNIFIED:
        return spec
    block = spec.get(role)
    return block if isinstance(block, Mapping) else {}


def put_role_fields(body: dict[str, Any], role: str, fields: Mapping[str, Any]) -> None:
    """Write `fields` of `role` into a spec body at the role's wire path."""
    if role == c.ROLE_UNIFIED:
        body.update(fields)
    else:
        body[role] = dict(fields)


def role_label(role: str) -> str:
    """How a role is named after a pool in text: "" for unified, " (prefill)" otherwise."""
    return "" if role in ("", c.ROLE_UNIFIED) else f" ({role})"
