"""What a function call reads, by version: Crossplane's observer and fetcher, embedded.

Crossplane's composite reconciler hands a function call three things it reads
from the API server: the observed composite, its observed composed resources
(its `ComposedResourceObserver`) and the resources the function required (its
required-resources fetcher, by selector). `Fetcher` reads the same from the
store, and keeps each reading by version so that an object, a selector or an
XR's composed resources unchanged since the last call cost nothing: an
object's Struct and read-only copy are built once per version, an XR's
composed resources are looked up again only after one of its candidates
changed, and a selector is listed again only after its kind changed.

It also answers the question behind the engine's skipped calls: would a call
for an XR now see exactly what an earlier one saw (`Inputs`), by version?
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.api import constants as c
from modelplane.api.frozen import FrozenDict, Interner
from modelplane.compose.types import Resource
from modelplane.crossplane.convert import dict_to_struct, freeze_stored, lossy_conversions
from modelplane.local.store import Key, Obj, ObjectStore, composed_by

__all__ = ["Fetch", "Fetched", "Fetcher", "Inputs", "Version", "resource_name"]

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


@dataclass(frozen=True)
class Inputs:
    """Everything one function call for an XR saw, by version."""

    composite: Version
    observed: tuple[tuple[str, Version], ...]
    fetched: tuple[tuple[Fetch, ...], ...]
    candidates: int | None = None
    """The version of the XR's candidates (`ObjectStore.candidates_version`) that
    `observed` was read at, when known: while it holds, so does every version in
    `observed`."""


def resource_name(obj: Mapping[str, Any]) -> str | None:
    """The composition resource name Crossplane annotates a composed resource with."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(c.XP_ANNOTATION_RESOURCE_NAME)


