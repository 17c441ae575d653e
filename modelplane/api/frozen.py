"""Read-only JSON containers: observed objects that may be shared between calls.

The function decodes each required object once per version and hands the same
decoded object to every composer call that receives it (see
`modelplane.crossplane.convert.DecodeCache`). A composer that changed it in
place would change what every later call sees, so the shared copy is built
from these: they are a `dict` and a `list` to every reader (isinstance,
pydantic, json), but every method that would change them raises TypeError.
A composer that wants a mutable copy takes one (`dict(x)`, `thaw(x)`,
`copy.deepcopy(x)`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

from modelplane.api.memo import SWITCH

T = TypeVar("T")


def _refuse(self: object, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} is read-only: observed objects are shared between calls; "
        "copy it (dict(x), thaw(x)) before changing it"
    )


class FrozenDict(dict[str, Any]):
    """A dict that cannot be changed after it is built.

    It can remember values derived from it (`memoized`): they cannot change either.
    """

    __slots__ = ("_memo",)
    _memo: dict[str, Any]

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


K = TypeVar("K")
V = TypeVar("V")


class ReadOnlyDict(dict[K, V]):
    """A dict of any keys and values that cannot be changed after it is built.

    For what a memo hands every caller (a table of verdicts, of pools): read
    like any dict, and copied (`dict(x)`, `d.update(x)`) at a dict's speed,
    where a `MappingProxyType` is copied through the mapping protocol, about
    16 times slower for a table of 1,000 clusters.
    """

    __slots__ = ()

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict[K, V]:
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


class FrozenList(list[Any]):
    """A list that cannot be changed after it is built."""

    __slots__ = ()

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a JSON value (frozen containers or not)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


def frozen(value: Any) -> Any:
    """A read-only deep copy of a JSON value (`FrozenDict`/`FrozenList` all the way down).

    For constants a composer hands out in every result: shared read-only, a
    reader cannot change what the next call hands out.
    """
    if isinstance(value, dict):
        return FrozenDict((k, frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return FrozenList(frozen(v) for v in value)
    return value


def memoized(obj: Any, key: str, derive: Callable[[Any], T]) -> T:
    """`derive(obj)`, remembered on `obj` under `key` when `obj` is a FrozenDict.

    A read-only object's derived values (a typed reading of it) never change,
    so a decoded object seen by many calls is read once. Any other object is
    read afresh every time. `derive` must return something its callers never
    change.
    """
    if type(obj) is not FrozenDict or not SWITCH.on:
        return derive(obj)
    try:
        memo: dict[str, Any] = obj._memo
    except AttributeError:
        memo = obj._memo = {}
    if key not in memo:
        memo[key] = derive(obj)
    return cast(T, memo[key])


def _register_yaml() -> None:
    """Let YAML's dumpers write them as the mapping and sequence they are.

    The embedded control plane's store holds them (read-only subtrees of its
    objects), and its objects are dumped by callers with `yaml.safe_dump`.
    """
    from yaml.representer import Representer, SafeRepresenter

    for representer in (SafeRepresenter, Representer):
        representer.add_representer(FrozenDict, SafeRepresenter.represent_dict)
        representer.add_representer(FrozenList, SafeRepresenter.represent_list)


_register_yaml()


_CONSTANT_TAGS: dict[Any, tuple[type, Any]] = {
    None: (type(None), None),
    True: (bool, True),
    False: (bool, False),
}


class Interner:
    """One shared copy of each distinct read-only container (hash-consing).

    A fleet's objects repeat the same values over and over (a container
    spec, a label set, a condition stamped in the same round), and a store
    holding each copy on its own holds most of its memory twice or more.
    Built bottom-up through an interner, equal containers are one object:
    sharing is safe because they are read-only, and what is remembered on
    one (`memoized`) holds for every place it appears, since equal here
    means equal exactly: the same keys in the same order, the same value
    types (1, 1.0 and True differ).

    Its children being canonical already, a container is looked up by its
    keys and its children's identities (other values by type and value). It
    keeps every container it hands out alive, so an identity in a key never
    names a container that is gone: `clear` drops them all at once.
    """

    __slots__ = ("_dicts", "_ids", "_lists")

    def __init__(self) -> None:
        """An empty interner."""
        self._dicts: dict[tuple[Any, ...], FrozenDict] = {}
        self._lists: dict[tuple[Any, ...], FrozenList] = {}
        self._ids: set[int] = set()

    def __len__(self) -> int:
        return len(self._dicts) + len(self._lists)

    def owns(self, value: Any) -> bool:
        """Whether `value` is a container this interner handed out (and still keeps)."""
        return id(value) in self._ids

    def dict(self, fields: dict[str, Any]) -> FrozenDict:
        """The shared FrozenDict equal to `fields`, whose values are canonical already."""
        try:
            key = (*fields, *[v if type(v) is str else _tag(v) for v in fields.values()])
            found = self._dicts.get(key)
        except TypeError:  # an unhashable value: left unshared
            return FrozenDict(fields)
        if found is None:
            found = self._dicts[key] = FrozenDict(fields)
            self._ids.add(id(found))
        return found

    def list(self, items: list[Any]) -> FrozenList:
        """The shared FrozenList equal to `items`, whose values are canonical already."""
        try:
            key = tuple([v if type(v) is str else _tag(v) for v in items])
            found = self._lists.get(key)
        except TypeError:
            return FrozenList(items)
        if found is None:
            found = self._lists[key] = FrozenList(items)
            self._ids.add(id(found))
        return found

    def clear(self) -> None:
        """Forget every container (those in use stay valid; later ones are not shared with them)."""
        self._dicts.clear()
        self._lists.clear()
        self._ids.clear()


def _tag(value: Any) -> Any:
    """A non-string value's part of an `Interner` key: a read-only container by its
    identity (an int), anything else by type and value (a 2-tuple, so an int value
    is never taken for an identity)."""
    t = type(value)
    if t is FrozenDict or t is FrozenList:
        return id(value)
    if value is None or t is bool:
        return _CONSTANT_TAGS[value]
    return (t, value)
