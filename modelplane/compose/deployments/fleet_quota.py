"""The FleetQuota composer: each limit's use, as the scheduler counts it, in status.

It composes nothing. It reads every ModelReplica of its namespace and every
InferenceCluster (a replica's pool names the InferenceClass and the devices a
limit selects by) and writes `status.used` (used / hard per limit) and
`WithinQuota`. The counting is the scheduler's own (`scheduling.quota`), so
status and placement never disagree. Of several FleetQuotas in one namespace
the first by name counts; the others say so (`Superseded`).
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.fleet_quota import FleetQuotaSpec, FleetQuotaStatus, QuotaUsage, governing_quota
from modelplane.api.readers import read_inference_cluster, read_model_replica
from modelplane.api.reasons import ValidReason, WithinQuotaReason
from modelplane.compose import outcome
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult, Requirement
from modelplane.scheduling import quota, words
from modelplane.scheduling.matching import Evaluator

CLUSTERS = "inference-clusters"
REPLICAS = "model-replicas"
QUOTAS = "fleet-quotas"


def requirements(namespace: str) -> dict[str, Requirement]:
    """What the composer reads: the namespace's replicas and quotas, every cluster."""
    return {
        CLUSTERS: Requirement(api_version=c.API_VERSION, kind=c.KIND_INFERENCE_CLUSTER),
        REPLICAS: Requirement(
            api_version=c.API_VERSION,
            kind=c.KIND_MODEL_REPLICA,
            match_labels={c.LABEL_MANAGED_BY: c.MANAGED_BY},
            namespace=namespace,
        ),
        QUOTAS: Requirement(
            api_version=c.API_VERSION, kind=c.KIND_FLEET_QUOTA, namespace=namespace
        ),
    }


def compose(inp: ComposeInput) -> ComposeResult:
    """Count the namespace's devices against each limit; `WithinQuota` says whether all hold."""
    result = ComposeResult()
    m = meta(inp.composite)
    name, namespace = str(m.get("name", "")), str(m.get("namespace", ""))
    spec, error = parse_spec(FleetQuotaSpec, inp.composite)
    if spec is None:
        return outcome.hold(inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, error)
    result.requirements = requirements(namespace)
    if not all(inp.fetched(r) for r in result.requirements):
        return outcome.wait(inp, result)
    governing = governing_quota([*inp.required[QUOTAS], inp.composite])
    if governing is None or governing.name != name:
        other = governing.name if governing is not None else "another FleetQuota"
        msg = f"FleetQuota {other} counts for namespace {namespace} (the first by name)"
        result.condition(c.CONDITION_WITHIN_QUOTA, None, str(WithinQuotaReason.SUPERSEDED), msg)
        result.ready = "True"
        return result
    clusters = {
        cl.name: cl for obj in inp.required[CLUSTERS] if (cl := read_inference_cluster(obj))
    }
    replicas = [r for obj in inp.required[REPLICAS] if (r := read_model_replica(obj))]
    uses = quota.namespace_use(governing, replicas, namespace, clusters, Evaluator())
    result.status = FleetQuotaStatus(
        used=[QuotaUsage(name=u.limit, used=u.used, hard=u.hard) for u in uses]
    ).to_dict()
    over = [u for u in uses if u.used > u.hard]
    text = "; ".join(words.quota_text(u) for u in (over or uses))
    if over:
        msg = f"{text}: nothing is deleted; new placements are refused until use drops"
        result.condition(c.CONDITION_WITHIN_QUOTA, False, str(WithinQuotaReason.OVER_LIMIT), msg)
        result.warn(str(WithinQuotaReason.OVER_LIMIT), msg)
    else:
        result.condition(c.CONDITION_WITHIN_QUOTA, True, str(WithinQuotaReason.WITHIN_LIMITS), text)
    result.ready = "True"
    return result
