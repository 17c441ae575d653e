"""Fleet autoscaling: the engine signals a cluster reports and `spec.autoscaling`.

Two contracts live here:

- `ReplicaSignals`, what the inventory agent on a workload cluster publishes
  per replica after scraping its engine's Prometheus metrics (window averages
  of requests waiting and running and of KV-cache use, the window's
  time-to-first-token p90, the window and the scrape time). A replica whose
  engine did not answer is `reachable: false` with the error, never zero load.
  The InferenceCluster copies them into `status.replicaSignals`; the
  ModelDeployment reads them there (`read_replica_signals`).
- `Autoscaling` (`ModelDeployment.spec.autoscaling`) and the status it writes
  (`AutoscalingStatus`); the desired count is computed by the pure function in
  `compose/deployments/autoscaling.py`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from pydantic import Field, ValidationError, field_validator, model_validator

from modelplane.api.common import KubeModel, StatusModel, cel_rules

MAX_REPLICA_SIGNALS: Final = 256
"""Replicas one cluster reports signals for (the rest are cut and marked truncated)."""
MAX_SIGNAL_ERROR: Final = 256
MAX_RECOMMENDATIONS: Final = 64
MAX_MISSING_NAMES: Final = 16
MAX_STABILIZATION_SECONDS: Final = 3600
MAX_DRAIN_TIMEOUT_SECONDS: Final = 3600
MAX_DRAINS: Final = 10000
"""Leaving replicas whose drain start the status keeps: as many as a deployment has replicas
(`model_deployment.MAX_REPLICAS`), so no drain's timeout is ever forgotten."""
MAX_DRAIN_MESSAGES: Final = 16
"""Drains whose message the status carries (the oldest); the rest carry their start only."""
MAX_DRAIN_MESSAGE: Final = 256

TARGET_QUEUE_DEPTH: Final = "queueDepthPerReplica"
TARGET_KV_CACHE: Final = "kvCacheUtilization"
TARGET_TTFT: Final = "ttftP90Seconds"


class ReplicaSignals(KubeModel):
    """One replica's engine signals over the agent's window (pods summed or merged)."""

    replica: str = Field(
        max_length=253, description="The ModelReplica (pod label `modelplane.ai/replica`)."
    )
    namespace: str | None = Field(
        default=None,
        max_length=63,
        description="The namespace of the pods (the replica's own, when they are its); absent "
        "from agents that do not report it.",
    )
    pods: int = Field(default=1, ge=0, description="Ready serving pods of the replica scraped.")
    reachable: bool = Field(description="Whether every scraped pod's metrics endpoint answered.")
    error: str | None = Field(
        default=None,
        max_length=MAX_SIGNAL_ERROR,
        description="Why a pod's metrics endpoint did not answer (unreachable replicas only).",
    )
    scraped_at: str = Field(max_length=64, description="RFC 3339 time of the latest scrape.")
    window_seconds: int = Field(ge=0, description="The span the averages and quantiles cover.")
    samples: int = Field(default=1, ge=0, description="Scrapes inside the window.")
    requests_waiting: float | None = Field(
        default=None, ge=0, description="Requests queued in the engine (window average)."
    )
    requests_running: float | None = Field(
        default=None, ge=0, description="Requests being served (window average)."
    )
    kv_cache_utilization: float | None = Field(
        default=None, ge=0, le=1, description="KV-cache use, 0 to 1 (window average)."
    )
    ttft_p90_seconds: float | None = Field(
        default=None, ge=0, description="Time to first token, 90th percentile over the window."
    )
    ttft_requests: int | None = Field(
        default=None, ge=0, description="Requests whose first token the window saw."
    )
    requests: int | None = Field(
        default=None,
        ge=0,
        description="Inference requests the engine answered in the window (its HTTP server's "
        "counter; without one, vLLM's finished-request counter).",
    )
    errors: int | None = Field(
        default=None,
        ge=0,
        description="Of those, answered with a server error (HTTP 5xx); unknown where the engine "
        "counts only finished requests.",
    )

    @field_validator("requests_waiting", "requests_running", "kv_cache_utilization")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v

    @property
    def load(self) -> float | None:
        """Requests waiting plus running; None when not known (never zero for unknown)."""
        if not self.reachable or self.requests_waiting is None or self.requests_running is None:
            return None
        return self.requests_waiting + self.requests_running


def report_key(replica: str, namespace: str | None) -> str:
    """The key an agent's report on a replica is read by: `namespace/replica`, or the
    replica alone from an agent that reports no namespace."""
    return replica if namespace is None else f"{namespace}/{replica}"


def read_replica_signals(raw: Any) -> dict[str, ReplicaSignals]:
    """`status.replicaSignals` by `report_key`; malformed entries are skipped."""
    out: dict[str, ReplicaSignals] = {}
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, Mapping):
            continue
        try:
            signals = ReplicaSignals.model_validate(entry)
        except ValidationError:
            continue
        out[report_key(signals.replica, signals.namespace)] = signals
    return out


