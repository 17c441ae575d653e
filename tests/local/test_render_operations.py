"""The examples/operations scenarios render to the state make-before-break promises.

The render runs to a fixed point, so what it shows is the *after* state; the
indices tell the story: replacements under MakeBeforeBreak take new indices
beside the old replicas (which kept theirs while draining), where an immediate
replacement on the same cluster would have reused indices 0..n-1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "operations"


def _placements(folder: str, *extra: str) -> list[tuple[str, int, str, bool]]:
    out = CliRunner().invoke(cli, ["render", str(EXAMPLES / folder), "-o", "json", *extra])
    assert out.exit_code == 0, out.output
    items: list[dict[str, Any]] = json.loads(out.output)["items"]
    (dep,) = [o for o in items if o["kind"] == "ModelDeployment"]
    return [
        (p["cluster"], p["index"], p["pools"][0]["pool"], p.get("draining", False))
        for p in dep["status"]["placements"]
    ]


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("drain", [("west", 0, "l4", False), ("west", 1, "l4", False)]),
        # Three new indices beside the three old ones: each replacement was placed
        # while the old replicas still held 0..2.
        ("rolling", [("central", i, "l40s", False) for i in (3, 4, 5)]),
        # east/0 was reported unschedulable by east's (simulated) inventory
        # agent: its replacement west/1 was placed and east/0 withdrawn.
        ("unschedulable", [("west", 0, "l4", False), ("west", 1, "l4", False)]),
    ],
)
def test_operations_examples_render_to_the_moved_replicas(folder: str, expected: list) -> None:
    assert _placements(folder) == expected
