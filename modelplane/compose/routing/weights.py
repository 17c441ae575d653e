"""Integer traffic weights for a ModelService's backends.

A service lists selector groups, each with a relative weight. Only groups with
at least one Ready endpoint (and a weight above 0) take part; the others drop
out and their share goes to the rest in proportion. The integer weights of all
backends always sum to exactly `total`:

1. Group shares: `total` is apportioned by the groups' weights with the
   largest-remainder method: each group gets the floor of its exact share, and
   the units left over go one each to the groups with the largest remainders
   (ties to the group listed first). A group's share therefore differs from
   its exact share by less than 1.
2. Within a group its share is split evenly among its Ready endpoints; the
   `share mod n` units left over go one each to the endpoints first in name
   order. So a group's endpoints sum to exactly its share, and two endpoints
   of one group differ by at most 1.
3. An endpoint selected by several groups receives the sum of its parts.

An endpoint may round to 0 (more Ready endpoints in a group than units in its
share); it then receives no traffic but is still listed in status.
"""

from __future__ import annotations

from collections.abc import Sequence


def apportion(weights: Sequence[int], total: int) -> list[int]:
    """Split `total` in proportion to `weights` (largest remainder, ties to the earlier)."""
    whole = sum(weights)
    if whole <= 0:
        return [0 for _ in weights]
    floors = [w * total // whole for w in weights]
    remainders = [w * total % whole for w in weights]
    left = total - sum(floors)
    for i in sorted(range(len(weights)), key=lambda i: (-remainders[i], i))[:left]:
        floors[i] += 1
    return floors


def split(groups: Sequence[tuple[int, Sequence[str]]], total: int) -> dict[str, int]:
    """Integer weight per Ready endpoint name, from `(group weight, Ready endpoint names)`.

    Groups with weight 0 or no Ready endpoint drop out; empty when none is left.
    """
    active = [(w, sorted(set(names))) for w, names in groups if w > 0 and names]
    out: dict[str, int] = {}
    shares = apportion([w for w, _ in active], total)
    for (_, names), share in zip(active, shares, strict=True):
        each, extra = divmod(share, len(names))
        for i, name in enumerate(names):
            out[name] = out.get(name, 0) + each + (1 if i < extra else 0)
    return out
