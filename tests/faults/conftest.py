"""The fault-injection harness's tally: every fault tried and the Ready workloads it lost.

Each test of test_fault_injection.py records one entry; the terminal summary
prints the totals after the run, so a CI log shows how many faults were tried
and how many Ready workloads they cost (the goal is 0).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# test_xr_fuzz.py imports its harness, `xr_fuzz`, from this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent))


@dataclass
class FaultLog:
    """Faults tried and, per fault, the Ready workloads it lost."""

    lost: dict[str, list[str]] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)  # faults marked as known failures

    def record(self, fault: str, lost: list[str], known: object = None) -> None:
        """Note one fault, what it lost and whether it is a known (xfail) failure."""
        self.lost[fault] = lost
        if known:
            self.known.add(fault)

    def summary(self) -> list[str]:
        """Lines for the terminal summary."""
        total = sum(len(v) for v in self.lost.values())
        known = sum(len(v) for f, v in self.lost.items() if f in self.known)
        lines = [
            f"fault injection: {len(self.lost)} faults tried, {total} Ready workloads lost "
            f"({known} of them by the {len(self.known)} faults marked xfail)"
        ]
        for f, v in sorted(self.lost.items()):
            if v:
                mark = " [xfail]" if f in self.known else ""
                lines.append(f"  {f}{mark}: lost {', '.join(v)}")
        return lines


_LOG = FaultLog()
FUZZ_REPORT: list[str] = []
"""The XR fuzz's summary lines (test_xr_fuzz.py), printed after the run."""


@pytest.fixture(scope="session")
def fault_log() -> FaultLog:
    """The session's tally."""
    return _LOG


@pytest.fixture(scope="session")
def fuzz_report() -> list[str]:
    """Where the XR fuzz puts its summary lines, printed after the run."""
    return FUZZ_REPORT


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the tally when any fault ran, and the XR fuzz's counts when it ran."""
    if _LOG.lost:
        for line in _LOG.summary():
            terminalreporter.write_line(line)
    for line in FUZZ_REPORT:
        terminalreporter.write_line(line)
