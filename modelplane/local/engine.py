"""The embedded control plane: Crossplane's composite reconciler, in-process.

Each round reconciles every composite resource (XR) in the store the way
Crossplane v2 does: call the function with the observed XR, its composed
resources and the required resources (re-fetched until the requirements stop
changing), apply the desired composed resources, garbage-collect the
undesired ones, and write the XR's status and conditions. Then it simulates
what providers and workload clusters would report. Rounds repeat until one
changes nothing. An XR none of whose inputs changed (by version) since its
last call is not called again: the function is pure.

This module is the loop and the XR's own status; the rest is split the way
Crossplane splits its composite reconciler into collaborators:
`local/fetch.py` reads what a call sees, by version (its composed-resource
observer and required-resources fetcher); `local/pipeline.py` calls the
function until its requirements settle (its fetching function runner);
`local/apply.py` applies what it desires, skipping what a write would not
change (its applicator); `local/deletion.py` deletes what is no longer
desired (its garbage collector, with Kubernetes' and Usages' order).

Semantics mirrored from Crossplane v2 (documented where they are a choice):
- A required resource's namespace is used literally: unset means cluster
  scope for a name match and every namespace for a label match (Crossplane
  does not default it to a namespaced XR's namespace).
- A namespaced XR's composed resources always land in its namespace.
- Ready: the function's desired composite readiness wins when set (True →
  Available, False → Creating); otherwise Ready=True/Available when every
  composed resource is ready, else Ready=False/Creating "Unready resources: a,
  b, and c". A composed resource is ready when the function says so, else
  when its own Ready condition is True.
- A fatal result keeps every composed resource, sets Synced=False
  (ReconcileError) and marks function conditions it did not report Unknown.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, Interner
from modelplane.api.function_input import function_input as default_function_input
from modelplane.api.function_input import read_image
from modelplane.api.objects import is_condition_true
from modelplane.crossplane import FunctionRunner
from modelplane.local.apply import Applicator
from modelplane.local.conditions import Clock, set_condition
from modelplane.local.deletion import UNDESIRED, Collector, Wave
from modelplane.local.fetch import Fetcher, Inputs
from modelplane.local.loader import is_composite
from modelplane.local.passes import Passes
from modelplane.local.pipeline import PIPELINE_STEP, READY_FROM_PB, Pipeline, Reply
from modelplane.local.simulate import simulate
from modelplane.local.simulate_cloud import ignored_signals
from modelplane.local.store import Key, Obj, ObjectStore, composed_by, owned_by

__all__ = ["ControlPlane", "Event", "NotConvergedError", "RenderResult", "owned_by"]

# Crossplane's own condition vocabulary (crossplane-runtime), not Modelplane's.
REASON_AVAILABLE = "Available"
REASON_CREATING = "Creating"
REASON_RECONCILE_SUCCESS = "ReconcileSuccess"
REASON_RECONCILE_ERROR = "ReconcileError"
REASON_FATAL_ERROR = "FatalError"
REASON_COMPOSE = "ComposeResources"
_SYSTEM_CONDITIONS = frozenset({c.CONDITION_READY, c.CONDITION_SYNCED})
_STATUS_FROM_PB = {
    fnv1.STATUS_CONDITION_TRUE: "True",
    fnv1.STATUS_CONDITION_FALSE: "False",
    fnv1.STATUS_CONDITION_UNKNOWN: "Unknown",
}


@dataclass(frozen=True)
class Event:
    """An event recorded on an object (a function result, or the control plane's own)."""

    type: str
    reason: str
    message: str


@dataclass
class RenderResult:
    """The state a render reached: the store, events per object, rounds taken."""

    store: ObjectStore
    events: dict[Key, list[Event]] = field(default_factory=dict)
    rounds: int = 0
    readiness: dict[Key, bool | None] = field(default_factory=dict)
    converged: bool = True
    changing: list[Key] = field(default_factory=list)
    deletions: list[Wave] = field(default_factory=list)
    """The waves objects were deleted in since the last `ControlPlane.delete`."""
    stuck: list[str] = field(default_factory=list)
    """One message per object whose deletion cannot proceed (a Usage cycle, a user
    nothing deletes): a deletion that would otherwise wait forever."""
    warnings: list[str] = field(default_factory=list)
    """What the render did not simulate as its fixtures asked, and why (e.g. a
    `signals` fixture on a cluster whose agent scrapes no engine metrics)."""

    def composites(self) -> list[Obj]:
        """Every composite resource (an object a composer serves), in key order."""
        return [o for o in self.store.objects() if is_composite(o["apiVersion"], o["kind"])]

    def composed_of(self, xr: Mapping[str, Any]) -> list[Obj]:
        """The composed resources of an XR, in key order."""
        return list(filter(composed_by(xr), self.store.candidates_of(xr)))

    def composed_ready(self, obj: Mapping[str, Any]) -> bool:
        """Whether a composed resource counts as ready for its XR: the function's
        readiness when it gave one, else the resource's own Ready condition."""
        ready = self.readiness.get(Key.of(obj))
        return ready if ready is not None else is_condition_true(obj, c.CONDITION_READY)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        """Look one object up."""
        return self.store.get(Key(api_version, kind, namespace, name))


@dataclass(frozen=True)
class RoundReport:
    """What one reconcile round did, for progress output."""

    round: int
    reconciled: int
    """Composites whose function was called."""
    skipped: int
    """Composites not called: nothing they would see had changed."""
    changed: list[Key]
    """Objects created, changed or deleted in the round (none: the fixed point)."""


class NotConvergedError(Exception):
    """The store was still changing after the maximum number of rounds."""

    def __init__(self, result: RenderResult) -> None:
        """Wrap the last state reached and the keys still changing."""
        self.result = result
        names = ", ".join(str(k) for k in result.changing[:20])
        more = len(result.changing) - 20
        suffix = f", and {more} more" if more > 0 else ""
        super().__init__(
            f"no fixed point after {result.rounds} rounds; still changing: {names}{suffix}"
        )


def names_and_more(names: Iterable[str], first: int = 3) -> str:
    """Sorted names, the first few spelled out, the way Crossplane lists them."""
    ns = sorted(names)
    if len(ns) > first:
        return f"{', '.join(ns[:first])}, and {len(ns) - first} more"
    if len(ns) == first and first > 1:
        return f"{', '.join(ns[: first - 1])}, and {ns[-1]}"
    return ", ".join(ns)


class ControlPlane:
    """An in-memory Crossplane: reconciles every XR through the function servicer."""

    def __init__(
        self,
        objects: Iterable[Obj],
        *,
        simulate: bool = True,
        runner: FunctionRunner | None = None,
        function_input: Mapping[str, Any] | None = None,
    ) -> None:
        """Load objects (already validated) into a fresh store.

        Input objects are stamped in key order with deterministic metadata
        (uid, creationTimestamp, generation) unless they carry their own.
        `function_input` is the Compositions' step input (`api/function_input.py`),
        passed on every call as Crossplane would; the default package's if None.
        """
        self.simulate = simulate
        self._interner = Interner()
        """One shared copy of each distinct read-only container the store and the
        copies calls read hold (a fleet repeats most of its values)."""
        self.clock = Clock()
        self.store = ObjectStore()
        self.collector = Collector(self.store)
        self.round = 0
        """The round being reconciled (0 outside `run`)."""
        self.events: dict[Key, list[Event]] = {}
        self.readiness: dict[Key, bool | None] = {}
        # Crossplane's collaborators: what a call reads, how it is called,
        # how its answer is applied (and `collector`, what is deleted).
        self.fetcher = Fetcher(self.store, self._interner)
        self.applicator = Applicator(
            self.store,
            self._interner,
            self.clock,
            self.collector,
            self.readiness,
            _weakly(self._delete),
        )
        function_input = dict(function_input or default_function_input(c.FUNCTION_PACKAGE))
        self.pipeline = Pipeline(
            self.fetcher,
            self.applicator,
            self._interner,
            function_input,
            read_image(function_input),
            runner,
        )
        self._last: dict[Key, Inputs] = {}
        """What each XR's last call saw, while applying its answer changed none of it."""
        self._passes = Passes()
        """What the simulated providers read in their last pass over each object."""
        self.reconciled = 0
        """XR reconciles that called the function."""
        self.skipped = 0
        """XR reconciles skipped because nothing the XR would see had changed."""
        self._round_reconciled = self._round_skipped = 0
        staged = {Key.of(o): copy.deepcopy(o) for o in objects}
        for key in sorted(staged):
            self.applicator.stamp(staged[key])
            self.store.put(staged[key])

    @property
    def calls(self) -> int:
        """Function calls made (each iteration of a requirements loop counts)."""
        return self.pipeline.calls

    @property
    def function_input(self) -> Mapping[str, Any]:
        """The Compositions' step input every call is given."""
        return self.pipeline.function_input

    # -- the loop --------------------------------------------------------

    def run(
        self, max_rounds: int = 50, progress: Callable[[RoundReport], None] | None = None
    ) -> RenderResult:
        """Reconcile to a fixed point; raise NotConvergedError after `max_rounds` rounds.

        `progress`, when given, is told what each round did.
        """
        rounds = 0
        after = self.store.versions()
        try:
            while rounds < max_rounds:
                rounds += 1
                self.round = rounds
                before = after
                self._round()
                after = self.store.versions()
                if progress is not None:
                    progress(self._report(rounds, before, after))
                if after == before:
                    return self._result(rounds, [])
        finally:
            self.round = 0
        raise NotConvergedError(self._result(rounds, _changed(before, after)))

    def delete(self, *keys: Key) -> list[Key]:
        """Delete objects as `kubectl delete` would; returns what went at once.

        Their owned objects follow through garbage collection, in the order
        Usages and provider-config use allow (see `modelplane.local.deletion`);
        whatever is blocked goes during later `run` rounds, as its users go.
        The deletion order recorded in `RenderResult.deletions` starts here.
        Raises KeyError naming a key that is not in the store.
        """
        missing = [str(k) for k in keys if k not in self.store]
        if missing:
            raise KeyError(f"cannot delete what does not exist: {', '.join(missing)}")
        self.collector.waves = []
        self.collector.record = True
        for key in keys:
            self.collector.request(key)
        return self.collector.collect(0)

    def _round(self) -> None:
        """Reconcile every composite once, then let providers and clusters report."""
        self.clock.tick()
        self._round_reconciled, self._round_skipped = self.reconciled, self.skipped
        for key in list(self.store):
            if key in self.store and is_composite(key.api_version, key.kind):
                self._reconcile(key)
        # What the round's objects share stays shared; the table that found it
        # (as large as the round's new content) is not kept.
        self._interner.clear()
        self.fetcher.forget_stale_lists()
        # Deletions a Usage held back go once their users are gone (replayDeletion).
        self.collector.collect(self.round)
        if not self.simulate:
            self.store.refresh()
            return
        # Every other change went through the store (put, delete, or touch after
        # a reconcile); the simulator notes what it changed in place itself.
        simulate(self.store, self.clock, self._passes)

    def _report(self, rounds: int, before: dict[Key, int], after: dict[Key, int]) -> RoundReport:
        return RoundReport(
            round=rounds,
            reconciled=self.reconciled - self._round_reconciled,
            skipped=self.skipped - self._round_skipped,
            changed=_changed(before, after),
        )

    def _result(self, rounds: int, changing: list[Key]) -> RenderResult:
        return RenderResult(
            store=self.store,
            events={k: list(v) for k, v in sorted(self.events.items()) if k in self.store},
            rounds=rounds,
            readiness={k: v for k, v in self.readiness.items() if k in self.store},
            converged=not changing,
            changing=changing,
            deletions=list(self.collector.waves),
            stuck=self.collector.stuck() if not changing else [],
            warnings=[w.message for w in ignored_signals(self.store)] if self.simulate else [],
        )

    # -- one XR ----------------------------------------------------------

    def _reconcile(self, key: Key) -> None:
        """Reconcile one XR, unless nothing it would see changed since its last call.

        The function is pure: with equal inputs it returns the same response,
        and when applying that response changed nothing last time (the inputs
        after applying were still those of the call), applying it again would
        change nothing either.
        """
        xr = self.store.get(key)
        assert xr is not None
        fetcher = self.fetcher
        observed = fetcher.observed(xr, key)
        last = self._last.pop(key, None)
        if last is not None and fetcher.sees(key, observed, last):
            self._last[key] = last
            self.skipped += 1
            return
        rsp, error, fetched = self.pipeline.call(key, xr, observed)
        called = fetcher.inputs(key, xr, observed, fetched)
        self._respond(key, xr, observed, rsp, error)
        self.store.touch(key)
        self.reconciled += 1
        now = self.store.get(key)
        if now is not None and fetcher.sees(key, fetcher.observed(now, key), called):
            self._last[key] = called

    def _respond(
        self,
        key: Key,
        xr: Obj,
        observed: Mapping[str, Obj],
        reply: Reply | None,
        error: str,
    ) -> None:
        """Apply one response (or a failure to get one) to the XR and its composed resources."""
        events: list[Event] = []
        if reply is None:
            self._fail(xr, f"cannot compose resources: {error}", events, seen=set())
            self.events[key] = events
            return
        rsp = reply.rsp
        fatal = [r for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
        for r in rsp.results:
            if r.severity in (fnv1.SEVERITY_WARNING, fnv1.SEVERITY_NORMAL):
                kind = "Warning" if r.severity == fnv1.SEVERITY_WARNING else "Normal"
                events.append(Event(kind, r.reason or REASON_COMPOSE, r.message))
        seen = self._function_conditions(xr, rsp)
        if fatal:
            message = (
                f'cannot compose resources: pipeline step "{PIPELINE_STEP}" returned a '
                f"fatal result: {fatal[0].message}"
            )
            self._fail(xr, message, events, seen)
            self.events[key] = events
            return

        applied, errors = self.applicator.apply(xr, reply.resources, reply.raw, observed)
        for name, obj in observed.items():
            if name not in reply.resources:
                self._delete(obj)

        self._write_status(key, xr, reply)
        self._resource_refs(xr, applied)

        unready = [
            name
            for name, (obj, ready) in sorted(applied.items())
            if not (ready if ready is not None else is_condition_true(obj, c.CONDITION_READY))
        ]
        if errors:
            message = "cannot compose resources: " + "; ".join(errors)
            self._set(xr, c.CONDITION_SYNCED, "False", REASON_RECONCILE_ERROR, message)
            events.append(Event("Warning", REASON_COMPOSE, message))
        else:
            self._set(xr, c.CONDITION_SYNCED, "True", REASON_RECONCILE_SUCCESS)
        composite_ready = READY_FROM_PB.get(rsp.desired.composite.ready)
        if composite_ready is True or (composite_ready is None and not unready):
            self._set(xr, c.CONDITION_READY, "True", REASON_AVAILABLE)
        elif composite_ready is False:
            self._set(xr, c.CONDITION_READY, "False", REASON_CREATING)
        else:
            message = f"Unready resources: {names_and_more(unready)}"
            self._set(xr, c.CONDITION_READY, "False", REASON_CREATING, message)
        self.events[key] = events

    def _write_status(self, key: Key, xr: Obj, reply: Reply) -> None:
        """The composite's status as the reply desires it, its conditions kept."""
        self.pipeline.wrote_status(key, reply)
        status = dict(reply.status)
        status.pop("conditions", None)
        old = xr.get("status")
        conditions = (old or {}).get("conditions") or []
        if not _holds_fields(old, status, conditions):
            xr["status"] = {**status, "conditions": conditions}

    def _delete(self, obj: Obj) -> None:
        """Delete an undesired composed resource and, through garbage collection, its
        dependents, as far as Usages allow now (the rest goes in later rounds)."""
        self.collector.request(Key.of(obj), UNDESIRED)
        self.collector.collect(self.round)

    # -- status helpers --------------------------------------------------

    def _set(self, obj: Obj, type_: str, status: str, reason: str, message: str = "") -> None:
        set_condition(obj, type_, status, reason, message, self.clock)

    def _function_conditions(self, xr: Obj, rsp: fnv1.RunFunctionResponse) -> set[str]:
        seen: set[str] = set()
        for cond in rsp.conditions:
            if cond.type in _SYSTEM_CONDITIONS:
                continue
            seen.add(cond.type)
            self._set(
                xr,
                cond.type,
                _STATUS_FROM_PB.get(cond.status, "Unknown"),
                cond.reason,
                cond.message if cond.HasField("message") else "",
            )
        return seen

    def _fail(self, xr: Obj, message: str, events: list[Event], seen: set[str]) -> None:
        self._set(xr, c.CONDITION_SYNCED, "False", REASON_RECONCILE_ERROR, message)
        for cond in list((xr.get("status") or {}).get("conditions") or []):
            t = cond.get("type")
            if t not in _SYSTEM_CONDITIONS and t not in seen:
                self._set(
                    xr,
                    t,
                    "Unknown",
                    REASON_FATAL_ERROR,
                    "A fatal error occurred before the status of this condition could be "
                    "determined.",
                )
        events.append(Event("Warning", REASON_COMPOSE, message))

    def _resource_refs(self, xr: Obj, applied: Mapping[str, tuple[Obj, bool | None]]) -> None:
        refs = []
        for obj, _ in applied.values():
            ref = {"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
            ref["name"] = obj["metadata"]["name"]
            ns = obj["metadata"].get("namespace")
            if ns and not (xr.get("metadata") or {}).get("namespace"):
                ref["namespace"] = ns
            refs.append(ref)
        refs.sort(key=lambda r: (r["apiVersion"], r["kind"], r.get("namespace", ""), r["name"]))
        if refs and _refs_of(xr) == refs:
            # Left as they are: the spec stays the read-only one a call's copy shares.
            return
        spec = xr.setdefault("spec", {})
        # A composed XR's spec is stored read-only (`as_stored`), but these
        # fields are the XR's own: what they are written into is copied first.
        if type(spec) is FrozenDict:
            spec = xr["spec"] = dict(spec)
        if type(spec.get("crossplane")) is FrozenDict:
            spec["crossplane"] = dict(spec["crossplane"])
        if refs:
            # Read-only and shared (`Interner`): a composite's refs repeat from
            # call to call, and each call's copy of it would copy them again.
            shared = self._interner
            refs_list = shared.list([shared.dict(ref) for ref in refs])
            spec.setdefault("crossplane", {})["resourceRefs"] = refs_list
        elif isinstance(spec.get("crossplane"), dict):
            spec["crossplane"].pop("resourceRefs", None)
            if not spec["crossplane"]:
                del spec["crossplane"]


def _weakly(method: Callable[[Obj], None]) -> Callable[[Obj], None]:
    """`method`, called through a weak reference to its object: a collaborator holding
    it does not keep the engine alive (a cycle would keep a render's whole state until
    the garbage collector's next full pass)."""
    ref = weakref.WeakMethod(method)

    def call(obj: Obj) -> None:
        bound = ref()
        if bound is not None:
            bound(obj)

    return call


def _holds_fields(old: Any, status: dict[str, Any], conditions: Any) -> bool:
    """Whether the status `old` is `{**status, "conditions": conditions}` already:
    the same fields, in order, each the very object (then it is left as it is,
    shared read-only with the copies calls read)."""
    if not isinstance(old, dict) or len(old) != len(status) + 1:
        return False
    if old.get("conditions") is not conditions or list(old)[-1] != "conditions":
        return False
    return list(old)[:-1] == list(status) and all(old[k] is v for k, v in status.items())


def _refs_of(xr: Obj) -> Any:
    """The composite's `spec.crossplane.resourceRefs`, or None."""
    spec = xr.get("spec")
    machinery = spec.get("crossplane") if isinstance(spec, dict) else None
    return machinery.get("resourceRefs") if isinstance(machinery, dict) else None


def _changed(before: Mapping[Key, int], after: Mapping[Key, int]) -> list[Key]:
    """The keys created, changed or deleted between two version maps, in key order."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
