"""The Kubernetes 1.34 DRA device-selector CEL environment, on cel-expr-python.

Public surface:

* `compile_selector(expression) -> Selector` — compiled once per expression text (an LRU
  cache of 4096 entries); raises `CompileError` with a message fit for a condition
  (syntax errors, unknown functions, result type not bool, over 10 KiB, too complex).
* `Selector.matches(device) -> bool` — never raises; an evaluation error or a non-bool
  result is a non-match. `Selector.evaluate(device) -> Outcome(value, error)`.
* `prepare_device(device) -> PreparedDevice` — converts a device dict into a CEL
  activation once; `matches`/`evaluate` accept either a device mapping (converted on
  every call) or a `PreparedDevice`. A caller evaluating many selectors against one
  device prepares it once. There is no hidden cache keyed on device contents.
* `evaluate(expression, device=None)` — compile and evaluate any expression of the
  environment, returning Python values (`Quantity`, `Semver` for those types).

A device is the InferenceClass device wire form: `{"driver": ..., "attributes": {name:
{"string"|"int"|"bool"|"version": v}}, "capacity": {name: {"value": "<quantity>"}}}`
(optionally `allowMultipleAllocations`); other keys are ignored. Bare names belong to the
driver's domain; a domain the device lacks is an empty map.

How the engine is used. Expressions are type-checked where `device` is a message type
mirroring `kubernetes.DRADevice` (so `device.foo` and `device.driver == 1` are compile
errors, as upstream) and Quantity/Semver are message types. The checked AST is then
rewritten (see `_rewrite`: missing domains, value equality, constant folding, native
comparisons, a static size/cost bound) and loaded into a runtime environment where
`device` is a plain map and a Quantity or Semver is a two-element list [order key,
identity key] (a protobuf message would cost microseconds per value to hand over). The
library functions are Python callbacks, one per name and argument kinds, dispatching on
the value they receive; comprehensions are stopped by the engine's iteration budget.

Known differences from Kubernetes, all on expressions no selector needs: the lists
library returns dyn (Kubernetes types e.g. `[1, 2].max()` as int) and has no list
`indexOf`/`lastIndexOf` (the strings extension owns those names here); int/double/uint
literals do not compare across types at compile time (dyn operands do at run time);
`find`/`findAll` use the RE2 C++ library where Kubernetes uses Go's RE2 port (the
same syntax and linear-time matching; C++ also knows `\\C`); `type()` of a
Quantity/Semver and list operations on a version attribute see the run-time list;
`in` over a list that is not a literal of Quantities/Semvers, and equality between two
dyn values, compare stored forms (spelling, build metadata), not values;
the iteration budget (10,000 iterations per evaluation) stands in for the runtime cost
limit of 1,000,000.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import (
    ext_bindings,
    ext_optional,
    ext_strings,
)
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf import struct_pb2 as _struct_pb2  # registers google/protobuf/struct.proto

from modelplane.api.memo import Memo, memo_function
from modelplane.dra import _ast, _regex, _rewrite
from modelplane.dra.quantity import (
    DECIMAL_EXPONENT,
    Quantity,
    QuantityDigitsError,
    QuantityError,
    parse_quantity,
)
from modelplane.dra.semver import Semver, SemverDigitsError, SemverError, parse_semver

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CompileError",
    "EvaluationError",
    "Outcome",
    "PreparedDevice",
    "Selector",
    "compile_selector",
    "device_errors",
    "evaluate",
    "prepare_device",
]

#: resource.k8s.io CELSelectorExpressionMaxLength.
MAX_EXPRESSION_LENGTH = 10 * 1024

_QUANTITY_TYPE = "kubernetes.Quantity"
_SEMVER_TYPE = "kubernetes.Semver"
_DEVICE_TYPE = "kubernetes.DRADevice"


class CompileError(ValueError):
    """The expression is not a valid selector; the message is fit for a condition."""


class EvaluationError(RuntimeError):
    """Evaluating the expression failed (error value, budget exceeded, bad device)."""


# ---------------------------------------------------------------------------------------
# Protobuf types backing the custom CEL types.


def _build_pool() -> descriptor_pool.DescriptorPool:
    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="modelplane/dra/kubernetes_cel.proto", package="kubernetes", syntax="proto3"
    )
    fdp.dependency.append("google/protobuf/struct.proto")
    for name in ("Quantity", "Semver"):
        m = fdp.message_type.add(name=name)
        m.field.add(name="k", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
        m.field.add(name="v", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    d = fdp.message_type.add(name="DRADevice")
    d.field.add(name="driver", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    d.field.add(name="allowMultipleAllocations", number=4, type=f.TYPE_BOOL, label=f.LABEL_OPTIONAL)
    for number, field in ((2, "attributes"), (3, "capacity")):
        entry = d.nested_type.add(name=field.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=f.TYPE_MESSAGE,
            label=f.LABEL_OPTIONAL,
            type_name=".google.protobuf.Struct",
        )
        d.field.add(
            name=field,
            number=number,
            type=f.TYPE_MESSAGE,
            label=f.LABEL_REPEATED,
            type_name=f".kubernetes.DRADevice.{entry.name}",
        )
    assert _struct_pb2.Struct  # imported for its registration in the default pool
    pool = descriptor_pool.Default()
    try:
        pool.FindMessageTypeByName(_DEVICE_TYPE)
    except KeyError:
        pool.Add(fdp)
    return pool


_POOL = _build_pool()

# Run-time representation. The checker sees kubernetes.Quantity / kubernetes.Semver as
# message types (so `quantity("1").size()` is a compile error, as upstream), but handing
# the engine a protobuf message costs several microseconds per value, which dominates
# preparing a device. At run time a value of either type is therefore a two-element
# list [tag + order key, identity key]: the order key (Quantity.order_key /
# Semver.order_key) is what rewritten comparisons read natively as `x[0]`, and the
# identity key recovers the exact Python object (stored form included) in callbacks.
_QTAG = "\x01Q"  # not NUL: the engine's string conversion stops at NUL
_STAG = "\x01S"
# Run-time value and object by identity key; a value's object is recovered from
# here in callbacks, or rebuilt from its key when forgotten.
_QVALS: Memo[tuple[tuple[str, str], Quantity]] = Memo("dra.cel._QVALS")
_SVALS: Memo[tuple[tuple[str, str], Semver]] = Memo("dra.cel._SVALS")


def _qkey(q: Quantity) -> str:
    return f"{q.unscaled}|{q.exponent}|{q.format}|{int(q.is_dec)}|{q.cached or ''}"


def _qpair(q: Quantity) -> tuple[str, str]:
    """A quantity's run-time value as the memo keeps it: a tuple, which no caller changes."""
    key = _qkey(q)
    return _QVALS.get(key, lambda: ((_QTAG + q.order_key(), key), q))[0]


