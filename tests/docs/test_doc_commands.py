"""Docs that do what they say: every shell command in the user-facing docs is run here,
or marked in the doc as not runnable here, with a reason.

The docs are README.md, docs/*.md and every README.md under examples/. A fenced
block labelled `sh`, `bash`, `shell` or `console` holds commands:

- `sh`/`bash`/`shell`: one command per line (a trailing `\\` continues it, `#`
  starts a comment); each must exit 0.
- `console`: `$ command` lines, each followed by the output the doc shows; the
  command's output (stdout then stderr, trailing spaces dropped) must be exactly
  that. A comment `# exits N` on the command line says it fails on purpose.

An HTML comment on the line before the fence, `<!-- not-run: REASON -->`, marks
every command of the block as not runnable here; the test lists each one as a
skip with that reason (`pytest -rs`). A fence without a label must not hold
commands (label it `text` for output or diagrams), so no command hides from
this test.

Commands run in a scratch copy of the repository (they may write `out/`, rebuild
`package/`), one copy per block, in the block's order, with this interpreter's
`modelplane` first on PATH: what `. .venv/bin/activate` gives a reader. Only
`modelplane`, `make` and `ls` run; anything else, or any shell syntax (pipes,
redirections, `$VARIABLES`, heredocs, globs), must be marked not-run: commands
are split with shlex and run without a shell.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHELL_LABELS = {"sh", "bash", "shell", "console"}
RUNNERS = {"modelplane", "make", "ls"}
# Text that needs a shell to mean what it says; such a command must be marked.
SHELL_SYNTAX = re.compile(r"[|<>;&`*?]|\$[A-Za-z{(]")
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.+?)\s*-->$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<label>[A-Za-z0-9_+-]*)\s*$")
EXITS = re.compile(r"#\s*exits\s+(?P<code>\d+)\s*$")
# The width the docs' tables are written at (rich reads COLUMNS when not on a tty);
# wide enough that explain's tables do not wrap.
COLUMNS = "240"
# A line of an unlabelled fence that reads like a command someone should run.
COMMAND_LIKE = re.compile(
    r"^\s*(\$\s+)?(modelplane|make|python3?|pip|kubectl|docker|crossplane|helm|ls|grep|curl)"
    r"(\s|$)"
)


def doc_files() -> list[Path]:
    """The user-facing docs, in a stable order (docs/dev.md included once it exists)."""
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return docs + sorted((ROOT / "examples").rglob("README.md"))


@dataclass
class Command:
    """One command of a doc, where it is, and what the doc says about it."""

    doc: str  # path relative to the repository
    line: int  # 1-based line of the command in the doc
    text: str  # as written, continuation lines joined
    block: int  # index of its block in the doc
    not_run: str | None = None  # the reason the doc gives, when marked
    expected: list[str] | None = None  # the output a console block shows
    exit_code: int = 0

    @property
    def id(self) -> str:
        """A pytest id naming doc, line and command."""
        return f"{self.doc}:{self.line}: {self.text[:70]}"


@dataclass
class Block:
    """A fenced block: its label, marker and lines with their line numbers."""

    label: str
    start: int  # line number of the opening fence
    not_run: str | None
    lines: list[tuple[int, str]] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    """Every fenced block of a markdown text, with the not-run marker just above it."""
    found: list[Block] = []
    current: Block | None = None
    previous = ""
    for number, line in enumerate(text.splitlines(), start=1):
        fence = FENCE.match(line)
        if current is None and fence:
            marker = NOT_RUN.match(previous.strip())
            reason = marker.group("reason") if marker else None
            current = Block(fence.group("label").lower(), number, reason)
        elif current is not None and line.strip() == "```":
            found.append(current)
            current = None
        elif current is not None:
            current.lines.append((number, line))
        if line.strip():
            previous = line
    return found


def _shell_commands(doc: str, index: int, block: Block) -> list[Command]:
    """Commands of a `sh` block: continuation lines joined, comments and heredoc bodies
    kept with the command they belong to."""
    out: list[Command] = []
    pending: tuple[int, str] | None = None
    heredoc: str | None = None
    for number, line in block.lines:
        if heredoc is not None:
            assert pending is not None
            pending = (pending[0], pending[1] + "\n" + line)
            if line.strip() == heredoc:
                out.append(Command(doc, pending[0], pending[1], index, block.not_run))
                pending, heredoc = None, None
            continue
        if pending is None and (not line.strip() or line.lstrip().startswith("#")):
            continue
        start, text = pending if pending is not None else (number, "")
        joined = f"{text} {line.strip()}".strip()
        if joined.endswith("\\"):
            pending = (start, joined[:-1].rstrip())
            continue
        here = re.search(r"<<-?\s*'?(\w+)'?", joined)
        if here:
            pending, heredoc = (start, joined), here.group(1)
            continue
        pending = None
        out.append(Command(doc, start, joined, index, block.not_run))
    return out


def _console_commands(doc: str, index: int, block: Block) -> list[Command]:
    """Commands of a `console` block, each with the output lines that follow it."""
    out: list[Command] = []
    for number, line in block.lines:
        if line.startswith("$ "):
            text = line[2:].strip()
            code = EXITS.search(text)
            out.append(
                Command(
                    doc,
                    number,
                    text,
                    index,
                    block.not_run,
                    expected=[],
                    exit_code=int(code.group("code")) if code else 0,
                )
            )
        elif out:
            assert out[-1].expected is not None
            out[-1].expected.append(line.rstrip())
    return out


def commands_of(path: Path, root: Path = ROOT) -> list[Command]:
    """Every command in one doc, in order (named relative to `root`)."""
    doc = path.relative_to(root).as_posix()
    found: list[Command] = []
    for index, block in enumerate(blocks(path.read_text(encoding="utf-8"))):
        if block.label == "console":
            found += _console_commands(doc, index, block)
        elif block.label in SHELL_LABELS:
            found += _shell_commands(doc, index, block)
    return found


def unlabelled_commands(path: Path, root: Path = ROOT) -> list[str]:
    """Lines of unlabelled fences that look like commands (they would escape the test)."""
    doc = path.relative_to(root).as_posix()
    return [
        f"{doc}:{number}: {line.strip()}"
        for block in blocks(path.read_text(encoding="utf-8"))
        if not block.label
        for number, line in block.lines
        if COMMAND_LIKE.match(line)
    ]


COMMANDS = [cmd for path in doc_files() for cmd in commands_of(path)]


def _argv(cmd: Command) -> list[str]:
    """The command as an argument vector, or a failure saying how to classify it."""
    text = EXITS.sub("", cmd.text)
    if SHELL_SYNTAX.search(text):
        pytest.fail(
            f"{cmd.id}: needs a shell (pipe, redirection, variable, heredoc or glob); "
            "simplify it or mark its block <!-- not-run: REASON -->"
        )
    argv = shlex.split(text, comments=True)
    if not argv or argv[0] not in RUNNERS:
        pytest.fail(
            f"{cmd.id}: only {', '.join(sorted(RUNNERS))} run here; "
            "mark its block <!-- not-run: REASON --> if it cannot"
        )
    if argv[0] == "make":
        # The scratch copy has no .venv: make uses this interpreter's and never
        # reinstalls it (-o: the install stamp counts as done).
        argv[1:1] = ["-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}"]
    return argv


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one command without a shell, this interpreter's scripts first on PATH."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": COLUMNS,
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    # Our own docs' commands, as an argument vector: no shell ever sees them.
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


_SKIP = shutil.ignore_patterns(
    ".git", ".venv", ".venv-tools", "out", "mutants", "build", "*.egg-info", "__pycache__"
)
# Scratch copies, one per block, with how many of the block's commands ran there.
_WORKSPACES: dict[tuple[str, int], tuple[Path, int]] = {}


def _workspace(cmd: Command, tmp_root: Path) -> Path:
    """The block's scratch copy, with the block's earlier commands already run in it."""
    key = (cmd.doc, cmd.block)
    if key not in _WORKSPACES:
        where = tmp_root / f"ws-{len(_WORKSPACES)}"
        shutil.copytree(ROOT, where, ignore=_SKIP, symlinks=True)
        _WORKSPACES[key] = (where, 0)
    where, done = _WORKSPACES[key]
    siblings = [c for c in COMMANDS if (c.doc, c.block) == key]
    for earlier in siblings[done : siblings.index(cmd)]:
        run(_argv(earlier), where)  # setup for this one; its own test checks it
    _WORKSPACES[key] = (where, siblings.index(cmd) + 1)
    return where


def _output(result: subprocess.CompletedProcess[str]) -> list[str]:
    lines = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def test_the_docs_hold_commands() -> None:
    # The parser finding nothing would make every test below vacuous.
    docs = {c.doc for c in COMMANDS}
    assert {"README.md", "docs/install.md"} <= docs, sorted(docs)
    assert any(c.not_run is None for c in COMMANDS)


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_command_hides_in_an_unlabelled_fence(path: Path) -> None:
    assert unlabelled_commands(path) == []


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.id)
def test_doc_command(cmd: Command, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Runs the command (checking its output where the doc shows it), or skips it
    with the reason its doc gives."""
    if cmd.not_run is not None:
        pytest.skip(f"{cmd.id} -- not run: {cmd.not_run}")
    argv = _argv(cmd)
    result = run(argv, _workspace(cmd, tmp_path_factory.getbasetemp()))
    shown = f"$ {cmd.text}\n" + "\n".join(_output(result))
    assert result.returncode == cmd.exit_code, shown
    if cmd.expected is not None:
        expected = list(cmd.expected)
        while expected and not expected[-1]:
            expected.pop()
        assert _output(result) == expected, shown


