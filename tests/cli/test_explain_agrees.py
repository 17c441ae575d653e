"""`modelplane explain` and `modelplane fleet` agree with the deployment's status, every round.

Every example folder is rendered with the embedded control plane one
reconcile at a time. Just before a ModelDeployment is reconciled, the store
holds exactly what its composer is about to read; `explain` and the fleet view
are computed over that store, and once the reconcile has written the status
they must say what it says: the same replicas (name, draining) as
`status.placements`, and as many placed replicas. `modelplane rollout status`
is computed over the same store and must report what the written status
reports: the rollout (revisions, wave, replicas per revision), the RolledOut
condition, and the replicas per cluster and revision (ready, draining). A
disagreement in any round of any example fails, naming the example, the round
and both sides.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.cli.explain import explain_deployment
from modelplane.cli.fleet_view import fleet_view
from modelplane.cli.rollout import Target, status_document
from modelplane.cli.rollout_view import status_doc
from modelplane.local import ControlPlane, Key, load_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted({p.parent for p in (ROOT / "examples").rglob("*.yaml")})

Replicas = list[tuple[str, bool]]


def _status_replicas(obj: dict[str, Any] | None) -> Replicas:
    status = (obj or {}).get("status") or {}
    return [(str(p["replicaName"]), bool(p.get("draining"))) for p in status.get("placements", [])]


def _rollout(doc: dict[str, Any]) -> dict[str, Any]:
    """What rollout status reports that the reconcile decides (the rest is the spec's)."""
    return {k: doc[k] for k in ("rollout", "rolledOut", "clusters")}


def _seen(plane: ControlPlane, key: Key) -> tuple[Replicas, int, dict[str, Any]] | None:
    """What explain lists, the fleet view counts as placed and rollout status reports,
    over the store as it is."""
    result = explain_deployment(plane.store, key.namespace, key.name)
    if result is None:
        return None
    listed = [(r.name, r.draining) for r in result.replicas]
    ref = f"{key.namespace}/{key.name}"
    view = next(d for d in fleet_view(plane.store).deployments if d.name == ref)
    obj = plane.store.get(key)
    assert obj is not None
    rollout = status_document(Target(ref, obj, store=plane.store))
    return listed, view.placed, _rollout(rollout)


def _watch(plane: ControlPlane, found: list[str], checked_keys: list[Key], example: str) -> None:
    """Compare before-and-after around every ModelDeployment reconcile of `plane`."""
    reconcile: Callable[[Key], None] = plane._reconcile

    def checked(key: Key) -> None:
        if (key.api_version, key.kind) != (c.API_VERSION, c.KIND_MODEL_DEPLOYMENT):
            reconcile(key)
            return
        before = plane.reconciled
        seen = _seen(plane, key)
        reconcile(key)
        if plane.reconciled == before or seen is None:
            return  # skipped: its inputs (and so its status) did not change
        checked_keys.append(key)
        written = plane.store.get(key)
        status = _status_replicas(written)
        listed, placed, rollout = seen
        ref = f"{key.namespace}/{key.name}"
        if listed != status or placed != len(status):
            found.append(
                f"{example} round {plane.round} {ref}: "
                f"explain {listed}, fleet placed {placed}, status.placements {status}"
            )
        reported = _rollout(status_doc(ref, written or {}))
        if rollout != reported:
            found.append(
                f"{example} round {plane.round} {ref}: "
                f"rollout status {rollout}, from the status {reported}"
            )

    plane._reconcile = checked  # type: ignore[method-assign]


def disagreements(folder: Path) -> tuple[list[str], int]:
    """Every reconcile of a ModelDeployment in rendering `folder` where explain or the
    fleet view disagreed with the status it wrote, and how many rounds the render took.

    Fails when a ModelDeployment of the folder was never compared (nothing checked).
    """
    plane = ControlPlane(load_paths([str(folder)]))
    found: list[str] = []
    checked: list[Key] = []
    _watch(plane, found, checked, str(folder.relative_to(ROOT)))
    rounds = plane.run().rounds
    deployments = {k for k in plane.store if k.kind == c.KIND_MODEL_DEPLOYMENT}
    assert deployments <= set(checked), f"never compared: {sorted(deployments - set(checked))}"
    return found, rounds


@pytest.mark.parametrize("folder", EXAMPLES, ids=[str(p.relative_to(ROOT)) for p in EXAMPLES])
def test_explain_and_fleet_agree_with_status_every_round(folder: Path) -> None:
    found, rounds = disagreements(folder)
    assert not found, f"{len(found)} of {rounds} rounds disagree:\n" + "\n".join(found)
