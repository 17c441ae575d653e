"""docs/architecture.md names only files and folders that exist.

The map is read to find code: a module it names that was moved or removed
sends a reader nowhere. Every path it quotes (`local/engine.py`,
`modelplane/compose/`, `tests/architecture/test_layers.py`) and every entry of
its `compose/` tree must exist, as written from the repository, from the
package, or (a short name, `stamping/dra.py`) as the end of a package path.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "modelplane"

# Where a quoted path may start: the repository's folders and the package's layers.
TOP = {"modelplane", "tests", "docs", "examples", "benchmarks", "package"} | {
    p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_")
}
SUFFIXES = (".py", ".md", ".toml", ".yaml", ".json")
# Named on purpose though not in this repository: the specification lives beside
# it, and an agent's ConfigMap key is a file name only inside the ConfigMap.
ELSEWHERE = {"SPEC.md", "../shared/SPEC.md", "inventory.json"}
QUOTED = re.compile(r"`([^`\s]+)`")
TREE_ENTRY = re.compile(r"^([│ ]*)[├└]── (\S+)")


def quoted_paths(text: str) -> set[str]:
    """Every backquoted token of `text` that reads as a file or folder of the project."""
    found = set()
    for token in QUOTED.findall(text):
        if any(ch in token for ch in "<>:=*") or token.startswith(("/", ".", "http")):
            continue
        head = token.split("/", 1)[0]
        if token.endswith(SUFFIXES) or ("/" in token and head in TOP):
            found.add(token)
    return found - ELSEWHERE


def tree_paths(text: str) -> set[str]:
    """The entries of the drawn `compose/` tree, each as a path from the package."""
    found: set[str] = set()
    for block in re.findall(r"```\n(compose/\n.*?)```", text, flags=re.S):
        stack = ["compose"]
        for line in block.splitlines()[1:]:
            m = TREE_ENTRY.match(line)
            if m is None:
                continue  # a description's continuation line
            depth = len(m.group(1)) // 4 + 1
            name = m.group(2).rstrip("/")
            del stack[depth:]
            found.add("/".join([*stack, name]))
            stack.append(name)
    return found


def exists(path: str, package_files: list[str]) -> bool:
    """Whether `path` names something, from the repository, the package, or as the
    end of a package file's path."""
    if (ROOT / path).exists() or (PACKAGE / path).exists():
        return True
    head = path.split("/", 1)[0]
    if head in TOP:
        return False  # written from a root: it must be there
    tail = "/" + path.rstrip("/")
    return any(f.endswith(tail) or ("/" + f + "/").find(tail + "/") >= 0 for f in package_files)


@pytest.fixture(scope="module")
def package_files() -> list[str]:
    return [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*") if "__pycache__" not in p.parts]


def test_the_doc_names_paths_and_draws_the_compose_tree() -> None:
    # The extraction itself: a regex that found nothing would pass every check.
    text = DOC.read_text(encoding="utf-8")
    assert {"local/engine.py", "tests/architecture/test_layers.py"} <= quoted_paths(text)
    tree = tree_paths(text)
    assert "compose/replica/backends" in tree and "compose/deployments/revisions.py" in tree


def test_every_path_the_architecture_doc_names_exists(package_files: list[str]) -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = sorted(
        p for p in quoted_paths(text) | tree_paths(text) if not exists(p, package_files)
    )
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_a_moved_module_is_reported(package_files: list[str]) -> None:
    text = "See `local/engine_old.py`, `compose/replica/gone/`, `stamping/dra.py`.\n"
    text += "```\ncompose/\n├── types.py   ok\n└── wing/\n    └── nowhere.py   not there\n```\n"
    named = quoted_paths(text) | tree_paths(text)
    assert sorted(p for p in named if not exists(p, package_files)) == [
        "compose/replica/gone/",
        "compose/wing",
        "compose/wing/nowhere.py",
        "local/engine_old.py",
    ]
