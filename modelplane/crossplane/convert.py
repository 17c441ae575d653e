"""Translation between the function protocol (protobuf) and the composer contract.

`to_input` turns a RunFunctionRequest into a `ComposeInput`; `to_response` turns
a `ComposeResult` into the RunFunctionResponse Crossplane expects. Both are plain
functions so the servicer, the embedded control plane and the tests share them.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from crossplane.function import response
from google.protobuf import struct_pb2 as structpb

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, FrozenList, Interner
from modelplane.api.function_input import read_image
from modelplane.api.kinds import UpFront, kind_for
from modelplane.compose.common import meta
from modelplane.compose.types import ComposeInput, ComposeResult, Readiness, Requirement, Resource

DEFAULT_TTL = datetime.timedelta(minutes=1)
"""How long Crossplane may cache a response before calling the function again."""

_READY_TO_PB: dict[Readiness, fnv1.Ready] = {
    "True": fnv1.READY_TRUE,
    "False": fnv1.READY_FALSE,
    "Unspecified": fnv1.READY_UNSPECIFIED,
}
_STATUS_TO_PB = {
    "True": fnv1.STATUS_CONDITION_TRUE,
    "False": fnv1.STATUS_CONDITION_FALSE,
    "Unknown": fnv1.STATUS_CONDITION_UNKNOWN,
}
_SEVERITY_TO_PB = {"Warning": fnv1.SEVERITY_WARNING, "Normal": fnv1.SEVERITY_NORMAL}
_SYSTEM_CONDITIONS = frozenset({c.CONDITION_READY, c.CONDITION_SYNCED})


def _value(v: structpb.Value, frozen: bool) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        fields = {k: _value(x, frozen) for k, x in v.struct_value.fields.items()}
        return FrozenDict(fields) if frozen else fields
    if kind == "list_value":
        items = [_value(x, frozen) for x in v.list_value.values]
        return FrozenList(items) if frozen else items
    if kind == "number_value":
        # A Struct stores every number as a double; Kubernetes (and the JSON
        # Crossplane decodes) keeps integral numbers as integers, so restore
        # them or `replicas: 3` would reach composers and output as 3.0.
        n = v.number_value
        return int(n) if n.is_integer() else n
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    return None


def struct_to_dict(s: structpb.Struct) -> Resource:
    """Convert a protobuf Struct to a dict, keeping integral numbers as ints."""
    return {k: _value(v, False) for k, v in s.fields.items()}


def struct_to_frozen(s: structpb.Struct) -> FrozenDict:
    """Convert a protobuf Struct to a read-only dict (see `modelplane.api.frozen`)."""
    return FrozenDict({k: _value(v, True) for k, v in s.fields.items()})


DEFAULT_SHARED_BYTES = 2 * 1024 * 1024
"""Bound of a `SharedDecoder`'s table, per generation, in serialized bytes of its keys.

What repeats across a fleet is small: the 5,000-cluster request of
`benchmarks/bench_request.py` needs 0.1 MiB of keys. Two generations of 2 MiB
keep alive at most about 32 MiB of decoded mappings the decode cache has let go.
"""


class SharedDecoder:
    """Decodes Structs into read-only values, one shared copy per distinct nested mapping.

    Fleets repeat themselves: thousands of clusters publish the same device
    descriptions, labels and conditions. A nested mapping is looked up by its
    serialization (protobuf's C encoder, far cheaper than decoding it value by
    value in Python) and decoded only the first time those bytes are seen;
    later copies are the same read-only object, with whatever was `memoized`
    on it. The deterministic serialization (map keys sorted) of equal
    mappings is equal, numbers (doubles) included, so sharing changes no
    value; only the order of keys may be the first copy's, and a protobuf
    map has no order (Crossplane's encoder and upb's both shuffle it). An
    object's own top-level fields (metadata, spec, status) are not looked up:
    they are unique to the object, and the whole object is already cached by
    version (`DecodeCache`).

    The table is bounded: once its keys exceed `max_bytes` it becomes the old
    generation (still read, hits are carried over) and a new one starts.
    """

    def __init__(self, max_bytes: int = DEFAULT_SHARED_BYTES) -> None:
        """Create an empty decoder whose table holds about `max_bytes` of keys per generation."""
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self._table: dict[bytes, FrozenDict] = {}
        self._old: dict[bytes, FrozenDict] = {}

    def decode(self, s: structpb.Struct) -> FrozenDict:
        """The read-only form of `s`, as `struct_to_frozen(s)` returns it."""
        f = s.fields
        return FrozenDict({k: self._top(f[k]) for k in f})

    def _top(self, v: structpb.Value) -> Any:
        # A top-level field: decoded, its nested mappings shared.
        if v.WhichOneof("kind") == "struct_value":
            f = v.struct_value.fields
            return FrozenDict({k: self._value(f[k]) for k in f})
        return self._value(v)

    def _value(self, v: structpb.Value) -> Any:
        kind = v.WhichOneof("kind")
        if kind == "string_value":
            return v.string_value
        if kind == "struct_value":
            return self._mapping(v.struct_value)
        if kind == "list_value":
            return FrozenList([self._value(x) for x in v.list_value.values])
        if kind == "number_value":
            n = v.number_value  # see `_value`: integral doubles read back as ints
            return int(n) if n.is_integer() else n
        if kind == "bool_value":
            return v.bool_value
        return None

    def _mapping(self, s: structpb.Struct) -> FrozenDict:
        key = s.SerializeToString(deterministic=True)
        hit = self._table.get(key)
        if hit is None:
            hit = self._old.get(key)
            if hit is None:
                f = s.fields
                hit = FrozenDict({k: self._value(f[k]) for k in f})
            else:
                self.hits += 1
            self._remember(key, hit)
        else:
            self.hits += 1
        return hit

    def _remember(self, key: bytes, value: FrozenDict) -> None:
        if self.bytes + len(key) > self.max_bytes:
            self._old, self._table, self.bytes = self._table, {}, 0
        self._table[key] = value
        self.bytes += len(key)

    def clear(self) -> None:
        """Forget every shared mapping."""
        self._table, self._old, self.bytes = {}, {}, 0


DEFAULT_DECODE_CACHE_BYTES = 32 * 1024 * 1024
"""Bound of the decode cache, in serialized bytes of the objects it holds.

