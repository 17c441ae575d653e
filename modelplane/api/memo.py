"""Every process-level memo of the pure layers, in one table, and the switch that turns them off.

A memo remembers what a pure function derived, so a later call with the same
input is answered without deriving it again. The pure layers (api, dra,
scheduling, compose) keep a few of them for the embedded engine's and the
function's many calls; each is declared in `MEMOS` below with what it is keyed
by, how much it keeps, what makes an entry stale (nothing may: keys are
content or read-only objects) and the test that shows it answers as the
uncached path does. `docs/architecture.md` shows the table
(tests/architecture/test_memos.py keeps them equal).

Three mechanisms carry them:

- `Memo`: values by a hashable key, the least recently used forgotten past
  the entry's bound; `memo_function` is a function remembered that way.
- `CopiedMemo`: a `Memo` of JSON values that hands every caller its own copy.
- `remembered`: a value derived from a read-only object, kept on the object
  itself (`api.frozen.memoized`, a cluster reading's `derived`, a cluster
  table's `fleet_derived`): it lives exactly as long as the object.

The switch: with memos off (`memos_off()`, or `MODELPLANE_MEMOS=off` in the
environment of the CLI, the function and the test suite, read by
`memos_from_environment`), every memo derives afresh at every call and keeps
nothing. Answers must not change; CI renders every example both ways.
"""

from __future__ import annotations

import functools
import marshal
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

ENVIRONMENT_VARIABLE = "MODELPLANE_MEMOS"


@dataclass(frozen=True)
class MemoEntry:
    """One memo's facts: where it lives, its key, its bound, what invalidates it, its test."""

    name: str  # module.attribute of the memo (or of the function remembered)
    # Memo, CopiedMemo, memo_function, constant, remembered; two of the scheduler's
    # own, switched here too: LastRead (the last list read) and its shape table; and
    # cached_property, a reading's per-instance value (not switched: see _INSTANCE).
    mechanism: str
    key: str
    bound: int | None  # entries kept; None: the object it lives on bounds it
    invalidated_by: str
    test: str  # tests/… path of the test that shows cached = uncached


def _entry(
    name: str, mechanism: str, key: str, bound: int | None, invalidated_by: str, test: str
) -> MemoEntry:
    return MemoEntry(name, mechanism, key, bound, invalidated_by, test)


_CONTENT = "nothing: the key is the content the value is derived from"
_OBJECT = "a new object version: the memo lives on a read-only object and goes with it"
# A per-instance cache is not a process-level memo: it derives from its own frozen
# instance alone and goes with it, so it is kept with memos off too (as a constant).
_INSTANCE = (
    "nothing: a property of one frozen reading, derived from its own fields; it goes "
    "with the reading and is kept with memos off (like a constant)"
)

