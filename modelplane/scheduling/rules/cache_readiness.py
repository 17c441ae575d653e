"""The cache-readiness score: a cluster whose copy of the deployment's ModelCache is Ready first."""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.scheduling.framework import RuleStates, ScheduleInput
from modelplane.scheduling.scores import CACHE_WEIGHT, MAX_SCORE

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
