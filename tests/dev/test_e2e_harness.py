"""The end-to-end harness refuses to pass a run it could not make (no unit test of the fleet)."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e import harness


def test_missing_crds_fail_the_scenario_instead_of_skipping_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without ../shared/conformance/crds a scenario cannot be given the CRDs it needs:
    that is a failed scenario (a skip let `make e2e` exit 0 having tested nothing)."""
    monkeypatch.setattr(harness, "CRDS", tmp_path / "absent")
    outcome: BaseException | None = None
    try:
        harness.World.install_crds(None, None, "lws")
    except BaseException as err:  # a skip is an outcome here, not this test's own
        outcome = err
    assert isinstance(outcome, pytest.fail.Exception), repr(outcome)
    assert "absent not found" in str(outcome)
