"""Objects a composer reads but cannot: reported, and what depends on them kept.

A composer reads each observed or required object through its tolerant
reader. When one is malformed (a status that is not an object, a condition
list of the wrong shape, a name that is not a string), it is **unknown**,
never absent: what the composer derives from it stays as observed (desired =
observed for what it concerns), and nothing else changes because of it. This
module is how that is said: the `InputsReadable` condition, False with every
unreadable object and field, and a warning event per object. The condition is
set True again only on a composite whose status still says False, so a
composite that never read anything malformed carries no such condition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import condition_status
from modelplane.api.reasons import InputsReadableReason
from modelplane.compose import readiness
from modelplane.compose.common import as_desired
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource


@dataclass(frozen=True)
class Unreadable:
    """One object a composer cannot read: which, the field, why, and what is kept."""

    what: str  # the object, e.g. "InferenceCluster east"
    field: str  # e.g. "status.conditions"
    why: str  # e.g. "is a number, not a list"
    kept: str  # e.g. "the replica's Usages of its releases are kept as they are"

    def message(self) -> str:
        """One sentence naming the object and the field."""
        return f"{self.what}: {self.field} {self.why}; {self.kept}"


def shown(value: Any) -> str:
    """What a malformed value is, for `Unreadable.why`: `is a number`, `is null`."""
    if value is None:
        return "is null"
    if isinstance(value, bool):
        return "is a boolean"
    if isinstance(value, int | float):
        return "is a number"
    if isinstance(value, str):
        return "is a string"
    return "is a list" if isinstance(value, list) else "is an object"


def conditions_problem(obj: Mapping[str, Any] | None) -> str | None:
    """What is wrong with an object's `status` / `status.conditions`, naming the field.

    None when both read: `status` absent or an object, its `conditions`
    absent or a list of objects whose `type` and `status` are strings.
    """
    status = (obj or {}).get("status")
    if status is None:
        return None
    if not isinstance(status, Mapping):
        return f"status {shown(status)}, not an object"
    found = status.get("conditions")
    if found is None:
        return None
    if not isinstance(found, list):
        return f"status.conditions {shown(found)}, not a list"
    for i, entry in enumerate(found):
        if not isinstance(entry, (dict, Mapping)):  # dicts first: no ABC check
            return f"status.conditions[{i}] {shown(entry)}, not an object"
        for key in ("type", "status"):
            if not isinstance(entry.get(key), str):
                return f"status.conditions[{i}].{key} {shown(entry.get(key))}, not a string"
    return None


def split(problem: str) -> tuple[str, str]:
    """A `conditions_problem` text as (field, why)."""
    field, _, why = problem.partition(" ")
    return field, why


def keep(inp: ComposeInput, result: ComposeResult, keys: Sequence[str]) -> None:
    """Put the observed composed resources `keys` into desired state as they are.

    Readiness is the one each declared (as `outcome.hold` keeps them); a key not
    observed is left out (nothing to keep).
    """
    for key in keys:
        obs = inp.observed.get(key)
        if obs is not None:
            ok = readiness.observed_ready(obs)
            result.desired[key] = DesiredResource(as_desired(obs), "True" if ok else "False")


def report(inp: ComposeInput, result: ComposeResult, found: Sequence[Unreadable]) -> None:
    """Set `InputsReadable` and warn once per unreadable object.

    With nothing unreadable the condition is set True only when the
    composite's own status says False (so it clears, and never appears on a
    composite that never had a problem).
    """
    if found:
        messages = sorted({u.message() for u in found})
        for message in messages:
            result.warn(str(InputsReadableReason.UNREADABLE), message)
        result.condition(
            c.CONDITION_INPUTS_READABLE,
            False,
            InputsReadableReason.UNREADABLE,
            "; ".join(messages),
        )
        return
    if condition_status(inp.composite, c.CONDITION_INPUTS_READABLE) == "False":
        result.condition(
            c.CONDITION_INPUTS_READABLE,
            True,
            InputsReadableReason.READABLE,
            "every object this composite reads is readable again",
        )
