"""The embedded control plane and the function name Modelplane's kinds through `api/constants.py`.

A kind spelled out as a string in code is one more place to change when a kind
is renamed, and one a search for the constant misses. Prose (docstrings,
comments) may name kinds freely.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from modelplane.api import constants as c

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("local", "crossplane")
# Modelplane's own kinds (PriorityClass is Kubernetes').
KINDS = {
    value
    for name, value in vars(c).items()
    if name.startswith("KIND_") and value != c.KIND_PRIORITY_CLASS
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def kind_literals(path: Path) -> list[str]:
    """`line: "Kind"` for every string constant in code (not a docstring) that is a kind."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _docstrings(tree)
    return [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in KINDS and id(node) not in prose
    ]


def test_the_kinds_are_modelplanes() -> None:
    assert {"ModelDeployment", "InferenceCluster", "InferenceClass", "InferenceGateway"} <= KINDS


@pytest.mark.parametrize("layer", LAYERS)
def test_no_kind_literal_in_code(layer: str) -> None:
    found = {
        str(p.relative_to(ROOT)): hits
        for p in sorted((ROOT / "modelplane" / layer).rglob("*.py"))
        if (hits := kind_literals(p))
    }
    assert not found, f"use the KIND_* constants of api/constants.py: {found}"