def _qvalue(q: Quantity) -> list[str]:
    """The run-time CEL value of a quantity: a list of its own (the engine takes lists only)."""
    return list(_qpair(q))


def _spair(v: Semver) -> tuple[str, str]:
    """A version's run-time value as the memo keeps it (as `_qpair`)."""
    key = str(v)
    return _SVALS.get(key, lambda: ((_STAG + v.order_key(), key), v))[0]


def _svalue(v: Semver) -> list[str]:
    """The run-time CEL value of a version: a list of its own (as `_qvalue`)."""
    return list(_spair(v))


_PLAIN_VERSION = re.compile(r"(0|[1-9][0-9]{0,18})\.(0|[1-9][0-9]{0,18})\.(0|[1-9][0-9]{0,18})")


@memo_function("dra.cel._version_value")
def _version_value(raw: str) -> tuple[str, str]:
    # Most device versions are plain MAJOR.MINOR.PATCH: their order key is built
    # directly (the Semver object is parsed only if a callback ever needs it).
    plain = _PLAIN_VERSION.fullmatch(raw)
    if plain is not None:
        major, minor, patch = plain.groups()
        return (f"{_STAG}{int(major):020d}.{int(minor):020d}.{int(patch):020d}\x03", raw)
    return _spair(parse_semver(raw))


@memo_function("dra.cel._capacity_value")
def _capacity_value(raw: str) -> tuple[str, str]:
    return _qpair(parse_quantity(raw))


