"""Kubernetes semantics that plain CEL lacks, applied to a checked expression tree.

At run time a Quantity or Semver is a list [order key, identity key] (see `cel`).

* Missing domains: Kubernetes looks up `device.attributes[d]` / `device.capacity[d]` in a
  map that answers an empty map for a domain the device lacks (while `d in ...` stays
  false). Such lookups become `d in M ? M[d] : {}` (constant d) or `M[?d].orValue({})`.
* Comparisons between two values known to be Quantities (or two Semvers) — `==`, `!=`,
  `isGreaterThan`, `isLessThan`, `compareTo(..) <op> k`, `in` a list literal — become
  native comparisons of
  their order keys, so equal values compare equal whatever their spelling (`200M ==
  0.2G`, build metadata ignored) and no Python callback runs. Capacity values count as
  Quantities (Kubernetes types them so; our checker sees dyn). Equality with a dyn
  operand becomes `a.compareTo(b) == 0`.
* Constant folding: `quantity("40Gi")`, `semver("1.2.3")` with literal arguments become
  literal run-time values.
* Capacity values used where a Quantity cannot be are reported, as upstream's checker
  would (`capacity_misuse`).
* A static bound on result sizes and work (`estimate`), so an expression that doubles a
  string through nested `cel.bind` cannot exhaust memory (comprehensions are also
  stopped at run time by the engine's iteration budget).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.dra._ast import Expr

__all__ = [
    "COST_LIMIT",
    "ITERATION_BUDGET",
    "SIZE_LIMIT",
    "LiteralError",
    "Rewriter",
    "estimate",
]

QUANTITY = "kubernetes.Quantity"
SEMVER = "kubernetes.Semver"
#: The engine stops an evaluation after this many comprehension iterations in total.
ITERATION_BUDGET = 10_000
#: Upper bound (bytes/elements) on any intermediate value an expression may build.
SIZE_LIMIT = 16 * 1024 * 1024
#: Upper bound on estimated work (roughly: bytes touched plus calls made).
COST_LIMIT = 1_000_000_000
#: Upper bound on the size of anything reachable from `device` (32 attributes and 32
#: capacities per device, names and values of bounded length).
DEVICE_SIZE = 64 * 1024


class TooComplexError(ValueError):
    """The expression's estimated size or cost exceeds the limits."""


class LiteralError(ValueError):
    """A fold callback refused a literal outright: the expression does not compile."""


def _kind(e: Any) -> str:
    return str(e.WhichOneof("expr_kind") or "")


