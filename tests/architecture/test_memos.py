"""Every process-level memo of the pure layers is registered, and the docs show the registry.

A memo nobody registered is one nobody switches off and nobody checks: the
pure layers may remember only through `modelplane.api.memo`, under a name in
`MEMOS`, and docs/architecture.md holds `markdown_table()` verbatim.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

from modelplane.api.memo import MEMOS, MemoEntry, markdown_table

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "modelplane"
PURE = ("api", "dra", "scheduling", "compose")
# Calls that declare a memo, and the mechanism each declares.
DECLARING = {"Memo": "Memo", "CopiedMemo": "CopiedMemo", "memo_function": None}


def _pure_modules() -> list[Path]:
    return sorted(p for layer in PURE for p in (PACKAGE / layer).rglob("*.py"))


def _declared(path: Path) -> list[tuple[str, str]]:
    """(registered name, mechanism) of every memo the module declares."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        first = node.args[0]
        if called in DECLARING and isinstance(first, ast.Constant):
            mechanism = DECLARING[called]
            if mechanism is None:
                rest = node.args[1:]
                given = rest[0].value if rest and isinstance(rest[0], ast.Constant) else None
                mechanism = str(given or "memo_function")
            out.append((str(first.value), mechanism))
    return out


def test_the_docs_show_the_registry() -> None:
    docs = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert markdown_table() in docs, "regenerate the memo table: modelplane.api.memo.markdown_table"


def _resolve(name: str) -> object:
    """The object `name` (module.attribute, or module.Class.attribute) names."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module("modelplane." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise AssertionError(f"{name} names no module")


@pytest.mark.parametrize("entry", MEMOS, ids=lambda m: m.name)
def test_every_registered_memo_exists_and_names_a_test_that_exists(entry: MemoEntry) -> None:
    found = _resolve(entry.name)
    if entry.mechanism == "cached_property":
        assert isinstance(found, functools.cached_property), entry.name
    assert (ROOT / entry.test).is_file(), entry.test


def test_every_cached_property_is_registered() -> None:
    """A per-instance cache of the pure layers is registered (and so shown) too."""
    registered = {m.name for m in MEMOS if m.mechanism == "cached_property"}
    for path in _pure_modules():
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and any(
                    "cached_property" in ast.unparse(d) for d in item.decorator_list
                ):
                    name = f"{module}.{node.name}.{item.name}"
                    assert name in registered, f"{path}: register {name} in api.memo.MEMOS"


def test_every_declared_memo_is_registered_under_its_mechanism() -> None:
    registered = {m.name: m.mechanism for m in MEMOS}
    memo_module = PACKAGE / "api" / "memo.py"
    for path in _pure_modules():
        if path == memo_module:
            continue
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for name, mechanism in _declared(path):
            assert name.rpartition(".")[0] == module, f"{path}: {name} is not this module's"
            assert registered.get(name) == mechanism, f"{path}: {name} as {mechanism}"


def test_the_pure_layers_remember_only_through_the_memo_module() -> None:
    banned = re.compile(r"lru_cache|functools\.cache\b|@cache\b")
    for path in _pure_modules():
        if path.name == "memo.py":
            continue
        found = banned.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path}: remember through modelplane.api.memo, not {found}"