def _from_qkey(key: str) -> Quantity:
    hit = _QVALS.get(key)
    if hit is not None:
        return hit[1]
    u, e, fmt, dec, cached = key.split("|", 4)
    if fmt not in ("DecimalExponent", "BinarySI", "DecimalSI"):
        raise ValueError("not a quantity")
    return Quantity(int(u), int(e), fmt, bool(int(dec)), cached or None)  # type: ignore[arg-type]


def _from_skey(key: str) -> Semver:
    hit = _SVALS.get(key)
    return parse_semver(key) if hit is None else hit[1]


def _decode(x: Any) -> Quantity | Semver | None:
    """The Quantity or Semver a run-time value stands for, or None for anything else."""
    if type(x) is not list or len(x) != 2:
        return None
    tag, key = x
    if type(tag) is not str or type(key) is not str:
        return None
    try:
        if tag.startswith(_QTAG):
            return _from_qkey(key)
        if tag.startswith(_STAG):
            return _from_skey(key)
    except (ValueError, TypeError):
        return None
    return None


# ---------------------------------------------------------------------------------------
# Library functions. Each raises on a bad argument; the engine turns that into an error
# value, which is what Kubernetes' MaybeNoSuchOverloadErr / WrapErr produce.


def _unwrap(x: Any) -> Quantity | Semver | Any:
    decoded = _decode(x)
    return x if decoded is None else decoded


def _fn_quantity(s: str) -> Any:
    try:
        return _qvalue(parse_quantity(s))
    except QuantityError as e:
        raise ValueError(str(e)) from None


def _fn_is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True


def _fn_semver(s: str, normalize: bool = False) -> Any:
    try:
        return _svalue(parse_semver(s, normalize))
    except SemverError as e:
        raise ValueError(str(e)) from None


def _fn_is_semver(s: str, normalize: bool = False) -> bool:
    try:
        parse_semver(s, normalize)
    except SemverError:
        return False
    return True


def _both(a: Any, b: Any) -> tuple[Quantity, Quantity] | tuple[Semver, Semver]:
    x, y = _unwrap(a), _unwrap(b)
    if isinstance(x, Quantity) and isinstance(y, Quantity):
        return x, y
    if isinstance(x, Semver) and isinstance(y, Semver):
        return x, y
    raise ValueError("no such overload")


def _fn_compare_to(a: Any, b: Any) -> int:
    x, y = _both(a, b)
    return x.cmp(y)  # type: ignore[arg-type]


def _fn_is_greater_than(a: Any, b: Any) -> bool:
    x, y = _both(a, b)
    return x.cmp(y) == 1  # type: ignore[arg-type]


def _fn_is_less_than(a: Any, b: Any) -> bool:
    x, y = _both(a, b)
    return x.cmp(y) == -1  # type: ignore[arg-type]


def _quantity_arg(a: Any) -> Quantity:
    x = _unwrap(a)
    if not isinstance(x, Quantity):
        raise ValueError("no such overload")
    return x


def _semver_arg(a: Any) -> Semver:
    x = _unwrap(a)
    if not isinstance(x, Semver):
        raise ValueError("no such overload")
    return x


def _operand(b: Any) -> Quantity:
    if isinstance(b, int) and not isinstance(b, bool):
        return Quantity.from_int(b, DECIMAL_EXPONENT)
    return _quantity_arg(b)


def _fn_add(a: Any, b: Any) -> Any:
    try:
        return _qvalue(_quantity_arg(a).add(_operand(b)))
    except QuantityError as e:
        raise ValueError(str(e)) from None


def _fn_sub(a: Any, b: Any) -> Any:
    try:
        return _qvalue(_quantity_arg(a).sub(_operand(b)))
    except QuantityError as e:
        raise ValueError(str(e)) from None


def _fn_sign(a: Any) -> int:
    return _quantity_arg(a).sign()


def _fn_is_integer(a: Any) -> bool:
    return _quantity_arg(a).is_integer()


def _fn_as_integer(a: Any) -> int:
    v = _quantity_arg(a).as_int64()
    if v is None:
        raise ValueError("cannot convert value to integer")
    return v


