"""The embedded control plane: Crossplane's composite reconciler, in-process.

Each round reconciles every composite resource (XR) in the store the way
Crossplane v2 does: call the function with the observed XR, its composed
resources and the required resources (re-fetched until the requirements stop
changing), apply the desired composed resources, garbage-collect the
undesired ones, and write the XR's status and conditions. Then it simulates
what providers and workload clusters would report. Rounds repeat until one
changes nothing. An XR none of whose inputs changed (by version) since its
last call is not called again: the function is pure. For the same reason a
call starts with what the XR's last call settled on already fetched, and a
desired object equal to the one last applied, onto an object unchanged since,
is not applied again.

The function is the servicer `modelplane function serve` runs. By default its
composers are called in-process on read-only dicts, each object frozen once
per version, exactly as the servicer would decode them from a
RunFunctionRequest, and their results are copied as a Struct would carry
them; given a `runner`, every call goes through its gRPC entry point,
protobuf both ways (tests require both to render the same).

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
import hashlib
import marshal
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, FrozenList, Interner, memoized
from modelplane.api.function_input import function_input as default_function_input
from modelplane.api.function_input import read_image
from modelplane.api.objects import is_condition_true
from modelplane.compose.types import ComposeInput, ComposeResult, Resource
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import (
    add_outcome,
    as_json,
    as_shared_fields,
    as_stored,
    dict_to_struct,
    freeze_stored,
    lossy_conversions,
    struct_to_dict,
)
from modelplane.local.conditions import Clock, set_condition
from modelplane.local.deletion import UNDESIRED, Collector, Wave
from modelplane.local.loader import is_composite, scope_of
from modelplane.local.passes import Passes
from modelplane.local.simulate import simulate
from modelplane.local.store import Key, Obj, ObjectStore, owned_by

__all__ = ["ControlPlane", "Event", "NotConvergedError", "RenderResult", "owned_by"]

# Crossplane's own condition vocabulary (crossplane-runtime), not Modelplane's.
REASON_AVAILABLE = "Available"
REASON_CREATING = "Creating"
REASON_RECONCILE_SUCCESS = "ReconcileSuccess"
REASON_RECONCILE_ERROR = "ReconcileError"
REASON_FATAL_ERROR = "FatalError"
REASON_COMPOSE = "ComposeResources"
PIPELINE_STEP = "compose"
MAX_REQUIREMENTS_ITERATIONS = 5
_UID_NAMESPACE = uuid.UUID("8a0e5d8c-4a7e-4bd6-9a3c-6d6f64656c70")
_UID_PREFIX = _UID_NAMESPACE.bytes
_SYSTEM_CONDITIONS = frozenset({c.CONDITION_READY, c.CONDITION_SYNCED})
_READY_FROM_PB = {fnv1.READY_TRUE: True, fnv1.READY_FALSE: False}
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

    def composites(self) -> list[Obj]:
        """Every composite resource (an object a composer serves), in key order."""
        return [o for o in self.store.objects() if is_composite(o["apiVersion"], o["kind"])]

    def composed_of(self, xr: Mapping[str, Any]) -> list[Obj]:
        """The composed resources of an XR, in key order."""
        return [o for o in self.store.candidates_of(xr) if owned_by(o, xr)]

    def composed_ready(self, obj: Mapping[str, Any]) -> bool:
        """Whether a composed resource counts as ready for its XR: the function's
        readiness when it gave one, else the resource's own Ready condition."""
        ready = self.readiness.get(Key.of(obj))
        return ready if ready is not None else is_condition_true(obj, c.CONDITION_READY)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Obj | None:
        """Look one object up."""
        return self.store.get(Key(api_version, kind, namespace, name))


Version = tuple[Key, "int | None"]
"""An object's key and its version in the store."""


class Fetch(NamedTuple):
    """One requirement a call fetched: where it went, its selector, what it found."""

    field: str
    name: str
    selector: fnv1.ResourceSelector
    found: tuple[Version, ...]
    signature: bytes
    """The selector's deterministic serialization: what it is known by."""


Fetched = list[tuple[Fetch, list[Obj]]]
"""What one iteration fetched for the next call: each requirement and its objects."""


