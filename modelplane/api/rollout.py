"""How a ModelDeployment's replicas change: `spec.rollout` and `status.rollout`.

Three strategies:

- `MakeBeforeBreak` (the default) keeps a replica that must leave serving
  until its replacement is Ready, and replaces replicas whose template
  changed the same way, within `maxSurge`; where no replacement fits it
  updates them in place, `max(1, maxUnavailable)` at a time.
- `Immediate` drops a leaving replica at once, and a change of the replica
  template reaches every replica at once (each updated where it runs).
- `Progressive` rolls a new *revision* of the replica template (the workers of
  each role, the backend and the caches; `compose/deployments/revision.py`)
  across the fleet in `waves`. Each wave replaces its replicas with replicas of
  the new revision (make-before-break, within `maxSurge`), then holds while the
  new revision's replicas are judged on their own serving signals
  (`analysis`); a wave that fails is rolled back or paused (`onFailure`). The
  decision is a pure function of the signals and the times the cluster agents'
  reports carry (`compose/deployments/rollout.py`).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Final, Literal

from pydantic import Field, WithJsonSchema, field_validator, model_validator
from pydantic.json_schema import JsonDict

from modelplane.api.autoscaling import MAX_DRAIN_TIMEOUT_SECONDS
from modelplane.api.common import KubeModel, LabelSelector, StatusModel, cel_rules

MAX_SURGE: Final = 10000
# A replaced replica's drain timeout when spec.rollout.drainTimeoutSeconds is absent (it is
# not a schema default: release 0.1.0's defaulted rollout object must read the same).
DEFAULT_DRAIN_TIMEOUT: Final = 30
MAX_WAVES: Final = 16
MAX_WAVE_CLUSTERS: Final = 256
MAX_ROLLOUT_MESSAGE: Final = 1024
MAX_ANALYSIS_SECONDS: Final = 86400

STRATEGY_MAKE_BEFORE_BREAK: Final = "MakeBeforeBreak"
STRATEGY_IMMEDIATE: Final = "Immediate"
STRATEGY_PROGRESSIVE: Final = "Progressive"

# An absolute count or a percentage of spec.replicas (Kubernetes IntOrString).
IntOrPercent = Annotated[
    int | str,
    WithJsonSchema(
        {
            "x-kubernetes-int-or-string": True,
            "description": "An absolute number (1..10000) or a percentage of spec.replicas "
            "(e.g. 25%, rounded up, at least 1).",
        }
    ),
]
_PERCENT = "%"

Decision = Literal["Progressing", "Paused", "RolledBack", "Complete"]
WavePhase = Literal["Pending", "WaitingForCache", "Updating", "Analyzing", "Passed", "Failed"]


class RolloutWave(KubeModel):
    """One wave: the clusters whose replicas it updates, or the share of replicas updated by
    its end."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "has(self.clusterSelector) != has(self.percent)",
                "a wave sets exactly one of clusterSelector and percent",
            )
        )
    }

    cluster_selector: LabelSelector | None = Field(
        default=None,
        description="The InferenceClusters (by labels) whose replicas this wave updates, with "
        "those of the waves before it.",
    )
    percent: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="The share of spec.replicas running the new revision once this wave is "
        "done (cumulative, rounded up); replicas are taken cluster by cluster, in name order.",
    )

    @model_validator(mode="after")
    def _one(self) -> RolloutWave:
        if (self.cluster_selector is None) == (self.percent is None):
            raise ValueError("a wave sets exactly one of clusterSelector and percent")
        return self


class RolloutAnalysis(KubeModel):
    """What a wave must show before the next one starts, on the new revision's replicas only."""

    duration_seconds: int = Field(
        default=300,
        ge=0,
        le=MAX_ANALYSIS_SECONDS,
        description="How long each wave is held once it starts, by the time the cluster "
        "agents' reports carry, before it may pass. A limit broken earlier fails the wave at "
        "once; missing signals hold it past this time, never pass it.",
    )
    max_error_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="The highest share of the new revision's requests that may fail "
        "(HTTP 5xx), over its replicas' latest windows.",
    )
    max_ttft_p90_seconds: float | None = Field(
        default=None,
        gt=0,
        description="The highest time-to-first-token p90 any replica of the new revision may "
        "report.",
    )
    min_ready_fraction: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="The share of the new revision's replicas that must be Ready when the "
        "wave's time is up.",
    )
    traffic_percent: int | None = Field(
        default=None,
        ge=1,
        le=99,
        description="The share of the deployment's traffic the new revision's Ready replicas "
        "get while a wave is analysed (the rest goes to the old revision); absent: each Ready "
        "replica gets an equal share, so the new revision's share grows as waves pass.",
    )