def _fn_as_approximate_float(a: Any) -> float:
    return _quantity_arg(a).as_approximate_float()


def _to_int64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _fn_major(a: Any) -> int:
    return _to_int64(_semver_arg(a).major)


def _fn_minor(a: Any) -> int:
    return _to_int64(_semver_arg(a).minor)


def _fn_patch(a: Any) -> int:
    return _to_int64(_semver_arg(a).patch)


def _fn_find(s: str, pattern: str) -> str:
    return _regex.find(s, pattern)


def _fn_find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    return _regex.find_all(s, pattern, limit)


def _list_arg(xs: Any) -> list[Any]:
    return [_unwrap(x) for x in xs]


def _cmp_any(a: Any, b: Any) -> int:
    if isinstance(a, Quantity | Semver) and type(a) is type(b):
        return a.cmp(b)  # type: ignore[arg-type]
    if isinstance(a, bool) != isinstance(b, bool):
        raise ValueError("no such overload")
    if a < b:
        return -1
    return 1 if a > b else 0


def _fn_is_sorted(xs: Any) -> bool:
    items = _list_arg(xs)
    return all(_cmp_any(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _fn_sum(xs: Any) -> Any:
    items = _list_arg(xs)
    if not items:
        return 0
    total = items[0]
    for x in items[1:]:
        total = total + x
    if isinstance(total, int) and not isinstance(total, bool) and total != _to_int64(total):
        raise ValueError("integer overflow")
    return total


def _fn_min(xs: Any) -> Any:
    items = _list_arg(xs)
    if not items:
        raise ValueError("min(list) called on an empty list")
    best = items[0]
    for x in items[1:]:
        if _cmp_any(x, best) < 0:
            best = x
    return _rewrap(best)


def _fn_max(xs: Any) -> Any:
    items = _list_arg(xs)
    if not items:
        raise ValueError("max(list) called on an empty list")
    best = items[0]
    for x in items[1:]:
        if _cmp_any(x, best) > 0:
            best = x
    return _rewrap(best)


def _rewrap(x: Any) -> Any:
    if isinstance(x, Quantity):
        return _qvalue(x)
    if isinstance(x, Semver):
        return _svalue(x)
    return x


# ---------------------------------------------------------------------------------------
# Environments.

_T = cel.Type
_Q = _T(_QUANTITY_TYPE)
_S = _T(_SEMVER_TYPE)
_RT_VALUE = _T.List(_T.DYN)


def _decls(runtime: bool) -> list[Any]:
    """Function declarations for the checker (message-typed Quantity/Semver) or the runtime.

    The runtime registers one Python implementation per name and argument kinds, and
    represents both custom types as lists, so it gets only the overloads carrying an
    implementation, with the custom types replaced by list(dyn).
    """

    def rt(t: Any) -> Any:
        return _RT_VALUE if runtime and t in (_Q, _S) else t

    def ov(
        oid: str,
        ret: Any,
        params: list[Any],
        impl: Callable[..., Any] | None,
        member: bool = False,
    ) -> Any:
        if impl is None:
            return None if runtime else cel.Overload(oid, ret, params, is_member=member)
        return cel.Overload(oid, rt(ret), [rt(p) for p in params], is_member=member, impl=impl)

    def fd(name: str, overloads: list[Any]) -> Any:
        return cel.FunctionDecl(name, [o for o in overloads if o is not None])

    b, i, s, d = _T.BOOL, _T.INT, _T.STRING, _T.DOUBLE
    # Type parameters are not expressible through cel-expr-python, and one Python
    # implementation binds one return type; the lists library is therefore declared
    # over list(dyn) -> dyn (Kubernetes types e.g. [1, 2].max() as int, we as dyn).
    lst = _T.List(_T.DYN)
    elem = _T.DYN
    return [
        fd("quantity", [ov("string_to_quantity", _Q, [s], _fn_quantity)]),
        fd("isQuantity", [ov("is_quantity_string", b, [s], _fn_is_quantity)]),
        fd(
            "semver",
            [
                ov("string_to_semver", _S, [s], _fn_semver),
                ov("string_bool_to_semver", _S, [s, b], _fn_semver),
            ],
        ),
        fd(
            "isSemver",
            [
                ov("is_semver_string", b, [s], _fn_is_semver),
                ov("is_semver_string_bool", b, [s, b], _fn_is_semver),
            ],
        ),
        fd(
            "compareTo",
            [
                ov("quantity_compare_to", i, [_Q, _Q], _fn_compare_to, True),
                ov("semver_compare_to", i, [_S, _S], None, True),
            ],
        ),
        fd(
            "isGreaterThan",
            [
                ov("quantity_is_greater_than", b, [_Q, _Q], _fn_is_greater_than, True),
                ov("semver_is_greater_than", b, [_S, _S], None, True),
            ],
        ),
        fd(
            "isLessThan",
            [
                ov("quantity_is_less_than", b, [_Q, _Q], _fn_is_less_than, True),
                ov("semver_is_less_than", b, [_S, _S], None, True),
            ],
        ),
        # Upstream declares sign as a global overload (`sign(q)`) while documenting
        # `q.sign()`; both spellings are accepted.
        fd(
            "sign",
            [
                ov("quantity_sign", i, [_Q], _fn_sign),
                ov("quantity_sign_member", i, [_Q], _fn_sign, True),
            ],
        ),
        fd("isInteger", [ov("quantity_is_integer", b, [_Q], _fn_is_integer, True)]),
        fd("asInteger", [ov("quantity_get_int", i, [_Q], _fn_as_integer, True)]),
        fd(
            "asApproximateFloat",
            [ov("quantity_get_float", d, [_Q], _fn_as_approximate_float, True)],
        ),
        fd(
            "add",
            [
                ov("quantity_add", _Q, [_Q, _Q], _fn_add, True),
                ov("quantity_add_int", _Q, [_Q, i], _fn_add, True),
            ],
        ),
        fd(
            "sub",
            [
                ov("quantity_sub", _Q, [_Q, _Q], _fn_sub, True),
                ov("quantity_sub_int", _Q, [_Q, i], _fn_sub, True),
            ],
        ),
        fd("major", [ov("semver_major", i, [_S], _fn_major, True)]),
        fd("minor", [ov("semver_minor", i, [_S], _fn_minor, True)]),
        fd("patch", [ov("semver_patch", i, [_S], _fn_patch, True)]),
        # Kubernetes regex library (find/findAll); `matches` is CEL's own (RE2).
        fd("find", [ov("string_find_string", s, [s, s], _fn_find, True)]),
        fd(
            "findAll",
            [
                ov("string_find_all_string", _T.List(s), [s, s], _fn_find_all, True),
                ov("string_find_all_string_int", _T.List(s), [s, s, i], _fn_find_all, True),
            ],
        ),
        # Kubernetes lists library.
        fd("isSorted", [ov("list_is_sorted", b, [lst], _fn_is_sorted, True)]),
        fd("sum", [ov("list_sum", elem, [lst], _fn_sum, True)]),
        fd("min", [ov("list_min", elem, [lst], _fn_min, True)]),
        fd("max", [ov("list_max", elem, [lst], _fn_max, True)]),
    ]


def _extensions() -> list[Any]:
    return [ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()]


@memo_function("dra.cel._envs", "constant")
def _envs() -> tuple[Any, Any]:
    """(checker env with typed `device`, runtime env with `device` as a map)."""
    checker = cel.NewEnv(
        _POOL,
        variables={"device": _T(_DEVICE_TYPE)},
        extensions=_extensions(),
        functions=_decls(runtime=False),
    )
    runtime = cel.NewEnv(
        _POOL,
        variables={"device": _T.DYN},
        extensions=_extensions(),
        functions=_decls(runtime=True),
    )
    return checker, runtime


# ---------------------------------------------------------------------------------------
# Type names and values in Kubernetes' (cel-go's) spelling.

_TYPE_WORDS = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "DYN": "dyn",
    "NULL": "null_type",
    "NULL_TYPE": "null_type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "TYPE": "type",
    "LIST": "list",
    "MAP": "map",
    "ERROR": "*error*",
    "OPTIONAL_TYPE": "optional_type",
}


def _type_name(t: Any) -> str:
    raw = str(t.name())
    out = re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", lambda m: _TYPE_WORDS.get(m.group(0), m.group(0)), raw)
    return out.replace("<", "(").replace(">", ")")


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}


