"""Deleting objects in the embedded control plane, the way Kubernetes and Crossplane v2 do.

Deleting an object removes it and, like Kubernetes' garbage collector,
everything it owns (composed resources follow their XR, nested XRs their own
composed resources, connection Secrets their managed resource), recursively.
Two kinds of protection hold a deletion back, as Crossplane's do:

- a Usage: the object in its `of` is not deleted while the Usage exists
  (Crossplane's webhook refuses it). A Usage is owned by the object in its
  `by`, so it is garbage-collected once that object is gone, and a deleted
  Usage waits for its `by` to be gone; then `replayDeletion` lets the blocked
  deletion through. A Usage without `by`, or whose `by` does not exist,
  protects `of` until something deletes the Usage itself;
- a provider config is not deleted while a managed resource still refers to
  it (crossplane-runtime's ProviderConfigUsage finalizer).

A requested deletion stays pending while it is blocked; every collection
pass deletes whatever pending object nothing blocks any more. Each pass that
deleted something is one wave of the deletion order. Whatever is still pending
when the control plane reaches a fixed point is stuck: `stuck` names each such
object, what blocks it and why that never ends (a Usage cycle, a user that
nothing deletes, a Usage whose user is missing), so a deletion never hangs
silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from modelplane.local.store import Key, Obj, ObjectStore, composed_by

USAGE_KINDS = (
    ("protection.crossplane.io", "Usage"),
    ("protection.crossplane.io", "ClusterUsage"),
    ("apiextensions.crossplane.io", "Usage"),
)
PROVIDER_CONFIG_KINDS = frozenset({"ProviderConfig", "ClusterProviderConfig"})

REQUESTED = "requested"
"""Why an object is pending: a user asked for its deletion."""
GARBAGE = "garbage"
"""Why an object is pending: its owner is gone (a live owner applying it again cancels this)."""
UNDESIRED = "undesired"
"""Why an object is pending: its XR no longer desires it."""


@dataclass(frozen=True)
class UsageEdge:
    """One Usage: `of` waits for `by` (or for the Usage itself when it has no `by`)."""

    usage: Key
    of: Key
    by: Key | None


@dataclass(frozen=True)
class Blocker:
    """Why one object cannot be deleted yet, and whose deletion would unblock it."""

    via: Key
    """The Usage, or for a provider config the managed resource using it."""
    user: Key | None
    """The object that must go first (a Usage's existing `by`); None when only
    deleting the Usage itself helps (it has no `by`, or its `by` is missing)."""
    missing: Key | None = None
    """The Usage's `by` when that object does not exist."""

    def __str__(self) -> str:
        if self.user is not None:
            return (
                f"in use by {self.user}"
                if self.user == self.via
                else (f"in use by {self.user} ({self.via})")
            )
        if self.missing is not None:
            return f"protected by {self.via}, whose user {self.missing} does not exist"
        return f"protected by {self.via}, which has no spec.by"


@dataclass(frozen=True)
class _Index:
    """The store's Usages by the object they protect and by their user."""

    by_of: dict[Key, list[UsageEdge]]
    by_user: dict[Key, list[UsageEdge]]


@dataclass(frozen=True)
class Wave:
    """Objects deleted together in one collection pass, after every earlier wave."""

    round: int
    """The reconcile round it happened in (0: when the deletion was requested)."""
    keys: tuple[Key, ...]


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def is_usage(obj: Obj) -> bool:
    """Whether an object is a Crossplane Usage or ClusterUsage."""
    return (_group(str(obj.get("apiVersion", ""))), obj.get("kind")) in USAGE_KINDS


def _ref_key(usage: Obj, side: str) -> Key | None:
    ref = (usage.get("spec") or {}).get(side) or {}
    resource = ref.get("resourceRef") or {}
    name = resource.get("name")
    if not name:
        return None
    namespace = resource.get("namespace") or (usage.get("metadata") or {}).get("namespace") or ""
    return Key(str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(namespace), name)


def user_key(usage: Obj) -> Key | None:
    """The key of a Usage's user (`spec.by.resourceRef`), None when it names none."""
    return _ref_key(usage, "by")


def usage_edges(usages: Iterable[Obj]) -> list[UsageEdge]:
    """The edges of every Usage that names its `of` (one without `of` protects nothing)."""
    out = []
    for u in usages:
        of = _ref_key(u, "of")
        if of is not None:
            out.append(UsageEdge(Key.of(u), of, _ref_key(u, "by")))
    return out


def _store_usages(store: ObjectStore) -> list[Obj]:
    return [obj for _, obj in store_usages(store)]


def store_usages(store: ObjectStore) -> list[tuple[Key, Obj]]:
    """Every Usage and ClusterUsage in the store, with its key, in kind then key order."""
    return [
        pair
        for api_version, kind in store.kinds()
        if (_group(api_version), kind) in USAGE_KINDS
        for pair in store.select(api_version, kind)
    ]


def dependents(store: ObjectStore, owner: Obj) -> list[Obj]:
    """The objects `owner` owns directly: its composed resources and anything naming it owner."""
    name = str((owner.get("metadata") or {}).get("name", ""))
    owned = composed_by(owner)
    found = {key: o for key, o in store.candidate_pairs(owner) if owned(o)}
    for obj in store.owned_by_name(name):
        if _names_owner(obj, owner):
            found.setdefault(Key.of(obj), obj)
    return [found[k] for k in sorted(found)]


def _names_owner(obj: Obj, owner: Obj) -> bool:
    om, mm = owner.get("metadata") or {}, obj.get("metadata") or {}
    if om.get("namespace") and om.get("namespace") != mm.get("namespace"):
        return False
    return any(
        (ref.get("apiVersion"), ref.get("kind"), ref.get("name"))
        == (owner.get("apiVersion"), owner.get("kind"), om.get("name"))
        for ref in mm.get("ownerReferences") or []
    )


def _uses_provider_config(obj: Obj, pc: Key) -> bool:
    ref = (obj.get("spec") or {}).get("providerConfigRef") or {}
    if ref.get("name") != pc.name or (ref.get("kind") or pc.kind) != pc.kind:
        return False
    if pc.kind == "ProviderConfig" and pc.namespace != (obj.get("metadata") or {}).get("namespace"):
        return False
    return _group(str(obj.get("apiVersion", ""))).endswith(_group(pc.api_version))


@dataclass
class Collector:
    """The garbage collector of one store: pending deletions, what blocks them, waves done."""

    store: ObjectStore
    pending: dict[Key, str] = field(default_factory=dict)
    waves: list[Wave] = field(default_factory=list)
    record: bool = False
    """Whether `waves` records what goes (from a requested deletion on)."""

    def request(self, key: Key, why: str = REQUESTED) -> None:
        """Ask for `key`'s deletion; it happens at the next `collect` nothing blocks it in."""
        if key in self.store and key not in self.pending:
            self.pending[key] = why

    def applied(self, key: Key) -> None:
        """A live owner applied `key` again: a garbage collection of it no longer applies."""
        if self.pending.get(key) == GARBAGE:
            del self.pending[key]

    def blockers(self, key: Key, index: _Index) -> list[Blocker]:
        """Everything that keeps `key` from being deleted now."""
        out = [
            self._usage_blocker(edge)
            for edge in index.by_of.get(key, ())
            if edge.usage in self.store and edge.by != key
        ]
        out += self._usage_waits(key)
        if key.kind in PROVIDER_CONFIG_KINDS:
            out += [
                Blocker(k, k)
                for k, obj in self.store.items()
                if k != key and _uses_provider_config(obj, key)
            ]
        return out

    def _usage_blocker(self, edge: UsageEdge) -> Blocker:
        """A live Usage of the object: its user must go (which collects the Usage)."""
        if edge.by is None:
            return Blocker(edge.usage, None)
        if edge.by not in self.store:
            return Blocker(edge.usage, None, missing=edge.by)
        return Blocker(edge.usage, edge.by)

    def _usage_waits(self, key: Key) -> list[Blocker]:
        """A deleted Usage waits for its `by` to be gone."""
        obj = self.store.get(key)
        if obj is None or not is_usage(obj):
            return []
        by = _ref_key(obj, "by")
        return [Blocker(by, by)] if by is not None and by in self.store and by != key else []

    def _index(self) -> _Index:
        index = _Index({}, {})
        for edge in usage_edges(_store_usages(self.store)):
            index.by_of.setdefault(edge.of, []).append(edge)
            if edge.by is not None:
                index.by_user.setdefault(edge.by, []).append(edge)
        return index

    def collect(self, round_: int) -> list[Key]:
        """Delete, pass after pass, every pending object nothing blocks; returns what went."""
        gone: list[Key] = []
        while self.pending:
            index = self._index()
            for key in [k for k in self.pending if k not in self.store]:
                del self.pending[key]
            wave = [k for k in sorted(self.pending) if not self.blockers(k, index)]
            if not wave:
                break
            for key in wave:
                self._remove(key, index)
            if self.record:
                self.waves.append(Wave(round_, tuple(wave)))
            gone += wave
        return gone

    def _remove(self, key: Key, index: _Index) -> None:
        obj = self.store.get(key)
        self.pending.pop(key, None)
        if obj is None:
            return
        self.store.delete(key)
        for child in dependents(self.store, obj):
            self.request(Key.of(child), GARBAGE)
        # Crossplane makes a Usage's user its owner: the Usage follows its user.
        for edge in index.by_user.get(key, ()):
            self.request(edge.usage, GARBAGE)

    def stuck(self) -> list[str]:
        """One message per pending object that cannot go, naming what blocks it and why."""
        index = self._index()
        out = []
        for key in sorted(k for k in self.pending if k in self.store):
            reasons = [self._why(key, b, index) for b in self.blockers(key, index)]
            out.append(f"{key} cannot be deleted: " + "; ".join(reasons))
        return out

    def _why(self, key: Key, blocker: Blocker, index: _Index) -> str:
        if blocker.user is None:
            return f"{blocker}, and nothing deletes that Usage"
        if blocker.user not in self.pending:
            return f"{blocker}, and nothing deletes {blocker.user}"
        cycle = self._cycle(key, index)
        if cycle:
            return f"{blocker}: a Usage cycle " + " → ".join(str(k) for k in cycle)
        cycle = self._cycle(blocker.user, index)
        if cycle:
            return f"{blocker}, which is in a Usage cycle " + " → ".join(str(k) for k in cycle)
        return f"{blocker}, which is itself stuck"

    def _cycle(self, start: Key, index: _Index) -> list[Key]:
        """A path of pending users from `start` back to itself, if there is one."""
        stack: list[tuple[Key, list[Key]]] = [(start, [start])]
        seen: set[Key] = set()
        while stack:
            key, path = stack.pop()
            for b in self.blockers(key, index):
                user = b.user
                if user == start:
                    return [*path, start]
                if user is not None and user in self.pending and user not in seen:
                    seen.add(user)
                    stack.append((user, [*path, user]))
        return []


def resolve(store: ObjectStore, ref: str) -> Key:
    """The key `KIND/NAME` or `KIND/NAMESPACE/NAME` names (KIND may be `Kind.group`).

    Raises ValueError naming the candidates when there is no match or more than one.
    """
    parts = ref.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise ValueError(f"{ref!r}: expected KIND/NAME or KIND/NAMESPACE/NAME")
    kind, _, group = parts[0].partition(".")
    namespace = parts[1] if len(parts) == 3 else None
    found = [
        key
        for key in store
        if key.kind.lower() == kind.lower()
        and key.name == parts[-1]
        and (namespace is None or key.namespace == namespace)
        and (not group or _group(key.api_version) == group.lower())
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ValueError(f"{ref!r}: no such object in the render")
    names = ", ".join(f"{k.kind}.{_group(k.api_version)}/{str(k).split(' ', 1)[1]}" for k in found)
    raise ValueError(f"{ref!r} is ambiguous: {names}; add .GROUP or the namespace")


def wave_lines(waves: list[Wave]) -> list[tuple[str, list[str]]]:
    """Each wave as a title and one line per kind: `Kind (group): ns/name, ...`."""
    out = []
    for i, wave in enumerate(waves, 1):
        by_kind: dict[tuple[str, str], list[str]] = {}
        for key in wave.keys:
            where = f"{key.namespace}/{key.name}" if key.namespace else key.name
            by_kind.setdefault((key.kind, _group(key.api_version) or "core"), []).append(where)
        when = "at once" if wave.round == 0 else f"round {wave.round}"
        lines = [
            f"{kind} ({group}): {', '.join(names)}"
            for (kind, group), names in sorted(by_kind.items())
        ]
        out.append((f"wave {i} ({when})", lines))
    return out