MEMOS: tuple[MemoEntry, ...] = (
    _entry(
        "api.frozen.memoized",
        "remembered",
        "a read-only object (FrozenDict) and a reader's name",
        None,
        _OBJECT,
        "tests/crossplane/test_decode_cache.py",
    ),
    _entry(
        "api.readers.ObservedInferenceCluster.packing",
        "cached_property",
        "a cluster reading (one object version)",
        None,
        _INSTANCE,
        "tests/architecture/test_memo_values.py",
    ),
    _entry(
        "api.readers.ObservedInferenceCluster.has_unknown_pools",
        "cached_property",
        "a cluster reading (one object version)",
        None,
        _INSTANCE,
        "tests/architecture/test_memo_values.py",
    ),
    _entry(
        "api.readers.ObservedModelReplica.order",
        "cached_property",
        "a replica reading (one object version)",
        None,
        _INSTANCE,
        "tests/architecture/test_memo_values.py",
    ),
    _entry(
        "dra._regex._compile",
        "memo_function",
        "the pattern text",
        1024,
        _CONTENT,
        "tests/dra/test_dra_cel_library_upstream.py",
    ),
    _entry(
        "dra.quantity.parse_quantity",
        "memo_function",
        "the quantity text",
        4096,
        _CONTENT,
        "tests/dra/test_dra_quantity_upstream.py",
    ),
    _entry(
        "dra.semver.parse_semver",
        "memo_function",
        "the version text and whether to normalise it",
        4096,
        _CONTENT,
        "tests/dra/test_dra_semver_upstream.py",
    ),
    _entry(
        "dra.cel._QVALS",
        "Memo",
        "a quantity's exact fields (its identity key)",
        100_000,
        _CONTENT,
        "tests/dra/test_dra_cel_library_upstream.py",
    ),
    _entry(
        "dra.cel._SVALS",
        "Memo",
        "a version's text",
        100_000,
        _CONTENT,
        "tests/dra/test_dra_cel_library_upstream.py",
    ),
    _entry(
        "dra.cel._version_value",
        "memo_function",
        "a device attribute's version text",
        65536,
        _CONTENT,
        "tests/dra/test_dra_cel_library_upstream.py",
    ),
    _entry(
        "dra.cel._capacity_value",
        "memo_function",
        "a device capacity's quantity text",
        65536,
        _CONTENT,
        "tests/dra/test_dra_cel_library_upstream.py",
    ),
    _entry(
        "dra.cel._envs",
        "constant",
        "none (the CEL environments, built on first use)",
        1,
        "nothing: a constant of the process",
        "tests/dra/test_dra_compile_upstream.py",
    ),
    _entry(
        "dra.cel._compile",
        "memo_function",
        "the expression text",
        4096,
        _CONTENT,
        "tests/dra/test_dra_compile_upstream.py",
    ),
    _entry(
        "dra.cel._selector",
        "memo_function",
        "the selector text",
        4096,
        _CONTENT,
        "tests/dra/test_dra_compile_upstream.py",
    ),
    _entry(
        "scheduling.matching._ROLE_IDS",
        "Memo",
        "a role's requests (by content)",
        4096,
        "nothing: an id is only ever compared with ids of the same process",
        "tests/scheduling/test_work_once.py",
    ),
    _entry(
        "scheduling.matching.SHARED",
        "shape table",
        "a pool's class and devices' canonical text (shapes); (expression, device text)",
        None,
        _CONTENT,
        "tests/scheduling/test_work_once.py",
    ),
    _entry(
        "scheduling.matching.cluster_pools",
        "remembered",
        "a cluster reading (one object version)",
        None,
        _OBJECT,
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.framework.fleet_derived",
        "remembered",
        "a cluster table (one list of object versions) and the deriving step's key",
        None,
        _OBJECT,
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.framework._CLUSTERS",
        "LastRead",
        "the identities of the last list of cluster objects",
        1,
        "a list holding any other object (each version is a new object)",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.framework._REPLICAS",
        "LastRead",
        "the identities of the last list of replica objects, and the label map",
        1,
        "a list holding any other object, or another label map",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.retain._LOSERS",
        "LastRead",
        "the identities of the last cluster table and shared tables; the replicas by value",
        1,
        "another table, other replicas or other preemptions",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.fill._FLEET_RUNS",
        "LastRead",
        "the identities of the last replica tuple, cluster table and shared tables",
        1,
        "another fleet, or other preemptions; off with the shared tables, new per call",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.state._BY_ORDER",
        "LastRead",
        "the identity of the last replica tuple",
        1,
        "another tuple (each fleet read is a new one)",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.retain._pool_losers",
        "remembered",
        "a cluster reading and pool, checked against the pool's holders",
        None,
        _OBJECT + "; a pool whose holders changed is computed again",
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "scheduling.ledger._REPLAYS",
        "Memo",
        "the fleet's charges on one pool (the replicas' content) and the pool",
        8192,
        _CONTENT,
        "tests/scheduling/test_fleet_caches.py",
    ),
    _entry(
        "compose.common._parser",
        "constant",
        "a spec model class",
        None,
        "nothing: one parse function per model",
        "tests/compose/test_content_memo.py",
    ),
    _entry(
        "compose.common._PARSED",
        "Memo",
        "a spec model and the spec's exact content (content_key)",
        8192,
        _CONTENT,
        "tests/compose/test_content_memo.py",
    ),
    _entry(
        "compose.clusters.drift._COMPARED",
        "Memo",
        "a published device and the wanted device, by content",
        8192,
        _CONTENT,
        "tests/compose/test_capacity_and_drift.py",
    ),
    _entry(
        "compose.clusters.sources._STACK_SPECS",
        "CopiedMemo",
        "the ServingStack's spec content",
        4096,
        _CONTENT,
        "tests/compose/test_cluster_sources.py",
    ),
    _entry(
        "compose.clusters.serving_stack._FIXED",
        "CopiedMemo",
        "the ServingStack's spec content",
        4096,
        _CONTENT,
        "tests/compose/test_serving_stack.py",
    ),
    _entry(
        "compose.clusters.managed._as_label",
        "memo_function",
        "a composed resource's name",
        1 << 16,
        _CONTENT,
        "tests/compose/test_provisioning.py",
    ),
    _entry(
        "compose.deployments.listing._LISTINGS",
        "LastRead",
        "the identities of the last list of replica objects",
        1,
        "a list holding any other object (each version is a new object)",
        "tests/compose/test_model_deployment_composer.py",
    ),
    _entry(
        "compose.deployments.endpoints._valid_url",
        "memo_function",
        "a replica's endpoint URL",
        4096,
        _CONTENT,
        "tests/compose/test_deployment_endpoints.py",
    ),
)
"""Every process-level memo of the pure layers, by module.attribute (without `modelplane.`)."""

