"""`modelplane explain` for replicas their clusters report unschedulable (issue 17):
each is listed with its cluster, pool, since when, the cluster scheduler's words and
what the scheduler did, and a kept one is marked in the placements table.

The render cannot produce the cluster's report yet (its simulation lands with the
inventory agent), so the scheduler's answer is scripted; the printing is real.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.cli import explain as explain_cli
from modelplane.cli.main import cli
from modelplane.scheduling.types import (
    PlannedReplica,
    RoleAssignment,
    ScheduleResult,
    StuckPlacement,
)
from tests.cli.test_explain_cli import table_rows

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "operations" / "unschedulable")
SINCE = "2026-11-01T00:05:00Z"
SAID = "0/2 nodes are available: 2 cannot allocate all claims"
GPU = ResolvedDeviceRequest.model_validate(
    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1, "selectors": [{"cel": "true"}]}
)


def _planned(cluster: str, index: int, name: str) -> PlannedReplica:
    return PlannedReplica(
        cluster, index, (RoleAssignment("unified", "l4", (GPU,), 1),), True, name, ready=True
    )


def _explain(monkeypatch: pytest.MonkeyPatch, result: ScheduleResult) -> str:
    def scripted(store: Any, namespace: str, name: str) -> ScheduleResult:
        return result

    monkeypatch.setattr(explain_cli, "explain_deployment", scripted)
    out = CliRunner(env={"COLUMNS": "400"}).invoke(
        cli, ["explain", EXAMPLE, "--deployment", "ml-team/chat"]
    )
    assert out.exit_code == 0, out.output
    return out.output


def test_a_moved_replica_is_listed_with_where_it_went(monkeypatch: pytest.MonkeyPatch) -> None:
    moved = StuckPlacement("chat-f80ab129e8", "east", 0, "l4", SINCE, SAID, "Moved", ("west", 1))
    result = ScheduleResult(
        replicas=(_planned("west", 0, "chat-6a5c011ef6"), _planned("west", 1, "chat-05bd9d7c87")),
        desired=2,
        stuck=(moved,),
    )
    output = _explain(monkeypatch, result)
    assert (
        "unschedulable: replica chat-f80ab129e8 on cluster east, pool l4, since "
        f"{SINCE} ({SAID}): moved to west/1, the stuck one withdrawn"
    ) in output


def test_a_kept_replica_is_marked_in_the_placements(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = StuckPlacement("chat-f80ab129e8", "east", 0, "l4", SINCE, SAID, "Kept")
    stuck = replace(_planned("east", 0, "chat-f80ab129e8"), ready=False, unschedulable_since=SINCE)
    result = ScheduleResult(
        replicas=(stuck, _planned("west", 0, "chat-6a5c011ef6")), desired=2, stuck=(kept,)
    )
    output = _explain(monkeypatch, result)
    assert "1 of 2 replicas placed" in output
    assert (
        "unschedulable: replica chat-f80ab129e8 on cluster east, pool l4, since "
        f"{SINCE} ({SAID}): kept: no other cluster or pool can take it (see the verdicts below)"
    ) in output
    rows = [r for r in table_rows(output) if r[0] in ("east", "west") and len(r) == 5]
    assert rows == [
        ["east", "0", "chat-f80ab129e8", "unified=l4", f"unschedulable since {SINCE}"],
        ["west", "0", "chat-6a5c011ef6", "unified=l4", "yes"],
    ]
