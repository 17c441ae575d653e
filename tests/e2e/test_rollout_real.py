"""A Progressive rollout on the real fleet: waves, status kept across reconciles, undo.

Crossplane, not the render engine, carries `status.rollout` from one function
call to the next, replaces the wave's replica make-before-break and applies
`modelplane rollout undo`'s merge patch through the real API server. The
fleet's inventory agents scrape no engine (the pods are fake), so no serving
signal ever arrives: the wave must hold (`SignalsMissing`), never pass.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from click.testing import CliRunner
from e2e import manifests as m
from e2e.harness import COUNTS, World

from modelplane.cli.main import cli
from modelplane.dev.fleet import CONTROL_PLANE
from modelplane.dev.kubeapi import condition

pytestmark = pytest.mark.e2e

NS = "e2e-rollout"
OLD_IMAGE = "vllm/vllm-openai:v0.11.0"  # manifests.deployment's
NEW_IMAGE = "vllm/vllm-openai:v0.11.1"


def _progressive(doc: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["spec"]["rollout"] = {
        "strategy": "Progressive",
        "maxSurge": 1,
        # The first cluster in name order, then the rest.
        "waves": [{"percent": 50}, {"percent": 100}],
        "analysis": {"durationSeconds": 0, "maxErrorRate": 0.01},
    }
    return out


def _deployment(fleet: World) -> dict[str, Any]:
    got = fleet.cp.get(m.API, "ModelDeployment", "roll", NS)
    assert got is not None
    return got


def _placements(dep: dict[str, Any]) -> list[tuple[str, str, bool]]:
    placed = (dep.get("status") or {}).get("placements") or []
    return sorted((p["cluster"], p.get("revision", ""), bool(p.get("draining"))) for p in placed)


def _images(fleet: World) -> list[str]:
    """The engine image of every workload Deployment of the scenario, in every cluster."""
    return sorted(
        c["image"]
        for api in fleet.workloads.values()
        for d in api.list("apps/v1", "Deployment", NS)
        for c in d["spec"]["template"]["spec"]["containers"]
        if c["name"] == "engine"
    )


def test_a_progressive_rollout_holds_without_signals_and_undo_brings_it_back(
    fleet: World,
) -> None:
    base = _progressive(m.deployment("roll", NS, replicas=2))
    fleet.apply([m.namespace(NS), base])
    ready = fleet.settle(
        "ModelDeployment roll Ready, its rollout Complete",
        lambda: (
            d
            if (d := fleet.ready(m.API, "ModelDeployment", "roll", NS))
            and condition(d, "RolledOut") == "True"
            else None
        ),
    )
    stable = ready["status"]["rollout"]["stableRevision"]
    assert {r for _, r, _ in _placements(ready)} == {stable}
    # Wave 1 (50%) takes the first cluster, in name order, hosting a replica.
    first, second = (cluster for cluster, _, _ in _placements(ready))
    assert first != second, "the two replicas spread over two clusters"

    changed = copy.deepcopy(base)
    changed["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = NEW_IMAGE
    fleet.apply([changed])

    def wave_one_held() -> dict[str, Any] | None:
        dep = _deployment(fleet)
        rollout = (dep.get("status") or {}).get("rollout") or {}
        placed = _placements(dep)
        moved = [p for p in placed if p[1] != stable]
        if rollout.get("wave") != 1 or len(placed) != 2 or len(moved) != 1 or moved[0][2]:
            return None
        return dep if condition(dep, "ReplicasReady") == "True" else None

    held = fleet.settle(f"wave 1: {first}'s replica replaced by the new revision", wave_one_held)
    rollout = held["status"]["rollout"]
    new = rollout["revision"]
    assert (rollout["decision"], rollout["stableRevision"]) == ("Progressing", stable)
    assert rollout["waves"][0]["clusters"] == [first]
    # The replacement goes wherever the scheduler places it; the other replica stays.
    assert sorted(r for _, r, _ in _placements(held)) == sorted([new, stable])
    assert (second, stable, False) in _placements(held)
    cond = next(c for c in held["status"]["conditions"] if c["type"] == "RolledOut")
    assert (cond["status"], cond["reason"]) == ("False", "SignalsMissing"), cond
    # The old replica's workload is deleted after its ModelReplica (garbage collection).
    fleet.settle(
        "one workload on each image",
        lambda: _images(fleet) == sorted([NEW_IMAGE, OLD_IMAGE]) or None,
    )

    # Still held a while later: missing signals never pass a wave.
    fleet.settle("a quiet round", lambda: True if fleet.play() == 0 else None, 60)
    again = _deployment(fleet)["status"]["rollout"]
    assert (again["wave"], again["decision"]) == (1, "Progressing")

    kubeconfig = fleet.state.kubeconfig_path(CONTROL_PLANE)
    result = CliRunner().invoke(
        cli,
        ["rollout", "undo", "--kubeconfig", str(kubeconfig), "--deployment", f"{NS}/roll"],
    )
    assert result.exit_code == 0, result.output
    assert stable in result.output

    def back() -> dict[str, Any] | None:
        dep = _deployment(fleet)
        done = condition(dep, "RolledOut") == "True" and condition(dep, "Ready") == "True"
        return dep if done and {r for _, r, _ in _placements(dep)} == {stable} else None

    undone = fleet.settle("every replica back on the stable revision", back)
    assert len(_placements(undone)) == 2
    fleet.settle(
        "every workload back on the old image", lambda: _images(fleet) == [OLD_IMAGE] * 2 or None
    )
    COUNTS["rollout: revisions seen"] = 2
    assert fleet.cp.delete(m.API, "ModelDeployment", "roll", NS)
    fleet.settle(
        "the rollout's replicas gone",
        lambda: True if not fleet.cp.list(m.API, "ModelReplica", NS) else None,
    )
