"""Score rules: the order in which the fill offers clusters the next replica.

The fill places one replica at a time on the cluster with the lowest score
tuple (each rule of `SCORES` in order, then the cluster's name). Adding a
score is a class here, one entry in `SCORES`, and its table test in
tests/scheduling/test_scores.py.
"""

from __future__ import annotations

from collections import Counter

from modelplane.scheduling.framework import ClusterScore, RuleStates


def _counter() -> Counter[str]:
    return Counter()


class SpreadByLoad:
    """Spread first: fewer replicas of this deployment on a cluster score lower."""

    name = "SpreadByLoad"

    def score(self, states: RuleStates, cluster: str) -> int:
        """Replicas of the deployment the cluster holds now."""
        return states.get(self.name, _counter)[cluster]

    def placed(self, states: RuleStates, cluster: str) -> None:
        """One more replica counts on `cluster`."""
        states.get(self.name, _counter)[cluster] += 1


SCORES: tuple[ClusterScore, ...] = (SpreadByLoad(),)
"""Every score rule, most significant first."""
