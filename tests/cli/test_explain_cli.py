"""`modelplane explain`: the full explanation table of one deployment, and its errors."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from modelplane.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
UNSCHEDULABLE = str(ROOT / "examples" / "scheduling" / "unschedulable")
PACK = str(ROOT / "examples" / "scheduling" / "pack")
SPREAD = str(ROOT / "examples" / "scheduling" / "spread")
H100 = 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'
IB = 'device.attributes["fabric.modelplane.ai"].type == "InfiniBand"'


def run(*args: str) -> tuple[int, str]:
    # A wide terminal keeps every table cell on one line.
    result = CliRunner(env={"COLUMNS": "500"}).invoke(cli, ["explain", *args])
    return result.exit_code, result.output


def table_rows(output: str) -> list[list[str]]:
    """The body rows of rich tables in `output`, as lists of cells.

    A cell of several lines continues on lines whose first cell is empty;
    those are folded into the row they continue, one line per cell line.
    """
    rows: list[list[str]] = []
    for line in output.splitlines():
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.rstrip()[1:-1].split("│")]
        if cells[0] or not rows:
            rows.append(cells)
        else:
            rows[-1] = [f"{a}\n{b}" if b else a for a, b in zip(rows[-1], cells, strict=True)]
    return rows


def test_unschedulable_table_names_every_cluster_pool_and_request() -> None:
    code, out = run(UNSCHEDULABLE, "--deployment", "ml-team/llama-405b")
    assert code == 0, out
    assert out.splitlines()[0] == (
        "ModelDeployment ml-team/llama-405b: 0 of 1 replicas placed  "
        "(Scheduled=False InsufficientCapacity)"
    )
    rows5 = table_rows(out)
    assert [r[:5] for r in rows5] == [
        ["h100-4x", "NoMatchingPool", "h100", "gpu", "not enough devices"],
        ["h100-4x", "NoMatchingPool", "h100", "fabric", "matched"],
        ["h100-dev", "NotSelected", "", "", ""],
        ["h100-maintenance", "Tainted", "", "", ""],
        ["h100-roce", "NoMatchingPool", "h100", "gpu", "matched"],
        ["h100-roce", "NoMatchingPool", "h100", "fabric", "no match"],
        ["l4-only", "NoMatchingPool", "l4", "gpu", "no match"],
        ["l4-only", "NoMatchingPool", "l4", "fabric", "errored"],
    ]
    # The CEL engine's error text is its own: only say that the selector errored.
    why = [[re.sub(r"errored: .*", "errored", x) for x in r[5].splitlines()] for r in rows5]
    assert why == [
        ["device gpu: needs 8, only 4 unconsumed", f"device fabric: selector '{H100}' errored"],
        ["device fabric"],
        ["labels do not match spec.clusterSelector"],
        ["untolerated taint maintenance=true:NoSchedule"],
        ["device gpu"],
        [f"device fabric: selector '{IB}' is false", f"device gpu: selector '{IB}' errored"],
        [f"device gpu: selector '{H100}' is false"],
        [f"device gpu: selector '{IB}' errored"],
    ]


def test_placed_deployment_shows_placements_and_capacity() -> None:
    code, out = run(PACK, "--deployment", "ml-team/chat")
    assert code == 0, out
    rows = table_rows(out)
    assert rows[:5] == [
        ["l4-dense", "0", "chat-1d09b11321", "unified=l4x4", "yes"],
        ["l4-dense", "1", "chat-bd68776749", "unified=l4x4", "yes"],
        ["l4-dense", "2", "chat-3eac4c7367", "unified=l4x4", "yes"],
        ["l4-dense", "3", "chat-c8820f72ee", "unified=l4x4", "yes"],
        ["l4-single", "0", "chat-6f38a7dad9", "unified=l4", "yes"],
    ]
    # Both clusters are full now: the capacity column says needed against free.
    assert [r[:5] for r in rows[5:]] == [
        ["l4-dense", "InsufficientCapacity", "l4x4", "gpu", "matched"],
        ["l4-single", "InsufficientCapacity", "l4", "gpu", "matched"],
    ]
    assert [r[6] for r in rows[5:]] == ["needs 1 node(s) with gpu×1 free on each; 0 free"] * 2


def test_unknown_deployment_exits_1_naming_the_known_ones() -> None:
    code, out = run(UNSCHEDULABLE, "--deployment", "ml-team/nope")
    assert code == 1
    assert "ModelDeployment ml-team/nope not found" in out
    assert "ModelDeployments there: ml-team/llama-405b" in out


def test_malformed_reference_is_a_usage_error() -> None:
    code, out = run(UNSCHEDULABLE, "--deployment", "llama-405b")
    assert code == 2
    assert "'llama-405b' is not NAMESPACE/NAME" in out


def test_unreadable_manifest_exits_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("kind: [unclosed\n")
    code, _ = run(str(tmp_path), "--deployment", "a/b")
    assert code == 1


def test_piped_output_without_columns_keeps_each_why_on_one_line() -> None:
    # CliRunner's stdout is not a terminal; COLUMNS=None removes the variable.
    result = CliRunner(env={"COLUMNS": None}).invoke(
        cli, ["explain", UNSCHEDULABLE, "--deployment", "ml-team/llama-405b"]
    )
    assert result.exit_code == 0, result.output
    long_why = f"device fabric: selector '{H100}' errored"
    lines = result.output.splitlines()
    at = next(i for i, x in enumerate(lines) if long_why in x)
    cells = [cell.strip() for cell in lines[at].rstrip()[1:-1].split("│")]
    # The whole message is in this one cell (the error text is the CEL engine's
    # own), and the row ends on the next line instead of folding onto it.
    assert cells[0] == "" and cells[5].startswith(long_why) and len(cells[5]) > 100
    assert lines[at - 1].startswith("│ h100-4x ")
    assert lines[at + 1].startswith("├")


MISSING_CACHE = str(ROOT / "examples" / "missing-cache")


def test_a_missing_cache_is_the_reason_everywhere() -> None:
    # Issue 9: the cache hold is a scheduler filter, so explain, the deployment's
    # status and the composed replicas agree: 0 placed, WaitingForCache.
    from modelplane.api.readers import read_model_deployment
    from modelplane.local import ControlPlane, load_paths

    code, out = run(MISSING_CACHE, "--deployment", "ml-team/qwen-cached")
    assert code == 0, out
    assert out.splitlines()[0] == (
        "ModelDeployment ml-team/qwen-cached: 0 of 2 replicas placed  "
        "(Scheduled=False WaitingForCache)"
    )
    assert "Placements" not in out
    assert [r[:2] for r in table_rows(out)] == [
        ["eu-west-h100", "WaitingForCache"],
        ["us-east-l4", "WaitingForCache"],
    ]
    store = ControlPlane(load_paths([MISSING_CACHE])).run(20).store
    assert store.list("modelplane.ai/v1alpha1", "ModelReplica", None, None) == []
    (obj,) = store.list("modelplane.ai/v1alpha1", "ModelDeployment", None, None)
    status = read_model_deployment(obj).status
    assert status.replicas == 0
    assert [(u.cluster, u.reason) for u in status.unschedulable or []] == [
        ("eu-west-h100", "WaitingForCache"),
        ("us-east-l4", "WaitingForCache"),
    ]
    scheduled = read_model_deployment(obj).condition("Scheduled")
    assert scheduled is not None and scheduled.reason == "WaitingForCache"


UNPLACEABLE = str(ROOT / "examples" / "operations" / "unplaceable")


def test_unplaceable_ends_with_the_what_if_table() -> None:
    code, out = run(UNPLACEABLE, "--deployment", "ml-team/llama-70b")
    assert code == 0, out
    assert "2 of 4 replicas placed" in out
    assert "What if: capacity that would place the 2 missing replica(s)" in out
    tail = out[out.index("What if") :]
    # Cluster, pool, class, roles, nodes to add, replicas it places. eu-west-1a has
    # no H100 pool: adding L4 nodes cannot help, so it has no row.
    assert table_rows(tail) == [
        ["us-east-1a", "h100", "h100-8x", "unified", "2", "2"],
        ["us-west-2a", "h100", "h100-8x", "unified", "2", "2"],
    ]


def test_a_placed_deployment_has_no_what_if_table() -> None:
    code, out = run(PACK, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "What if" not in out


def test_the_scores_of_one_more_replica_show_each_rule_and_its_weight() -> None:
    code, out = run(SPREAD, "--deployment", "ml-team/chat")
    assert code == 0, out
    lines = [line.rstrip() for line in out.splitlines()]
    title = lines.index("Scores for one more replica")
    header = [cell.strip() for cell in lines[title + 2].split("┃")[1:-1]]
    assert header == ["", "Cluster", "CacheReadiness ×2", "SpreadByLoad ×1", "Total"]
    # One replica on each of three clusters: each holds a third of the deployment,
    # so the next goes to the first by name, and the second ties with it.
    scores = [r for r in table_rows(out) if r[0] in ("chosen", "runner-up")]
    assert scores == [
        ["chosen", "eu-west", "100", "66.7", "266.7"],
        ["runner-up", "us-east", "100", "66.7", "266.7"],
    ]


def test_no_scores_when_no_cluster_could_take_one_more() -> None:
    code, out = run(PACK, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "Scores for one more replica" not in out


def test_a_rolled_back_rollout_shows_each_wave_and_its_steps() -> None:
    code, out = run(
        str(ROOT / "examples/operations/progressive/fail"), "--deployment", "ml-team/chat"
    )
    assert code == 0, out
    assert "Rollout: RolledBack, wave 2; revision 86d27a8bd2 (stable 47bceb1002)" in out
    rows = table_rows(out)
    waves = [r[:4] for r in rows if len(r) > 4 and r[1] in ("Passed", "Failed")]
    assert waves == [["1", "Passed", "east", "1/1/1"], ["2", "Failed", "east, west", "2/2/1"]]
    steps = [r[1] for r in rows if len(r) == 3 and r[1].startswith(("Wave", "Rolled"))]
    assert steps == ["WaveStarted", "WavePassed", "WaveStarted", "RolledBack"]
    assert "error rate 8.00% (80 of 1000 requests) is above the limit 1.00%" in out


NO_METRICS = str(ROOT / "examples" / "autoscaling" / "no-metrics")
NOT_SCRAPING = (
    "the inventory agents of clusters east, west do not scrape engine metrics, so they "
    "report no engine signal: set spec.servingStack.inventory.engineMetrics: true on those "
    "InferenceClusters"
)


def _ignored(cluster: str) -> str:
    return (
        "Warning: render fixture ConfigMap ml-team/render-signals-chat (signals of "
        f"ml-team/chat) is ignored on cluster {cluster}: its inventory agent does not scrape "
        "engine metrics (spec.servingStack.inventory.engineMetrics is not true), so a real "
        f"cluster reports no engine signal there; set it to true on InferenceCluster {cluster} "
        "for the fixture to apply"
    )


def test_explain_says_why_an_autoscaled_deployment_holds_without_engine_metrics() -> None:
    code, out = run(NO_METRICS, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "Autoscaling: 2 → 2 replicas (SignalsMissing)" in out
    assert f"0 of 2 replicas reporting; {NOT_SCRAPING}; no fresh signal from" in out
    assert [line for line in out.splitlines() if line.startswith("Warning:")] == [
        _ignored("east"),
        _ignored("west"),
    ]


def test_render_warns_on_stderr_and_leaves_stdout_to_the_objects() -> None:
    result = CliRunner().invoke(cli, ["render", NO_METRICS, "-o", "yaml"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [_ignored("east"), _ignored("west")]
    assert "Warning:" not in result.stdout
    up = CliRunner().invoke(cli, ["render", str(ROOT / "examples/autoscaling/up"), "-o", "yaml"])
    assert up.exit_code == 0 and up.stderr == ""


def test_a_wave_on_clusters_that_do_not_scrape_holds_and_names_them(tmp_path: Path) -> None:
    # examples/operations/progressive/pass with every agent's scraping turned off.
    source = ROOT / "examples/operations/progressive/pass"
    for f in source.glob("*.yaml"):
        text = f.read_text().replace("engineMetrics: true", "engineMetrics: false")
        (tmp_path / f.name).write_text(text)
    code, out = run(str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "Rollout: Progressing, wave 1" in out
    rows = table_rows(out)
    (wave,) = [r for r in rows if len(r) > 4 and r[0] == "1"]
    assert wave[:3] == ["1", "Updating", "east"]
    assert wave[-1] == (
        "wave 1: no cluster agent has reported yet, so its time cannot start; the inventory "
        "agent of cluster east does not scrape engine metrics, so it reports no engine signal: "
        "set spec.servingStack.inventory.engineMetrics: true on that InferenceCluster"
    )


def test_explain_says_what_a_leaving_replica_waits_for(tmp_path: Path) -> None:
    # examples/autoscaling/down with west's leaving engines still running 3 requests at
    # 01:00:20, 20 s into the 30 s drain timeout: both stay, and explain says why.
    folder = tmp_path / "down"
    shutil.copytree(ROOT / "examples" / "autoscaling" / "down", folder)
    signals = folder / "signals.yaml"
    idle = 'requestsRunning: "0"\n  scrapedAt: "2026-11-01T01:00:20Z"'
    assert signals.read_text().count(idle) == 1
    signals.write_text(signals.read_text().replace(idle, idle.replace('"0"', '"3"')))
    code, out = run(str(folder), "--deployment", "ml-team/chat")
    assert code == 0, out
    waits = [line.strip() for line in out.splitlines() if "waiting at most" in line]
    assert len(waits) == 2
    assert all(
        line.endswith(
            ": waiting at most 30s from 2026-11-01T01:00:00Z: 1.5 in flight at 2026-11-01T01:00:20Z"
        )
        for line in waits
    )
