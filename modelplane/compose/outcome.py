"""The one way a composer stops early.

A composer that cannot go on has exactly three ways out, and this module is the
only place that implements them:

- `wait`: a required input has not been fetched yet. Nothing is wrong; keep every
  observed composed resource and come back when Crossplane has fetched it. The
  result still carries the requirements (that is how they get fetched), and may
  say what it waits for in an Unknown condition.
- `hold`: the composer's input is wrong or incomplete in a way a human must fix
  (an invalid spec, a missing class or Secret, an unreachable cluster). Set the
  condition with a reason from that condition type's enum, emit a warning event,
  mark the composite not ready and keep every observed composed resource, so
  whatever serves today goes on serving.
- `fatal`: the composer cannot compute a safe answer at all. Crossplane then
  keeps every composed resource and reports the message; nothing else of the
  result counts (no conditions, no requirements, no status).

When a composer must return `fatal` (and only then):
- the composite has no identity to compose from (no `metadata.name`, or no
  `metadata.namespace` for a namespaced kind): no composed name can be computed
  and no condition would be about anything;
- the composer's own invariant broke (a bug, an exception from a rule, a
  reason that does not belong to its condition, which `hold` raises on): the
  function server turns the exception into a fatal result;
- any answer would be a guess that could delete what serves: observed state the
  composer cannot read well enough to keep it.
Never `fatal` for user input (that is `hold`: the condition says what to fix)
nor for a requirement not fetched yet (that is `wait`: a fatal result cannot
carry the requirement, so it would never be fetched).

Choose `hold` whenever the composer can still say *why* in a condition: it keeps
the composite's status current. Never return a partial desired state: a
composed resource missing from desired state is deleted by Crossplane.

`readiness` reads one observed composed resource's readiness; composers pass
`modelplane.compose.readiness.observed_ready`, which applies the rule each
Object declared, so an early stop never guesses readiness from a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from modelplane.api.reasons import REASONS, reason_belongs
from modelplane.compose.common import as_desired
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Resource

ObservedReadiness = Callable[[Resource], bool]
"""Reads an observed composed resource's readiness (its declared readiness rule)."""


def _keep(inp: ComposeInput, result: ComposeResult, readiness: ObservedReadiness | None) -> bool:
    """Put every observed composed resource into desired state unchanged.

    Returns whether every kept resource is ready by `readiness` (False when
    nothing is observed or no rule is given).
    """
    all_ready = bool(inp.observed)
    for key, obs in sorted(inp.observed.items()):
        if readiness is None:
            result.desired[key] = DesiredResource(as_desired(obs))
            all_ready = False
            continue
        ok = readiness(obs)
        all_ready = all_ready and ok
        result.desired[key] = DesiredResource(as_desired(obs), "True" if ok else "False")
    return all_ready


def _check(condition: str, reason: StrEnum) -> None:
    if not reason_belongs(condition, reason):
        expected = REASONS.get(condition)
        raise ValueError(
            f"reason {reason!r} is not a reason of condition {condition!r}"
            + (f" (one of {', '.join(expected)})" if expected else " (unknown condition type)")
        )


def wait(
    inp: ComposeInput,
    result: ComposeResult,
    *,
    readiness: ObservedReadiness | None = None,
    condition: str | None = None,
    reason: StrEnum | None = None,
    message: str = "",
) -> ComposeResult:
    """Stop until Crossplane has fetched the requirements in `result.requirements`.

    Keeps every observed composed resource. With `readiness` the composite's
    readiness is derived from what is kept (a replica that serves stays Ready
    while its cluster is re-fetched); without it the composite is not ready.
    With `condition` and `reason` (which must belong to it), that condition is
    set Unknown with `message`; no event, since nothing is wrong.
    """
    if condition is not None and reason is not None:
        _check(condition, reason)
        result.condition(condition, None, str(reason), message)
    result.desired = {}
    # Without a rule `_keep` reports nothing ready, so the composite is not ready.
    result.ready = "True" if _keep(inp, result, readiness) else "False"
    return result


def hold(
    inp: ComposeInput,
    result: ComposeResult,
    condition: str,
    reason: StrEnum,
    message: str,
    *,
    readiness: ObservedReadiness | None = None,
) -> ComposeResult:
    """Stop on input a human must fix: condition, warning event, not ready, keep everything.

    `reason` must belong to `condition`'s enum in `modelplane.api.reasons`; a
    mismatch is a programming error and raises, which the function server turns
    into a fatal result (everything kept).
    """
    _check(condition, reason)
    result.condition(condition, False, str(reason), message)
    result.warn(str(reason), message)
    result.desired = {}
    _keep(inp, result, readiness)
    result.ready = "False"
    return result


def fatal(message: str) -> ComposeResult:
    """Give up on this call: Crossplane keeps every composed resource and reports `message`."""
    return ComposeResult(fatal=message)
