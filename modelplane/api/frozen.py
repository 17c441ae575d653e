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
    if type(obj) is not FrozenDict:
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