def _ast_type_name(t: Any) -> str:
    """cel-go spelling of a checked-AST type, for the types the wrapper cannot name."""
    kind = t.WhichOneof("type_kind") if t is not None else None
    if kind == "primitive":
        return _PRIMITIVES.get(t.primitive, "unknown")
    if kind == "message_type":
        return str(t.message_type)
    if kind == "list_type":
        return f"list({_ast_type_name(t.list_type.elem_type)})"
    if kind == "map_type":
        key = _ast_type_name(t.map_type.key_type)
        return f"map({key}, {_ast_type_name(t.map_type.value_type)})"
    return "dyn" if kind == "dyn" else "unknown"


_CODE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _clean_engine_message(msg: str) -> str:
    """Drop the engine's `CODE: ` prefix and ` [CODE]` suffix (string operations: the
    message can quote user input, so no backtracking regex runs over it)."""
    msg = msg.strip()
    head, sep, rest = msg.partition(": ")
    if sep and head and _CODE_CHARS.issuperset(head):
        msg = rest
    if msg.endswith("]"):
        body, bracket, code = msg[:-1].rpartition("[")
        if bracket and code and _CODE_CHARS.issuperset(code):
            msg = body.rstrip()
    return msg


def _to_python(v: Any) -> Any:
    decoded = _decode(v)
    if decoded is not None:
        return decoded
    if isinstance(v, list):
        return [_to_python(x) for x in v]
    if isinstance(v, dict):
        return {_to_python(k): _to_python(x) for k, x in v.items()}
    if isinstance(v, bytearray):
        return bytes(v)
    return v


