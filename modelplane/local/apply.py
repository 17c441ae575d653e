"""Applying desired composed resources: Crossplane's applicator, embedded.

Crossplane applies what a function desires with server-side apply, sets the
composed resource's metadata itself (a generated name, the XR's namespace, the
composite label, the resource-name annotation, the XR as controller) and
refuses an object another controller owns. `Applicator` does the same on the
store, with a simplified merge (desired fields win; status and identity stay).

What a write would not change is not written: applying is idempotent, so a
desired object equal (by `digest`) to the one last applied under its name,
onto an object nobody changed since but for its status, is not applied again
(`Applied` records what each apply left).
"""

from __future__ import annotations

import hashlib
import marshal
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, FrozenList, Interner, memoized
from modelplane.compose.types import Resource
from modelplane.crossplane.convert import as_stored
from modelplane.local.conditions import Clock
from modelplane.local.deletion import Collector
from modelplane.local.loader import scope_of
from modelplane.local.store import Key, Obj, ObjectStore, body_digest, owned_by

__all__ = [
    "UID_NAMESPACE",
    "Applicator",
    "Applied",
    "Identity",
    "digest",
    "identity",
    "uid_of",
]

UID_NAMESPACE = uuid.UUID("8a0e5d8c-4a7e-4bd6-9a3c-6d6f64656c70")
"""The namespace of the uuid5 a created object's uid is (`uid_of`)."""
_UID_PREFIX = UID_NAMESPACE.bytes

Identity = tuple[Key, str, str]
"""An XR's key, uid and root composite (`identity`)."""

Desired = Mapping[str, tuple[Obj | None, bool | None]]
"""Desired composed resources by name, each converted for the store (None: equal
to the one last applied under its name, see `Applied`) with the function's readiness."""


class Applied(NamedTuple):
    """What applying one desired composed resource last left in the store.

    Applying is idempotent: an equal desired object applied to the object
    this left, unchanged since, leaves it as it is, so it is not applied again.
    """

    text: bytes
    """A digest of the composer's desired object's serialization (`digest`): equal
    digests are equal objects, value types (1, 1.0 and True differ) and key order
    included."""
    key: Key
    version: int | None
    """The applied object's store version right after it was applied."""
    body: bytes | None
    """The store's digest of everything but its status then (`ObjectStore.body`):
    a status written since (by a provider, or the object's own reconciler)
    leaves nothing for the same desired object to apply."""


def digest(desired: Resource) -> bytes:
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


def identity(xr: Obj) -> Identity:
    """An XR's key, uid and root composite: a deleted and recreated XR applies
    afresh, and so does one whose root changed (it labels what it composes)."""
    meta = xr.get("metadata") or {}
    root = (meta.get("labels") or {}).get(c.XP_LABEL_COMPOSITE) or meta.get("name")
    return Key.of(xr), str(meta.get("uid", "")), str(root)