class Rollout(KubeModel):
    """How replicas that must leave their place are replaced, and how a new template reaches
    them (SPEC §3.3, §8a)."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "!has(self.maxSurge) || (type(self.maxSurge) == int"
                " ? int(self.maxSurge) >= 1 && int(self.maxSurge) <= 10000"
                " : string(self.maxSurge).matches('^(100|[1-9][0-9]?)%$'))",
                "maxSurge must be a whole number ≥ 1 or a percentage from 1% to 100%",
            ),
            (
                "(has(self.strategy) && self.strategy == 'Progressive')"
                " ? has(self.waves) && size(self.waves) > 0"
                " : !has(self.waves) && !has(self.analysis)",
                "waves are required with strategy Progressive, and waves and analysis are "
                "allowed only with it",
            ),
        )
    }

    strategy: Literal["MakeBeforeBreak", "Immediate", "Progressive"] = Field(
        default="MakeBeforeBreak",
        description="MakeBeforeBreak keeps a leaving replica serving (Draining) until its "
        "replacement is Ready, and replaces replicas of a changed template the same way "
        "(within maxSurge; in place, maxUnavailable or one at a time, where nothing can "
        "surge); Immediate drops a leaving replica at once and updates every replica in place "
        "at once; Progressive rolls a new replica template out in waves, judged on its own "
        "signals.",
    )
    max_surge: IntOrPercent = Field(
        default=1,
        description="Replacements placed above spec.replicas at once while replicas drain: "
        "a number or a percentage of spec.replicas (rounded up, at least 1). A replaced "
        "replica leaving the routes (status.placements[].drainMessage) is not counted.",
    )
    max_unavailable: int = Field(
        default=0,
        ge=0,
        le=MAX_SURGE,
        description="MakeBeforeBreak: replicas a template change may update in place at once "
        "(each stops serving while its pods restart), besides the surge. With 0 a template "
        "change replaces replicas within maxSurge, each new replica Ready before an old one "
        "drains, and updates one at a time in place only when no replacement fits anywhere.",
    )
    drain_timeout_seconds: int | None = Field(
        default=None,
        ge=0,
        le=MAX_DRAIN_TIMEOUT_SECONDS,
        description="MakeBeforeBreak and Progressive: once a replaced replica's replacement "
        "serves, the replica goes to weight 0 in every ModelService and waits for its engine to "
        "report no request in flight, at most this long counted from when it started leaving, "
        "before it is deleted (0: deleted once at weight 0 everywhere; absent: 30).",
    )
    waves: list[RolloutWave] | None = Field(
        default=None,
        max_length=MAX_WAVES,
        description="Progressive: the waves, in order. Replicas no wave takes are updated once "
        "the last wave passes.",
    )
    analysis: RolloutAnalysis | None = Field(
        default=None, description="Progressive: what each wave must show (defaults apply)."
    )
    on_failure: Literal["Rollback", "Pause"] = Field(
        default="Rollback",
        description="Progressive: when a wave fails, go back to the previous revision "
        "everywhere (Rollback) or hold every replica where it is (Pause).",
    )
    paused: bool = Field(
        default=False,
        description="Progressive: hold the rollout where it is (no wave starts, none is "
        "judged); replicas being replaced finish.",
    )

    @field_validator("max_surge")
    @classmethod
    def _surge(cls, v: int | str) -> int | str:
        if isinstance(v, bool):
            raise ValueError("maxSurge must be a number or a percentage")
        if isinstance(v, int):
            if not 1 <= v <= MAX_SURGE:
                raise ValueError(f"maxSurge must be between 1 and {MAX_SURGE}")
            return v
        digits = v[:-1] if v.endswith(_PERCENT) else ""
        if not digits.isdigit() or not 1 <= int(digits) <= 100:
            raise ValueError(f"maxSurge {v!r} must be a number or a percentage from 1% to 100%")
        return v

    @model_validator(mode="after")
    def _progressive(self) -> Rollout:
        if self.strategy == STRATEGY_PROGRESSIVE and not self.waves:
            raise ValueError("strategy Progressive needs at least one wave")
        if self.strategy != STRATEGY_PROGRESSIVE and (self.waves or self.analysis):
            raise ValueError("waves and analysis are allowed only with strategy Progressive")
        return self

    def surge(self, replicas: int) -> int:
        """The absolute surge for `replicas` desired replicas (a percentage rounds up, ≥ 1)."""
        if isinstance(self.max_surge, int):
            return self.max_surge
        return max(1, math.ceil(int(self.max_surge[:-1]) * replicas / 100))

    @property
    def drain_timeout(self) -> int:
        """`drainTimeoutSeconds`, or its default when absent."""
        return (
            DEFAULT_DRAIN_TIMEOUT
            if self.drain_timeout_seconds is None
            else (self.drain_timeout_seconds)
        )

    @property
    def progressive(self) -> bool:
        """Whether templates roll out in waves."""
        return self.strategy == STRATEGY_PROGRESSIVE

    @property
    def judged(self) -> RolloutAnalysis:
        """The analysis, its defaults when unset."""
        return self.analysis or RolloutAnalysis()


_TEMPLATE_SCHEMA: JsonDict = {
    "x-kubernetes-preserve-unknown-fields": True,
    "description": "The revision's replica template: backend, caches and each role's workers.",
}


class WaveAnalysis(StatusModel):
    """One wave's analysis and outcome."""

    wave: int = Field(ge=1, description="The wave, from 1.")
    phase: WavePhase = Field(description="Where the wave is.")
    clusters: list[str] | None = Field(
        default=None,
        max_length=MAX_WAVE_CLUSTERS,
        description="Clusters whose replicas the wave updated (bounded).",
    )
    replicas: int = Field(default=0, ge=0, description="Replicas of the new revision it wants.")
    ready: int = Field(default=0, ge=0, description="Of those, Ready.")
    reporting: int = Field(default=0, ge=0, description="Of those, with a fresh signal.")
    started_at: str | None = Field(
        default=None, max_length=64, description="Report time the wave started (RFC 3339)."
    )
    decided_at: str | None = Field(
        default=None, max_length=64, description="Report time it passed or failed (RFC 3339)."
    )
    requests: int | None = Field(default=None, ge=0, description="Requests the signals counted.")
    errors: int | None = Field(default=None, ge=0, description="Of those, failed (HTTP 5xx).")
    error_rate: float | None = Field(default=None, description="errors ÷ requests.")
    ttft_p90_seconds: float | None = Field(
        default=None, description="The highest time-to-first-token p90 reported."
    )
    ready_fraction: float | None = Field(default=None, description="ready ÷ replicas.")
    message: str = Field(default="", max_length=MAX_ROLLOUT_MESSAGE, description="Why, in words.")


