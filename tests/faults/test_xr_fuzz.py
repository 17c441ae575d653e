"""The XR fuzz (`xr_fuzz.py`): 0 sibling withdrawals and 0 escapes over real, mutated requests.

A few hundred mutated requests in the normal suite; any count with

    MODELPLANE_XR_FUZZ=20000 .venv/bin/pytest tests/faults/test_xr_fuzz.py

(`MODELPLANE_XR_FUZZ_SEED` picks another seed). The counts are printed in the
terminal summary.
"""

from __future__ import annotations

import os

import pytest
from xr_fuzz import capture, fuzz, scenarios

from modelplane.api.kinds import KINDS
from modelplane.compose.types import ComposeInput

COUNT = int(os.environ.get("MODELPLANE_XR_FUZZ", "400"))
SEED = int(os.environ.get("MODELPLANE_XR_FUZZ_SEED", "24"))


@pytest.fixture(scope="module")
def requests() -> list[ComposeInput]:
    """Every distinct request a render of each example sends."""
    return capture(scenarios())


def test_the_requests_cover_every_kind(requests: list[ComposeInput]) -> None:
    from modelplane.compose.registry import COMPOSERS

    kinds = {str(r.composite.get("kind")) for r in requests}
    assert kinds == {kind for _, kind in COMPOSERS}


def test_one_malformed_object_withdraws_no_sibling_and_nothing_escapes(
    requests: list[ComposeInput], fuzz_report: list[str]
) -> None:
    tally = fuzz(requests, COUNT, SEED)
    fuzz_report.extend(tally.summary())
    assert tally.mutated == COUNT
    assert len(tally.by_kind) == len(KINDS), tally.by_kind
    assert [f.line() for f in tally.findings] == []