class Rewriter:
    """Rewrites one checked AST in place (see the module docstring)."""

    def __init__(
        self,
        ast: Any,
        fold_quantity: Callable[[str], tuple[str, str] | None],
        fold_semver: Callable[[str, bool], tuple[str, str] | None],
    ) -> None:
        self.ast = ast
        self._fold_quantity = fold_quantity
        self._fold_semver = fold_semver
        self._next_id = _max_id(ast.expr) + 1
        self.message_construction = False
        # Nodes that are `device.capacity[d][n]` (or `.n`): always a Quantity at run time,
        # although the checker only knows them as dyn.
        self._capacity_values: set[int] = set()
        self._find_capacity_values(ast.expr)

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _type(self, e: Any) -> str:
        t = self.ast.type_map.get(e.id)
        if t is None:
            return "dyn"
        kind = t.WhichOneof("type_kind")
        if kind == "message_type":
            return str(t.message_type)
        if kind == "dyn" or kind is None:
            return "dyn"
        if kind == "primitive":
            return _PRIMITIVE_NAMES.get(t.primitive, "unknown")
        return str(kind)

    def _static(self, e: Any) -> str:
        if e.id in self._capacity_values:
            return QUANTITY
        return self._type(e)

    def _is_domain_lookup(self, e: Any, field: str) -> bool:
        kind = _kind(e)
        if kind == "select_expr":
            op = e.select_expr.operand
            return self._is_device_map(op) and op.select_expr.field == field
        if kind == "call_expr" and e.call_expr.function == "_[_]" and len(e.call_expr.args) == 2:
            op = e.call_expr.args[0]
            return self._is_device_map(op) and op.select_expr.field == field
        return False

    def _find_capacity_values(self, e: Any) -> None:
        kind = _kind(e)
        if kind == "select_expr" and not e.select_expr.test_only:
            target = e.select_expr.operand
        elif kind == "call_expr" and e.call_expr.function == "_[_]" and len(e.call_expr.args) == 2:
            target = e.call_expr.args[0]
        else:
            target = None
        if target is not None and self._is_domain_lookup(target, "capacity"):
            self._capacity_values.add(e.id)
        for child in _children(e):
            self._find_capacity_values(child)

    def _order_key(self, e: Any) -> Any:
        """`e[0]`: the order-preserving key of a run-time Quantity or Semver value."""
        index = Expr(id=self._id())
        index.call_expr.function = "_[_]"
        index.call_expr.args.add().CopyFrom(e)
        zero = index.call_expr.args.add(id=self._id())
        zero.const_expr.int64_value = 0
        return index

    def _same_kind(self, a: Any, b: Any) -> bool:
        ta = self._static(a)
        return ta in (QUANTITY, SEMVER) and ta == self._static(b)

    def _replace_call(self, e: Any, function: str, *args: Any) -> None:
        """Replace node e, in place and keeping its id, by `function(args...)`.

        The arguments must already be copies: e's children are cleared first.
        """
        eid = e.id
        e.Clear()
        e.id = eid
        e.call_expr.function = function
        for arg in args:
            e.call_expr.args.add().CopyFrom(arg)
        self.ast.reference_map.pop(eid, None)

    def _native_compare(self, e: Any, op: str, a: Any, b: Any) -> None:
        """Replace node e by `a.v <op> b.v` (op a CEL operator function name)."""
        self._replace_call(e, op, self._order_key(a), self._order_key(b))

    def _compare_to_operands(self, e: Any) -> tuple[Any, Any] | None:
        if _kind(e) != "call_expr":
            return None
        c = e.call_expr
        if c.function != "compareTo" or not c.HasField("target") or len(c.args) != 1:
            return None
        if not self._same_kind(c.target, c.args[0]):
            return None
        return c.target, c.args[0]

    def _rewrite_comparison(self, e: Any) -> bool:
        """Native rewrites of comparisons between two known Quantities or Semvers."""
        c = e.call_expr
        fn = c.function
        if fn in ("isGreaterThan", "isLessThan") and c.HasField("target") and len(c.args) == 1:
            return self._rewrite_order_method(e, fn, c.target, c.args[0])
        if fn == "@in" and len(c.args) == 2 and _kind(c.args[1]) == "list_expr":
            return self._rewrite_in_list(e, c.args[0], c.args[1])
        if fn not in _OPS or len(c.args) != 2 or c.HasField("target"):
            return False
        x, y = c.args
        if fn in ("_==_", "_!=_") and self._same_kind(x, y):
            self._native_compare(e, fn, _copy(x), _copy(y))
            return True
        return self._rewrite_compare_to_constant(e, fn, x, y)

    def _rewrite_order_method(self, e: Any, fn: str, a: Any, b: Any) -> bool:
        """`a.isGreaterThan(b)` / `a.isLessThan(b)` as a native `>` / `<`."""
        if not self._same_kind(a, b):
            return False
        self._native_compare(e, "_>_" if fn == "isGreaterThan" else "_<_", _copy(a), _copy(b))
        return True

    def _rewrite_in_list(self, e: Any, x: Any, items: Any) -> bool:
        """`x in [a, b, ...]` over order keys, so equal values match whatever their spelling."""
        elements = items.list_expr.elements
        if (
            not elements
            or items.list_expr.optional_indices
            or not all(self._same_kind(x, el) for el in elements)
        ):
            return False
        keys = Expr(id=self._id())
        keys.list_expr.SetInParent()
        for el in elements:
            keys.list_expr.elements.add().CopyFrom(self._order_key(el))
        self._replace_call(e, "@in", self._order_key(x), keys)
        return True

    def _rewrite_compare_to_constant(self, e: Any, fn: str, x: Any, y: Any) -> bool:
        """`a.compareTo(b) <op> k` (either side) as one native comparison, or a constant."""
        for cmp_side, const_side, flipped in ((x, y, False), (y, x, True)):
            operands = self._compare_to_operands(cmp_side)
            k = _int_constant(const_side)
            if operands is None or k is None:
                continue
            truth = frozenset(
                r for r in (-1, 0, 1) if (_OPS[fn](k, r) if flipped else _OPS[fn](r, k))
            )
            native = _TRUTH_TO_OP.get(truth)
            if native is not None:
                self._native_compare(e, native, _copy(operands[0]), _copy(operands[1]))
            else:
                eid = e.id
                e.Clear()
                e.id = eid
                e.const_expr.bool_value = truth == frozenset((-1, 0, 1))
                self.ast.reference_map.pop(eid, None)
            return True
        return False

    def _is_device_map(self, e: Any) -> bool:
        if _kind(e) != "select_expr" or e.select_expr.test_only:
            return False
        if e.select_expr.field not in ("attributes", "capacity"):
            return False
        op = e.select_expr.operand
        if _kind(op) != "ident_expr" or op.ident_expr.name != "device":
            return False
        ref = self.ast.reference_map.get(op.id)
        return ref is not None and ref.name == "device"

    def run(self) -> None:
        """Apply every rewrite to the whole tree."""
        self._visit(self.ast.expr)

    def capacity_misuse(self) -> str | None:
        """Kubernetes types capacity values as Quantity; the checker here sees dyn.

        Report, as the upstream checker would, a capacity value used where a Quantity
        cannot be (a list/string operation, an ordering operator, the whole result).
        """
        if self.ast.expr.id in self._capacity_values:
            return "must evaluate to bool or the unknown type, not kubernetes.Quantity"
        return self._misuse(self.ast.expr)

    def _misuse(self, e: Any) -> str | None:
        kind = _kind(e)
        found = None
        if kind == "call_expr":
            found = self._call_misuse(e.call_expr)
        elif kind == "select_expr" and e.select_expr.operand.id in self._capacity_values:
            found = f"kubernetes.Quantity has no field '{e.select_expr.field}'"
        elif (
            kind == "comprehension_expr"
            and e.comprehension_expr.iter_range.id in self._capacity_values
        ):
            found = "a kubernetes.Quantity (a device capacity) is not iterable"
        for child in _children(e):
            found = found or self._misuse(child)
        return found

    def _call_misuse(self, c: Any) -> str | None:
        """A capacity value passed where a Quantity is not accepted, in one call."""
        operands = ([c.target] if c.HasField("target") else []) + list(c.args)
        for position, operand in enumerate(operands):
            if operand.id not in self._capacity_values:
                continue
            if not _quantity_use_ok(c.function, c.HasField("target"), position):
                return (
                    f"found no matching overload for '{c.function}' applied to a "
                    "kubernetes.Quantity (a device capacity)"
                )
            other = operands[1 - position] if c.function in ("_==_", "_!=_") else None
            if other is not None and self._static(other) not in (QUANTITY, "dyn"):
                return (
                    f"found no matching overload for '{c.function}' applied to "
                    f"'(kubernetes.Quantity, {self._static(other)})'"
                )
        return None

    def _visit(self, e: Any) -> None:
        """Rewrite e's subtree bottom-up (children first, then the node itself)."""
        kind = _kind(e)
        if kind == "struct_expr" and e.struct_expr.message_name:
            self.message_construction = True
        for child in _children(e):
            self._visit(child)
        if kind == "call_expr":
            self._rewrite_call(e)
        elif (
            kind == "select_expr"
            and not e.select_expr.test_only
            and self._is_device_map(e.select_expr.operand)
        ):
            key = Expr(id=self._id())
            key.const_expr.string_value = e.select_expr.field
            self._default_empty(e, _copy(e.select_expr.operand), key)

    def _clone(self, e: Any) -> Any:
        """A deep copy of e with fresh ids (checker annotations copied along)."""
        copy = Expr()
        copy.CopyFrom(e)
        self._renumber(copy)
        return copy

    def _renumber(self, e: Any) -> None:
        old, new = e.id, self._id()
        e.id = new
        if old in self.ast.reference_map:
            self.ast.reference_map[new].CopyFrom(self.ast.reference_map[old])
        if old in self.ast.type_map:
            self.ast.type_map[new].CopyFrom(self.ast.type_map[old])
        for child in _children(e):
            self._renumber(child)

    def _default_empty(self, e: Any, operand: Any, key: Any) -> None:
        """Replace node e by a lookup of key in operand defaulting to `{}`, keeping e's id.

        With a constant key: `key in operand ? operand[key] : {}` (cheapest to run);
        otherwise `operand[?key].orValue({})`, which evaluates key once.
        """
        empty = Expr(id=self._id())
        empty.struct_expr.SetInParent()
        eid = e.id
        if _kind(key) == "const_expr":
            test = Expr(id=self._id())
            test.call_expr.function = "@in"
            test.call_expr.args.add().CopyFrom(key)
            test.call_expr.args.add().CopyFrom(operand)
            index = Expr(id=self._id())
            index.call_expr.function = "_[_]"
            index.call_expr.args.add().CopyFrom(self._clone(operand))
            index.call_expr.args.add().CopyFrom(self._clone(key))
            e.Clear()
            e.id = eid
            e.call_expr.function = "_?_:_"
            e.call_expr.args.add().CopyFrom(test)
            e.call_expr.args.add().CopyFrom(index)
            e.call_expr.args.add().CopyFrom(empty)
            self.ast.reference_map.pop(eid, None)
            return
        lookup = Expr(id=self._id())
        lookup.call_expr.function = "_[?_]"
        lookup.call_expr.args.add().CopyFrom(operand)
        lookup.call_expr.args.add().CopyFrom(key)
        e.Clear()
        e.id = eid
        e.call_expr.function = "orValue"
        e.call_expr.target.CopyFrom(lookup)
        e.call_expr.args.add().CopyFrom(empty)
        self.ast.reference_map.pop(eid, None)

    def _call(self, function: str, *args: Any, target: Any = None) -> Any:
        node = Expr(id=self._id())
        node.call_expr.function = function
        if target is not None:
            node.call_expr.target.CopyFrom(target)
        for arg in args:
            node.call_expr.args.add().CopyFrom(arg)
        return node

    def _is_list(self, e: Any) -> Any:
        """`type(e) == list`: true exactly for run-time Quantity/Semver values here."""
        list_type = Expr(id=self._id())
        list_type.ident_expr.name = "list"
        return self._call("_==_", self._call("type", e), list_type)

    def _dyn_equality(self, e: Any, fn: str, a: Any, b: Any) -> None:
        """`a == b` with one dyn operand, as cel-go's Quantity/Semver Equal behaves.

        Both Quantities/Semvers: compare values. Otherwise plain equality (false across
        types), which is what a string or number on the left gives upstream.
        """
        zero = Expr(id=self._id())
        zero.const_expr.int64_value = 0
        both = self._call("_&&_", self._is_list(self._clone(a)), self._is_list(self._clone(b)))
        by_value = self._call(
            fn, self._call("compareTo", self._clone(b), target=self._clone(a)), zero
        )
        plain = self._call(fn, a, b)
        eid = e.id
        replacement = self._call("_?_:_", both, by_value, plain)
        e.CopyFrom(replacement)
        e.id = eid
        self.ast.reference_map.pop(eid, None)

    def _rewrite_call(self, e: Any) -> None:
        if self._rewrite_comparison(e):
            return
        c = e.call_expr
        fn = c.function
        if fn == "_[_]" and len(c.args) == 2 and self._is_device_map(c.args[0]):
            self._default_empty(e, _copy(c.args[0]), _copy(c.args[1]))
        elif fn in ("_==_", "_!=_") and len(c.args) == 2:
            a, b = c.args
            types = {self._static(a), self._static(b)}
            if types & {QUANTITY, SEMVER} and types <= {QUANTITY, SEMVER, "dyn"}:
                self._dyn_equality(e, fn, a, b)
        elif not c.HasField("target"):
            self._fold_literal(e)

    def _fold_literal(self, e: Any) -> None:
        """`quantity("40Gi")` / `semver("1.2.3"[, b])` with literal arguments as a literal value."""
        c = e.call_expr
        consts = [a.const_expr for a in c.args if _kind(a) == "const_expr"]
        if len(consts) != len(c.args) or not consts:
            return
        folded = self._folded(c.function, consts)
        if folded is None:
            return
        # The run-time value is a list [order key, identity key] whatever the type.
        eid = e.id
        e.Clear()
        e.id = eid
        e.list_expr.SetInParent()
        for value in folded:
            element = e.list_expr.elements.add(id=self._id())
            element.const_expr.string_value = value
        self.ast.reference_map.pop(eid, None)

    def _folded(self, fn: str, consts: list[Any]) -> tuple[str, str] | None:
        if consts[0].WhichOneof("kind") != "string_value":
            return None
        text = consts[0].string_value
        if fn == "quantity" and len(consts) == 1:
            return self._fold_quantity(text)
        if fn != "semver":
            return None
        if len(consts) == 1:
            return self._fold_semver(text, False)
        if consts[1].WhichOneof("kind") != "bool_value":
            return None
        return self._fold_semver(text, consts[1].bool_value)


