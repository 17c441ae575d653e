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
    # inventory contract and summarizer (`api.inventory_summary`) it shares with
    # the control plane.
    "agent": {"api", "kube"},
    # The hydration Job's adapter: downloads and the Kubernetes API; it shares
    # only the hydration contract (`api.model_cache`) with the control plane.
    "hydrate": {"api", "kube"},
    # The local fleet (`modelplane dev`): processes, certificates and the API;
    # it shares the generated package files (`api.xrd`) and, for what it still
    # plays, the render's own status tables (`local.simulate`), so that a render
    # and the fleet report the same.
    "dev": {"api", "kube", "local"},
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[str]:
    """Every module `path` imports, absolute; `from pkg import mod` names `pkg.mod` too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.append(module)
            names.extend(f"{module}.{a.name}" for a in node.names)
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


# The composer layer's wings (`modelplane/compose/<wing>/`): each owns one
# domain's composers and their helpers. A wing imports the shared core, the
# layers left of `compose`, anything inside itself, and of another wing only
# the modules this table names (its documented entry points).
WING_IMPORTS: dict[str, dict[str, set[str]]] = {
    # The replica mounts its ModelCache's claim, and its workload must not
    # outlive its cluster's serving-stack releases.
    "replica": {"caches": {"manifests"}, "clusters": {"infra"}},
    "clusters": {},
    "caches": {},
    "routing": {},
    # A deployment checks the pod templates its replicas will run.
    "deployments": {"replica": {"workload"}},
}
# The shared core: flat modules of `modelplane/compose/`. Only the registry,
# which maps every kind to its composer, imports a wing.
CORE = {"__init__", "types", "outcome", "common", "objects", "readiness", "registry", "unreadable"}
COMPOSE = PACKAGE / "compose"


def test_compose_is_a_small_core_and_known_wings() -> None:
    flat = {p.stem for p in COMPOSE.glob("*.py")}
    wings = {p.name for p in COMPOSE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert flat == CORE
    assert wings == set(WING_IMPORTS)
    for wing in wings:
        init = COMPOSE / wing / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))


def _wing_of(module: str) -> tuple[str, str] | None:
    """(wing, its module under the wing) of a `modelplane.compose.<wing>...` name."""
    parts = module.split(".")
    if parts[:2] != ["modelplane", "compose"] or len(parts) < 3 or parts[2] not in WING_IMPORTS:
        return None
    return parts[2], ".".join(parts[3:])


def _wing_violations(path: Path, own: str | None) -> list[str]:
    out = []
    for name in _imports(path):
        target = _wing_of(name)
        if target is None or target[0] == own:
            continue
        wing, module = target
        allowed = WING_IMPORTS[own].get(wing) if own is not None else None
        if own is None and path.name == "registry.py":
            continue
        # `from modelplane.compose.<wing> import mod` also names the bare package.
        if module == "" or (allowed is not None and module.split(".")[0] in allowed):
            continue
        out.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return out


@pytest.mark.parametrize("wing", sorted(WING_IMPORTS))
def test_a_wing_imports_another_only_where_the_table_allows(wing: str) -> None:
    violations = []
    for path in sorted((COMPOSE / wing).rglob("*.py")):
        violations.extend(_wing_violations(path, wing))
    assert violations == []


def test_the_core_imports_no_wing_but_the_registry() -> None:
    violations = []
    for path in sorted(COMPOSE.glob("*.py")):
        violations.extend(_wing_violations(path, None))
    assert violations == []


def _edges(path: Path, known: set[str]) -> set[str]:
    """The Modelplane modules `path` imports, deferred imports included: `from pkg import
    name` is an edge to `pkg.name` where that is a module, else to `pkg` itself."""
    names = _imports(path)
    found: set[str] = set()
    for i, name in enumerate(names):
        if name not in known:
            continue
        # `_imports` lists `from pkg import a` as pkg, then pkg.a: the package counts
        # only when none of the names after it is a module of its own.
        following = [n for n in names[i + 1 :] if n.startswith(name + ".")]
        if not any(n in known for n in following):
            found.add(name)
    return found - {_module_name(path)}


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import one another, each of more than one module."""
    reach = {node: _reach(graph, node) for node in graph}
    groups = {
        tuple(sorted({node} | {other for other in reach[node] if node in reach[other]}))
        for node in graph
        if node in reach[node]
    }
    return sorted(list(group) for group in groups)


def test_no_module_imports_itself_back() -> None:
    """No import cycle between modules, deferred imports counted: a cycle a function-level
    import hides still ties two modules into one."""
    paths = sorted(PACKAGE.rglob("*.py"))
    known = {_module_name(p) for p in paths}
    graph = {_module_name(p): _edges(p, known) for p in paths}
    assert _cycles(graph) == []
    # The check itself: a two-module loop is found.
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
