"""Fixtures for the embedded control plane: test kinds served by injected composers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from modelplane.compose import registry
from modelplane.compose.types import Composer

TEST_API = "test.modelplane.ai/v1"

Install = Callable[[dict[str, Composer]], None]


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Install:
    """Serve the given kinds of TEST_API with the given composers (others unchanged)."""

    def go(composers: dict[str, Composer]) -> None:
        real = registry.composer_for

        def lookup(api_version: str, kind: str) -> Composer | None:
            if api_version == TEST_API:
                return composers.get(kind)
            return real(api_version, kind)

        monkeypatch.setattr(registry, "composer_for", lookup)

    return go