# ---------------------------------------------------------------------------------------
# Devices.


@dataclass(frozen=True, slots=True)
class PreparedDevice:
    """A device converted once into a CEL activation; reuse it across selectors."""

    activation: Any
    error: str | None = None


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# Wire-form attribute kinds whose value is used as it is (ints still range-checked).
_PLAIN_KINDS: dict[str, type] = {"string": str, "int": int, "bool": bool}


def _int64(v: Any) -> int:
    if type(v) is not int:
        raise ValueError("unsupported attribute value")
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise ValueError("int value out of the int64 range")
    return v


def _attribute_value(attr: Any) -> Any:
    """The one value of a DeviceAttribute, in Kubernetes' precedence: int, bool, string, version."""
    if type(attr) is not dict and not isinstance(attr, Mapping):
        raise ValueError("unsupported attribute value")
    v = attr.get("int")
    if v is not None:
        return _int64(v)
    v = attr.get("bool")
    if v is not None:
        if type(v) is not bool:
            raise ValueError("unsupported attribute value")
        return v
    v = attr.get("string")
    if v is not None:
        return v if type(v) is str else str(v)
    v = attr.get("version")
    if v is not None:
        try:
            return list(_version_value(str(v)))
        except SemverError as e:
            raise ValueError(f"parse semantic version: {e}") from None
    raise ValueError("unsupported attribute value")


def _is_plain(kind: Any, raw: Any) -> bool:
    """Whether a wire-form value is usable as it is (an int must fit int64)."""
    if _PLAIN_KINDS.get(kind) is not type(raw):
        return False
    if isinstance(raw, int) and not isinstance(raw, bool):
        return _INT64_MIN <= raw <= _INT64_MAX
    return True


def _attribute(name: str, attr: Any) -> Any:
    """The CEL value of one attribute, or EvaluationError naming it."""
    # Fast path for the wire form's single-key mapping; anything else (and every
    # error) goes through _attribute_value.
    if type(attr) is dict and len(attr) == 1:
        for kind, raw in attr.items():
            if _is_plain(kind, raw):
                return raw
    try:
        return _attribute_value(attr)
    except ValueError as e:
        raise EvaluationError(f"attribute {name}: {e}") from None