def _copy(e: Any) -> Any:
    """A copy of e (same ids), detached from its parent."""
    out = Expr()
    out.CopyFrom(e)
    return out


def _int_constant(e: Any) -> int | None:
    if _kind(e) != "const_expr" or e.const_expr.WhichOneof("kind") != "int64_value":
        return None
    return int(e.const_expr.int64_value)


_PRIMITIVE_NAMES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_QUANTITY_METHODS = frozenset(
    {
        "compareTo",
        "isGreaterThan",
        "isLessThan",
        "sign",
        "isInteger",
        "asInteger",
        "asApproximateFloat",
        "add",
        "sub",
    }
)
# Functions taking a Quantity as a (non-receiver) argument, or any value at all.
_QUANTITY_ARGUMENT = frozenset(
    {"compareTo", "isGreaterThan", "isLessThan", "add", "sub", "sign", "_==_", "_!=_"}
)
_ANY_ARGUMENT = frozenset({"_?_:_", "dyn", "type", "@in", "optional.of", "optional.ofNonZeroValue"})


def _quantity_use_ok(function: str, has_target: bool, position: int) -> bool:
    if has_target and position == 0:
        return function in _QUANTITY_METHODS or function == "orValue"
    if function == "@in":
        return position == 0
    return function in _QUANTITY_ARGUMENT or function in _ANY_ARGUMENT


