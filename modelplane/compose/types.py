"""What a composer receives and returns.

A composer is a pure function `compose(ComposeInput) -> ComposeResult`. The
`crossplane` layer translates a RunFunctionRequest into a ComposeInput and a
ComposeResult back into a RunFunctionResponse; nothing here knows about protobuf,
gRPC, clocks or the network.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from modelplane.api import constants as c

Resource = dict[str, Any]
Readiness = Literal["True", "False", "Unspecified"]


@dataclass(frozen=True)
class Requirement:
    """A resource (or set of resources) the composer needs Crossplane to fetch.

    Exactly one of `match_name` and `match_labels` may be set; neither means
    every object of the kind (in `namespace` when given).
    """

    api_version: str
    kind: str
    match_name: str | None = None
    match_labels: Mapping[str, str] | None = None
    namespace: str | None = None


@dataclass(frozen=True)
class ComposeInput:
    """Observed state: the composite, its composed resources, what it required.

    `required` maps requirement name to the fetched objects. A name that is
    absent has not been fetched yet; a name mapping to `[]` was fetched and
    matched nothing.
    """

    composite: Resource
    observed: Mapping[str, Resource] = field(default_factory=dict)
    required: Mapping[str, list[Resource]] = field(default_factory=dict)
    image: str = c.FUNCTION_IMAGE
    """The image the function runs (its Composition step's `input.image`): what the
    programs Modelplane places on workload clusters run too."""
    now: str | None = None
    """The time of this call (RFC 3339, UTC), as the function's runtime read it; None
    when not known (the embedded control plane). Composers compare reported times
    against it; none reads a clock."""

    def fetched(self, name: str) -> bool:
        """Whether the control plane has resolved requirement `name` yet."""
        return name in self.required


@dataclass(frozen=True)
class ConditionOut:
    """A condition the composer sets on the composite (never Ready or Synced)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""


@dataclass(frozen=True)
class EventOut:
    """An event to record on the composite: `Warning` results become warning events."""

    severity: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class DesiredResource:
    """A composed resource and whether the composer judges it ready."""

    resource: Resource
    ready: Readiness = "Unspecified"


@dataclass
class ComposeResult:
    """Desired state.

    When `fatal` is set the rest is ignored: the control plane keeps every
    existing composed resource and reports the message.
    """

    desired: dict[str, DesiredResource] = field(default_factory=dict)
    status: Resource = field(default_factory=dict)
    conditions: list[ConditionOut] = field(default_factory=list)
    events: list[EventOut] = field(default_factory=list)
    requirements: dict[str, Requirement] = field(default_factory=dict)
    ready: Readiness = "Unspecified"
    fatal: str | None = None
    recall_seconds: int | None = None
    """Call again within this many seconds even if nothing it composes changes: what
    it waits on is not watched (Crossplane: the response's TTL). None: the
    function's default; the embedded control plane runs to a fixed point instead."""

    def condition(
        self,
        type_: str,
        ok: bool | None,
        reason: str,
        message: str = "",
    ) -> None:
        """Set (or replace) a condition; `ok=None` means Unknown."""
        status: Literal["True", "False", "Unknown"] = (
            "Unknown" if ok is None else ("True" if ok else "False")
        )
        self.conditions = [x for x in self.conditions if x.type != type_]
        self.conditions.append(ConditionOut(type_, status, reason, message))

    def warn(self, reason: str, message: str) -> None:
        """Record a warning event."""
        self.events.append(EventOut("Warning", reason, message))

    def normal(self, reason: str, message: str) -> None:
        """Record a normal event."""
        self.events.append(EventOut("Normal", reason, message))

    def unrepeated(self, observed: Mapping[str, Any]) -> ComposeResult:
        """This result without the events a condition of `observed` already states.

        A composer reports a problem as a condition that stands while the problem
        does and an event when it is found. Crossplane records every result of
        every call as an event, so a lasting problem would be recorded again at
        each reconcile, an API write each time. An event whose reason and message
        are those of a condition the observed composite shows was recorded when
        that condition was set; once the condition changes, the next is new.
        """
        if not self.events:
            return self
        shown = _shown_conditions(observed)
        kept = [ev for ev in self.events if (ev.reason, ev.message) not in shown]
        return self if len(kept) == len(self.events) else replace(self, events=kept)

    def readiness_stated_once(self) -> ComposeResult:
        """This result with every composed resource called ready when the composite's
        own readiness is set.

        Crossplane records "Composed resource X is not yet ready" for each composed
        resource a function does not call ready, at every reconcile (an API write
        each), and uses a resource's readiness for nothing else once the function
        sets the composite's: the composite's Ready is the function's, and its
        conditions already say what it waits for. A composite whose readiness is
        left to Crossplane keeps each resource's, which is then what decides it.
        """
        if self.ready == "Unspecified" or all(d.ready == "True" for d in self.desired.values()):
            return self
        desired = {
            name: d if d.ready == "True" else replace(d, ready="True")
            for name, d in self.desired.items()
        }
        return replace(self, desired=desired)


def _shown_conditions(observed: Mapping[str, Any]) -> set[tuple[str, str]]:
    status = observed.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return set()
    return {
        (cond["reason"], cond["message"])
        for cond in conditions
        if isinstance(cond, Mapping)
        and isinstance(cond.get("reason"), str)
        and isinstance(cond.get("message"), str)
    }


Composer = Callable[[ComposeInput], ComposeResult]
