"""`modelplane` starts fast: a command imports only what it runs; a long render shows progress."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from modelplane.cli import render as render_cli
from modelplane.cli.main import COMMANDS, cli

QUICKSTART = str(Path(__file__).resolve().parents[2] / "examples" / "quickstart")

HEAVY = (
    "grpc",
    "structlog",
    "rich",
    "pydantic",
    "yaml",
    "google.protobuf",
    "crossplane.function",
    "modelplane.api.kinds",
    "modelplane.crossplane",
    "modelplane.local",
    "modelplane.scheduling",
)


def imported_after(code: str) -> set[str]:
    """The top-level names of modules (and the modelplane ones) imported by `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_importing_the_cli_imports_no_command() -> None:
    modules = imported_after("import modelplane.cli.main")
    assert [p for p in HEAVY if loaded(modules, p)] == []
    # The check can fail: the render command does pull these in.
    assert loaded(imported_after("import modelplane.cli.render, modelplane.local"), "pydantic")


def test_help_imports_no_command() -> None:
    code = (
        "from modelplane.cli.main import cli\n"
        "try:\n    cli(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert [p for p in HEAVY if loaded(imported_after(code), p)] == []


def test_cel_eval_imports_only_the_cel_environment() -> None:
    code = (
        "from modelplane.cli.main import cli\n"
        "try:\n    cli(['cel', 'eval', '\"aa!\".find(\"(a+)+$\") == \"\"'])\nexcept SystemExit:\n"
        "    pass"
    )
    modules = imported_after(code)
    assert loaded(modules, "modelplane.dra")
    heavy = [p for p in HEAVY if p != "google.protobuf" and loaded(modules, p)]
    assert heavy == []


def test_render_needs_neither_grpc_nor_the_sdk_logging() -> None:
    code = (
        "from modelplane.cli.main import cli\n"
        f"try:\n    cli(['render', {QUICKSTART!r}, '-o', 'yaml'])\nexcept SystemExit:\n"
        "    pass"
    )
    modules = imported_after(code)
    assert loaded(modules, "modelplane.local")
    assert [p for p in ("grpc", "structlog", "rich") if loaded(modules, p)] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_listed_summary_is_the_commands_own(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    assert COMMANDS[name][1] == command.get_short_help_str(limit=1000)


def test_help_lists_every_command() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    for name in COMMANDS:
        assert f"  {name} " in out


def test_no_progress_when_stderr_is_not_a_terminal() -> None:
    result = CliRunner().invoke(cli, ["render", QUICKSTART, "-o", "yaml"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_progress_on_a_terminal_names_rounds_and_what_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(render_cli, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(render_cli, "PROGRESS_AFTER_SECONDS", 0.0)
    result = CliRunner().invoke(cli, ["render", QUICKSTART, "-o", "yaml"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.split("\r\x1b[K")
    assert lines[1].startswith("round 1 (")
    assert "composites reconciled" in lines[1] and "still changing: " in lines[1]
    assert "fixed point" in lines[-2] and lines[-1] == ""
    # stdout is the same YAML as without progress
    plain = CliRunner().invoke(cli, ["render", QUICKSTART, "-o", "yaml"])
    assert result.stdout == plain.stdout
