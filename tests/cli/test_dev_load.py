"""`modelplane dev load`: its output, and its refusal without a fleet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli.dev_load import print_summary, run_load
from modelplane.cli.main import cli
from modelplane.dev import load
from tests.dev.test_load import Seen, openai
from tests.loopback_http import serving


def test_a_run_prints_statuses_and_percentiles(capsys: pytest.CaptureFixture[str]) -> None:
    seen = Seen()
    with serving(openai(seen)) as base:
        result, model = run_load(base, load.plain, load.Plan(rate=40, duration=0.5), None)
    assert model == "m-first"  # asked /v1/models first
    assert result["statuses"] == {"200": 15, "503": 5}  # indices 3, 7, 11, 15, 19
    print_summary(result, base, model)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"target     {base}  model m-first"
    assert out[1].startswith("requests   20 sent, 20 finished, 15 succeeded in ")
    assert out[2] == "statuses   200: 15, 503: 5"
    assert out[3] == "conn errs  none"
    assert out[4].startswith("latency    p50 ") and " p90 " in out[4] and " p99 " in out[4]
    json.dumps(result)  # what --json prints


def test_without_a_fleet_it_says_so(tmp_path: Path) -> None:
    got = CliRunner().invoke(
        cli, ["dev", "load", "qwen", "--rate", "1", "--duration", "1", "--dir", str(tmp_path)]
    )
    assert got.exit_code == 1
    assert f"no fleet in {tmp_path}" in got.output
