"""Pod stamping shared by every serving backend.

Each module edits a serving pod template for one concern, and nothing else:
`dra` (GPUs bind only through a DRA ResourceClaimTemplate), `volumes` (shared
memory and the model cache). In-cluster scheduler stamping (KAI, Volcano,
Kueue) lives with its plan in `modelplane.compose.replica.schedulers`; engine
specifics in `modelplane.compose.replica.engines`. `workload.pod_template` runs them
in a fixed order.
"""

from __future__ import annotations

from typing import Any


def upsert(items: list[dict[str, Any]], item: dict[str, Any], key: str = "name") -> None:
    """Replace the entry with `item`'s `key` in `items`, or append `item`."""
    for i, existing in enumerate(items):
        if isinstance(existing, dict) and existing.get(key) == item[key]:
            items[i] = item
            return
    items.append(item)