class RevisionCount(StatusModel):
    """How many replicas run one revision."""

    revision: str = Field(max_length=64, description="The revision.")
    replicas: int = Field(ge=0, description="Replicas of it placed.")
    ready: int = Field(default=0, ge=0, description="Of those, Ready.")


class RolloutStatus(StatusModel):
    """Where a Progressive rollout is: revisions, the current wave, each wave's analysis, and
    the decision."""

    revision: str = Field(max_length=64, description="The spec's revision (being rolled out).")
    stable_revision: str = Field(
        max_length=64, description="The revision every replica ran before this rollout."
    )
    stable_template: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra=_TEMPLATE_SCHEMA,
        description="The stable revision's template: what a rollback runs again.",
    )
    previous_revision: str | None = Field(
        default=None,
        max_length=64,
        description="The stable revision before the last completed rollout (`rollout undo`).",
    )
    previous_template: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra=_TEMPLATE_SCHEMA,
        description="The previous revision's template.",
    )
    failed_revision: str | None = Field(
        default=None,
        max_length=64,
        description="A revision rolled back; it is not tried again until the spec changes.",
    )
    decision: Decision = Field(description="Progressing, Paused, RolledBack or Complete.")
    wave: int = Field(default=0, ge=0, description="The current wave (0: none started).")
    waves: list[WaveAnalysis] | None = Field(
        default=None, max_length=MAX_WAVES, description="Each started wave's analysis."
    )
    revisions: list[RevisionCount] | None = Field(
        default=None, max_length=8, description="Replicas per revision."
    )
    message: str = Field(default="", max_length=MAX_ROLLOUT_MESSAGE, description="Why, in words.")


def read_rollout_status(status: Any) -> RolloutStatus | None:
    """`status.rollout` as last written, or None when absent or unreadable."""
    raw = status.get("rollout") if isinstance(status, dict) else None
    if not isinstance(raw, dict):
        return None
    try:
        return RolloutStatus.model_validate(raw)
    except ValueError:
        return None
