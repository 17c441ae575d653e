"""Fixtures for the package tests: paths and the shared schema oracle (when present)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"
