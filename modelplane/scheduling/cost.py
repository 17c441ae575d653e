"""Cost-aware placement: the `order_pools` step and the profile that weighs cost.

The rule is `LowestCost` (`rules/lowest_cost.py`), a score beside spread with a
weight. A deployment asking `spec.placement.preference: LowestCost` is ranked by
`rules.COST_PROFILE`: cache readiness stays a strict tier (its weight, 3, is larger
than the whole range below it: spread and cost at weight 1 each move a sum by
at most 200 < 300), while cost and spread weigh the same. So the cheapest
cluster wins the next replica unless it already holds more of the deployment
than the price difference is worth: prices are min–max normalised over the
candidates, so a cluster 10% of the price range dearer wins once the cheaper
one holds 10% of `spec.replicas` more — cheaper pools win without giving up
spread entirely. Within a cluster the fill tries its cheapest matching pool
first (`order_pools`). A cluster's raw cost is what one replica costs per hour
there: per role, its devices times the cheapest matching pool's
`pricePerDeviceHour`. A cluster whose matching pools declare no price scores 0
on cost (never preferred for a price nobody declared); when no candidate has a
price, every cluster scores 100 and the rule changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from modelplane.scheduling.framework import ClusterScore, ScheduleInput
from modelplane.scheduling.matching import RoleMatch
from modelplane.scheduling.rules import COST_PROFILE, SCORES
from modelplane.scheduling.rules.lowest_cost import LowestCost, Prices
from modelplane.scheduling.state import CycleState, candidates


def wants_cost(inp: ScheduleInput) -> bool:
    """Whether the deployment asks for the lowest-cost placement."""
    placement = inp.spec.placement
    return placement is not None and placement.preference == "LowestCost"


def profile(inp: ScheduleInput, scores: tuple[ClusterScore, ...]) -> tuple[ClusterScore, ...]:
    """The score profile of the cycle: `COST_PROFILE` under LowestCost, unless the caller
    passed its own profile."""
    return COST_PROFILE if wants_cost(inp) and scores is SCORES else scores


def _price(state: CycleState, cluster: str, pool: str) -> float | None:
    found = state.inp.clusters[cluster].pool(pool)
    return None if found is None else found.price


def _devices(match: RoleMatch, nodes: int) -> int:
    return sum(r.count for r in match.resolved) * nodes


def combo_price(state: CycleState, cluster: str, combo: Sequence[tuple[str, RoleMatch]]) -> float:
    """Under LowestCost, what one replica-hour on this pool combination costs (an unpriced
    pool: infinite, tried last); otherwise 0 for every combination (no say)."""
    if not wants_cost(state.inp):
        return 0.0
    total = 0.0
    for role, (pool, match) in zip(state.roles, combo, strict=True):
        price = _price(state, cluster, pool)
        if price is None:
            return math.inf
        total += price * _devices(match, role.nodes)
    return total


def order_pools(state: CycleState) -> None:
    """Under LowestCost: match every schedulable cluster, try its cheapest pools first, and
    record what one replica-hour costs there (the LowestCost score's raw value)."""
    if not wants_cost(state.inp) or state.invalid:
        return
    prices = state.rules.get(LowestCost.name, Prices)
    for cluster in state.schedulable:
        per_role = candidates(state, cluster)
        if per_role is not None:
            for pools in per_role:
                pools.sort(
                    key=lambda pm: (
                        _price(state, cluster, pm[0]) is None,
                        _price(state, cluster, pm[0]) or 0.0,
                    )
                )
        state.options[cluster] = per_role
        raw = _cluster_cost(state, cluster, per_role)
        if raw is not None:
            prices.raw[cluster] = raw


def _cluster_cost(
    state: CycleState, cluster: str, per_role: list[list[tuple[str, RoleMatch]]] | None
) -> float | None:
    """One replica-hour on the cluster's cheapest priced pools; None when a role has none."""
    if per_role is None:
        return None
    total = 0.0
    for role, pools in zip(state.roles, per_role, strict=True):
        priced = [
            p * _devices(m, role.nodes)
            for pool, m in pools
            if (p := _price(state, cluster, pool)) is not None
        ]
        if not priced:
            return None
        total += min(priced)
    return total