32 MiB of protobuf holds every required object of a request over 5,000
InferenceClusters of 8 pools (23 MiB, see `benchmarks/bench_request.py`), so
every ModelDeployment reconciled against the same fleet finds it decoded.
Decoded objects (and their memoized readings) take up to about 8× their
serialized size when nothing in them repeats, so the bound keeps a worker
process's cache under about 270 MiB. A fleet repeats itself (`SharedDecoder`):
`benchmarks/bench_decode.py` measures about 10 MiB held for that fleet (a
worker's resident memory 110 MiB with the cache, 101 MiB without).
"""


class DecodeCache:
    """Decoded objects by version, so each version of an object is decoded once.

    The key is (uid, resourceVersion) when the object carries both, as every
    object read from an API server does (Kubernetes changes resourceVersion on
    every write); otherwise a digest of its serialized content. Entries are
    read-only (`FrozenDict`/`FrozenList`): the same decoded object reaches
    every call that receives that version, so no composer may change it. The
    least recently used entries go first once the cache holds more than
    `max_bytes` of serialized objects. One cache per process: under `function
    serve` each worker process keeps its own.
    """

    def __init__(self, max_bytes: int = DEFAULT_DECODE_CACHE_BYTES) -> None:
        """Create an empty cache bounded to `max_bytes` of serialized objects."""
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, ...] | bytes, tuple[FrozenDict, int]] = OrderedDict()
        self.shared = SharedDecoder()

    def __len__(self) -> int:
        return len(self._entries)

    def decode(self, s: structpb.Struct) -> FrozenDict:
        """The decoded, read-only form of `s`, from the cache when this version was seen."""
        key, size = _version_key(s)
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]
        self.misses += 1
        decoded = self.shared.decode(s)
        size = size if size is not None else s.ByteSize()
        if size > self.max_bytes:
            return decoded
        self._entries[key] = (decoded, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped
        return decoded

    def clear(self) -> None:
        """Forget every entry and every shared mapping."""
        self._entries.clear()
        self.bytes = 0
        self.shared.clear()


def _version_key(s: structpb.Struct) -> tuple[tuple[str, str] | bytes, int | None]:
    """The cache key of an object, and its serialized size when that was computed."""
    if "metadata" in s.fields:
        meta = s.fields["metadata"].struct_value.fields
        uid = meta["uid"].string_value if "uid" in meta else ""
        version = meta["resourceVersion"].string_value if "resourceVersion" in meta else ""
        if uid and version:
            return (uid, version), None
    data = s.SerializeToString(deterministic=True)
    return hashlib.blake2b(data, digest_size=20).digest(), len(data)


DECODE_CACHE = DecodeCache()
"""The process's decode cache, shared by every call `to_input` decodes."""


def _number(n: float) -> int | float:
    # What a Struct does to a number: a double, read back as an int when integral.
    f = float(n)
    return int(f) if f.is_integer() else f


def _json(v: Any, frozen: bool) -> Any:
    """`v` as it would come back from a Struct: the round trip without the protobuf."""
    t = type(v)
    if t is str or t is bool or v is None:
        return v
    if t is int and -_EXACT <= v <= _EXACT:
        return v
    if t is dict or t is FrozenDict:
        fields = {k if type(k) is str else _field(k): _json(x, frozen) for k, x in v.items()}
        return FrozenDict(fields) if frozen else fields
    if t is list or t is FrozenList:
        items = [_json(x, frozen) for x in v]
        return FrozenList(items) if frozen else items
    return _other(v, frozen)


def _other(v: Any, frozen: bool) -> Any:
    """`_json` of a number, a subclass of str, dict or list, or a tuple."""
    if isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, float)):
        out = v if type(v) is int and -_EXACT <= v <= _EXACT else _number(v)
        if type(out) is not type(v) or out != v:  # 1.0 read back as 1, 2**60 + 1 as 2**60
            _LOSSY[0] += 1
        return out
    if isinstance(v, dict):
        fields = {_field(k): _json(x, frozen) for k, x in v.items()}
        return FrozenDict(fields) if frozen else fields
    if isinstance(v, (list, tuple)):
        if type(v) is tuple:
            _LOSSY[0] += 1
        items = [_json(x, frozen) for x in v]
        return FrozenList(items) if frozen else items
    raise ValueError(f"Unexpected type {type(v).__name__}")


