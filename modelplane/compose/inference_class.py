"""Composer for inference_class (placeholder until implemented)."""

from __future__ import annotations

from modelplane.compose.types import ComposeInput, ComposeResult


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose desired state for the kind."""
    return ComposeResult(fatal="composer not implemented yet")
