"""The scheduler's rules, one per module, and their registration.

A rule is policy the fixed steps of a cycle (`scheduling.scheduler`) consult:
a cluster filter (`framework.ClusterFilter`: may a new replica go here, must an
existing one leave), a pool filter (`framework.PoolFilter`: which pools take no
new replica) or a score (`framework.ClusterScore`: how much the fill wants the
next replica on a cluster). Each lives in its own module here; the steps (fill,
ledger, retain, preemption's post-filter, quota's refusal, what-if) live beside
this package. Adding a rule is its module, one entry below and its table test
(tests/scheduling/test_filters.py, test_scores.py); see docs/architecture.md,
"Add a scheduler rule".
"""

from __future__ import annotations

from modelplane.scheduling.framework import ClusterFilter, ClusterScore, PoolFilter
from modelplane.scheduling.rules.backend import BackendFilter
from modelplane.scheduling.rules.cache_readiness import CacheReadiness
from modelplane.scheduling.rules.caches import CacheFilter
from modelplane.scheduling.rules.cluster_selector import ClusterSelectorFilter
from modelplane.scheduling.rules.lowest_cost import LowestCost
from modelplane.scheduling.rules.pod_security import PodSecurityFilter
from modelplane.scheduling.rules.preemption import PreemptionFilter
from modelplane.scheduling.rules.readiness import ReadinessFilter
from modelplane.scheduling.rules.spot import SpotFilter
from modelplane.scheduling.rules.spread import SpreadByLoad
from modelplane.scheduling.rules.taints import TaintFilter
from modelplane.scheduling.rules.unschedulable import UnschedulableFilter
from modelplane.scheduling.scores import COST_CACHE_WEIGHT

UNSCHEDULABLE = UnschedulableFilter()
SPOT = SpotFilter()

FILTERS: tuple[ClusterFilter, ...] = (
    ClusterSelectorFilter(),
    TaintFilter(),
    ReadinessFilter(),
    BackendFilter(),
    PodSecurityFilter(),
    CacheFilter(),
    UNSCHEDULABLE,
    SPOT,
    PreemptionFilter(),
)
"""Every cluster filter, in the order a cluster's reason is reported (the first refusal)."""

POOL_FILTERS: tuple[PoolFilter, ...] = (UNSCHEDULABLE, SPOT)
"""Every pool filter; the first that refuses a pool names the reason."""

SCORES: tuple[ClusterScore, ...] = (CacheReadiness(), SpreadByLoad())
"""The default score profile: every score rule with its weight (`scheduling.scores`)."""

COST_PROFILE: tuple[ClusterScore, ...] = (
    CacheReadiness(weight=COST_CACHE_WEIGHT),
    SpreadByLoad(),
    LowestCost(),
)
"""The profile of a deployment asking LowestCost (`scheduling.cost`)."""