_LOSSY = [0]
"""How many values a conversion has changed so far (see `lossy_conversions`)."""


def lossy_conversions() -> int:
    """How many values conversions in this process have changed so far (an integral
    float read back as an int, a huge int rounded to a double's, a tuple as a list):
    a caller compares the count before and after a conversion to learn whether
    its result equals its input exactly, types included."""
    return _LOSSY[0]


_EXACT = 2**53
"""Integers a double holds exactly, which a Struct keeps as they are."""


def _field(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a Struct field name must be a string, not {type(key).__name__}")
    return key


def as_json(d: Mapping[str, Any]) -> Resource:
    """A plain copy of a mapping exactly as `struct_to_dict(dict_to_struct(d))` returns it.

    Numbers become what a Struct's doubles read back as (integral ones as
    ints), tuples become lists; a value no Struct holds raises ValueError (or
    TypeError for a field name that is not a string), as encoding it would.
    The embedded control plane uses it where the function runs in-process,
    so that its output does not depend on whether protobuf was in between.
    """
    return {_field(k): _json(v, False) for k, v in dict(d).items()}


def as_stored(d: Mapping[str, Any], interner: Interner | None = None) -> Resource:
    """`as_json(d)`, read-only below its top level and its metadata.

    What the embedded control plane stores of a composer's desired object:
    it changes an object's top level and metadata in place (name, owner,
    status), never the rest, so the rest is kept read-only and `freeze`
    shares it with the copy every call reads instead of copying it again.
    Through `interner`, equal read-only containers are one shared object.
    """
    if interner is None:
        return {_field(k): _json(v, k not in _CHANGED_IN_PLACE) for k, v in dict(d).items()}
    return {
        _field(k): _json(v, False) if k in _CHANGED_IN_PLACE else _interned(v, interner)
        for k, v in dict(d).items()
    }


def as_shared_fields(d: Mapping[str, Any], interner: Interner) -> Resource:
    """`as_json(d)`, its fields read-only and shared through `interner`: for a
    composite's status, whose top level the embedded control plane replaces
    field by field (its conditions) but whose fields it never changes."""
    return {_field(k): _interned(v, interner) for k, v in dict(d).items()}


def _interned(v: Any, interner: Interner) -> Any:
    """`_json(v, True)`, each container the shared one `interner` holds."""
    t = type(v)
    if t is str:
        return v
    if t is dict:
        return interner.dict(
            {k if type(k) is str else _field(k): _interned(x, interner) for k, x in v.items()}
        )
    if t is list or t is tuple:
        return interner.list([_interned(x, interner) for x in v])
    if t is bool or v is None or (t is int and -_EXACT <= v <= _EXACT):
        return v
    if t is FrozenDict or t is FrozenList:
        # Read-only already: taken as it is when it is the interner's own, else
        # its top level copied (`__copy__` gives a plain one) and interned.
        return v if interner.owns(v) else _interned(copy.copy(v), interner)
    return _other(v, True)


_CHANGED_IN_PLACE = frozenset({"metadata", "status"})


def freeze(d: Mapping[str, Any]) -> FrozenDict:
    """A read-only copy of a mapping exactly as `DecodeCache.decode` of its Struct returns it."""
    return FrozenDict({_field(k): _json(v, True) for k, v in dict(d).items()})


def freeze_stored(d: Mapping[str, Any], interner: Interner | None = None) -> FrozenDict:
    """`freeze(d)` of an object of the embedded control plane's store, sharing its
    read-only containers instead of copying them.

    The store holds only read-only containers `as_stored` built, already in
    the form `freeze` gives, so taking them as they are gives the same value.
    Through `interner`, the containers it builds are shared ones too.
    """
    return FrozenDict({_field(k): _stored_field(k, v, interner) for k, v in dict(d).items()})


def _stored_field(k: str, v: Any, interner: Interner | None) -> Any:
    """`_stored` of a top-level field; an object's metadata is its own (its name,
    uid, version), so only what it holds is shared."""
    if interner is None or k != "metadata" or type(v) is not dict:
        return _stored(v, interner)
    return FrozenDict({_field(k2): _stored(v2, interner) for k2, v2 in v.items()})


def _stored(v: Any, interner: Interner | None = None) -> Any:
    """`_json(v, True)`, sharing the read-only containers `v` holds (and, through
    `interner`, the ones it builds)."""
    t = type(v)
    if t is str or t is FrozenDict or t is FrozenList:
        return v
    if t is dict:
        fields = {k if type(k) is str else _field(k): _stored(x, interner) for k, x in v.items()}
        return FrozenDict(fields) if interner is None else interner.dict(fields)
    if t is list:
        items = [_stored(x, interner) for x in v]
        return FrozenList(items) if interner is None else interner.list(items)
    return _json(v, True) if interner is None else _interned(v, interner)


def dict_to_struct(d: Mapping[str, Any]) -> structpb.Struct:
    """Convert a JSON-compatible mapping to a protobuf Struct."""
    s = structpb.Struct()
    s.update(dict(d))
    return s


def observed_composite(req: fnv1.RunFunctionRequest, cache: DecodeCache | None = None) -> Resource:
    """Return the observed composite resource of a request as a dict ({} when absent).

    Through `cache` it is read-only and decoded once per version.
    """
    if not req.HasField("observed") or not req.observed.HasField("composite"):
        return {}
    if cache is not None:
        return cache.decode(req.observed.composite.resource)
    return struct_to_dict(req.observed.composite.resource)


def to_input(
    req: fnv1.RunFunctionRequest,
    cache: DecodeCache | None = DECODE_CACHE,
    *,
    composite: Resource | None = None,
    now: str | None = None,
) -> ComposeInput:
    """Build the composer input from a request.

    Required resources come from `required_resources`; the deprecated
    `extra_resources` map is honoured for names the new map lacks. A name
    that is absent has not been fetched yet. What the composite's Composition
    fetched up front (`Kind.up_front`) is the composer's under its own name,
    narrowed to the composite's namespace where the composer asks for that
    only. Every observed and required
    object is decoded through `cache` (read-only, once per object version),
    or afresh when it is None. `composite` is the observed
    composite when the caller has decoded it already; `now` is the call's time.
    """
    decode = cache.decode if cache is not None else struct_to_dict
    observed = {name: decode(r.resource) for name, r in sorted(req.observed.resources.items())}
    required: dict[str, list[Resource]] = {}
    for source in (req.required_resources, req.extra_resources):
        for name, resources in sorted(source.items()):
            if name not in required:
                required[name] = [decode(item.resource) for item in resources.items]
    if composite is None:
        composite = observed_composite(req, cache)
    _take_up_front(required, composite)
    image = read_image(struct_to_dict(req.input) if req.HasField("input") else None)
    return ComposeInput(
        composite=composite, observed=observed, required=required, image=image, now=now
    )


def up_front_of(composite: Mapping[str, Any]) -> tuple[UpFront, ...]:
    """What the Composition of `composite`'s kind fetches before the first call."""
    kind = kind_for(str(composite.get("apiVersion", "")), str(composite.get("kind", "")))
    return kind.up_front if kind is not None else ()


def _take_up_front(required: dict[str, list[Resource]], composite: Resource) -> None:
    for up in up_front_of(composite):
        items = required.pop(up.key, None)
        if items is None or up.name in required:
            continue
        if up.own_namespace:
            # The step fetched every namespace's; the composer reads its own only.
            ns = meta(composite).get("namespace")
            items = [i for i in items if meta(i).get("namespace") == ns]
        required[up.name] = items


def _delivered_up_front(req: fnv1.RunFunctionRequest) -> set[str]:
    """The requirement names the request's Composition step fetched up front."""
    if not req.required_resources:
        return set()
    # Decoded once per version: the servicer read the same composite for the composer.
    composite = observed_composite(req, DECODE_CACHE)
    return {u.name for u in up_front_of(composite) if u.key in req.required_resources}


def _deep_merge(base: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in overlay.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _selector(r: Requirement) -> fnv1.ResourceSelector:
    sel = fnv1.ResourceSelector(api_version=r.api_version, kind=r.kind)
    if r.match_name is not None:
        sel.match_name = r.match_name
    elif r.match_labels is not None:
        sel.match_labels.labels.update(dict(r.match_labels))
    else:
        # Crossplane only knows name and label matches; an empty label
        # selector is how "every object of the kind" is spelled.
        sel.match_labels.SetInParent()
    if r.namespace is not None:
        sel.namespace = r.namespace
    return sel


def base_response(
    req: fnv1.RunFunctionRequest, ttl: datetime.timedelta = DEFAULT_TTL
) -> fnv1.RunFunctionResponse:
    """Start a response: the request's tag, desired state and context copied through."""
    return response.to(req, ttl)


def fatal_response(
    req: fnv1.RunFunctionRequest, message: str, ttl: datetime.timedelta = DEFAULT_TTL
) -> fnv1.RunFunctionResponse:
    """A response carrying one fatal result and no new desired state."""
    rsp = base_response(req, ttl)
    rsp.results.append(
        fnv1.Result(severity=fnv1.SEVERITY_FATAL, message=message, target=fnv1.TARGET_COMPOSITE)
    )
    return rsp


def to_response(
    req: fnv1.RunFunctionRequest,
    result: ComposeResult,
    ttl: datetime.timedelta = DEFAULT_TTL,
) -> fnv1.RunFunctionResponse:
    """Translate a composer's result into a response to `req`.

    The request's desired state is copied through first (pipeline semantics),
    then the composer's resources replace same-named entries and its status is
    merged into the desired composite's status. A fatal result yields only the
    fatal message.
    """
    if result.fatal is not None:
        return fatal_response(req, result.fatal, ttl)
    if result.recall_seconds is not None:
        ttl = min(ttl, datetime.timedelta(seconds=max(1, result.recall_seconds)))
    rsp = base_response(req, ttl)

    for name, desired in sorted(result.desired.items()):
        entry = rsp.desired.resources[name]
        entry.resource.CopyFrom(dict_to_struct(desired.resource))
        entry.ready = _READY_TO_PB[desired.ready]

    if result.status:
        composite = rsp.desired.composite
        current = struct_to_dict(composite.resource) if composite.HasField("resource") else {}
        status = _deep_merge(current.get("status") or {}, result.status)
        composite.resource.update({"status": status})
    add_outcome(rsp, result)
    _leave_up_front(req, rsp)
    return rsp


def _leave_up_front(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Ask for nothing the request carries from up front (`Kind.up_front`).

    Asked for again, it would make Crossplane call a second time to deliver it.
    A response that then asks for nothing carries no requirements at all:
    Crossplane compares them with the previous call's, none, and an empty
    message is not none.
    """
    delivered = _delivered_up_front(req)
    if not delivered or not rsp.HasField("requirements"):
        return
    for name in delivered:
        if name in rsp.requirements.resources:
            del rsp.requirements.resources[name]
    if rsp.requirements == fnv1.Requirements():
        rsp.ClearField("requirements")


def add_outcome(rsp: fnv1.RunFunctionResponse, result: ComposeResult) -> None:
    """Add everything of `result` but its desired objects to `rsp`.

    That is the composite's readiness, conditions, events (as results) and
    requirements: what `to_response` encodes besides Structs, shared with the
    embedded control plane, which takes the desired objects as they are.
    """
    if result.ready != "Unspecified":
        rsp.desired.composite.ready = _READY_TO_PB[result.ready]

    for cond in result.conditions:
        if cond.type in _SYSTEM_CONDITIONS:
            # Crossplane owns these and would ignore them; dropping them here
            # keeps the response honest about what the function decides.
            continue
        pb = fnv1.Condition(
            type=cond.type,
            status=_STATUS_TO_PB[cond.status],
            reason=cond.reason,
            target=fnv1.TARGET_COMPOSITE,
        )
        if cond.message:
            pb.message = cond.message
        rsp.conditions.append(pb)

    for ev in result.events:
        rsp.results.append(
            fnv1.Result(
                severity=_SEVERITY_TO_PB[ev.severity],
                message=ev.message,
                reason=ev.reason,
                target=fnv1.TARGET_COMPOSITE,
            )
        )

    for name, requirement in sorted(result.requirements.items()):
        rsp.requirements.resources[name].CopyFrom(_selector(requirement))
