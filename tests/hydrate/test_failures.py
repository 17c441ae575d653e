"""Every failure of a run ends with a Failed result naming the cause, never a stuck Hydrating."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hydration import run

from modelplane.api.model_cache import HydrateEnv
from modelplane.cli.main import cli
from modelplane.hydrate import sources
from modelplane.hydrate.run import MAX_MESSAGE, failure_message
from modelplane.hydrate.staging import Fetch, HydrationError, Workspace


def _raising(err: Exception) -> Fetch:
    def fetch(space: Workspace) -> str:
        raise err

    return fetch


@pytest.mark.parametrize(
    ("err", "message"),
    [
        (KeyError("size"), "unexpected KeyError: 'size'"),
        (RuntimeError("boom"), "unexpected RuntimeError: boom"),
        (ZeroDivisionError(), "unexpected ZeroDivisionError: "),
        (OSError(28, "No space left on device"), "[Errno 28] No space left on device"),
        (HydrationError("the source said no"), "the source said no"),
    ],
)
def test_any_exception_in_a_run_is_reported_failed_and_raised_again(
    tmp_path: Path, err: Exception, message: str
) -> None:
    outcome = run(_raising(err), tmp_path / "model")
    assert outcome.error is err
    assert [r.phase for r in outcome.results] == ["Hydrating", "Failed"]
    assert outcome.final.message == message and outcome.final.completed_at
    assert not (tmp_path / "model").exists()


def test_a_failure_message_fits_the_result_and_never_is_empty() -> None:
    assert failure_message(HydrationError("x" * 5000)) == "x" * MAX_MESSAGE
    assert failure_message(HydrationError()) == "HydrationError"
    assert len(failure_message(ValueError("y" * 5000))) == MAX_MESSAGE


def _invoke(args: list[str], env: dict[str, str]) -> tuple[int, str, list[dict[str, str]]]:
    outcome = CliRunner().invoke(cli, ["hydrate", *args], env=env)
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit)
    lines = [json.loads(line) for line in outcome.stdout.splitlines() if line.startswith("{")]
    return outcome.exit_code, outcome.output, lines


def test_an_unexpected_exception_through_the_cli_is_reported_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sources, "inline", lambda content, name: _raising(RuntimeError("boom")))
    env = {
        HydrateEnv.INLINE_CONTENT: "x",
        HydrateEnv.DEST: str(tmp_path / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    code, output, results = _invoke(["inline"], env)
    assert code == 1 and "Error: unexpected RuntimeError: boom" in output
    assert [r["phase"] for r in results] == ["Hydrating", "Failed"]
    assert results[-1]["message"] == "unexpected RuntimeError: boom"


def test_an_unreadable_headers_folder_is_reported_failed(tmp_path: Path) -> None:
    env = {
        HydrateEnv.HTTP_URL: "http://127.0.0.1:9/files/m.bin",
        HydrateEnv.HTTP_HEADERS_DIR: str(tmp_path / "no-such-secret"),
        HydrateEnv.DEST: str(tmp_path / "model"),
        HydrateEnv.SOURCE_HASH: "k1",
    }
    code, _, results = _invoke(["http"], env)
    assert code == 1
    assert [r["phase"] for r in results] == ["Hydrating", "Failed"]
    assert "no-such-secret" in results[-1]["message"]
