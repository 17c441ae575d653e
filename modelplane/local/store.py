"""An in-memory object store keyed like the Kubernetes API: (apiVersion, kind, namespace, name)."""

from __future__ import annotations

import builtins
import copy
import hashlib
import itertools
import json
import json.encoder
import marshal
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from modelplane.api.frozen import FrozenDict, memoized

Obj = dict[str, Any]


class Key(NamedTuple):
    """Identity of an object; namespace is "" for cluster-scoped objects."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Key:
        """The key of an object."""
        m = obj.get("metadata") or {}
        # tuple.__new__ directly: the named tuple's own constructor is a Python
        # frame, and keys are computed hundreds of thousands of times a render.
        return tuple.__new__(
            cls,
            (
                str(obj.get("apiVersion", "")),
                str(obj.get("kind", "")),
                str(m.get("namespace") or ""),
                str(m.get("name", "")),
            ),
        )


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """An object's labels ({} when none)."""
    return dict((obj.get("metadata") or {}).get("labels") or {})


COMPOSITE_LABEL = "crossplane.io/composite"


def _owner_names(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The names an object's ownerReferences give, sorted, each once (a tuple: a
    frozenset of one name is four times its size, kept per object)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    names = {str(r.get("name")) for r in refs if isinstance(r, (dict, Mapping)) and r.get("name")}
    return tuple(sorted(names))


