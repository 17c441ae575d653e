"""The fleet view shows each deployment's rollout and the revisions its replicas run per cluster.

examples/operations/rolling is rendered, then its deployment's status is given
hand-written revisions (the rollout composer's part) before the view is built.
"""

from __future__ import annotations

import copy
import io
from pathlib import Path

from rich.console import Console

from modelplane.api import constants as c
from modelplane.cli.fleet import deployments_table
from modelplane.cli.fleet_html import render_html
from modelplane.cli.fleet_view import ClusterRevision, DeploymentView, FleetView, fleet_view
from modelplane.local import ControlPlane, Key, load_paths
from modelplane.local.store import ObjectStore

ROOT = Path(__file__).resolve().parents[2]
ROLLING = str(ROOT / "examples" / "operations" / "rolling")
CHAT = Key(c.API_VERSION, "ModelDeployment", "ml-team", "chat")


def _store(revisions: list[tuple[str, bool]] | None) -> ObjectStore:
    """The rendered store; with `revisions`, chat's placements run them (revision, ready) in
    order and its rollout is Progressing to 9c1d."""
    store = ControlPlane(load_paths([ROLLING])).run(50).store
    if revisions is None:
        return store
    obj = copy.deepcopy(store.get(CHAT))
    assert obj is not None
    placements = obj["status"]["placements"]
    assert len(placements) == len(revisions)
    for p, (revision, ready) in zip(placements, revisions, strict=True):
        p["revision"], p["ready"] = revision, ready
    obj["status"]["rollout"] = {"revision": "9c1d", "stableRevision": "3f2a",
                                "decision": "Progressing", "wave": 1}  # fmt: skip
    store.put(obj)
    return store


def _text(view: FleetView) -> str:
    out = io.StringIO()
    Console(width=300, file=out).print(deployments_table(view))
    return out.getvalue()


def test_revisions_per_cluster_in_the_view_json_table_and_page() -> None:
    view = fleet_view(_store([("9c1d", True), ("3f2a", True), ("9c1d", False)]))
    (chat,) = view.deployments
    assert (chat.rollout, chat.revision) == ("Progressing", "9c1d")
    assert chat.revisions == [
        ClusterRevision("central", "3f2a", 1, 1, 0),
        ClusterRevision("central", "9c1d", 2, 1, 0),
    ]
    (doc,) = view.to_dict()["deployments"]
    assert (doc["rollout"], doc["revision"]) == ("Progressing", "9c1d")
    assert doc["revisions"] == [
        {"cluster": "central", "revision": "3f2a", "replicas": 1, "ready": 1, "draining": 0},
        {"cluster": "central", "revision": "9c1d", "replicas": 2, "ready": 1, "draining": 0},
    ]
    lines = _text(view).splitlines()
    (first,) = [ln for ln in lines if ln.startswith("│ ml-team/chat ")]
    assert "│ Progressing 9c1d " in first
    assert any("│ central: 3f2a ×1 " in ln for ln in lines)
    assert any("│ central: 9c1d ×2 (1 ready) " in ln for ln in lines)
    page = render_html(view)
    assert '<span class="tag warn">Progressing</span> 9c1d' in page
    assert '<div class="rev">central: 9c1d ×2 (1 ready)</div>' in page


def test_without_a_progressive_rollout_only_the_revisions_are_shown() -> None:
    """MakeBeforeBreak: no decision, but every replica still names its revision (the label
    each ModelReplica carries)."""
    store = _store(None)
    view = fleet_view(store)
    (chat,) = view.deployments
    labels = {
        r["metadata"]["labels"][c.LABEL_REVISION]
        for r in store.list(c.API_VERSION, "ModelReplica", "ml-team", None)
    }
    (revision,) = labels
    assert (chat.rollout, chat.revision) == (None, None)
    assert chat.revisions == [ClusterRevision("central", revision, 3, 3, 0)]
    (doc,) = view.to_dict()["deployments"]
    assert doc["rollout"] is None and doc["revisions"][0]["revision"] == revision
    page = render_html(view)
    assert f'<div class="rev">central: {revision} ×3</div>' in page
    assert '<span class="tag' not in page.split("<h2>Deployments</h2>")[1]


def test_revision_strings_are_escaped() -> None:
    evil = "<img src=x onerror=alert(1)>"
    dep = DeploymentView("ml-team/chat", 1, 1, 1, 0, rollout="RolledBack", revision=evil)
    dep.revisions = [ClusterRevision("c<1>", evil, 1, 1, 0)]
    page = render_html(FleetView([], [dep]))
    assert evil not in page and "c<1>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert '<span class="tag bad">RolledBack</span>' in page