class AutoscalingTargets(KubeModel):
    """What one replica should carry; the fleet is sized so each carries about this."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.queueDepthPerReplica) || has(self.kvCacheUtilization)"
                " || has(self.ttftP90Seconds)",
                "set at least one target",
            )
        )
    }

    queue_depth_per_replica: float | None = Field(
        default=None,
        gt=0,
        le=100000,
        description="Requests waiting per replica (vLLM num_requests_waiting), fleet-wide sum "
        "divided by replicas.",
    )
    kv_cache_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="KV-cache use per replica, 0 to 1 (vLLM kv_cache_usage_perc).",
    )
    ttft_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="Time to first token, 90th percentile, in seconds.",
    )

    @model_validator(mode="after")
    def _one(self) -> AutoscalingTargets:
        if not self.named():
            raise ValueError("set at least one target")
        return self

    def named(self) -> dict[str, float]:
        """The targets set, by wire name."""
        pairs = (
            (TARGET_QUEUE_DEPTH, self.queue_depth_per_replica),
            (TARGET_KV_CACHE, self.kv_cache_utilization),
            (TARGET_TTFT, self.ttft_p90_seconds),
        )
        return {k: v for k, v in pairs if v is not None}


class Autoscaling(KubeModel):
    """Size the deployment from its engines' signals, summed over the fleet (HPA algorithm)."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            ("self.minReplicas <= self.maxReplicas", "minReplicas must not exceed maxReplicas"),
        )
    }

    min_replicas: int = Field(default=1, ge=1, le=10000, description="Never fewer replicas.")
    max_replicas: int = Field(ge=1, le=10000, description="Never more replicas.")
    targets: AutoscalingTargets = Field(description="One or more per-replica targets.")
    scale_up_stabilization_seconds: int = Field(
        default=0,
        ge=0,
        le=MAX_STABILIZATION_SECONDS,
        description="Scale up only to the lowest proposal of this window (0: at once).",
    )
    scale_down_stabilization_seconds: int = Field(
        default=300,
        ge=0,
        le=MAX_STABILIZATION_SECONDS,
        description="Scale down only to the highest proposal of this window.",
    )
    tolerance: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="No change while every target's ratio of measured to target is within "
        "1 ± tolerance.",
    )
    stale_after_seconds: int = Field(
        default=180,
        ge=10,
        le=MAX_STABILIZATION_SECONDS,
        description="A replica's report older than this (against the newest report) is stale: "
        "it is treated like a missing one and blocks scale-down.",
    )
    drain_timeout_seconds: int = Field(
        default=30,
        ge=0,
        le=MAX_DRAIN_TIMEOUT_SECONDS,
        description="How long a replica the autoscaler removes, once at weight 0 in every "
        "ModelService, waits for its engine to report no request in flight before it is deleted "
        "anyway, counted from when it started leaving (0: it does not wait).",
    )

    @model_validator(mode="after")
    def _bounds(self) -> Autoscaling:
        if self.min_replicas > self.max_replicas:
            raise ValueError("minReplicas must not exceed maxReplicas")
        return self


class Recommendation(StatusModel):
    """One proposal the autoscaler made, at the time of the reports it used."""

    at: str = Field(max_length=64, description="RFC 3339 time of the newest report used.")
    replicas: int = Field(ge=0, description="The proposed replica count.")


class TargetProposal(StatusModel):
    """What one target measured and proposed."""

    target: str = Field(max_length=64, description="The target's name in spec.autoscaling.")
    value: float | None = Field(
        default=None, description="The fleet-wide measure (per replica), absent with no signal."
    )
    goal: float = Field(description="The target value.")
    replicas: int | None = Field(default=None, description="The replicas this target proposes.")


class AutoscalingStatus(StatusModel):
    """What the autoscaler used, proposed and decided."""

    desired_replicas: int = Field(ge=0, description="The replica count the autoscaler set.")
    current_replicas: int = Field(ge=0, description="The count it started from.")
    proposal: int | None = Field(
        default=None, description="The largest target proposal, before stabilisation and bounds."
    )
    reason: str = Field(max_length=64, description="Why, as a CamelCase reason.")
    message: str = Field(max_length=1024, description="Why, in words.")
    signals_at: str | None = Field(
        default=None, max_length=64, description="The newest report time (the decision's 'now')."
    )
    reporting: int = Field(default=0, ge=0, description="Replicas with a fresh signal.")
    missing: list[str] | None = Field(
        default=None,
        max_length=MAX_MISSING_NAMES,
        description="Replicas without a fresh signal (unreachable, stale, unreported).",
    )
    targets: list[TargetProposal] | None = Field(
        default=None, max_length=3, description="Each target's fleet-wide measure and proposal."
    )
    recommendations: list[Recommendation] | None = Field(
        default=None,
        max_length=MAX_RECOMMENDATIONS,
        description="Proposals inside the longer stabilisation window, oldest first.",
    )
    spec_replicas: int | None = Field(
        default=None,
        description="spec.replicas when autoscaling took the count over; a later change means "
        "something else writes the scale subresource.",
    )
    draining: list[str] | None = Field(
        default=None,
        max_length=MAX_MISSING_NAMES,
        description="Replicas being removed: at weight 0 in every ModelService until deleted.",
    )
    drains: list[Drain] | None = Field(
        default=None,
        max_length=MAX_DRAINS,
        description="When each replica being removed started leaving, and what it waits for "
        "(requests in flight, or the drain timeout; the oldest 16 only).",
    )


class Drain(StatusModel):
    """A replica the autoscaler removes, waiting for its requests in flight."""

    replica: str = Field(max_length=253, description="The leaving ModelReplica.")
    since: str = Field(
        max_length=64,
        description="RFC 3339 time it started leaving; the drain timeout counts from it.",
    )
    message: str | None = Field(
        default=None, max_length=MAX_DRAIN_MESSAGE, description="What it waits for, in words."
    )


def read_autoscaling_status(status: Any) -> AutoscalingStatus | None:
    """The deployment's last `status.autoscaling`, or None when absent or unreadable."""
    raw = status.get("autoscaling") if isinstance(status, Mapping) else None
    if not isinstance(raw, Mapping):
        return None
    try:
        return AutoscalingStatus.model_validate(raw)
    except ValidationError:
        return None
