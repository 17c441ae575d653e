"""The what-if answer where people read it: status.unschedulable and the Scheduled condition."""

from __future__ import annotations

from pathlib import Path

from modelplane.api import constants as c
from modelplane.local import ControlPlane, Key, load_paths

ROOT = Path(__file__).resolve().parents[2]
UNPLACEABLE = ROOT / "examples" / "operations" / "unplaceable"


def _status(name: str) -> dict:
    store = ControlPlane(load_paths([str(UNPLACEABLE)])).run(50).store
    obj = store.get(Key(c.API_VERSION, "ModelDeployment", "ml-team", name))
    assert obj is not None
    return obj["status"]


def test_status_and_condition_carry_the_smallest_change() -> None:
    status = _status("llama-70b")
    what_if = {u["cluster"]: u.get("whatIf") for u in status["unschedulable"]}
    assert what_if == {
        "us-east-1a": "add 2 nodes to pool h100 to place 2 more replicas",
        "us-west-2a": "add 2 nodes to pool h100 to place 2 more replicas",
        "eu-west-1a": None,  # no pool matches: growing its L4 pool cannot help
    }
    (scheduled,) = [x for x in status["conditions"] if x["type"] == c.CONDITION_SCHEDULED]
    assert scheduled["reason"] == "Partial"
    assert scheduled["message"].startswith(
        "placed 2 of 4 replicas: add 2 nodes to pool h100 on cluster us-east-1a to place "
        "2 more replicas (1 other cluster(s) could be grown instead); "
    )
