"""The layer rule of SPEC §1: each layer imports only from layers to its left."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "modelplane"

# layer → the Modelplane layers it may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "api": set(),
    "dra": {"api"},
    "scheduling": {"api", "dra"},
    "compose": {"api", "dra", "scheduling"},
    "crossplane": {"api", "dra", "scheduling", "compose"},
    "local": {"api", "dra", "scheduling", "compose", "crossplane"},
    # The Kubernetes API client of the programs that run in workload clusters.
    "kube": set(),
    # The inventory agent on each workload cluster: the Kubernetes API, and the
    # inventory contract and summarizer it shares with the control plane.
    "agent": {"api", "dra", "scheduling", "compose", "kube"},
    # The hydration Job's adapter: downloads and the Kubernetes API; it shares
    # only the hydration contract (`api.model_cache`) with the control plane.
    "hydrate": {"api", "kube"},
    # The local fleet (`modelplane dev`): processes, certificates and the API;
    # it shares only the generated package files (`api.xrd`).
    "dev": {"api", "kube"},
    "cli": {
        "api",
        "dra",
        "scheduling",
        "compose",
        "crossplane",
        "local",
        "kube",
        "hydrate",
        "agent",
        "dev",
    },
}
# Only the composers and what they build on must stay free of I/O and clocks.
PURE = ("api", "dra", "scheduling", "compose")
IMPURE_MODULES = {"os", "time", "datetime", "random", "socket", "subprocess", "pathlib", "grpc"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(layer: str) -> list[Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


def test_every_layer_is_known() -> None:
    layers = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert layers == set(ALLOWED)


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_from_its_left(layer: str) -> None:
    violations = []
    for path in _modules(layer):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "modelplane" or len(parts) < 2 or parts[1] == layer:
                continue
            if parts[1] in ALLOWED and parts[1] not in ALLOWED[layer]:
                violations.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert violations == []


@pytest.mark.parametrize("layer", PURE)
def test_pure_layers_do_no_io(layer: str) -> None:
    violations = []
    for path in _modules(layer):
        for name in _imports(path):
            if name.split(".")[0] in IMPURE_MODULES:
                violations.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert violations == []


def test_the_function_and_the_cli_never_load_the_hydrators_download_libraries() -> None:
    # The [hydrate] extra is for the hydration Job: importing the function
    # server and the whole CLI (which registers `modelplane hydrate`) must not
    # load huggingface_hub or boto3.
    import subprocess
    import sys

    code = (
        "import sys, modelplane.crossplane.function, modelplane.cli.main;"
        "import modelplane.hydrate.sources, modelplane.hydrate.report;"
        "print(sorted(m for m in ('boto3', 'botocore', 'huggingface_hub') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