class Fetcher:
    """Reads what function calls see from `store`, each reading kept by version.

    Its read-only copies are built through `interner` (the engine's, cleared
    after each round), so what they repeat of the store is shared with it.
    """

    def __init__(self, store: ObjectStore, interner: Interner) -> None:
        """Read from `store`; build read-only copies through `interner`."""
        self.store = store
        self._interner = interner
        self._read: dict[Key, tuple[int, FrozenDict]] = {}
        self._structs: dict[Key, tuple[int, structpb.Struct]] = {}
        self._observed_by_xr: dict[Key, tuple[int | None, dict[str, Obj], dict[str, Key]]] = {}
        """Each XR's composed resources, with its candidates' version then, and their keys."""
        self._found_by_selector: dict[bytes, tuple[int | None, tuple[Version, ...], list[Obj]]] = {}
        """What each selector last fetched: by version, the objects, and its kind's
        version then."""
        self._frozen_lists: dict[bytes, tuple[tuple[Version, ...], list[Resource]]] = {}
        """What each selector last fetched, by version, and those objects frozen."""

    # -- the observed composite and its composed resources ----------------

    def observed(self, xr: Obj, key: Key | None = None) -> dict[str, Obj]:
        """The XR's composed resources by resource name (a mapping callers only read),
        looked up again only after one of its candidates changed; `key` is the XR's."""
        if key is None:
            key = Key.of(xr)
        version = self.store.candidates_version(key.name)
        cached = self._observed_by_xr.get(key)
        if cached is not None and version is not None and cached[0] == version:
            return cached[1]
        observed, keys = self._lookup_observed(xr)
        self._observed_by_xr[key] = (version, observed, keys)
        return observed

    def observed_keys(self, xr: Key, observed: Mapping[str, Obj]) -> Mapping[str, Key]:
        """The keys of `observed`'s objects by resource name: those found with it when it
        is the reading `observed` last gave XR `xr`, else computed."""
        cached = self._observed_by_xr.get(xr)
        if cached is not None and cached[1] is observed:
            return cached[2]
        return {name: Key.of(obj) for name, obj in observed.items()}

    def _lookup_observed(self, xr: Obj) -> tuple[dict[str, Obj], dict[str, Key]]:
        observed: dict[str, Obj] = {}
        keys: dict[str, Key] = {}
        owned = composed_by(xr)
        for key, obj in self.store.candidate_pairs(xr):
            name = resource_name(obj)
            # Crossplane cannot address a composed resource without the
            # annotation, so such objects are left alone (not observed, not GC'd).
            if name and owned(obj) and name not in observed:
                observed[name] = obj
                keys[name] = key
        return observed, keys

    def struct(self, obj: Obj) -> structpb.Struct:
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

    def frozen(self, obj: Obj, key: Key | None = None) -> FrozenDict:
        """The object as the function would decode its Struct (`struct`), built once
        per version: read-only, with its version as `metadata.resourceVersion`.

        Its read-only containers are the store's own, and the ones built here
        the interner's: what a new version repeats of an earlier one (and what
        was remembered on it, `memoized`) is the same object. `key` is the
        object's key, when the caller has it.
        """
        if key is None:
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
            _share(obj, frozen)
        return frozen

    # -- required resources, by selector ----------------------------------

    def require(self, requirements: fnv1.Requirements) -> Fetched:
        """Fetch what the function asked for, like Crossplane (anew each time)."""
        fetches: Fetched = []
        for field_name, wanted in (
            ("required", requirements.resources),
            ("extra", requirements.extra_resources),
        ):
            for name, selector in sorted(wanted.items()):
                signature = selector.SerializeToString(deterministic=True)
                # The versions as `found` keeps them: one tuple for every call
                # that asks the same (a fleet's clusters, asked by every deployment).
                found, objs = self.found(signature, selector)
                kept = fnv1.ResourceSelector()
                kept.CopyFrom(selector)
                fetches.append((Fetch(field_name, name, kept, found, signature), list(objs)))
        return fetches

    def found(
        self, signature: bytes, selector: fnv1.ResourceSelector
    ) -> tuple[tuple[Version, ...], list[Obj]]:
        """What `selector` (known by `signature`) fetches now, by version, and the
        objects; listed again only after its kind changed."""
        kind = self.store.kind_version(selector.api_version, selector.kind)
        cached = self._found_by_selector.get(signature)
        if cached is not None and cached[0] == kind:
            return cached[1], cached[2]
        fetched = self._select(selector)
        version = self.store.version
        found = tuple((key, version(key)) for key, _ in fetched)
        objs = [obj for _, obj in fetched]
        self._found_by_selector[signature] = (kind, found, objs)
        return found, objs

    def _select(self, selector: fnv1.ResourceSelector) -> list[tuple[Key, Obj]]:
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

    def frozen_all(self, fetch: Fetch, objs: list[Obj]) -> list[Resource]:
        """`frozen` of every object a requirement fetched, as a new list.

        A selector that fetches the same objects at the same versions as last
        time gets the same frozen objects: the list is kept per selector and
        copied, not rebuilt (a fleet's clusters are fetched by every call).
        """
        signature = fetch.signature
        cached = self._frozen_lists.get(signature)
        if cached is not None and cached[0] == fetch.found:
            return list(cached[1])
        # `found` lists the fetched objects' keys in their order.
        frozen: list[Resource] = [
            self.frozen(o, key) for o, (key, _) in zip(objs, fetch.found, strict=True)
        ]
        if all(version is not None for _, version in fetch.found):
            self._frozen_lists[signature] = (fetch.found, frozen)
        return list(frozen)

    def forget_stale_lists(self) -> None:
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

    # -- what a call saw ---------------------------------------------------

    def inputs(
        self,
        key: Key,
        xr: Obj,
        observed: Mapping[str, Obj],
        fetched: tuple[tuple[Fetch, ...], ...],
    ) -> Inputs:
        """What a call for `xr` (at `key`) that read `observed` and `fetched` saw, by
        version now."""
        keys = self.observed_keys(key, observed)
        version = self.store.version
        return Inputs(
            composite=(key, version(key)),
            observed=tuple((name, (keys[name], version(keys[name]))) for name in sorted(observed)),
            fetched=fetched,
            candidates=self._read_at(key, observed),
        )

    def _read_at(self, key: Key, observed: Mapping[str, Obj]) -> int | None:
        """The candidates' version `observed` is the reading of (`observed`), if it is
        the one kept for the XR at `key` and still current; else None."""
        cached = self._observed_by_xr.get(key)
        now = self.store.candidates_version(key.name)
        if cached is None or cached[1] is not observed or now is None or cached[0] != now:
            return None
        return now

    def sees(self, key: Key, observed: Mapping[str, Obj], inputs: Inputs) -> bool:
        """Whether a call of the function for the XR at `key` would see `inputs` now, by
        version.

        The selectors are those `inputs` fetched with (an earlier call's); since
        the function is pure, equal inputs mean it would ask for the same.
        """
        if (key, self.store.version(key)) != inputs.composite:
            return False
        if len(observed) != len(inputs.observed):
            return False
        # While the candidates' version holds, every observed version does too.
        candidates = inputs.candidates
        current = candidates is not None and self._read_at(key, observed) == candidates
        if not current and not self._observed_still(key, observed, inputs):
            return False
        return all(
            self.found(f.signature, f.selector)[0] == f.found
            for iteration in inputs.fetched
            for f in iteration
        )

    def _observed_still(self, xr: Key, observed: Mapping[str, Obj], inputs: Inputs) -> bool:
        """Whether `observed` (the XR `xr`'s) holds the resources `inputs` saw, each at its
        version then."""
        version = self.store.version
        keys = self.observed_keys(xr, observed)
        now = sorted(observed)
        for (name, (key, seen)), now_name in zip(inputs.observed, now, strict=True):
            if name != now_name or key != keys[name] or version(key) != seen:
                return False
        return True


def _share(obj: Obj, frozen: FrozenDict) -> None:
    """Let the store keep the read-only fields of `frozen`, a copy of `obj` equal
    to it exactly (types included), not a second plain copy of them.

    The next version is then frozen without walking what it repeats. Whoever
    changes a field replaces what it changes (a status through
    `conditions.writable_dict`, the spec in the engine's `_resource_refs`); the
    metadata stays the store's own.
    """
    for field_name, value in list(obj.items()):
        if field_name != "metadata" and type(value) in (dict, list):
            obj[field_name] = frozen[field_name]
