"""Piped tree output is not wrapped at rich's 80-column fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def test_piped_tree_keeps_long_condition_lines_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = CliRunner().invoke(cli, ["render", "-o", "tree", str(QUICKSTART)]).output
    line = next(x for x in out.splitlines() if "CredentialsResolved=True" in x and "us-east" in x)
    assert line.endswith("key 'kubeconfig'"), line
    assert len(line) > 80
