"""What the simulated providers read in their last pass over each object.

Simulating an object is idempotent: against the same reads it leaves the
object exactly as the last pass did. So an object unchanged since its last
pass (by store version), whose reads are unchanged too, is not simulated
again, and not digested again either.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from modelplane.local.store import Key, ObjectStore

T = TypeVar("T")


class Passes:
    """Per simulation step and object: the reads of its last pass and its version after it."""

    def __init__(self) -> None:
        """Start with no pass recorded: everything is simulated."""
        self._last: dict[tuple[str, Key], tuple[int | None, Hashable]] = {}
        self._pending: dict[tuple[str, Key], Hashable] = {}
        self._worlds: dict[str, tuple[Hashable, bool]] = {}
        self._kinds: dict[str, set[tuple[str, str]]] = {}
        self._derived: dict[str, tuple[Hashable, Any]] = {}

    def kinds(self, step: str) -> set[tuple[str, str]]:
        """The (apiVersion, kind)s `step`'s reads have looked objects up in (the caller adds)."""
        return self._kinds.setdefault(step, set())

    def world_still(self, step: str, world: Hashable) -> bool:
        """Whether what `step` reads besides its objects (`world`, a stamp of versions) is
        as its last pass left it, and did not change during that pass either.

        Then every read that pass recorded still holds: an object at its recorded
        version needs no reading at all.
        """
        last = self._worlds.get(step)
        return last is not None and last[1] and last[0] == world

    def world_after(self, step: str, start: Hashable, end: Hashable) -> None:
        """Record the world `step` saw at the start and at the end of this pass."""
        self._worlds[step] = (end, start == end)

    def derived(self, name: str, stamp: Hashable, derive: Callable[[], T]) -> T:
        """`derive()`, a value read from the store, kept while `stamp` (the versions of
        what it reads) stays the same; `derive` must return a read-only value."""
        last = self._derived.get(name)
        if last is not None and last[0] == stamp:
            return last[1]
        value = derive()
        self._derived[name] = (stamp, value)
        return value

    def current(self, step: str, store: ObjectStore, key: Key) -> bool:
        """Whether `step` last simulated the object at its current version."""
        last = self._last.get((step, key))
        return last is not None and last[0] == store.version(key)

    def unchanged(self, step: str, store: ObjectStore, key: Key, reads: Hashable) -> bool:
        """Whether `step` last simulated the object at its current version, with these reads."""
        return self._last.get((step, key)) == (store.version(key), reads)

    def last_reads(self, step: str, store: ObjectStore, key: Key) -> Hashable | None:
        """The reads `step` last simulated the object with, if it is at that pass's version.

        Whatever those reads derived from the object alone still holds then, so
        a step can keep it instead of reading the object again.
        """
        last = self._last.get((step, key))
        return last[1] if last is not None and last[0] == store.version(key) else None

    def amend(self, step: str, key: Key, reads: Hashable) -> None:
        """Replace the reads of `step`'s last pass over the object by equivalent ones.

        For reads that would have left the object as that pass did (the step
        found so and did not simulate it): its version stays the one recorded.
        """
        last = self._last.get((step, key))
        if last is not None:
            self._last[(step, key)] = (last[0], reads)

    def simulated(self, step: str, key: Key, reads: Hashable) -> None:
        """Record that `step` simulated the object now, with these reads."""
        self._pending[(step, key)] = reads

    def settle(self, store: ObjectStore) -> None:
        """Once the pass's changes are noted: remember each object's version after it."""
        for (step, key), reads in self._pending.items():
            self._last[(step, key)] = (store.version(key), reads)
        self._pending.clear()
