"""Hydrator test fixtures: loopback HTTP, Kubernetes API and S3 (moto) servers."""

from __future__ import annotations

import sys
from pathlib import Path

# Test modules import `loopback` (the servers and their recorded state).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loopback import file_server, kube_api, s3_endpoint

__all__ = ["file_server", "kube_api", "s3_endpoint"]