class Reply(NamedTuple):
    """A function's answer, its desired objects as dicts of the caller's own.

    `rsp` holds the rest (results, conditions, requirements, the composite's
    readiness); its desired objects are not read.
    """

    rsp: fnv1.RunFunctionResponse
    resources: dict[str, tuple[Obj | None, bool | None]]
    """Desired composed resources by name, each with the function's readiness.
    None: the composer's object equals the one last applied under that name
    (`Applied`), and is converted only if it must be applied again."""
    status: dict[str, Any]
    """The desired composite's status."""
    raw: Mapping[str, tuple[Any, bytes]] = {}
    """The composer's own desired objects by name, each with its digest (`_digest`;
    in-process calls only)."""
    status_text: bytes | None = None
    """A digest of the composer's own desired status (`_digest`; in-process calls only)."""


class Applied(NamedTuple):
    """What applying one desired composed resource last left in the store.

    Applying is idempotent: an equal desired object applied to the object
    this left, unchanged since, leaves it as it is, so it is not applied again.
    """

    text: bytes
    """A digest of the composer's desired object's serialization (`_digest`): equal
    digests are equal objects, value types (1, 1.0 and True differ) and key order
    included."""
    key: Key
    version: int | None
    """The applied object's store version right after it was applied."""
    body: bytes | None
    """The store's digest of everything but its status then (`ObjectStore.body`):
    a status written since (by a provider, or the object's own reconciler)
    leaves nothing for the same desired object to apply."""


def decoded(rsp: fnv1.RunFunctionResponse) -> Reply:
    """A response from the servicer, its desired objects decoded."""
    resources: dict[str, tuple[Obj | None, bool | None]] = {
        name: (struct_to_dict(entry.resource), _READY_FROM_PB.get(entry.ready))
        for name, entry in sorted(rsp.desired.resources.items())
    }
    desired_xr = struct_to_dict(rsp.desired.composite.resource)
    return Reply(rsp, resources, dict(desired_xr.get("status") or {}))


_READY_FROM_RESULT: dict[str, bool] = {"True": True, "False": False}


def reply_of(
    runner: FunctionRunner,
    composite: Resource,
    result: ComposeResult,
    last: Mapping[str, Applied] | None = None,
    interner: Interner | None = None,
    last_status: tuple[bytes | None, dict[str, Any]] | None = None,
) -> Reply:
    """A composer's result as the servicer would answer it, without protobuf Structs.

    The desired objects are copied exactly as a Struct would carry them
    (`convert.as_json`); a result no Struct could carry is fatal, as it is
    in `FunctionRunner.run`. An object equal to the one `last` applied under
    its name is left unconverted (None): an equal object converts the same.
    Through `interner`, equal read-only containers of the objects are shared.
    A status equal to the one `last_status` digested is that one.
    """
    rsp = fnv1.RunFunctionResponse()
    if result.fatal is None:
        last = last or {}
        texts = {name: _digest(d.resource) for name, d in result.desired.items()}
        try:
            resources = {
                name: (
                    _converted(d.resource, texts[name], last.get(name), interner),
                    _READY_FROM_RESULT.get(d.ready),
                )
                for name, d in sorted(result.desired.items())
            }
            status_text = _digest(dict(result.status)) if result.status else None
            if status_text is not None and last_status and status_text == last_status[0]:
                # Equal to the last call's: its read-only fields, not new copies of them.
                status = last_status[1]
            else:
                status = _status_of(result, interner)
        except (TypeError, ValueError) as exc:
            result = ComposeResult(fatal=runner.not_json(composite, exc))
        else:
            add_outcome(rsp, result)
            raw = {name: (d.resource, texts[name]) for name, d in result.desired.items()}
            return Reply(rsp, resources, status, raw, status_text)
    rsp.results.append(
        fnv1.Result(
            severity=fnv1.SEVERITY_FATAL, message=result.fatal, target=fnv1.TARGET_COMPOSITE
        )
    )
    return Reply(rsp, {}, {})


def _status_of(result: ComposeResult, interner: Interner | None) -> dict[str, Any]:
    """The composite's desired status as a Struct would carry it; its fields
    read-only and shared through `interner` (the copy a call reads of the
    composite then shares them, instead of copying them once more)."""
    if not result.status:
        return {}
    if interner is None:
        return dict(as_json({"status": dict(result.status)})["status"])
    return as_shared_fields(result.status, interner)


