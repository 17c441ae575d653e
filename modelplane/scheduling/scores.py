"""Score rules: the order in which the fill offers clusters the next replica.

The fill places one replica at a time on the cluster with the lowest score
tuple (each rule of `SCORES` in order, then the cluster's name). Adding a
score is a class here, one entry in `SCORES`, and its table test in
tests/scheduling/test_scores.py.

The order, most significant first:
1. `CacheReadiness` — time to ready: a cluster whose copy of the deployment's
   ModelCache is already Ready before one still hydrating it;
2. `SpreadByLoad` — among equally ready clusters, the one holding the fewest
   replicas of the deployment (spread first, pack only when capacity forces);
3. the cluster's name, so ties break deterministically.
"""

from __future__ import annotations

from collections import Counter

from modelplane.scheduling.framework import ClusterScore, RuleStates, ScheduleInput


class CacheReadiness:
    """Time to ready: a cluster whose copy of the deployment's ModelCache is Ready scores 0.

    Clusters whose copy is still staging score 1 (the cache filter has already
    removed clusters the cache does not cover). Without a cache every cluster
    scores 0, so the rule changes nothing.
    """

    name = "CacheReadiness"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Note the clusters whose copy is Ready."""
        cache = inp.cache
        ready = {c.cluster for c in cache.copies if c.ready} if cache is not None else None
        states.get(self.name, dict[str, frozenset[str] | None])["ready"] = (
            frozenset(ready) if ready is not None else None
        )

    def score(self, states: RuleStates, cluster: str) -> int:
        """0 when the cluster's copy is Ready (or there is no cache), else 1."""
        ready = states.get(self.name, dict[str, frozenset[str] | None]).get("ready")
        return 0 if ready is None or cluster in ready else 1

    def placed(self, states: RuleStates, cluster: str) -> None:
        """A placement does not change where the copy is Ready."""


def _counter() -> Counter[str]:
    return Counter()


class SpreadByLoad:
    """Spread first: fewer replicas of this deployment on a cluster score lower."""

    name = "SpreadByLoad"

    def prepare(self, states: RuleStates, inp: ScheduleInput) -> None:
        """Nothing to read: the load is counted as replicas are kept and placed."""

    def score(self, states: RuleStates, cluster: str) -> int:
        """Replicas of the deployment the cluster holds now."""
        return states.get(self.name, _counter)[cluster]

    def placed(self, states: RuleStates, cluster: str) -> None:
        """One more replica counts on `cluster`."""
        states.get(self.name, _counter)[cluster] += 1


SCORES: tuple[ClusterScore, ...] = (CacheReadiness(), SpreadByLoad())
"""Every score rule, most significant first."""
