"""`modelplane fleet` over the tenancy and cost examples: cost per deployment and per
cluster (hand-computed from the example's prices), quota use and preemptions."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from modelplane.cli.fleet_html import render_html
from modelplane.cli.fleet_view import fleet_view
from modelplane.cli.main import cli
from modelplane.local import ControlPlane, load_paths


def _view(path: str):  # type: ignore[no-untyped-def]
    return fleet_view(ControlPlane(load_paths((path,))).run(50).store)


def test_cost_per_cluster_and_per_deployment() -> None:
    # examples/cost after the spot reclaim: chat holds eu-west 2 × 0.6 and us-east 2 × 0.7;
    # batch moved off the Spot pool to us-east's on-demand l4, both replicas (2 × 0.7).
    view = _view("examples/cost")
    clusters = {cl.name: cl.cost_per_hour for cl in view.clusters}
    assert clusters == pytest.approx({"ap-south": 0.0, "eu-west": 1.2, "us-east": 2.8})
    deployments = {d.name: d.cost_per_hour for d in view.deployments}
    assert deployments == pytest.approx({"ml-team/batch": 1.4, "ml-team/chat": 2.6})
    spot = [(cl.name, p.name) for cl in view.clusters for p in cl.pools if p.spot]
    assert spot == [("ap-south", "l4-spot")]
    page = render_html(view)
    assert "<h2>Cost per hour</h2>" in page and "<td>ml-team/chat</td><td>2.60</td>" in page


def test_fleet_cost_flag_and_json() -> None:
    out = CliRunner().invoke(cli, ["fleet", "examples/cost", "--cost"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "Cost per hour" in out.output and "l4-spot (Spot)" in out.output
    raw = CliRunner().invoke(cli, ["fleet", "examples/cost", "-o", "json"])
    doc = json.loads(raw.output)
    costs = {d["name"]: d["costPerHour"] for d in doc["deployments"]}
    assert costs == pytest.approx({"ml-team/batch": 1.4, "ml-team/chat": 2.6})


def test_quota_use_and_preemptions_in_the_fleet_view() -> None:
    view = {d.name: d for d in _view("examples/tenancy").deployments}
    assert view["lab/experiments"].quota == [
        "FleetQuota lab limit h100: 8/8 devices",
        "FleetQuota lab limit large-memory: 8/64 devices",
    ]
    assert view["lab/experiments"].missing == 1
    assert view["team-a/serve"].preemption is not None
    assert view["team-a/serve"].preemption.startswith("Preempting: ")
    assert view["team-a/nightly"].preemption is not None
    assert "make-before-break does not apply" in view["team-a/nightly"].preemption
