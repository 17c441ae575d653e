"""ModelService: one stable OpenAI-compatible address for a model (SPEC §2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError, model_validator

from modelplane.api.common import (
    ConditionedStatus,
    KubeModel,
    LabelSelector,
    StatusModel,
    cel_rules,
)

# A path prefix: starts with '/', no trailing '/', no query or fragment.
PREFIX_PATTERN = r"^(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$"
HOST_PATTERN = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# Integer weights of a service's backends sum to exactly this (see model_service
# composer: largest-remainder rounding).
WEIGHT_TOTAL = 1000


class EndpointGroup(KubeModel):
    """ModelEndpoints selected by labels, sharing one weight."""

    selector: LabelSelector = Field(
        description="Selects ModelEndpoints in the service's namespace (never another one)."
    )
    weight: int = Field(
        default=1,
        ge=0,
        le=1_000_000,
        description="The group's relative share, split evenly among its Ready endpoints.",
    )


class ModelServiceSpec(KubeModel):
    """Which endpoints serve the model, with what weights, under which address."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.endpoints.exists(g, !has(g.weight) || g.weight > 0)",
                "endpoints: at least one group needs a weight above 0",
            ),
        )
    }

    endpoints: list[EndpointGroup] = Field(
        min_length=1,
        max_length=16,
        description="Selector groups and their weights; an endpoint may be in several groups.",
    )
    prefix: str | None = Field(
        default=None,
        max_length=256,
        pattern=PREFIX_PATTERN,
        description="Path prefix on the gateway; default `/<namespace>/<name>` (none with host).",
    )
    host: str | None = Field(
        default=None,
        max_length=253,
        pattern=HOST_PATTERN,
        description="Serve under this hostname on the gateway instead of (or with) a prefix.",
    )

    @model_validator(mode="after")
    def _some_weight(self) -> ModelServiceSpec:
        if not any(g.weight > 0 for g in self.endpoints):
            raise ValueError("endpoints: at least one group needs a weight above 0")
        return self

    def path_prefix(self, namespace: str, name: str) -> str:
        """The service's path prefix: explicit, none under a host, else `/<ns>/<name>`."""
        if self.prefix is not None:
            return self.prefix
        return "" if self.host else f"/{namespace}/{name}"


class ServiceEndpointStatus(StatusModel):
    """One selected endpoint and the weight it receives."""

    name: str = Field(description="The ModelEndpoint's name.")
    weight: int = Field(description="Its integer weight; all weights sum to 1000 (0: no traffic).")
    ready: bool = Field(
        description="Whether the endpoint is Ready (only Ready ones are routed to)."
    )
    message: str | None = Field(
        default=None,
        description=(
            "Why the fleet gateway sends it no traffic although it may be Ready: it is "
            "refused (an upstream outside the namespace's own replicas), unreachable (no "
            "hop credentials, its cluster not Reachable, its hop Gateway not Programmed), "
            "or joining (its cluster's Backend, grant and route are made ready before the "
            "route names them)."
        ),
    )


class ModelServiceStatus(ConditionedStatus):
    """Where clients call the model and how traffic is split."""

    address: str | None = Field(
        default=None, description="The URL clients call; the OpenAI paths are under it."
    )
    endpoints: list[ServiceEndpointStatus] | None = Field(
        default=None, description="Every selected endpoint with its weight and readiness."
    )
    endpoints_ready: str | None = Field(
        default=None, description="Ready endpoints out of selected ones, `k/n`."
    )


def read_service_status(obj: Mapping[str, Any]) -> ModelServiceStatus | None:
    """The one tolerant reader of a ModelService's status (None when it does not parse)."""
    status = obj.get("status")
    try:
        return ModelServiceStatus.model_validate(status if isinstance(status, Mapping) else {})
    except ValidationError:
        return None