def _capacity(name: str, cap: Any) -> Any:
    """The CEL value of one capacity, or EvaluationError naming it."""
    raw = cap.get("value") if type(cap) is dict or isinstance(cap, Mapping) else cap
    try:
        return list(_capacity_value(raw if type(raw) is str else str(raw)))
    except ValueError as e:  # QuantityError, or a number too long to print
        raise EvaluationError(f"capacity {name}: {e}") from None


def _by_domain(
    entries: Mapping[str, Any], driver: str, convert: Callable[[str, Any], Any]
) -> dict[str, dict[str, Any]]:
    """Converted entries grouped by domain; a bare name belongs to the driver's domain."""
    out: dict[str, dict[str, Any]] = {}
    for name, entry in entries.items():
        value = convert(name, entry)
        domain, slash, ident = name.partition("/")
        if not slash:
            domain, ident = driver, name
        inner = out.get(domain)
        if inner is None:
            inner = out[domain] = {}
        inner[ident] = value
    return out


def _device_data(device: Mapping[str, Any]) -> dict[str, Any]:
    """The `device` variable: attributes and capacity grouped by domain."""
    get = device.get
    driver = get("driver") or ""
    if type(driver) is not str:
        raise EvaluationError(f"driver {driver!r} is not a string")
    return {
        "driver": driver,
        "allowMultipleAllocations": get("allowMultipleAllocations") is True,
        "attributes": _by_domain(get("attributes") or {}, driver, _attribute),
        "capacity": _by_domain(get("capacity") or {}, driver, _capacity),
    }


