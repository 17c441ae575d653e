"""The spread score: the fewer of the deployment's replicas a cluster holds, the higher."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from modelplane.scheduling.framework import RuleStates, ScheduleInput
from modelplane.scheduling.scores import MAX_SCORE, SPREAD_WEIGHT


@dataclass
class _Load:
    """SpreadByLoad's state: replicas counted per cluster, and the cycle's bound."""

    bound: int = 1
    held: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class SpreadByLoad:
    """Spread first: the larger the share of the deployment's replicas a cluster holds, the
    lower it scores — 100 × (1 − held / spec.replicas).

    The bound is `spec.replicas`, fixed for the cycle: the fill never counts
    more than that many replicas (kept ones are scaled down to it first, and
    it places only what is missing), so the score stays within [0, 100], and
    one replica more costs the same everywhere — a cluster holding half the
    deployment scores 50 whatever the others hold.
    """

    weight: int = SPREAD_WEIGHT
    name = "SpreadByLoad"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Note the bound: the deployment's replicas."""
        states.get(self.name, _Load).bound = max(1, inp.spec.replicas)

    def score(self, states: RuleStates, cluster: str) -> float:
        """100 × the share of the bound the cluster does not hold (0 at or past it)."""
        load = states.get(self.name, _Load)
        held = load.held.get(cluster, 0)  # a Counter's missing key costs a Python call
        return max(0.0, MAX_SCORE * (load.bound - held) / load.bound)

    def placed(self, states: RuleStates, cluster: str) -> None:
        """One more replica counts on `cluster`."""
        states.get(self.name, _Load).held[cluster] += 1
