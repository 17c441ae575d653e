"""Scheduler test helpers: make the fleet builders importable by this folder's tests."""

from __future__ import annotations

import sys
from pathlib import Path

# Test modules import `schedfleet` (builders shared by the table and property tests).
sys.path.insert(0, str(Path(__file__).resolve().parent))