def device_errors(device: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Every attribute or capacity of a device the CEL layer cannot read.

    Each problem is `(field, name, reason)` with field "attributes" or "capacity". The
    conversions are the ones `prepare_device` applies, so a validator built on this
    (the InferenceClass composer) and selector evaluation can never disagree.
    """
    problems: list[tuple[str, str, str]] = []
    for field, convert in (("attributes", _attribute), ("capacity", _capacity)):
        for name, entry in (device.get(field) or {}).items():
            try:
                convert(name, entry)
            except EvaluationError as e:
                reason = str(e).split(": ", 1)[-1]
                problems.append((field, str(name), reason))
    return problems


def prepare_device(device: Mapping[str, Any]) -> PreparedDevice:
    """Convert a device (InferenceClass wire form) to a reusable CEL activation; never raises."""
    _, runtime = _envs()
    try:
        data = _device_data(device)
        return PreparedDevice(activation=runtime.Activation({"device": data}))
    except EvaluationError as e:
        return PreparedDevice(activation=None, error=str(e))
    except Exception as e:  # a malformed device is every selector's non-match
        return PreparedDevice(activation=None, error=f"malformed device: {e}")


def _as_prepared(device: Mapping[str, Any] | PreparedDevice | None) -> PreparedDevice:
    if isinstance(device, PreparedDevice):
        return device
    if device is None:
        _, runtime = _envs()
        return PreparedDevice(activation=runtime.Activation({}))
    return prepare_device(device)


# ---------------------------------------------------------------------------------------
# Compilation and evaluation.


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of evaluating a selector: a bool value, or an error message."""

    value: bool | None
    error: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class _Program:
    expression: str
    program: Any
    output_type: str


# Folding a literal that does not parse leaves the call in place: Kubernetes reports it
# when evaluated. A literal refused for its length can never become valid, and would make
# a selector silently match nothing, so it fails compilation instead.


def _fold_quantity(s: str) -> tuple[str, str] | None:
    try:
        tag, key = _qpair(parse_quantity(s))
    except QuantityDigitsError as e:
        raise _rewrite.LiteralError(f"quantity literal: {e}") from None
    except QuantityError:
        return None
    return tag, key


def _fold_semver(s: str, normalize: bool) -> tuple[str, str] | None:
    try:
        tag, key = _spair(parse_semver(s, normalize))
    except SemverDigitsError as e:
        raise _rewrite.LiteralError(f"semver literal: {e}") from None
    except SemverError:
        return None
    return tag, key


@memo_function("dra.cel._compile")
def _compile(expression: str) -> _Program | str:
    """Check and plan an expression; a string result is the compile error message."""
    if len(expression.encode()) > MAX_EXPRESSION_LENGTH:
        return (
            f"expression is too long: {len(expression.encode())} bytes, "
            f"the maximum is {MAX_EXPRESSION_LENGTH}"
        )
    checker, runtime = _envs()
    try:
        checked = checker.compile(expression)
    except RuntimeError as e:
        return "compilation failed: " + _clean_engine_message(str(e))
    type_url, ast = _ast.decode(checked.serialize())
    try:
        output = _type_name(checked.return_type())
    except RuntimeError:  # the wrapper cannot express some types (e.g. bytes map keys)
        output = _ast_type_name(ast.type_map.get(ast.expr.id))
    rewriter = _rewrite.Rewriter(ast, _fold_quantity, _fold_semver)
    try:
        _rewrite.estimate(ast)
    except _rewrite.TooComplexError as e:
        return f"expression too complex: {e}"
    misuse = rewriter.capacity_misuse()
    if misuse:
        return "compilation failed: " + misuse
    try:
        rewriter.run()
    except _rewrite.LiteralError as e:
        return f"compilation failed: {e}"
    if rewriter.message_construction:
        return "compilation failed: message construction is not supported in this environment"
    try:
        program = runtime.deserialize(_ast.encode(type_url, ast))
    except RuntimeError as e:  # pragma: no cover - a rewrite the engine rejects is our bug
        return "internal error planning the expression: " + _clean_engine_message(str(e))
    return _Program(expression, program, output)


def _run(program: _Program, prepared: PreparedDevice) -> Any:
    """Evaluate and return the raw engine value, or raise EvaluationError."""
    if prepared.error is not None:
        raise EvaluationError(prepared.error)
    try:
        result = program.program.eval(prepared.activation)
    except RuntimeError as e:
        raise EvaluationError(_clean_engine_message(str(e))) from None
    if result.type() == _T.ERROR:
        raise EvaluationError(_clean_engine_message(str(result.value())))
    return result


class Selector:
    """A compiled device selector (an expression whose result type is bool)."""

    __slots__ = ("_program", "expression")
    _program: _Program
    expression: str

    def __init__(self, program: _Program) -> None:
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "expression", program.expression)

    def __setattr__(self, name: str, value: Any) -> None:
        # One selector is handed to every caller of its text (`_selector` remembers it).
        raise AttributeError(f"a Selector is shared and read-only: cannot set {name}")

    def evaluate(self, device: Mapping[str, Any] | PreparedDevice) -> Outcome:
        """Evaluate against a device; errors and non-bool results are reported, not raised."""
        try:
            result = _run(self._program, _as_prepared(device))
        except EvaluationError as e:
            return Outcome(None, str(e))
        value = result.value()
        if not isinstance(value, bool):
            return Outcome(None, f"CEL result of type {_type_name(result.type())} is not bool")
        return Outcome(value)

    def matches(self, device: Mapping[str, Any] | PreparedDevice) -> bool:
        """True only when the selector evaluates to true; never raises."""
        try:
            prepared = device if type(device) is PreparedDevice else _as_prepared(device)
            if prepared.error is not None:
                return False
            # An error value's .value() is its message, never True.
            return self._program.program.eval(prepared.activation).value() is True
        except Exception:
            return False

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


@memo_function("dra.cel._selector")
def _selector(expression: str) -> Selector | str:
    program = _compile(expression)
    if isinstance(program, str):
        return program
    if program.output_type not in ("bool", "dyn"):
        return f"must evaluate to bool or the unknown type, not {program.output_type}"
    return Selector(program)


def compile_selector(expression: str) -> Selector:
    """Compile a device selector (cached by text); raise CompileError when invalid."""
    result = _selector(expression)
    if isinstance(result, str):
        raise CompileError(result)
    return result


def evaluate(expression: str, device: Mapping[str, Any] | PreparedDevice | None = None) -> Any:
    """Compile and evaluate any expression of the environment; return a Python value."""
    program = _compile(expression)
    if isinstance(program, str):
        raise CompileError(program)
    result = _run(program, _as_prepared(device))
    try:
        return _to_python(result.plain_value())
    except RuntimeError as e:
        raise EvaluationError(
            f"cannot represent a result of type {_type_name(result.type())}: "
            + _clean_engine_message(str(e))
        ) from None