def _digest(desired: Resource) -> bytes:
    """A digest of the object's exact serialization: marshal's (done in C), else its
    `repr`. Equal digests are equal serializations, hence equal objects (value
    types and key order included). Kept instead of the text, which is as large
    as the object.

    A read-only container the object holds (a composer's constant) is written
    as its own digest, remembered on it: the marker it is written with, a
    frozenset, is no value a composer's applied object can hold.
    """
    try:
        data = b"m" + marshal.dumps(desired, 2)
    except ValueError:  # a read-only container (a subclass) or a value marshal refuses
        try:
            data = b"s" + marshal.dumps(_sealed(desired), 2)
        except ValueError:
            data = b"r" + repr(desired).encode()
    return hashlib.blake2b(data, digest_size=20).digest()


def _sealed(value: Any) -> Any:
    """`value` with each read-only container in it replaced by its digest's marker."""
    t = type(value)
    if t is dict:
        return {k: _sealed(v) for k, v in value.items()}
    if t is list:
        return [_sealed(v) for v in value]
    if t is FrozenDict or t is FrozenList:
        return frozenset((memoized(value, "engine.digest", _repr_digest),))
    return value


def _repr_digest(value: Any) -> bytes:
    return hashlib.blake2b(repr(value).encode(), digest_size=20).digest()


def _converted(
    desired: Resource, text: bytes, last: Applied | None, interner: Interner | None
) -> Obj | None:
    """`as_stored(desired)`, or None when its digest is the one `last` applied had."""
    if last is not None and last.text == text:
        return None
    return as_stored(desired, interner)


@dataclass(frozen=True)
class Inputs:
    """Everything one function call for an XR saw, by version."""

    composite: Version
    observed: tuple[tuple[str, Version], ...]
    fetched: tuple[tuple[Fetch, ...], ...]


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


