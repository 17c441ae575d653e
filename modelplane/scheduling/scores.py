"""Score rules: how much the fill wants the next replica on each cluster.

Kube-scheduler style: every rule scores a cluster from 0 to 100 (higher is
better), already normalised, and carries a weight; the fill places the next
replica on the cluster with the highest weighted sum, ties going to the best
fit (`fill.rank_fit`: the least device memory, then the fullest landing node,
as the ledger packs), then to the
first name. Several preferences therefore hold at once — "prefer the cheaper
cluster, but still spread" is a price rule and `SpreadByLoad` with weights
saying how much one is worth against the other. Adding a score is a class
here, one entry in `SCORES` with its weight, and its table test in
tests/scheduling/test_scores.py.

How a rule normalises depends on whether its raw value moves during the fill:

- a raw value fixed for the cycle (a copy is Ready, a price) is normalised
  over the cycle's candidate clusters with `normalise` (min–max, as
  kube-scheduler's NormalizeScore), once, in `prepare`;
- a raw value the fill itself moves (the replicas a cluster holds) is
  normalised against a bound fixed for the cycle, never against the other
  clusters' current values: the fill re-scores only the cluster that took a
  replica (its heap stays valid), so a score may depend only on its own
  cluster's state and the cycle's constants.

The default profile, `SCORES`, keeps the strict order the scheduler always had
— cache readiness, then spread, then (the fill's tie-break) best fit and the
name — because its weights cannot overlap:

- `CacheReadiness` scores 100 or 0, so wherever two clusters differ in it
  their weighted sums differ by exactly `CACHE_WEIGHT × 100 = 200`;
- `SpreadByLoad` scores within [0, 100], so it moves a weighted sum by at
  most `SPREAD_WEIGHT × 100 = 100 < 200`: it can never undo a readiness
  difference, and decides exactly among clusters equal in readiness;
- among those, its score is strictly decreasing in the replicas held (exact
  for any count below 2**40 in floating point: the gap 100/bound dwarfs the
  rounding), so fewer replicas still win, and equal counts give equal sums,
  left to the best fit and the name. A deployment's own replicas therefore
  spread, while its first replica — where every cluster ties — goes where the
  fleet packs tightest.

A new rule that must stay subordinate to cache readiness keeps the sum of
every weight but `CACHE_WEIGHT` below `CACHE_WEIGHT` (a strict tier is a
weight larger than the whole range below it);
tests/scheduling/test_scores.py checks the default profile against the
strict order on random fleets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from modelplane.scheduling.framework import ClusterScore, RuleStates, ScheduleInput

MAX_SCORE = 100.0  # every rule scores within [0, MAX_SCORE] (kube-scheduler's MaxNodeScore)
CACHE_WEIGHT = 2
SPREAD_WEIGHT = 1


def normalise(raw: Mapping[str, float], *, lower_is_better: bool = False) -> dict[str, float]:
    """Raw scores of the cycle's candidates mapped onto [0, MAX_SCORE], best at MAX_SCORE.

    Min–max over the candidates given (kube-scheduler's NormalizeScore): the
    best raw value scores MAX_SCORE, the worst 0, the rest in proportion; when
    every candidate is equal, all score MAX_SCORE (nothing to prefer).
    """
    if not raw:
        return {}
    lo, hi = min(raw.values()), max(raw.values())
    if hi == lo:
        return dict.fromkeys(raw, MAX_SCORE)
    span = hi - lo
    return {
        k: MAX_SCORE * ((hi - v) if lower_is_better else (v - lo)) / span for k, v in raw.items()
    }


def weighted(rules: Iterable[ClusterScore], states: RuleStates, cluster: str) -> float:
    """The cluster's weighted sum over `rules` (what the fill maximises)."""
    return sum([rule.weight * rule.score(states, cluster) for rule in rules])


# CacheReadiness's state; built once here, not per call (a subscripted type is a new object).
_ReadyState = dict[str, frozenset[str] | None]


@dataclass(frozen=True)
class CacheReadiness:
    """Time to ready: a cluster whose copy of the deployment's ModelCache is Ready scores 100.

    Clusters whose copy is still staging score 0 (the cache filter has already
    removed clusters the cache does not cover). Without a cache every cluster
    scores 100, so the rule changes nothing. Already on the normalised scale:
    min–max over two values is the identity.
    """

    weight: int = CACHE_WEIGHT
    name = "CacheReadiness"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Note the clusters whose copy is Ready."""
        cache = inp.cache
        ready = {c.cluster for c in cache.copies if c.ready} if cache is not None else None
        states.get(self.name, _ReadyState)["ready"] = (
            frozenset(ready) if ready is not None else None
        )

    def score(self, states: RuleStates, cluster: str) -> float:
        """100 when the cluster's copy is Ready (or there is no cache), else 0."""
        ready = states.get(self.name, _ReadyState).get("ready")
        return MAX_SCORE if ready is None or cluster in ready else 0.0

    def placed(self, states: RuleStates, cluster: str) -> None:
        """A placement does not change where the copy is Ready."""


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


SCORES: tuple[ClusterScore, ...] = (CacheReadiness(), SpreadByLoad())
"""The default profile: every score rule with its weight (see the module docstring)."""