_BY_NAME: dict[str, MemoEntry] = {m.name: m for m in MEMOS}


class _Switch:
    """Whether memos remember (one flag for the process: a process runs one call at a time)."""

    on = True


_SWITCH = _Switch()
SWITCH = _SWITCH
"""The switch itself, for a hot path: `SWITCH.on` is one attribute read, not a call."""
_CLEARERS: list[Callable[[], None]] = []


def entry(name: str) -> MemoEntry:
    """The registered facts of the memo `name`; KeyError for a memo nobody registered."""
    return _BY_NAME[name]


def memos_on() -> bool:
    """Whether memos remember now."""
    return _SWITCH.on


def set_memos(on: bool) -> None:
    """Turn every memo on or off; turning them off also forgets what they hold."""
    _SWITCH.on = on
    if not on:
        clear_all()


def clear_all() -> None:
    """Forget everything every registered process-level memo holds (what a new process knows)."""
    for clear in _CLEARERS:
        clear()


@contextmanager
def memos_off() -> Iterator[None]:
    """Run the block with every memo off (each derives afresh), then as before."""
    before = _SWITCH.on
    set_memos(False)
    try:
        yield
    finally:
        _SWITCH.on = before


def memos_from_environment(environ: Mapping[str, str]) -> bool:
    """Apply `MODELPLANE_MEMOS` (`off`, `0`, `false`, `no`: memos off); whether they are on."""
    value = environ.get(ENVIRONMENT_VARIABLE, "").strip().lower()
    set_memos(value not in ("off", "0", "false", "no"))
    return memos_on()


def on_clear(clear: Callable[[], None]) -> None:
    """Have `clear_all` (and turning memos off) call `clear`: for a registered memo
    that keeps its own tables (`scheduling.matching.SHARED`)."""
    _CLEARERS.append(clear)


def _registered(name: str, mechanism: str) -> MemoEntry:
    found = entry(name)
    if found.mechanism != mechanism:
        raise ValueError(f"memo {name} is registered as a {found.mechanism}, not a {mechanism}")
    return found