def resource_name(obj: Mapping[str, Any]) -> str | None:
    """The composition resource name Crossplane annotates a composed resource with."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(c.XP_ANNOTATION_RESOURCE_NAME)


def names_and_more(names: Iterable[str], first: int = 3) -> str:
    """Sorted names, the first few spelled out, the way Crossplane lists them."""
    ns = sorted(names)
    if len(ns) > first:
        return f"{', '.join(ns[:first])}, and {len(ns) - first} more"
    if len(ns) == first and first > 1:
        return f"{', '.join(ns[: first - 1])}, and {ns[-1]}"
    return ", ".join(ns)


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


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
        self.function_input = dict(function_input or default_function_input(c.FUNCTION_PACKAGE))
        self._image = read_image(self.function_input)
        # With a `runner`, every call goes through its gRPC entry point
        # (protobuf both ways); without one, the composers are called
        # in-process on dicts, through the servicer's own dispatch. Its error
        # log would only land on stdout here, and the fatal result names the
        # exception anyway.
        self.runner = runner
        self._composer = FunctionRunner(log_errors=False)
        self._read: dict[Key, tuple[int, FrozenDict]] = {}
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
        self._structs: dict[Key, tuple[int, structpb.Struct]] = {}
        self._last: dict[Key, Inputs] = {}
        self._applied: dict[tuple[Key, str, str], dict[str, Applied]] = {}
        """What each XR (by key, uid and root composite, `_identity`) last applied,
        by composed resource name."""
        self._settled: dict[Key, fnv1.Requirements] = {}
        """The requirements each XR's last call settled on."""
        self._observed_by_xr: dict[Key, tuple[int | None, dict[str, Obj]]] = {}
        """Each XR's composed resources, with its candidates' version then."""
        self._statuses: dict[Key, tuple[bytes | None, dict[str, Any]]] = {}
        """Per composite, its composer's last desired status and that status's digest."""
        self._found_by_selector: dict[bytes, tuple[int | None, tuple[Version, ...], list[Obj]]] = {}
        """What each selector last fetched: by version, the objects, and its kind's
        version then."""
        self._frozen_lists: dict[bytes, tuple[tuple[Version, ...], list[Resource]]] = {}
        """What each selector last fetched, by version, and those objects frozen."""
        self._passes = Passes()
        """What the simulated providers read in their last pass over each object."""
        self.calls = 0
        """Function calls made (each iteration of a requirements loop counts)."""
        self.reconciled = 0
        """XR reconciles that called the function."""
        self.skipped = 0
        """XR reconciles skipped because nothing the XR would see had changed."""
        self._round_reconciled = self._round_skipped = 0
        staged = {Key.of(o): copy.deepcopy(o) for o in objects}
        for key in sorted(staged):
            self._stamp(staged[key])
            self.store.put(staged[key])

    # -- metadata --------------------------------------------------------

    def _stamp(self, obj: Obj) -> None:
        m = obj.setdefault("metadata", {})
        key = Key.of(obj)
        if "uid" not in m:
            m["uid"] = uid_of(key)
        if "creationTimestamp" not in m:
            m["creationTimestamp"] = self.clock.tick()
        m.setdefault("generation", 1)

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
        self._forget_stale_lists()
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
        )

    # -- one XR ----------------------------------------------------------

    def _observed(self, xr: Obj) -> dict[str, Obj]:
        """The XR's composed resources by resource name (a mapping callers only read),
        looked up again only after one of its candidates changed."""
        key = Key.of(xr)
        version = self.store.candidates_version(key.name)
        cached = self._observed_by_xr.get(key)
        if cached is not None and version is not None and cached[0] == version:
            return cached[1]
        observed = self._lookup_observed(xr)
        self._observed_by_xr[key] = (version, observed)
        return observed

    def _lookup_observed(self, xr: Obj) -> dict[str, Obj]:
        observed: dict[str, Obj] = {}
        for obj in self.store.candidates_of(xr):
            name = resource_name(obj)
            # Crossplane cannot address a composed resource without the
            # annotation, so such objects are left alone (not observed, not GC'd).
            if name and owned_by(obj, xr) and name not in observed:
                observed[name] = obj
        return observed

    def _struct(self, obj: Obj) -> structpb.Struct:
        """The object as a Struct, encoded once per version and reused across calls.

        The Struct carries the version as `metadata.resourceVersion`.
        """
        key = Key.of(obj)
        version = self.store.version(key)
        cached = self._structs.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        encoded = dict_to_struct(obj)
        if version is not None:
            # As an API server would: every object read carries its
            # resourceVersion, which is what lets the function decode each
            # version once. Only the copy sent to the function carries it.
            meta = encoded.fields["metadata"].struct_value
            meta.fields["resourceVersion"].string_value = str(version)
            self._structs[key] = (version, encoded)
        return encoded

    def _frozen(self, obj: Obj) -> FrozenDict:
        """The object as the function would decode its Struct (`_struct`), built once
        per version: read-only, with its version as `metadata.resourceVersion`.

        Its read-only containers are the store's own, and the ones built here
        the interner's: what a new version repeats of an earlier one (and what
        was remembered on it, `memoized`) is the same object.
        """
        key = Key.of(obj)
        version = self.store.version(key)
        cached = self._read.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        if version is None:
            return freeze_stored(obj, self._interner)
        meta = {**(obj.get("metadata") or {}), "resourceVersion": str(version)}
        lossy = lossy_conversions()
        frozen = freeze_stored({**obj, "metadata": meta}, self._interner)
        self._read[key] = (version, frozen)
        if lossy_conversions() == lossy:
            self._share(obj, frozen)
        return frozen

    @staticmethod
    def _share(obj: Obj, frozen: FrozenDict) -> None:
        """Let the store keep the read-only fields of `frozen`, a copy of `obj` equal
        to it exactly (types included), not a second plain copy of them.

        The next version is then frozen without walking what it repeats. Whoever
        changes a field replaces what it changes (a status through
        `conditions.writable_dict`, the spec in `_resource_refs`); the metadata
        stays the store's own.
        """
        for field_name, value in list(obj.items()):
            if field_name != "metadata" and type(value) in (dict, list):
                obj[field_name] = frozen[field_name]

    def _frozen_all(self, fetch: Fetch, objs: list[Obj]) -> list[Resource]:
        """`_frozen` of every object a requirement fetched, as a new list.

        A selector that fetches the same objects at the same versions as last
        time gets the same frozen objects: the list is kept per selector and
        copied, not rebuilt (a fleet's clusters are fetched by every call).
        """
        signature = fetch.signature
        cached = self._frozen_lists.get(signature)
        if cached is not None and cached[0] == fetch.found:
            return list(cached[1])
        frozen: list[Resource] = [self._frozen(o) for o in objs]
        if all(version is not None for _, version in fetch.found):
            self._frozen_lists[signature] = (fetch.found, frozen)
        return list(frozen)

    def _forget_stale_lists(self) -> None:
        """Drop the frozen lists of selectors whose objects changed since: they
        would only be rebuilt, and meanwhile keep old versions alive."""
        version = self.store.version
        stale = [
            signature
            for signature, (found, _) in self._frozen_lists.items()
            if any(version(key) != v for key, v in found)
        ]
        for signature in stale:
            del self._frozen_lists[signature]

    def _version(self, obj: Obj) -> Version:
        key = Key.of(obj)
        return key, self.store.version(key)

    def _request(self, xr: Obj, observed: Mapping[str, Obj]) -> fnv1.RunFunctionRequest:
        req = fnv1.RunFunctionRequest(
            meta=fnv1.RequestMeta(
                tag=str(Key.of(xr)),
                capabilities=[
                    fnv1.CAPABILITY_CAPABILITIES,
                    fnv1.CAPABILITY_REQUIRED_RESOURCES,
                    fnv1.CAPABILITY_CONDITIONS,
                ],
            )
        )
        req.observed.composite.resource.CopyFrom(self._struct(xr))
        req.input.update(self.function_input)
        for name, obj in sorted(observed.items()):
            req.observed.resources[name].resource.CopyFrom(self._struct(obj))
        return req

    def _fetch(self, selector: fnv1.ResourceSelector) -> list[tuple[Key, Obj]]:
        namespace = selector.namespace if selector.HasField("namespace") else ""
        match = selector.WhichOneof("match")
        if match == "match_name":
            key = Key(selector.api_version, selector.kind, namespace, selector.match_name)
            obj = self.store.get(key)
            return [(key, obj)] if obj is not None else []
        labels = dict(selector.match_labels.labels) if match == "match_labels" else {}
        return self.store.select(
            selector.api_version, selector.kind, namespace or None, labels or None
        )

    def _found(
        self, signature: bytes, selector: fnv1.ResourceSelector
    ) -> tuple[tuple[Version, ...], list[Obj]]:
        """What `selector` (known by `signature`) fetches now, by version, and the
        objects; listed again only after its kind changed."""
        kind = self.store.kind_version(selector.api_version, selector.kind)
        cached = self._found_by_selector.get(signature)
        if cached is not None and cached[0] == kind:
            return cached[1], cached[2]
        fetched = self._fetch(selector)
        found = self._versions(fetched)
        objs = [obj for _, obj in fetched]
        self._found_by_selector[signature] = (kind, found, objs)
        return found, objs

    def _versions(self, found: list[tuple[Key, Obj]]) -> tuple[Version, ...]:
        version = self.store.version
        return tuple((key, version(key)) for key, _ in found)

    def _require(self, requirements: fnv1.Requirements) -> Fetched:
        """Fetch what the function asked for, like Crossplane (anew each time)."""
        fetches: list[tuple[Fetch, list[Obj]]] = []
        for field_name, wanted in (
            ("required", requirements.resources),
            ("extra", requirements.extra_resources),
        ):
            for name, selector in sorted(wanted.items()):
                signature = selector.SerializeToString(deterministic=True)
                # The versions as `_found` keeps them: one tuple for every call
                # that asks the same (a fleet's clusters, asked by every deployment).
                found, objs = self._found(signature, selector)
                kept = fnv1.ResourceSelector()
                kept.CopyFrom(selector)
                fetches.append((Fetch(field_name, name, kept, found, signature), list(objs)))
        return fetches

    def _call(
        self, key: Key, xr: Obj, observed: Mapping[str, Obj]
    ) -> tuple[Reply | None, str, tuple[tuple[Fetch, ...], ...]]:
        """Call the function until its requirements stabilize, like Crossplane.

        Unlike Crossplane, the first call already gets what the requirements
        the XR's last call settled on fetch now: when the function asks for
        the same again, its answer is the one Crossplane's last iteration
        would get (the function is pure), without the iterations before it.
        Also returns what each iteration fetched, by version.
        """
        ask = self._asker(xr, observed)
        previous = self._settled.get(key)
        required: Fetched = self._require(previous) if previous is not None else []
        fetched = [tuple(fetch for fetch, _ in required)] if required else []
        for _ in range(MAX_REQUIREMENTS_ITERATIONS):
            self.calls += 1
            reply = ask(required)
            rsp = reply.rsp
            if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
                return reply, "", tuple(fetched)
            if previous is not None and rsp.requirements == previous:
                return reply, "", tuple(fetched)
            previous = fnv1.Requirements()
            previous.CopyFrom(rsp.requirements)
            self._settled[key] = previous
            if not rsp.requirements.resources and not rsp.requirements.extra_resources:
                return reply, "", tuple(fetched)
            required = self._require(rsp.requirements)
            fetched.append(tuple(fetch for fetch, _ in required))
        return (
            None,
            (
                f'step "{PIPELINE_STEP}" requirements didn\'t stabilize after the maximum '
                f"number of iterations ({MAX_REQUIREMENTS_ITERATIONS})"
            ),
            tuple(fetched),
        )

    def _asker(self, xr: Obj, observed: Mapping[str, Obj]) -> Callable[[Fetched], Reply]:
        """How to call the function for `xr`: given what was fetched, its reply."""
        if self.runner is None:
            return self._in_process(xr, observed)
        runner = self.runner
        req = self._request(xr, observed)

        def over_grpc(required: Fetched) -> Reply:
            self._fill(req, required)
            rsp = self._run_function(runner, req)
            req.context.CopyFrom(rsp.context)
            return decoded(rsp)

        return over_grpc

    def _fill(self, req: fnv1.RunFunctionRequest, required: Fetched) -> None:
        """Put what was fetched into the request's required (or extra) resources."""
        req.required_resources.clear()
        req.extra_resources.clear()
        for fetch, objs in required:
            target = req.required_resources if fetch.field == "required" else req.extra_resources
            items = target[fetch.name].items
            for obj in objs:
                items.add().resource.CopyFrom(self._struct(obj))

    def _in_process(self, xr: Obj, observed: Mapping[str, Obj]) -> Callable[[Fetched], Reply]:
        """Call the composer directly on read-only dicts: what the servicer would
        decode from the request `_request` builds, without building it."""
        runner = self._composer
        image = self._image
        composite = self._frozen(xr)
        seen = {name: self._frozen(obj) for name, obj in sorted(observed.items())}
        last = self._applied.get(_identity(xr))
        last_status = self._statuses.get(Key.of(xr))

        def in_process(required: Fetched) -> Reply:
            got: dict[str, list[Resource]] = {}
            # As `convert.to_input`: the required map first, then the
            # deprecated extra one for names the first lacks.
            for field_name in ("required", "extra"):
                for fetch, objs in required:
                    if fetch.field == field_name and fetch.name not in got:
                        got[fetch.name] = self._frozen_all(fetch, objs)
            inp = ComposeInput(composite=composite, observed=seen, required=got, image=image)
            result = runner.compose(composite, lambda: inp)
            return reply_of(runner, composite, result, last, self._interner, last_status)

        return in_process

    def _run_function(
        self, runner: FunctionRunner, req: fnv1.RunFunctionRequest
    ) -> fnv1.RunFunctionResponse:
        """Call the servicer's gRPC entry point, `RunFunction`, in-process.

        Without a worker pool the coroutine finishes without ever waiting, so
        it is driven to its end directly rather than by an event loop (asyncio
        alone would add a noticeable share of a small render's start-up).
        """
        call = runner.RunFunction(req, None)
        try:
            call.send(None)
        except StopIteration as done:
            return cast(fnv1.RunFunctionResponse, done.value)
        call.close()
        raise RuntimeError(
            "the function runner waited on something: the embedded control plane runs "
            "the function inline, without a worker pool"
        )

    def _sees(self, xr: Obj, observed: Mapping[str, Obj], inputs: Inputs) -> bool:
        """Whether a call of the function for `xr` would see `inputs` now, by version.

        The selectors are those `inputs` fetched with (an earlier call's); since
        the function is pure, equal inputs mean it would ask for the same.
        """
        if self._version(xr) != inputs.composite or len(observed) != len(inputs.observed):
            return False
        version = self.store.version
        now = sorted(observed.items())
        for (name, (key, seen)), (now_name, obj) in zip(inputs.observed, now, strict=True):
            if name != now_name or key != Key.of(obj) or version(key) != seen:
                return False
        return all(
            self._found(f.signature, f.selector)[0] == f.found
            for iteration in inputs.fetched
            for f in iteration
        )

    def _reconcile(self, key: Key) -> None:
        """Reconcile one XR, unless nothing it would see changed since its last call.

        The function is pure: with equal inputs it returns the same response,
        and when applying that response changed nothing last time (the inputs
        after applying were still those of the call), applying it again would
        change nothing either.
        """
        xr = self.store.get(key)
        assert xr is not None
        observed = self._observed(xr)
        last = self._last.pop(key, None)
        if last is not None and self._sees(xr, observed, last):
            self._last[key] = last
            self.skipped += 1
            return
        rsp, error, fetched = self._call(key, xr, observed)
        called = Inputs(
            composite=self._version(xr),
            observed=tuple((name, self._version(obj)) for name, obj in sorted(observed.items())),
            fetched=fetched,
        )
        self._respond(key, xr, observed, rsp, error)
        self.store.touch(key)
        self.reconciled += 1
        now = self.store.get(key)
        if now is not None and self._sees(now, self._observed(now), called):
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

        applied, errors = self._apply(xr, reply, observed)
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
        composite_ready = _READY_FROM_PB.get(rsp.desired.composite.ready)
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
        if reply.status_text is not None:
            self._statuses[key] = (reply.status_text, reply.status)
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

    # -- applying composed resources -------------------------------------

    def _apply(
        self, xr: Obj, reply: Reply, observed: Mapping[str, Obj]
    ) -> tuple[dict[str, tuple[Obj, bool | None]], list[str]]:
        """Apply desired composed resources; returns {name: (object, function readiness)}.

        The desired objects are the reply's own and are taken as they are. One
        equal to what was last applied under its name, onto an object nobody
        changed since, is not applied again (applying is idempotent).
        """
        applied: dict[str, tuple[Obj, bool | None]] = {}
        errors: list[str] = []
        identity = _identity(xr)
        last = self._applied.pop(identity, {})
        now: dict[str, Applied] = {}
        for name, (converted, ready) in sorted(reply.resources.items()):
            current = observed.get(name)
            unchanged = self._unchanged(last.get(name), current) if converted is None else None
            if unchanged is None:
                desired = (
                    converted
                    if converted is not None
                    else as_stored(reply.raw[name][0], self._interner)
                )
                obj, error = self._apply_one(xr, name, desired, current)
                if obj is None:
                    errors.append(error)
                    continue
                key = Key.of(obj)
                if name in reply.raw:
                    version, body = self.store.version(key), self.store.body(key)
                    now[name] = Applied(reply.raw[name][1], key, version, body)
            else:
                obj, key = observed[name], unchanged.key
                now[name] = unchanged
            self.collector.applied(key)
            applied[name] = (obj, ready)
            self.readiness[key] = ready
        if now:
            self._applied[identity] = now
        return applied, errors

    def _apply_one(
        self, xr: Obj, name: str, desired: Obj, current: Obj | None
    ) -> tuple[Obj | None, str]:
        """Apply one desired composed resource: the object stored, or None and why not."""
        desired.pop("status", None)
        if not desired.get("apiVersion") or not desired.get("kind"):
            return None, f"composed resource {name!r} has no apiVersion/kind"
        desired["metadata"] = self._composed_meta(xr, name, desired, current)
        key = Key.of(desired)
        existing = self.store.get(key)
        owner = _controller(existing) if existing is not None else None
        if owner is not None and existing is not current and not owned_by(existing or {}, xr):
            return None, f"cannot apply composed resource {name!r}: {key} is controlled by {owner}"
        if current is not None and Key.of(current) != key:
            self._delete(current)
        obj = self._merge(existing, desired)
        self.store.put(obj)
        return obj, ""

    def _composed_meta(
        self, xr: Obj, name: str, desired: Obj, current: Obj | None
    ) -> dict[str, Any]:
        """A composed resource's metadata as Crossplane sets it: name, namespace, owner."""
        xm = xr["metadata"]
        meta = dict(desired.get("metadata") or {})
        if current is not None:
            meta["name"] = current["metadata"]["name"]
        elif not meta.get("name"):
            digest = hashlib.sha256("/".join((*Key.of(xr), name)).encode()).hexdigest()[:5]
            # Like Crossplane's generateName: the XR's name plus a suffix,
            # kept within a DNS label so any kind accepts it.
            meta["name"] = f"{str(xm['name'])[:57].rstrip('-.')}-{digest}"
        if xm.get("namespace"):
            meta["namespace"] = xm["namespace"]
        elif current is not None and current["metadata"].get("namespace"):
            meta["namespace"] = current["metadata"]["namespace"]
        if scope_of(desired) == "Namespaced" and not meta.get("namespace"):
            meta["namespace"] = "default"
        # Crossplane labels a composed resource with the root composite: the
        # XR's own composite label when it is itself composed, else its name
        # (a real control plane showed the ModelReplicas' Objects labelled
        # with their ModelDeployment).
        root = (xm.get("labels") or {}).get(c.XP_LABEL_COMPOSITE) or xm["name"]
        # Read-only and shared (`Interner`): a fleet's composed resources repeat
        # a handful of label sets and owners; nothing edits them in place.
        shared = self._interner
        meta["labels"] = shared.dict({**(meta.get("labels") or {}), c.XP_LABEL_COMPOSITE: root})
        meta["annotations"] = shared.dict(
            {**(meta.get("annotations") or {}), c.XP_ANNOTATION_RESOURCE_NAME: name}
        )
        owner = {
            "apiVersion": xr["apiVersion"],
            "kind": xr["kind"],
            "name": xm["name"],
            "uid": xm.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        meta["ownerReferences"] = shared.list([shared.dict(owner)])
        return meta

    def _unchanged(self, last: Applied | None, current: Obj | None) -> Applied | None:
        """`last`, if the object it applied is still the XR's, unchanged since but
        for its status (which applying keeps as it is)."""
        if last is None or current is None or Key.of(current) != last.key:
            return None
        version = self.store.version(last.key)
        if version == last.version:
            return last
        if last.body is None or self.store.body(last.key) != last.body:
            return None
        # Not `_replace`: a named tuple's is a Python function, and this runs
        # for most of a fleet's objects once a provider reported on them.
        return Applied(last.text, last.key, version, last.body)

    def _merge(self, existing: Obj | None, desired: Obj) -> Obj:
        """Server-side-apply, simplified: desired fields win; status and identity stay."""
        # `desired` was decoded from the response for this call alone, so it
        # is used as it is, not copied.
        if existing is None:
            created = _ordered_object(desired)
            self._stamp(created)
            return created
        em = existing.get("metadata") or {}
        dm = desired["metadata"]
        meta = {**em, **dm}
        for f in ("labels", "annotations"):
            merged = {**(em.get(f) or {}), **(dm.get(f) or {})}
            if merged:
                meta[f] = self._interner.dict(merged)
        for f in ("uid", "creationTimestamp", "generation"):
            if f in em:
                meta[f] = em[f]
        obj: Obj = {**desired, "metadata": meta}
        # spec.crossplane belongs to the reconciler of a nested XR, not to the
        # parent that applies it (server-side apply keeps the two apart).
        machinery = (existing.get("spec") or {}).get("crossplane")
        if isinstance(obj.get("spec"), dict) and machinery is not None:
            obj["spec"] = {**obj["spec"], "crossplane": machinery}
        if _spec_of(obj) != _spec_of(existing):
            meta["generation"] = int(em.get("generation") or 1) + 1
        if "status" in existing:
            obj["status"] = existing["status"]
        return _ordered_object(obj)


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


def uid_of(key: Key) -> str:
    """The uid an object created under `key` gets: `uuid.uuid5` of its key's path,
    computed without building a UUID object (one per composed object)."""
    h = bytearray(
        hashlib.sha1(_UID_PREFIX + "/".join(key).encode(), usedforsecurity=False).digest()[:16]
    )
    h[6] = (h[6] & 0x0F) | 0x50  # version 5
    h[8] = (h[8] & 0x3F) | 0x80  # the RFC 4122 variant
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def _identity(xr: Obj) -> tuple[Key, str, str]:
    """An XR's key, uid and root composite: a deleted and recreated XR applies
    afresh, and so does one whose root changed (it labels what it composes)."""
    meta = xr.get("metadata") or {}
    root = (meta.get("labels") or {}).get(c.XP_LABEL_COMPOSITE) or meta.get("name")
    return Key.of(xr), str(meta.get("uid", "")), str(root)


def _changed(before: Mapping[Key, int], after: Mapping[Key, int]) -> list[Key]:
    """The keys created, changed or deleted between two version maps, in key order."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _controller(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')} {ref.get('name')}"
    return None


def _ordered_object(obj: Obj) -> Obj:
    head = ("apiVersion", "kind", "metadata")
    out = {k: obj[k] for k in head if k in obj}
    out.update({k: v for k, v in obj.items() if k not in head and k != "status"})
    if "status" in obj:
        out["status"] = obj["status"]
    return out
