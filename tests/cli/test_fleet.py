"""`modelplane fleet`: per cluster and pool, capacity, who holds what, free devices, what-if."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from modelplane.api.readers import draining_replicas
from modelplane.cli.fleet_html import render_html
from modelplane.cli.fleet_view import (
    ClusterView,
    DeploymentView,
    FleetView,
    PoolView,
    Rejection,
    Usage,
)
from modelplane.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
UNPLACEABLE = str(ROOT / "examples" / "operations" / "unplaceable")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(cli, ["fleet", *args])
    return result.exit_code, result.output


def _pools(doc: dict) -> dict[tuple[str, str], tuple[int, int, dict[str, int], list[str]]]:
    out = {}
    for cl in doc["clusters"]:
        for p in cl["pools"]:
            held: dict[str, int] = {}
            for u in p["used"]:
                held[u["deployment"]] = held.get(u["deployment"], 0) + u["devices"]
            hints = [s["text"] for s in p["suggestions"]]
            out[(cl["name"], p["name"])] = (p["capacity"], p["freeDevices"], held, hints)
    return out


GROW = "add 2 nodes to pool h100 to place 2 more replicas"
EXPECTED = {
    ("eu-west-1a", "l4"): (16, 16, {}, []),
    # embed's two 4-GPU replicas share one node; llama-70b holds the other.
    ("us-east-1a", "h100"): (16, 0, {"ml-team/embed": 8, "ml-team/llama-70b": 8}, [GROW]),
    ("us-east-1a", "l4"): (8, 8, {}, []),
    ("us-west-2a", "h100"): (8, 0, {"ml-team/llama-70b": 8}, [GROW]),
}


def test_json_lists_every_pool_with_usage_free_and_what_if() -> None:
    code, out = run(UNPLACEABLE, "-o", "json")
    assert code == 0, out
    doc = json.loads(out)
    assert _pools(doc) == EXPECTED
    deployments = {d["name"]: d for d in doc["deployments"]}
    assert (
        deployments["ml-team/llama-70b"]["placed"],
        deployments["ml-team/llama-70b"]["missing"],
    ) == (2, 2)
    assert deployments["ml-team/llama-70b"]["whatIf"][0] == (
        "add 2 nodes to pool h100 on cluster us-east-1a to place 2 more replicas"
    )
    assert deployments["ml-team/embed"]["rejections"] == []


def test_yaml_says_the_same() -> None:
    code, out = run(UNPLACEABLE, "-o", "yaml")
    assert code == 0, out
    assert _pools(yaml.safe_load(out)) == EXPECTED


def test_table_and_html_file(tmp_path: Path) -> None:
    page = tmp_path / "fleet.html"
    code, out = run(UNPLACEABLE, "--html", str(page))
    assert code == 0, out
    for word in ("us-east-1a", "us-west-2a", "eu-west-1a", "ml-team/embed 8", GROW):
        assert word in out
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    assert "<script src" not in text and "<link" not in text


def _view(name: str, draining: bool = False) -> FleetView:
    usage = Usage(name, "r-1", "unified", 4, True, draining)
    pool = PoolView("h100", "h100-8x", 1, 8, 8, used=[usage])
    cluster = ClusterView("c<1>", True, ["maint=<x>:NoExecute"], [pool])
    dep = DeploymentView(name, 2, 1, 1, 1 if draining else 0)
    dep.rejections = [Rejection("c<1>", "InsufficientCapacity", f"<marquee>{name}</marquee>", None)]
    return FleetView([cluster], [dep])


def test_every_user_string_is_escaped() -> None:
    evil = '<script>alert("x")</script>'
    page = render_html(_view(evil))
    assert evil not in page and "<marquee>" not in page and "c<1>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own script, nothing else


def test_draining_replicas_are_marked() -> None:
    assert 'class="seg draining"' in render_html(_view("team/a", draining=True))
    assert 'class="seg draining"' not in render_html(_view("team/a"))


def test_draining_is_read_tolerantly() -> None:
    obj = {
        "status": {
            "placements": [
                {"replicaName": "a", "draining": True},
                {"replicaName": "b"},
                {"replicaName": "c", "state": "Draining"},
                "not a placement",
                {"draining": True},
            ]
        }
    }
    assert draining_replicas(obj) == frozenset({"a", "c"})
    assert draining_replicas({}) == frozenset()
    assert draining_replicas({"status": {"placements": "x"}}) == frozenset()


CLUSTERS = str(ROOT / "examples" / "clusters")


def test_stock_outs_and_drift_are_shown_where_they_are(tmp_path: Path) -> None:
    """examples/clusters: us-east's h100 pool is stocked out, eu-west's l4 pool drifted
    (its fixtures); JSON, table and page each say so on that pool, and nowhere else."""
    page = tmp_path / "fleet.html"
    code, out = run(CLUSTERS, "-o", "json", "--html", str(page))
    assert code == 0, out
    doc = json.loads(out)
    pools = {(cl["name"], p["name"]): p for cl in doc["clusters"] for p in cl["pools"]}
    stocked = {k for k, p in pools.items() if p.get("stockOut")}
    drifted = {k for k, p in pools.items() if p["drift"]}
    assert stocked == {("us-east", "h100")}
    assert pools[("us-east", "h100")]["stockOut"].startswith("cloud stock-out: pool 'h100'")
    assert "us-east-1a" in pools[("us-east", "h100")]["stockOut"]
    assert drifted == {("eu-west", "l4")}
    (clause,) = pools[("eu-west", "l4")]["drift"]
    assert "23034Mi" in clause and "24Gi" in clause
    html = page.read_text()
    assert html.count('class="alert stockout"') == 1
    assert html.count('class="alert drift"') == 1
    assert "HardwareDrift" in html
    code, table = run(CLUSTERS)
    assert code == 0, table
    (h100_row,) = [line for line in table.splitlines() if "│ h100 " in line]
    assert "cloud stock-out: pool 'h100'" in h100_row
    (l4_row,) = [line for line in table.splitlines() if "│ l4 " in line]
    assert "drift: pool 'l4'" in l4_row


def test_unschedulable_replicas_are_shown_on_cluster_and_deployment(tmp_path: Path) -> None:
    """examples/operations/unschedulable without west: east reports chat's replica
    unschedulable and nothing can replace it; the view shows it on east and counts it."""
    docs = []
    for path in sorted((ROOT / "examples" / "operations" / "unschedulable").glob("*.yaml")):
        for d in yaml.safe_load_all(path.read_text()):
            if d and d["metadata"]["name"] not in ("west", "west-kubeconfig"):
                docs.append(d)
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    page = tmp_path / "fleet.html"
    code, out = run(str(tmp_path / "all.yaml"), "-o", "json", "--html", str(page))
    assert code == 0, out
    doc = json.loads(out)
    (east,) = doc["clusters"]
    (stuck,) = east["unschedulable"]
    assert stuck.startswith("chat-f80ab129e8 on pool l4 since 2026-11-01T00:05:00Z: 0/2 nodes")
    (chat,) = doc["deployments"]
    assert chat["unschedulable"] == 1
    assert page.read_text().count('class="alert stuck"') == 1
    code, table = run(str(tmp_path / "all.yaml"))
    assert "unschedulable: chat-f80ab129e8" in table
    (row,) = [line for line in table.splitlines() if line.startswith("│ ml-team/chat ")]
    assert [cell.strip() for cell in row.split("│")[1:6]] == ["ml-team/chat", "1/2", "0", "0", "1"]
