"""Reading and rewriting cel-expr-python's checked expressions (cel.expr.CheckedExpr).

`Expression.serialize()` yields a `google.protobuf.Any` holding a `cel.expr.CheckedExpr`.
We decode it with a partial schema declared here (fields we do not declare survive as
unknown fields and are serialised back unchanged), rewrite the tree where Kubernetes'
semantics differ from plain CEL, and hand the bytes back to `Env.deserialize`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["CheckedAst", "decode", "encode"]

_PKG = "modelplane.celast"


def _build() -> descriptor_pool.DescriptorPool:
    f = descriptor_pb2.FieldDescriptorProto
    opt, rep = f.LABEL_OPTIONAL, f.LABEL_REPEATED
    fdp = descriptor_pb2.FileDescriptorProto(
        name="modelplane/celast.proto", package=_PKG, syntax="proto3"
    )

    def msg(name: str, parent: Any = None) -> Any:
        return (parent.nested_type if parent is not None else fdp.message_type).add(name=name)

    def fld(m: Any, name: str, num: int, typ: int, tname: str = "", label: int = opt) -> None:
        kw: dict[str, Any] = {"name": name, "number": num, "type": typ, "label": label}
        if tname:
            kw["type_name"] = f".{_PKG}.{tname}"
        m.field.add(**kw)

    def oneof_fld(m: Any, name: str, num: int, typ: int, tname: str = "") -> None:
        fld(m, name, num, typ, tname)
        m.field[-1].oneof_index = 0

    def map_fld(m: Any, name: str, num: int, key: int, val: int, vname: str = "") -> None:
        entry = msg(name.title().replace("_", "") + "Entry", m)
        entry.options.map_entry = True
        fld(entry, "key", 1, key)
        fld(entry, "value", 2, val, vname)
        m.field.add(
            name=name,
            number=num,
            type=f.TYPE_MESSAGE,
            label=rep,
            type_name=f".{_PKG}.{m.name}.{entry.name}",
        )

    any_ = msg("Any")
    fld(any_, "type_url", 1, f.TYPE_STRING)
    fld(any_, "value", 2, f.TYPE_BYTES)

    const = msg("Constant")
    const.oneof_decl.add(name="kind")
    for name, num, typ in (
        ("null_value", 1, f.TYPE_INT32),
        ("bool_value", 2, f.TYPE_BOOL),
        ("int64_value", 3, f.TYPE_INT64),
        ("uint64_value", 4, f.TYPE_UINT64),
        ("double_value", 5, f.TYPE_DOUBLE),
        ("string_value", 6, f.TYPE_STRING),
        ("bytes_value", 7, f.TYPE_BYTES),
    ):
        oneof_fld(const, name, num, typ)

    expr = msg("Expr")
    ident = msg("Ident", expr)
    fld(ident, "name", 1, f.TYPE_STRING)
    select = msg("Select", expr)
    fld(select, "operand", 1, f.TYPE_MESSAGE, "Expr")
    fld(select, "field", 2, f.TYPE_STRING)
    fld(select, "test_only", 3, f.TYPE_BOOL)
    call = msg("Call", expr)
    fld(call, "target", 1, f.TYPE_MESSAGE, "Expr")
    fld(call, "function", 2, f.TYPE_STRING)
    fld(call, "args", 3, f.TYPE_MESSAGE, "Expr", rep)
    lst = msg("CreateList", expr)
    fld(lst, "elements", 1, f.TYPE_MESSAGE, "Expr", rep)
    fld(lst, "optional_indices", 2, f.TYPE_INT32, label=rep)
    struct = msg("CreateStruct", expr)
    entry = msg("Entry", struct)
    entry.oneof_decl.add(name="key_kind")
    fld(entry, "id", 1, f.TYPE_INT64)
    oneof_fld(entry, "field_key", 2, f.TYPE_STRING)
    oneof_fld(entry, "map_key", 3, f.TYPE_MESSAGE, "Expr")
    fld(entry, "value", 4, f.TYPE_MESSAGE, "Expr")
    fld(entry, "optional_entry", 5, f.TYPE_BOOL)
    fld(struct, "message_name", 1, f.TYPE_STRING)
    fld(struct, "entries", 2, f.TYPE_MESSAGE, "Expr.CreateStruct.Entry", rep)
    comp = msg("Comprehension", expr)
    fld(comp, "iter_var", 1, f.TYPE_STRING)
    fld(comp, "iter_range", 2, f.TYPE_MESSAGE, "Expr")
    fld(comp, "accu_var", 3, f.TYPE_STRING)
    fld(comp, "accu_init", 4, f.TYPE_MESSAGE, "Expr")
    fld(comp, "loop_condition", 5, f.TYPE_MESSAGE, "Expr")
    fld(comp, "loop_step", 6, f.TYPE_MESSAGE, "Expr")
    fld(comp, "result", 7, f.TYPE_MESSAGE, "Expr")
    fld(comp, "iter_var2", 8, f.TYPE_STRING)
    expr.oneof_decl.add(name="expr_kind")
    fld(expr, "id", 2, f.TYPE_INT64)
    oneof_fld(expr, "const_expr", 3, f.TYPE_MESSAGE, "Constant")
    oneof_fld(expr, "ident_expr", 4, f.TYPE_MESSAGE, "Expr.Ident")
    oneof_fld(expr, "select_expr", 5, f.TYPE_MESSAGE, "Expr.Select")
    oneof_fld(expr, "call_expr", 6, f.TYPE_MESSAGE, "Expr.Call")
    oneof_fld(expr, "list_expr", 7, f.TYPE_MESSAGE, "Expr.CreateList")
    oneof_fld(expr, "struct_expr", 8, f.TYPE_MESSAGE, "Expr.CreateStruct")
    oneof_fld(expr, "comprehension_expr", 9, f.TYPE_MESSAGE, "Expr.Comprehension")

    # Only the parts of cel.expr.Type we read: dyn, primitive, list, map, message.
    typ = msg("Type")
    typ.oneof_decl.add(name="type_kind")
    empty = msg("Empty")
    del empty
    oneof_fld(typ, "dyn", 1, f.TYPE_MESSAGE, "Empty")
    oneof_fld(typ, "primitive", 3, f.TYPE_INT32)
    list_type = msg("ListType", typ)
    fld(list_type, "elem_type", 1, f.TYPE_MESSAGE, "Type")
    map_type = msg("MapType", typ)
    fld(map_type, "key_type", 1, f.TYPE_MESSAGE, "Type")
    fld(map_type, "value_type", 2, f.TYPE_MESSAGE, "Type")
    oneof_fld(typ, "list_type", 6, f.TYPE_MESSAGE, "Type.ListType")
    oneof_fld(typ, "map_type", 7, f.TYPE_MESSAGE, "Type.MapType")
    oneof_fld(typ, "message_type", 9, f.TYPE_STRING)

    ref = msg("Reference")
    fld(ref, "name", 1, f.TYPE_STRING)
    fld(ref, "overload_id", 3, f.TYPE_STRING, label=rep)

    checked = msg("CheckedExpr")
    map_fld(checked, "reference_map", 2, f.TYPE_INT64, f.TYPE_MESSAGE, "Reference")
    map_fld(checked, "type_map", 3, f.TYPE_INT64, f.TYPE_MESSAGE, "Type")
    fld(checked, "expr", 4, f.TYPE_MESSAGE, "Expr")

    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return pool


_POOL = _build()
AnyMsg: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PKG}.Any"))
CheckedAst: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName(f"{_PKG}.CheckedExpr")
)
Expr: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PKG}.Expr"))


def decode(serialized: bytes) -> tuple[str, Any]:
    """Split a serialized checked expression into (type URL, CheckedExpr message)."""
    wrapper = AnyMsg.FromString(serialized)
    return wrapper.type_url, CheckedAst.FromString(wrapper.value)


def encode(type_url: str, ast: Any) -> bytes:
    """Serialize a (possibly rewritten) CheckedExpr back into the engine's Any form."""
    return bytes(AnyMsg(type_url=type_url, value=ast.SerializeToString()).SerializeToString())