_OPS: dict[str, Callable[[int, int], bool]] = {
    "_<_": lambda a, b: a < b,
    "_<=_": lambda a, b: a <= b,
    "_>_": lambda a, b: a > b,
    "_>=_": lambda a, b: a >= b,
    "_==_": lambda a, b: a == b,
    "_!=_": lambda a, b: a != b,
}
_TRUTH_TO_OP = {
    frozenset({1}): "_>_",
    frozenset({0}): "_==_",
    frozenset({-1}): "_<_",
    frozenset({0, 1}): "_>=_",
    frozenset({-1, 0}): "_<=_",
    frozenset({-1, 1}): "_!=_",
}


def _children(e: Any) -> list[Any]:
    kind = _kind(e)
    if kind == "select_expr":
        return [e.select_expr.operand]
    if kind == "call_expr":
        out = [e.call_expr.target] if e.call_expr.HasField("target") else []
        return out + list(e.call_expr.args)
    if kind == "list_expr":
        return list(e.list_expr.elements)
    if kind == "struct_expr":
        out = []
        for entry in e.struct_expr.entries:
            if entry.HasField("map_key"):
                out.append(entry.map_key)
            out.append(entry.value)
        return out
    if kind == "comprehension_expr":
        c = e.comprehension_expr
        return [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
    return []


def _max_id(e: Any) -> int:
    best = int(e.id)
    kind = _kind(e)
    children: list[Any] = []
    if kind == "select_expr":
        children = [e.select_expr.operand]
    elif kind == "call_expr":
        if e.call_expr.HasField("target"):
            children.append(e.call_expr.target)
        children.extend(e.call_expr.args)
    elif kind == "list_expr":
        children = list(e.list_expr.elements)
    elif kind == "struct_expr":
        for entry in e.struct_expr.entries:
            best = max(best, int(entry.id))
            if entry.HasField("map_key"):
                children.append(entry.map_key)
            children.append(entry.value)
    elif kind == "comprehension_expr":
        c = e.comprehension_expr
        children = [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
    for child in children:
        best = max(best, _max_id(child))
    return best


# ---------------------------------------------------------------------------------------
# Static size and cost estimate.

_GROWING = {
    # function -> how the result size relates to argument sizes (target first).
    "_+_": lambda s: sum(s),
    "replace": lambda s: s[0] * (1 + (s[2] if len(s) > 2 else 1)) + 1,
    "join": lambda s: s[0] * (1 + (s[1] if len(s) > 1 else 0)) + 1,
    "split": lambda s: 2 * s[0] + 1,
    "format": lambda s: s[0] * (1 + sum(s[1:])) + 1,
    "quote": lambda s: 2 * sum(s) + 2,
    "strings.quote": lambda s: 2 * sum(s) + 2,
    "findAll": lambda s: 2 * s[0] + 1,
}


def estimate(ast: Any) -> tuple[int, int]:
    """Return (max size, cost) of a checked expression; raise TooComplexError past limits."""
    return _est(ast.expr, {}, ast.type_map)


def _scalar(types: Any, e: Any) -> bool:
    """True when the checker typed e as a fixed-size value (bool, number, message)."""
    t = types.get(e.id)
    if t is None:
        return False
    kind = t.WhichOneof("type_kind")
    return kind == "message_type" or (kind == "primitive" and t.primitive in (1, 2, 3, 4))


def _check(size: int, cost: int) -> tuple[int, int]:
    if size > SIZE_LIMIT:
        raise TooComplexError(
            f"the estimated size of an intermediate value ({size}) exceeds the limit ({SIZE_LIMIT})"
        )
    if cost > COST_LIMIT:
        raise TooComplexError(f"the estimated cost ({cost}) exceeds the limit ({COST_LIMIT})")
    return size, cost


def _est(e: Any, env: dict[str, int], types: Any, mult: int = 1) -> tuple[int, int]:
    """(size, cost) of e; `mult` bounds how many times e runs (enclosing loops, capped
    by the engine's global iteration budget), and the cost returned includes it."""
    estimator = _ESTIMATORS.get(_kind(e))
    if estimator is None:
        return 1, mult
    return estimator(e, env, types, mult)


def _est_const(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    k = e.const_expr.WhichOneof("kind")
    if k == "string_value":
        return len(e.const_expr.string_value.encode()), mult
    if k == "bytes_value":
        return len(e.const_expr.bytes_value), mult
    return 1, mult


def _est_ident(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    name = e.ident_expr.name
    return env.get(name, DEVICE_SIZE if name == "device" else 1), mult


def _est_select(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    size, cost = _est(e.select_expr.operand, env, types, mult)
    return (1 if e.select_expr.test_only else size), cost + mult


def _est_list(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    total, cost = 0, mult
    for x in e.list_expr.elements:
        s, c = _est(x, env, types, mult)
        total, cost = total + s + 1, cost + c
    return _check(total, cost)


def _est_struct(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    total, cost = 0, mult
    for entry in e.struct_expr.entries:
        if entry.HasField("map_key"):
            s, c = _est(entry.map_key, env, types, mult)
            total, cost = total + s, cost + c
        s, c = _est(entry.value, env, types, mult)
        total, cost = total + s + 1, cost + c
    return _check(total, cost)


def _est_call(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    call = e.call_expr
    parts = ([call.target] if call.HasField("target") else []) + list(call.args)
    sizes: list[int] = []
    cost = mult
    for p in parts:
        s, c = _est(p, env, types, mult)
        sizes.append(s)
        cost += c
    grow = _GROWING.get(call.function)
    size = grow(sizes) if grow and sizes else max(sizes, default=1)
    if _scalar(types, e):
        size = 1
    # Work proportional to what the call reads and produces, each time it runs.
    return _check(size, cost + mult * (size + sum(sizes)))


def _est_comprehension(e: Any, env: dict[str, int], types: Any, mult: int) -> tuple[int, int]:
    c = e.comprehension_expr
    range_size, cost = _est(c.iter_range, env, types, mult)
    element = range_size
    count = range_size
    if _kind(c.iter_range) == "list_expr":
        elements = c.iter_range.list_expr.elements
        count = len(elements)
        element = max((_est(x, env, types)[0] for x in elements), default=0)
    iterations = min(count, ITERATION_BUDGET)
    body_mult = min(ITERATION_BUDGET, mult * iterations)
    inner = dict(env)
    inner[c.iter_var] = element
    if c.iter_var2:
        inner[c.iter_var2] = element
    accu0, init_cost = _est(c.accu_init, inner, types, mult)
    inner[c.accu_var] = accu0
    step_size, step_cost = _est(c.loop_step, inner, types, body_mult)
    _, cond_cost = _est(c.loop_condition, inner, types, body_mult)
    growth = max(0, step_size - accu0)
    accu = accu0 + iterations * growth
    _check(accu, 0)
    inner[c.accu_var] = accu
    result_size, result_cost = _est(c.result, inner, types, mult)
    total = cost + init_cost + step_cost + cond_cost + result_cost
    return _check(result_size, total)


_Estimator = Callable[[Any, dict[str, int], Any, int], tuple[int, int]]
_ESTIMATORS: dict[str, _Estimator] = {
    "const_expr": _est_const,
    "ident_expr": _est_ident,
    "select_expr": _est_select,
    "list_expr": _est_list,
    "struct_expr": _est_struct,
    "call_expr": _est_call,
    "comprehension_expr": _est_comprehension,
}
