"""How score rules rank clusters: the scale, the weights and why they cannot overlap.

Kube-scheduler style: every rule scores a cluster from 0 to 100 (higher is
better), already normalised, and carries a weight; the fill places the next
replica on the cluster with the highest weighted sum, ties going to the best
fit (`fill.rank_fit`: the least device memory, then the fullest landing node,
then the fewest devices left free on it, as the ledger packs), then to the
first name. Several preferences therefore hold at once — "prefer the cheaper
cluster, but still spread" is a price rule and `SpreadByLoad` with weights
saying how much one is worth against the other. The rules themselves live one
per module in `scheduling/rules/` (`CacheReadiness`, `SpreadByLoad`,
`LowestCost`); adding a score is its module there, one entry in
`rules.SCORES` (or another profile) with its weight here, and its table test
in tests/scheduling/test_scores.py.

How a rule normalises depends on whether its raw value moves during the fill:

- a raw value fixed for the cycle (a copy is Ready, a price) is normalised
  over the cycle's candidate clusters with `normalise` (min–max, as
  kube-scheduler's NormalizeScore), once, in `prepare`;
- a raw value the fill itself moves (the replicas a cluster holds) is
  normalised against a bound fixed for the cycle, never against the other
  clusters' current values: the fill re-scores only the cluster that took a
  replica (its heap stays valid), so a score may depend only on its own
  cluster's state and the cycle's constants.

The default profile, `rules.SCORES`, keeps the strict order the scheduler always had
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

from collections.abc import Iterable, Mapping

from modelplane.scheduling.framework import ClusterScore, RuleStates

MAX_SCORE = 100.0  # every rule scores within [0, MAX_SCORE] (kube-scheduler's MaxNodeScore)
CACHE_WEIGHT = 2
SPREAD_WEIGHT = 1
COST_WEIGHT = 1  # `LowestCost`, in the cost profile (`rules.COST_PROFILE`, `scheduling.cost`)
COST_CACHE_WEIGHT = 3  # above SPREAD_WEIGHT × 100 + COST_WEIGHT × 100: a strict tier


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