def _candidate_name(obj: Mapping[str, Any]) -> str | None:
    """The name of the composite `obj` can only be composed by (see `owned_by`): its
    first controller ownerReference's, else its composite label's; None if neither."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, (dict, Mapping)) and ref.get("controller"):  # dicts: no ABC check
            return str(ref.get("name"))
    label = (meta.get("labels") or {}).get(COMPOSITE_LABEL)
    return None if label is None else str(label)


def owned_by(obj: Mapping[str, Any], xr: Mapping[str, Any]) -> bool:
    """Whether `obj` is a composed resource of `xr`.

    A controller ownerReference decides when there is one (its uid may come
    from a live cluster, so only apiVersion/kind/name are compared). Without
    one, Crossplane's composite label must name the XR. The label alone is not
    enough when there is a reference: Crossplane labels a nested composite's
    resources with the root composite, not with their own parent. A
    namespaced XR's resources live in its namespace.
    """
    return composed_by(xr)(obj)


def composed_by(xr: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """`owned_by` for one XR, its side read once: the test for each of its candidates."""
    xm = xr.get("metadata") or {}
    namespace = xm.get("namespace")
    name = str(xm.get("name", ""))
    key = Key.of(xr)
    controller = (xr.get("apiVersion"), xr.get("kind"), xm.get("name"))
    label = xm.get("name")

    def test(obj: Mapping[str, Any]) -> bool:
        om = obj.get("metadata") or {}
        if namespace and om.get("namespace") != namespace:
            return False
        # Names first: the whole keys are only built when they could be equal.
        if str(om.get("name", "")) == name and Key.of(obj) == key:
            return False
        for ref in om.get("ownerReferences") or []:
            if ref.get("controller"):
                return (ref.get("apiVersion"), ref.get("kind"), ref.get("name")) == controller
        return (om.get("labels") or {}).get(COMPOSITE_LABEL) == label

    return test


_VERSIONS = itertools.count(1)
"""Versions are unique in the process, across stores: an object of one render
never shares (uid, version) with a different object of another, so a cache
keyed by them (the function's decode cache) cannot mix renders up."""


def _marshalled(obj: Obj) -> bytes | None:
    """The object's exact serialization (done in C), or None when marshal cannot write it.

    Version 2 of marshal shares no references, so the bytes depend on the
    content alone, not on what else holds the same strings. Equal bytes mean
    equal content; equal content may still differ in key order.
    """
    try:
        return marshal.dumps(obj, 2)
    except ValueError:  # a dict or list subclass, or a value JSON turns into a string
        return None


def _hash(data: bytes) -> bytes:
    # 160 bits: equal digests are equal inputs, barring a collision.
    return hashlib.blake2b(data, digest_size=20).digest()


def _text_digest(obj: Obj) -> bytes:
    """A digest of the object's content: equal for equal content in any key order,
    different when a value's type differs (1, 1.0, true).

    Its key-sorted JSON text (done in C) is digested in parts: the object's
    identity and metadata (`_TOGETHER`) at once; each other field (spec,
    status, ...) on its own, by content whether it is plain or read-only
    (`convert.as_stored`, `fetch.Fetcher.frozen`), a read-only one's
    digest remembered on it, as it never changes. Its first `_BODY` bytes are
    the digest of everything but the status (`ObjectStore.body`), the rest the
    status's.
    """
    together = {}
    apart = []
    status: Any = _NO_STATUS
    for k, v in obj.items():
        if k in _TOGETHER:
            together[k] = v
        elif k == "status":
            status = v
        else:
            apart.append((k, v))
    try:
        apart.sort()
    except TypeError:  # keys of mixed types cannot be sorted
        return _hash(repr(obj).encode())
    parts = [_text(together)]
    parts += [_text(k) + _field_digest(v) for k, v in apart]
    return _with_status(_hash(b"".join(parts)), status)


def _with_status(body: bytes, status: Any) -> bytes:
    """A content digest from its body part and the object's status (`_NO_STATUS`: none)."""
    return body if status is _NO_STATUS else body + _field_digest(status)


def body_digest(obj: Obj) -> bytes:
    """The digest `ObjectStore.body` gives an object of this content (`obj` has no status)."""
    return _text_digest(obj)[:_BODY]


_NO_STATUS = object()
_BODY = 20
"""The length of a digest (`_hash`): a content digest's body part."""
_TOGETHER = frozenset({"apiVersion", "kind", "metadata"})
_DIGEST = "store.digest"


def _encoder() -> Callable[[Any], str]:
    """Key-sorted compact JSON, done in C: the standard library's C encoder called
    directly, without the circular-reference check (objects are trees) and with
    non-ASCII text as it is, which spares it most of its work per container."""
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or quote is None:  # an interpreter without the C accelerator
        slow = json.JSONEncoder(
            sort_keys=True, separators=(",", ":"), default=repr, ensure_ascii=False
        )
        return slow.encode
    encode = make(None, repr, quote, None, ":", ",", True, False, True)
    return lambda value: "".join(encode(value, 0))


_ENCODE = _encoder()


def _text(value: Any) -> bytes:
    try:
        return _ENCODE(value).encode("utf-8", "surrogatepass")
    except (TypeError, RecursionError):  # keys of mixed types cannot be sorted
        return repr(value).encode("utf-8", "surrogatepass")


def _field_digest(value: Any) -> bytes:
    if type(value) is FrozenDict:
        return memoized(value, _DIGEST, _digest_of_text)
    return _digest_of_text(value)


def _digest_of_text(value: Any) -> bytes:
    return _hash(_text(value))


class ObjectStore:
    """Objects by key; iteration is always in sorted key order, for determinism.

    Objects are indexed by kind and by label so that finding an XR's composed
    resources, listing a kind or selecting by labels does not scan the store.
    The index holds a copy of each object's labels, taken on `put` and
    renewed by `touch`/`refresh`, so a label changed in place is indexed once
    the change is noted.

    Every object has a version, a number that changes exactly when its content
    does (like Kubernetes' resourceVersion, but content-based: putting an equal
    object keeps it). A change made in place becomes visible to `version` only
    after `touch(key)` or `refresh()`.
    """

    def __init__(self, objects: Mapping[Key, Obj] | None = None) -> None:
        """Create a store, optionally from a mapping of key to object."""
        self._objects: dict[Key, Obj] = {}
        self._labels: dict[Key, dict[str, str]] = {}
        self._by_candidate: dict[str, set[Key]] = {}
        """Keys by the one composite name that can compose them (`_candidate_name`)."""
        self._candidate: dict[Key, str] = {}
        self._candidate_versions: dict[str, int] = {}
        self._by_owner: dict[str, set[Key]] = {}
        self._owners: dict[Key, tuple[str, ...]] = {}
        self._by_label: dict[tuple[str, str, str, str], set[Key]] = {}
        self._selected: set[tuple[str, str, str]] = set()
        """The (apiVersion, kind, label key)s a selection asked for: only their
        values are indexed (most labels of a fleet are never selected on)."""
        self._by_kind: dict[tuple[str, str], set[Key]] = {}
        self._sorted: dict[tuple[str, str], tuple[Key, ...]] = {}
        self._all_sorted: tuple[Key, ...] | None = None
        self._content: dict[Key, tuple[bytes | None, bytes]] = {}
        """Per object, digests of its exact bytes (None: marshal refused it) and its
        text (`_text_digest`)."""
        self._kind_versions: dict[tuple[str, str], int] = {}
        self._kind_bodies: dict[tuple[str, str], int] = {}
        """Per kind, a version that changes only when an object's content other than
        its status does (or one is added or removed): most changes are reports."""
        self._versions: dict[Key, int] = {}
        for obj in (objects or {}).values():
            self.put(obj)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def __iter__(self) -> Iterator[Key]:
        return iter(self._keys())

    def get(self, key: Key) -> Obj | None:
        """The stored object (not a copy), or None."""
        return self._objects.get(key)

    def put(self, obj: Obj, key: Key | None = None) -> Key:
        """Insert or replace an object; returns its key (`key`, when the caller has it)."""
        if key is None:
            key = Key.of(obj)
        old = self._objects.get(key)
        if old is None:
            self._by_kind.setdefault(key[:2], set()).add(key)
            self._sorted.pop(key[:2], None)
            self._all_sorted = None
        self._objects[key] = obj
        self._index(key, obj)
        if self._note(key, obj) or old is None:
            self._bump(key)
        elif old is not obj and key in self._candidate:
            # Equal content in a new dict: who holds the old one must look again.
            self._candidate_versions[self._candidate[key]] = next(_VERSIONS)
        return key

    def _note(self, key: Key, obj: Obj, text_of: Callable[[Obj], bytes] = _text_digest) -> bool:
        """Record the object's content; returns whether it differs from the last recorded.

        Only digests are kept, not a copy of the content: one of marshal's
        exact bytes (done in C, cheap), which settles an unchanged object at
        once, and one of its key-sorted JSON text (`text_of`), which decides
        otherwise: content is compared key order aside and value types not (1,
        1.0 and True differ).
        """
        old = self._content.get(key)
        # An object marshal refused (it holds read-only containers) is refused
        # again: it is not tried twice.
        data = _marshalled(obj) if old is None or old[0] is not None else None
        exact = _hash(data) if data is not None else None
        if old is not None and exact is not None and old[0] == exact:
            return False
        text = text_of(obj)
        self._content[key] = (exact, text)
        if old is None or old[1][:_BODY] != text[:_BODY]:
            self._kind_bodies[key[:2]] = next(_VERSIONS)
        return old is None or old[1] != text

    def delete(self, key: Key) -> None:
        """Remove an object if present."""
        old = self._objects.pop(key, None)
        if old is None:
            return
        self._unindex(key)
        self._index_owners(key, ())
        self._index_candidate(key, None)
        self._owners.pop(key, None)
        self._by_kind.get(key[:2], set()).discard(key)
        self._sorted.pop(key[:2], None)
        self._all_sorted = None
        self._content.pop(key, None)
        self._versions.pop(key, None)
        self._kind_versions[key[:2]] = self._kind_bodies[key[:2]] = next(_VERSIONS)

    def _index(self, key: Key, obj: Obj) -> None:
        """Index the object's owners and labels, unless they are those indexed already."""
        self._index_owners(key, _owner_names(obj))
        self._index_candidate(key, _candidate_name(obj))
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if self._labels.get(key) == labels:
            return
        self._unindex(key)
        # A read-only label set (`Interner`) cannot change under the index: shared.
        self._labels[key] = labels if type(labels) is FrozenDict else dict(labels)
        for k, v in labels.items():
            if (key[0], key[1], k) in self._selected:
                self._index_label(key, k, v)

    def _index_candidate(self, key: Key, name: str | None) -> None:
        old = self._candidate.get(key)
        if name == old:
            return
        if old is not None:
            self._by_candidate[old].discard(key)
            del self._candidate[key]
            self._candidate_versions[old] = next(_VERSIONS)
        if name is not None:
            self._by_candidate.setdefault(name, set()).add(key)
            self._candidate[key] = name
            self._candidate_versions[name] = next(_VERSIONS)

    def _index_owners(self, key: Key, names: tuple[str, ...]) -> None:
        old = self._owners.get(key, ())
        if names == old:
            return
        for name in old:
            if name not in names:
                self._by_owner.get(name, set()).discard(key)
        for name in names:
            if name not in old:
                self._by_owner.setdefault(name, set()).add(key)
        if names:
            self._owners[key] = names
        else:
            self._owners.pop(key, None)

    def _unindex(self, key: Key) -> None:
        old = self._labels.pop(key, {})
        for k, v in old.items():
            self._by_label.get((key[0], key[1], k, v), set()).discard(key)

    def _bump(self, key: Key) -> None:
        self._versions[key] = self._kind_versions[key[:2]] = version = next(_VERSIONS)
        name = self._candidate.get(key)
        if name is not None:
            self._candidate_versions[name] = version

    def candidates_version(self, name: str) -> int | None:
        """A number that changes whenever a candidate of the composite called `name`
        (`candidates_of`) is added, changed or removed."""
        return self._candidate_versions.get(name)

    def body(self, key: Key) -> bytes | None:
        """A digest of the object's content but its status, or None when it is absent:
        equal digests, equal everything else (what a composer applies)."""
        content = self._content.get(key)
        return None if content is None else content[1][:_BODY]

    def kind_version(self, api_version: str, kind: str) -> int | None:
        """A number that changes whenever an object of the kind is added, changed or removed."""
        return self._kind_versions.get((api_version, kind))

    def kind_body_version(self, api_version: str, kind: str) -> int | None:
        """`kind_version`, changing only when an object of the kind is added or removed,
        or its content other than its status (`body`) changed."""
        return self._kind_bodies.get((api_version, kind))

    def version(self, key: Key) -> int | None:
        """The object's current version, or None when it is absent."""
        return self._versions.get(key)

    def touch(self, key: Key) -> bool:
        """Take note of in-place changes to one object; returns whether its content changed."""
        obj = self._objects.get(key)
        if obj is None:
            return False
        self._index(key, obj)
        if not self._note(key, obj):
            return False
        self._bump(key)
        return True

    def touch_status(self, key: Key) -> bool:
        """`touch` for an object whose status alone was changed in place (a provider's
        report): its other fields are as last noted, so their digest is kept and only
        the status is digested again. Returns whether its content changed."""
        obj = self._objects.get(key)
        old = self._content.get(key)
        # Keys of mixed types are digested whole (`_text_digest`): no body part to keep.
        if obj is None or old is None or not all(type(k) is str for k in obj):
            return self.touch(key)
        body = old[1][:_BODY]
        if not self._note(key, obj, lambda o: _with_status(body, o.get("status", _NO_STATUS))):
            return False
        self._bump(key)
        return True

    def refresh(self) -> list[Key]:
        """Take note of in-place changes to every object; returns the keys that changed."""
        return [key for key in list(self._objects) if self.touch(key)]

    def versions(self) -> dict[Key, int]:
        """The version of every object (a copy): two maps differ exactly where content did."""
        return dict(self._versions)

    def candidates_of(self, xr: Mapping[str, Any]) -> list[Obj]:
        """Objects that may be composed by xr, in key order: those whose controller
        ownerReference names it, or without one, whose composite label does.

        A superset of its composed resources (`owned_by` decides): indexed by
        that one name, a root composite's candidates are its own resources,
        not every resource of its tree (which all carry its label).
        """
        return [obj for _, obj in self.candidate_pairs(xr)]

    def candidate_pairs(self, xr: Mapping[str, Any]) -> list[tuple[Key, Obj]]:
        """`candidates_of(xr)`, each with its key."""
        name = str((xr.get("metadata") or {}).get("name", ""))
        return [(k, self._objects[k]) for k in sorted(self._by_candidate.get(name, ()))]

    def owned_by_name(self, name: str) -> list[Obj]:
        """Objects with an ownerReference to an object called `name`, in key order."""
        return [self._objects[k] for k in sorted(self._by_owner.get(name, ()))]

    def kinds(self) -> list[tuple[str, str]]:
        """Every (apiVersion, kind) the store holds objects of, sorted."""
        return sorted(k for k, keys in self._by_kind.items() if keys)

    def items(self) -> list[tuple[Key, Obj]]:
        """Every (key, object) pair in key order."""
        return [(k, self._objects[k]) for k in self._keys()]

    def objects(self) -> list[Obj]:
        """Every object in key order."""
        return [self._objects[k] for k in self._keys()]

    def _keys(self) -> tuple[Key, ...]:
        """Every key in order; sorted again only after a key was added or removed."""
        if self._all_sorted is None:
            self._all_sorted = tuple(sorted(self._objects))
        return self._all_sorted

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]:
        """Objects of a kind, optionally in one namespace and carrying every given label."""
        return [obj for _, obj in self.select(api_version, kind, namespace, labels)]

    def select(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[tuple[Key, Obj]]:
        """Like `list`, with each object's key."""
        keys: Iterable[Key] = (
            self._labelled(api_version, kind, labels)
            if labels
            else self._kind_keys((api_version, kind))
        )
        return [
            (key, self._objects[key])
            for key in keys
            if namespace is None or key.namespace == namespace
        ]

    def _labelled(
        self, api_version: str, kind: str, labels: Mapping[str, str]
    ) -> builtins.list[Key]:
        """Keys of a kind carrying every given label, in key order, from the label index."""
        for k in labels:
            self._select(api_version, kind, k)
        sets = [self._by_label.get((api_version, kind, k, v), set()) for k, v in labels.items()]
        sets.sort(key=len)
        return sorted(sets[0].intersection(*sets[1:]))

    def _select(self, api_version: str, kind: str, label: str) -> None:
        """Index the values of `label` on the kind's objects, from now on."""
        if (api_version, kind, label) in self._selected:
            return
        self._selected.add((api_version, kind, label))
        for key in self._by_kind.get((api_version, kind), ()):
            labels = self._labels.get(key) or {}
            if label in labels:
                self._index_label(key, label, labels[label])

    def _index_label(self, key: Key, label: str, value: str) -> None:
        self._by_label.setdefault((key[0], key[1], label, value), set()).add(key)

    def _kind_keys(self, kind: tuple[str, str]) -> tuple[Key, ...]:
        keys = self._sorted.get(kind)
        if keys is None:
            keys = self._sorted[kind] = tuple(sorted(self._by_kind.get(kind, ())))
        return keys

    def snapshot(self) -> dict[Key, Obj]:
        """A deep copy of the contents, for change detection."""
        return copy.deepcopy(self._objects)
