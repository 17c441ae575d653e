"""The lowest-cost score: the cheaper a replica-hour on a cluster, the higher it scores.

The raw cost per cluster is recorded by the `order_pools` step (`scheduling.cost`,
which also says how the profile weighs it); this rule normalises and reports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.scheduling.framework import RuleStates, ScheduleInput
from modelplane.scheduling.scores import COST_WEIGHT, normalise


@dataclass
class Prices:
    """LowestCost's state: each cluster's raw cost per replica-hour, then its score."""

    raw: dict[str, float] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    priced: bool = False  # some candidate declares a price


@dataclass(frozen=True)
class LowestCost:
    """The cheaper a replica-hour on the cluster, the higher it scores (min–max over the
    candidates that declare a price; a cluster without one scores 0)."""

    weight: int = COST_WEIGHT
    name = "LowestCost"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Normalise the raw costs `order_pools` recorded."""
        prices = states.get(self.name, Prices)
        prices.priced = bool(prices.raw)
        prices.scores = normalise(prices.raw, lower_is_better=True)

    def score(self, states: RuleStates, cluster: str) -> float:
        """The cluster's cost score: 100 for the cheapest, 0 for the dearest or unpriced."""
        prices = states.get(self.name, Prices)
        if not prices.priced:
            return 100.0
        return prices.scores.get(cluster, 0.0)

    def placed(self, states: RuleStates, cluster: str) -> None:
        """A placement does not change a price."""
