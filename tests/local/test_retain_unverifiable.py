"""Issue 10: never tear down a serving replica on an edit the control plane cannot verify.

Each case renders the quickstart to a steady state, writes the control-plane
snapshot (as `modelplane render --output-dir` does), applies one realistic
edit to it and renders again. Every Ready replica must survive, and the
deployment must say why in its `Scheduled` condition and a warning event.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from modelplane.api import constants as c
from modelplane.api.readers import read_inference_cluster, read_model_deployment
from modelplane.local import ControlPlane, Key, load_paths
from modelplane.local.engine import RenderResult
from modelplane.local.loader import LoadError
from modelplane.local.output import write_output_dir

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
CP = "control-plane"


def _render(path: Path) -> RenderResult:
    return ControlPlane(load_paths([path])).run(30)


def _replicas(result: RenderResult) -> dict[str, bool]:
    out = {}
    for obj in result.store.list(c.API_VERSION, "ModelReplica", None, None):
        ready = any(
            x.get("type") == "Ready" and x.get("status") == "True"
            for x in obj.get("status", {}).get("conditions", [])
        )
        out[obj["metadata"]["name"]] = ready
    return out


def _delete_class(root: Path) -> None:
    (root / CP / "inferenceclass" / "_cluster" / "l4-1x.yaml").unlink()


def _typo_class(root: Path) -> None:
    path = root / CP / "inferencecluster" / "_cluster" / "eu-west-h100.yaml"
    path.write_text(path.read_text().replace("className: l4-1x", "className: l4-2x", 1))


# The XRD's semver pattern refuses `570.124.06` (leading zero), so the API server,
# and render's loader, refuse that edit outright (test below). A version the pattern
# accepts but the DRA CEL layer cannot read (past uint64) reaches the class composer,
# which refuses the class: its pools become unknown, not its replicas.
UNREADABLE_VERSION = "18446744073709551616.0.0"


def _set_version(root: Path, version: str) -> None:
    path = root / CP / "inferenceclass" / "_cluster" / "l4-1x.yaml"
    text = path.read_text()
    assert "version: 570.124.6" in text
    path.write_text(text.replace("version: 570.124.6", f"version: {version}"))


def _unparsable_version(root: Path) -> None:
    _set_version(root, UNREADABLE_VERSION)


def test_a_leading_zero_version_edit_is_refused_like_the_api_server_would(
    steady: tuple[Path, dict[str, bool]], tmp_path: Path
) -> None:
    root, _ = steady
    snapshot = tmp_path / "snapshot"
    shutil.copytree(root / CP, snapshot / CP)
    _set_version(snapshot, "570.124.06")
    refused = r"driverVersion\.version: '570\.124\.06' is not a semantic"
    with pytest.raises(LoadError, match=refused):
        load_paths([snapshot / CP])


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bool]]:
    root = tmp_path_factory.mktemp("steady")
    result = _render(QUICKSTART)
    replicas = _replicas(result)
    assert len(replicas) == 3 and all(replicas.values())
    write_output_dir(result, root)
    return root, replicas


@pytest.mark.parametrize(
    ("edit", "unverified"),
    [
        (_delete_class, {"eu-west-h100/l4", "us-east-l4/l4"}),
        (_typo_class, {"eu-west-h100/l4"}),
        (_unparsable_version, {"eu-west-h100/l4", "us-east-l4/l4"}),
    ],
    ids=["class-deleted", "class-misnamed", "class-version-unparsable"],
)
def test_an_unverifiable_edit_keeps_every_ready_replica(
    steady: tuple[Path, dict[str, bool]],
    tmp_path: Path,
    edit: Callable[[Path], None],
    unverified: set[str],
) -> None:
    root, before = steady
    snapshot = tmp_path / "snapshot"
    shutil.copytree(root / CP, snapshot / CP)
    edit(snapshot)
    result = _render(snapshot / CP)
    assert _replicas(result) == before  # same names, all still Ready

    dep = result.store.get(Key(c.API_VERSION, "ModelDeployment", "ml-team", "qwen-small"))
    assert dep is not None
    scheduled = read_model_deployment(dep).condition(c.CONDITION_SCHEDULED)
    assert scheduled is not None
    assert (scheduled.status, scheduled.reason) == ("Unknown", "PlacementUnverifiable")
    warnings = [
        e.message
        for e in result.events.get(Key.of(dep), [])
        if e.type == "Warning" and e.reason == "PlacementUnverifiable"
    ]
    named = {
        m.group(1) + "/" + m.group(2)
        for w in warnings
        if (m := re.search(r"cluster (\S+), pool (\S+)", w))
    }
    assert named == unverified
    assert all("class l4-" in w for w in warnings)


def test_the_cluster_publishes_an_unresolved_pool_as_unknown(
    steady: tuple[Path, dict[str, bool]], tmp_path: Path
) -> None:
    root, _ = steady
    shutil.copytree(root / CP, tmp_path / CP)
    _typo_class(tmp_path)
    result = _render(tmp_path / CP)
    obj = result.store.get(Key(c.API_VERSION, "InferenceCluster", "", "eu-west-h100"))
    assert obj is not None
    cluster = read_inference_cluster(obj)
    assert cluster is not None
    l4 = cluster.pool("l4")
    assert l4 is not None and l4.unknown is not None
    assert (l4.class_name, l4.unknown.reason) == ("l4-2x", "ClassNotFound")
    h100 = cluster.pool("h100")
    assert h100 is not None and h100.known