def test_make_demo_ends_saying_how_to_run_modelplane() -> None:
    """The README quotes `make demo`'s last lines; they are what it prints."""
    readme = blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    quoted = next(
        [line for _, line in b.lines]
        for b in readme
        if b.label == "text" and any("activate" in line for _, line in b.lines)
    )
    result = run(["make", "-s", *_argv(Command("README.md", 1, "make demo", 0))[1:]], ROOT)
    assert result.returncode == 0, result.stderr
    assert _output(result)[-len(quoted) :] == quoted


# -- the rules above, on small texts --------------------------------------------------


def _parse(text: str, tmp_path: Path) -> list[Command]:
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    return commands_of(path, tmp_path)


def test_the_parser_joins_continuations_keeps_heredocs_and_reads_markers(
    tmp_path: Path,
) -> None:
    text = "\n".join(
        [
            "# Title",
            "```sh",
            "# a comment",
            "modelplane render \\",
            "  examples/quickstart   # trailing comment",
            "",
            "kubectl apply -f - <<EOF",
            "kind: X",
            "EOF",
            "```",
            "",
            "<!-- not-run: needs a cluster -->",
            "```bash",
            "kubectl get xrd",
            "```",
            "```console",
            "$ modelplane validate x   # exits 1",
            "x: problem",
            "1 problem found",
            "```",
            "```text",
            "modelplane is not run from a text block",
            "```",
        ]
    )
    got = [(c.line, c.text, c.not_run, c.expected, c.exit_code) for c in _parse(text, tmp_path)]
    assert got == [
        (4, "modelplane render examples/quickstart   # trailing comment", None, None, 0),
        (7, "kubectl apply -f - <<EOF\nkind: X\nEOF", None, None, 0),
        (14, "kubectl get xrd", "needs a cluster", None, 0),
        (
            17,
            "modelplane validate x   # exits 1",
            None,
            ["x: problem", "1 problem found"],
            1,
        ),
    ]


def test_an_unlabelled_fence_may_not_hold_commands(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_text("```\nmodelplane render x\n```\n```\napi → dra\n```\n", encoding="utf-8")
    assert [line.split(": ", 1)[1] for line in unlabelled_commands(path, tmp_path)] == [
        "modelplane render x"
    ]


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("kubectl get xrd", "only ls, make, modelplane run here"),
        ("modelplane render x | head", "needs a shell"),
        ("modelplane render x > out.yaml", "needs a shell"),
        ("REGISTRY=x make image IMAGE=$REGISTRY/f", "needs a shell"),
        ("ls out/*/*", "needs a shell"),
    ],
)
def test_an_unmarked_command_that_cannot_run_here_fails(text: str, complaint: str) -> None:
    with pytest.raises(pytest.fail.Exception, match=complaint):
        _argv(Command("README.md", 1, text, 0))