class Applicator:
    """Applies an XR's desired composed resources to `store`, as Crossplane would.

    `delete` deletes an object the XR composed under a name it now desires
    under another key; `readiness` receives the function's readiness of every
    object applied; `collector` learns which objects are still desired.
    """

    def __init__(
        self,
        store: ObjectStore,
        interner: Interner,
        clock: Clock,
        collector: Collector,
        readiness: dict[Key, bool | None],
        delete: Callable[[Obj], None],
    ) -> None:
        """Apply to `store`, sharing metadata through `interner`; see the class."""
        self.store = store
        self._interner = interner
        self.clock = clock
        self.collector = collector
        self.readiness = readiness
        self._delete = delete
        self._applied: dict[Identity, dict[str, Applied]] = {}
        """What each XR (by key, uid and root composite, `identity`) last applied,
        by composed resource name."""

    def last(self, xr: Obj) -> Mapping[str, Applied] | None:
        """What `xr` last applied, by composed resource name (None: nothing yet)."""
        return self._applied.get(identity(xr))

    def stamp(self, obj: Obj, key: Key | None = None) -> None:
        """Give a created object the metadata an API server would: uid, creation time,
        generation (each unless it has its own); `key` is the object's, if known."""
        m = obj.setdefault("metadata", {})
        if "uid" not in m:
            m["uid"] = uid_of(Key.of(obj) if key is None else key)
        if "creationTimestamp" not in m:
            m["creationTimestamp"] = self.clock.tick()
        m.setdefault("generation", 1)

    def apply(
        self,
        xr: Obj,
        desired: Desired,
        raw: Mapping[str, tuple[Any, bytes]],
        observed: Mapping[str, Obj],
    ) -> tuple[dict[str, tuple[Obj, bool | None]], list[str]]:
        """Apply desired composed resources; returns {name: (object, function readiness)}
        and the errors of those that could not be applied.

        The desired objects are the caller's own and are taken as they are;
        `raw` holds the composer's own objects by name with their digests (for
        in-process calls), which convert the ones given as None when they must
        be applied again. One equal to what was last applied under its name,
        onto an object nobody changed since, is not applied again.
        """
        applied: dict[str, tuple[Obj, bool | None]] = {}
        errors: list[str] = []
        xr_identity = identity(xr)
        last = self._applied.pop(xr_identity, {})
        now: dict[str, Applied] = {}
        for name, (converted, ready) in sorted(desired.items()):
            current = observed.get(name)
            unchanged = (
                self._unchanged(last.get(name), current, xr_identity[1])
                if converted is None
                else None
            )
            if unchanged is None:
                obj_desired = (
                    converted if converted is not None else as_stored(raw[name][0], self._interner)
                )
                done = self._apply_one(xr, name, obj_desired, current)
                if isinstance(done, str):
                    errors.append(done)
                    continue
                obj, key = done
                if name in raw:
                    version, body = self.store.version(key), self.store.body(key)
                    now[name] = Applied(raw[name][1], key, version, body)
            else:
                obj, key = observed[name], unchanged.key
                now[name] = unchanged
            self.collector.applied(key)
            applied[name] = (obj, ready)
            self.readiness[key] = ready
        if now:
            self._applied[xr_identity] = now
        return applied, errors

    def _apply_one(
        self, xr: Obj, name: str, desired: Obj, current: Obj | None
    ) -> tuple[Obj, Key] | str:
        """Apply one desired composed resource: the object stored and its key, or why not."""
        desired.pop("status", None)
        if not desired.get("apiVersion") or not desired.get("kind"):
            return f"composed resource {name!r} has no apiVersion/kind"
        desired["metadata"] = self.composed_meta(xr, name, desired, current)
        key = Key.of(desired)
        existing = self.store.get(key)
        owner = _controller(existing) if existing is not None else None
        if owner is not None and existing is not current and not owned_by(existing or {}, xr):
            return f"cannot apply composed resource {name!r}: {key} is controlled by {owner}"
        if current is not None and current is not existing and Key.of(current) != key:
            self._delete(current)
        obj = self.merge(existing, desired, key)
        self.store.put(obj, key)
        return obj, key

    def composed_meta(
        self, xr: Obj, name: str, desired: Obj, current: Obj | None
    ) -> dict[str, Any]:
        """A composed resource's metadata as Crossplane sets it: name, namespace, owner."""
        xm = xr["metadata"]
        meta = dict(desired.get("metadata") or {})
        if current is not None:
            meta["name"] = current["metadata"]["name"]
        elif not meta.get("name"):
            suffix = hashlib.sha256("/".join((*Key.of(xr), name)).encode()).hexdigest()[:5]
            # Like Crossplane's generateName: the XR's name plus a suffix,
            # kept within a DNS label so any kind accepts it.
            meta["name"] = f"{str(xm['name'])[:57].rstrip('-.')}-{suffix}"
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

    def _unchanged(self, last: Applied | None, current: Obj | None, uid: str) -> Applied | None:
        """`last`, if the object it applied is still the XR's (uid `uid`), unchanged since
        but for its status (which applying keeps as it is) and for ownerReferences
        another manager added after the XR's own (which applying keeps too)."""
        # The object stored under the key it applied, not an equal one elsewhere: an
        # identity test, as cheap as it is exact (observed objects are the store's).
        if last is None or current is None or self.store.get(last.key) is not current:
            return None
        version = self.store.version(last.key)
        if version == last.version:
            return last
        body = self.store.body(last.key)
        if last.body is None or body is None:
            return None
        if body != last.body and not _owners_added(current, last.body, uid):
            return None
        # Not `_replace`: a named tuple's is a Python function, and this runs
        # for most of a fleet's objects once a provider reported on them.
        return Applied(last.text, last.key, version, body)

    def merge(self, existing: Obj | None, desired: Obj, key: Key | None = None) -> Obj:
        """Server-side-apply, simplified: desired fields win; status and identity stay.

        `desired` is the caller's own (decoded for this call alone), so it is
        used as it is, not copied; `key` is its key, if known.
        """
        if existing is None:
            created = _ordered_object(desired)
            self.stamp(created, key)
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
        others = _owners_set_by_others(em, dm)
        if others:
            meta["ownerReferences"] = [*(dm.get("ownerReferences") or []), *others]
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


def _owners_set_by_others(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> list[Any]:
    """The existing ownerReferences another field manager set: those the desired
    metadata does not list (by uid) and that do not claim to be the controller.

    Server-side apply keeps them (the list is a map keyed by uid), as it keeps
    the owner Crossplane's Usage controller gives a Usage. A stale controller
    reference is not kept: the composite applying is the controller.
    """
    mine = {ref.get("uid") for ref in desired.get("ownerReferences") or []}
    return [
        ref
        for ref in existing.get("ownerReferences") or []
        if ref.get("uid") not in mine and not ref.get("controller")
    ]


def _owners_added(current: Obj, body: bytes, uid: str) -> bool:
    """Whether `current` is an object whose content but status digested to `body`
    (`ObjectStore.body`), with ownerReferences appended to its own by another
    manager: neither controllers nor the applying XR's (uid `uid`), so that
    applying the same desired object again would keep them where they are
    (`_owners_set_by_others`) and change nothing. Crossplane's Usage controller
    adds such an owner to a Usage after it is applied.
    """
    meta = current.get("metadata") or {}
    refs = meta.get("ownerReferences") or []
    n = 0
    while n < len(refs) and _applier_ref(refs[n], uid):
        n += 1
    if n == len(refs) or any(_applier_ref(ref, uid) for ref in refs[n:]):
        return False
    trimmed = {k: v for k, v in current.items() if k != "status"}
    trimmed["metadata"] = {**meta, "ownerReferences": refs[:n]}
    return body_digest(trimmed) == body


def _applier_ref(ref: Any, uid: str) -> bool:
    """Whether an ownerReference is one applying sets or replaces (not another manager's);
    anything but a dict counts as one, so that an object holding it is applied again."""
    return not isinstance(ref, dict) or bool(ref.get("controller")) or ref.get("uid") == uid


def _spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


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
