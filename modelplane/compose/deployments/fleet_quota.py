"""The FleetQuota composer: each limit's use, as the scheduler counts it, in status.

It composes nothing. It reads every ModelReplica of its namespace and every
InferenceCluster (a replica's pool names the InferenceClass and the devices a
limit selects by) and writes `status.used` (used / hard per limit) and
`WithinQuota`. The counting is the scheduler's own (`scheduling.quota`), so
status and placement never disagree. Every FleetQuota of a namespace counts
(the scheduler applies all their limits); each reports its own. A limit whose
selector cannot be evaluated counts every device it might cover (fail closed)
and makes `WithinQuota` False (`SelectorError`, naming the field).
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.fleet_quota import (
    FleetQuotaSpec,
    FleetQuotaStatus,
    QuotaUsage,
    read_fleet_quota,
)
from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.api.reasons import ValidReason, WithinQuotaReason
from modelplane.compose import outcome
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult, Requirement
from modelplane.scheduling import quota, words
from modelplane.scheduling.matching import Evaluator

CLUSTERS = "inference-clusters"
REPLICAS = "model-replicas"


def requirements(namespace: str) -> dict[str, Requirement]:
    """What the composer reads: the namespace's replicas, every cluster."""
    return {
        CLUSTERS: Requirement(api_version=c.API_VERSION, kind=c.KIND_INFERENCE_CLUSTER),
        REPLICAS: Requirement(
            api_version=c.API_VERSION,
            kind=c.KIND_MODEL_REPLICA,
            match_labels={c.LABEL_MANAGED_BY: c.MANAGED_BY},
            namespace=namespace,
        ),
    }


def compose(inp: ComposeInput) -> ComposeResult:
    """Count the namespace's devices against each limit; `WithinQuota` says whether all hold."""
    result = ComposeResult()
    m = meta(inp.composite)
    namespace = str(m.get("namespace", ""))
    spec, error = parse_spec(FleetQuotaSpec, inp.composite)
    own = read_fleet_quota(inp.composite)
    if spec is None or own is None:
        return outcome.hold(inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, error)
    result.requirements = requirements(namespace)
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)
    clusters = {
        cl.name: cl for obj in inp.required[CLUSTERS] if (cl := read_inference_cluster(obj))
    }
    replicas = [r for obj in inp.required[REPLICAS] if (r := read_model_replica(obj))]
    ev = Evaluator()
    uses = quota.namespace_use(own, replicas, namespace, clusters, ev)
    result.status = FleetQuotaStatus(
        used=[QuotaUsage(name=u.limit, used=u.used, hard=u.hard) for u in uses]
    ).to_dict()
    result.ready = "True"
    broken = quota.selector_errors(own, clusters, ev)
    if broken:
        msg = (
            "; ".join(broken) + ": the limit counts every device its selector cannot judge, "
            "so it refuses placements it might cover until the selector is fixed"
        )
        result.condition(
            c.CONDITION_WITHIN_QUOTA, False, str(WithinQuotaReason.SELECTOR_ERROR), msg
        )
        result.warn(str(WithinQuotaReason.SELECTOR_ERROR), msg)
        return result
    over = [u for u in uses if u.used > u.hard]
    text = "; ".join(words.quota_text(u) for u in (over or uses))
    if over:
        msg = f"{text}: nothing is deleted; new placements are refused until use drops"
        result.condition(c.CONDITION_WITHIN_QUOTA, False, str(WithinQuotaReason.OVER_LIMIT), msg)
        result.warn(str(WithinQuotaReason.OVER_LIMIT), msg)
    else:
        result.condition(c.CONDITION_WITHIN_QUOTA, True, str(WithinQuotaReason.WITHIN_LIMITS), text)
    return result