class Memo(Generic[T]):
    """Values by a hashable key, the least recently used forgotten past the registered bound.

    The key must render everything the value is derived from, so an entry never
    goes stale; callers only read what they get (hand out immutable values, or
    use `CopiedMemo`).
    """

    __slots__ = ("_entries", "_size", "name")

    def __init__(self, name: str, mechanism: str = "Memo", size: int | None = None) -> None:
        """The empty memo registered in `MEMOS` as `name` (`size` overrides its bound)."""
        self.name = name
        self._size = size or _registered(name, mechanism).bound or 0
        self._entries: OrderedDict[Hashable, T] = OrderedDict()
        _CLEARERS.append(self.clear)

    @overload
    def get(self, key: Hashable) -> T | None: ...

    @overload
    def get(self, key: Hashable, derive: Callable[[], T]) -> T: ...

    def get(self, key: Hashable, derive: Callable[[], T] | None = None) -> T | None:
        """The value remembered under `key`, else `derive()` (then remembered).

        Without `derive`, the value remembered or None, as `dict.get` (for a
        caller that bounds and fills the memo itself).
        """
        if not _SWITCH.on:
            return None if derive is None else derive()
        entries = self._entries
        if derive is None:
            return entries.get(key)
        try:
            value = entries[key]
        except KeyError:
            value = entries[key] = derive()
            if len(entries) > self._size:
                entries.popitem(last=False)
            return value
        entries.move_to_end(key)
        return value

    def __setitem__(self, key: Hashable, value: T) -> None:
        if _SWITCH.on:
            self._entries[key] = value

    def __delitem__(self, key: Hashable) -> None:
        del self._entries[key]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every value."""
        self._entries.clear()


class CopiedMemo:
    """A `Memo` of JSON values that hands every caller a copy of its own.

    Remembered as marshal's bytes: one object the garbage collector never walks
    instead of the thousands of containers a composite's resources are, and a
    copy (made in C) per caller, who may do with it what it likes. A value
    marshal refuses (one holding read-only containers) is derived afresh every time.
    """

    __slots__ = ("_memo",)

    def __init__(self, name: str, size: int | None = None) -> None:
        """The empty memo registered in `MEMOS` as `name` (`size` overrides its bound)."""
        self._memo: Memo[bytes | None] = Memo(name, "CopiedMemo", size)

    def get(self, key: Hashable, derive: Callable[[], T]) -> T:
        """A copy of the value remembered under `key`, else `derive()` (then remembered)."""
        made: list[T] = []

        def encode() -> bytes | None:
            made.append(derive())
            try:
                return marshal.dumps(cast(Any, made[0]))
            except ValueError:
                return None

        data = self._memo.get(key, encode)
        if made:
            return made[0]
        return derive() if data is None else cast(T, marshal.loads(data))

    def clear(self) -> None:
        """Forget every value."""
        self._memo.clear()


def memo_function(name: str, mechanism: str = "memo_function") -> Callable[[F], F]:
    """Remember a function of hashable arguments by its arguments (the registered bound).

    Its answers are shared: they must be immutable (or never changed by a caller).
    A `constant` is built once and kept even with memos off: it derives from
    no input, so there is nothing to switch.
    """
    found = _registered(name, mechanism)

    def wrap(fn: F) -> F:
        cached = functools.lru_cache(maxsize=found.bound)(fn)
        _CLEARERS.append(cached.cache_clear)
        if mechanism == "constant":
            return cast(F, cached)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return cached(*args, **kwargs) if _SWITCH.on else fn(*args, **kwargs)

        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return cast(F, call)

    return wrap


def remembered(store: MutableMapping[Any, Any], key: Hashable, derive: Callable[[], T]) -> T:
    """`derive()`, kept in `store` (a memo living on a read-only object) under `key`.

    The caller owns `store`, which goes with its object; with memos off it is
    neither read nor written.
    """
    if not _SWITCH.on:
        return derive()
    try:
        return cast(T, store[key])
    except KeyError:
        value = store[key] = derive()
        return value


def markdown_table() -> str:
    """`MEMOS` as the Markdown table docs/architecture.md shows."""
    rows = [
        "| memo (`modelplane.`…) | mechanism | key | bound | invalidated by | test |",
        "|---|---|---|---|---|---|",
    ]
    for m in MEMOS:
        bound = "its object" if m.bound is None else f"{m.bound:,}"
        cells = (f"`{m.name}`", m.mechanism, m.key, bound, m.invalidated_by, f"`{m.test}`")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
