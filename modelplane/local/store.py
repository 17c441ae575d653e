"""An in-memory object store keyed like the Kubernetes API: (apiVersion, kind, namespace, name)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

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
        return cls(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(m.get("namespace") or ""),
            str(m.get("name", "")),
        )


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """An object's labels ({} when none)."""
    return dict((obj.get("metadata") or {}).get("labels") or {})


COMPOSITE_LABEL = "crossplane.io/composite"


class ObjectStore:
    """Objects by key; iteration is always in sorted key order, for determinism.

    Objects are indexed by Crossplane's composite label so that finding an XR's
    composed resources does not scan the store. Labels must only change
    through `put` (replace the object), never by mutating a stored object.
    """

    def __init__(self, objects: Mapping[Key, Obj] | None = None) -> None:
        """Create a store, optionally from a mapping of key to object."""
        self._objects: dict[Key, Obj] = {}
        self._by_composite: dict[str, set[Key]] = {}
        for obj in (objects or {}).values():
            self.put(obj)

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def __iter__(self) -> Iterator[Key]:
        return iter(sorted(self._objects))

    def get(self, key: Key) -> Obj | None:
        """The stored object (not a copy), or None."""
        return self._objects.get(key)

    def put(self, obj: Obj) -> Key:
        """Insert or replace an object; returns its key."""
        key = Key.of(obj)
        self.delete(key)
        self._objects[key] = obj
        owner = labels_of(obj).get(COMPOSITE_LABEL)
        if owner is not None:
            self._by_composite.setdefault(owner, set()).add(key)
        return key

    def delete(self, key: Key) -> None:
        """Remove an object if present."""
        old = self._objects.pop(key, None)
        owner = labels_of(old).get(COMPOSITE_LABEL) if old is not None else None
        if owner is not None:
            self._by_composite.get(owner, set()).discard(key)

    def labelled_composite(self, name: str) -> list[Obj]:
        """Objects whose `crossplane.io/composite` label is `name`, in key order."""
        return [self._objects[k] for k in sorted(self._by_composite.get(name, ()))]

    def items(self) -> list[tuple[Key, Obj]]:
        """Every (key, object) pair in key order."""
        return [(k, self._objects[k]) for k in sorted(self._objects)]

    def objects(self) -> list[Obj]:
        """Every object in key order."""
        return [self._objects[k] for k in sorted(self._objects)]

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]:
        """Objects of a kind, optionally in one namespace and carrying every given label."""
        out = []
        for key in sorted(self._objects):
            if key.api_version != api_version or key.kind != kind:
                continue
            if namespace is not None and key.namespace != namespace:
                continue
            obj = self._objects[key]
            if labels:
                have = labels_of(obj)
                if any(have.get(k) != v for k, v in labels.items()):
                    continue
            out.append(obj)
        return out

    def snapshot(self) -> dict[Key, Obj]:
        """A deep copy of the contents, for change detection."""
        return copy.deepcopy(self._objects)
