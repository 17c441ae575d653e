"""ModelReplica test helpers: make the shared builders importable by this folder's tests."""

from __future__ import annotations

import sys
from pathlib import Path

# Test modules import `replicas` (builders shared by the ModelReplica tests).
sys.path.insert(0, str(Path(__file__).resolve().parent))
