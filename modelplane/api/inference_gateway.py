"""InferenceGateway: the fleet's front door on the control plane (SPEC §2).

A cluster-scoped singleton named `default`: Envoy Gateway installed with
provider-helm, its GatewayClass, the Gateway every ModelService routes through
and, optionally, EnvoyProxy settings for the data plane.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from modelplane.api import constants as c
from modelplane.api.common import (
    ConditionedStatus,
    DNSLabel,
    KubeModel,
    ObjectName,
    cel_rules,
    format_validation_error,
)
from modelplane.api.model_service import HOST_PATTERN


class GatewayChart(KubeModel):
    """The Envoy Gateway Helm chart, pinned."""

    version: str = Field(
        default=c.ENVOY_GATEWAY_CHART_VERSION,
        min_length=1,
        max_length=64,
        pattern=r"^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$",
        description="The gateway-helm chart version (an exact release, never a range).",
    )
    repository: str = Field(
        default=c.ENVOY_GATEWAY_CHART_REPOSITORY,
        min_length=1,
        max_length=512,
        description="The chart repository (an OCI registry or an HTTP Helm repository).",
    )


class CertificateRef(KubeModel):
    """A TLS Secret (`kubernetes.io/tls`) in the gateway's namespace."""

    name: ObjectName = Field(description="Name of the TLS Secret.")


class Listener(KubeModel):
    """One listener of the control-plane Gateway."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.protocol != 'HTTPS' || has(self.certificateSecretRef)",
                "certificateSecretRef is required when protocol is HTTPS",
            ),
            (
                "self.protocol != 'HTTP' || !has(self.certificateSecretRef)",
                "certificateSecretRef is only allowed when protocol is HTTPS",
            ),
        )
    }

    name: DNSLabel = Field(description="The listener's name, unique in the Gateway.")
    protocol: Literal["HTTP", "HTTPS"] = Field(
        default="HTTP", description="HTTP, or HTTPS terminating TLS at the gateway."
    )
    port: int = Field(default=80, ge=1, le=65535, description="The port the gateway listens on.")
    hostname: str | None = Field(
        default=None,
        max_length=253,
        pattern=HOST_PATTERN,
        description="Only requests for this host (a `*.` wildcard allowed); unset: any host.",
    )
    certificate_secret_ref: CertificateRef | None = Field(
        default=None, description="The certificate of an HTTPS listener (required there only)."
    )

    @model_validator(mode="after")
    def _tls(self) -> Listener:
        if (self.protocol == "HTTPS") != (self.certificate_secret_ref is not None):
            raise ValueError("certificateSecretRef is required for HTTPS and only allowed there")
        return self


class EnvoyProxySettings(KubeModel):
    """Data-plane settings applied through an EnvoyProxy resource."""

    replicas: int | None = Field(
        default=None, ge=1, le=100, description="Envoy proxy replicas (Envoy Gateway's default: 1)."
    )
    service_type: Literal["LoadBalancer", "ClusterIP", "NodePort"] | None = Field(
        default=None,
        description="Type of the proxy's Service (Envoy Gateway's default: LoadBalancer).",
    )


def _default_listeners() -> list[Any]:
    # Wire form, so the XRD default carries no null fields; validated into
    # Listeners like any input (validate_default). Every field the listener's
    # CEL rules read is spelled out: the API server checks a default against
    # those rules without applying the item schema's own defaults first, so a
    # bare {"name": "http"} made the whole CRD invalid (found on a real
    # kube-apiserver; the XRD never became Established).
    return [{"name": "http", "protocol": "HTTP", "port": 80}]


class InferenceGatewaySpec(KubeModel):
    """What is installed and how the Gateway listens."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.listeners.all(l, self.listeners.exists_one(m, m.name == l.name))",
                "listener names must be unique",
            ),
        )
    }

    chart: GatewayChart = Field(default_factory=GatewayChart)
    namespace: DNSLabel = Field(
        default=c.ENVOY_GATEWAY_NAMESPACE,
        description="Namespace of Envoy Gateway, its Gateway and the listeners' certificates.",
    )
    listeners: list[Listener] = Field(
        default_factory=_default_listeners,
        min_length=1,
        max_length=8,
        description="The Gateway's listeners; default one HTTP listener on port 80.",
    )
    envoy_proxy: EnvoyProxySettings | None = None

    @model_validator(mode="after")
    def _unique(self) -> InferenceGatewaySpec:
        names = [x.name for x in self.listeners]
        if len(names) != len(set(names)):
            raise ValueError("listener names must be unique")
        return self


class InferenceGatewayStatus(ConditionedStatus):
    """Where the gateway answers and how composers reach the control plane."""

    address: str | None = Field(
        default=None, description="Base URL of the Gateway, e.g. `http://203.0.113.10`."
    )
    internal_address: str | None = Field(
        default=None,
        description="host:port of the Envoy Service inside the control plane (plain HTTP).",
    )
    gateway_name: str | None = Field(
        default=None, description="The Gateway ModelServices' routes attach to."
    )
    gateway_namespace: str | None = Field(default=None, description="The Gateway's namespace.")
    provider_config_name: str | None = Field(
        default=None,
        description="The control plane's own provider config (for composed Objects).",
    )


@dataclass(frozen=True)
class ObservedGateway:
    """The InferenceGateway as a ModelService sees it (read through `read_gateway`)."""

    address: str | None
    gateway_name: str | None
    gateway_namespace: str | None
    provider_config_name: str | None
    problem: str | None = None
    internal_address: str | None = None

    @property
    def usable(self) -> bool:
        """Whether routes can attach: an address, a Gateway and a provider config."""
        return bool(
            self.address
            and self.gateway_name
            and self.gateway_namespace
            and self.provider_config_name
        )


def read_gateway(obj: Mapping[str, Any]) -> ObservedGateway:
    """The one tolerant reader of an observed InferenceGateway's status."""
    status = obj.get("status")
    try:
        parsed = InferenceGatewayStatus.model_validate(
            status if isinstance(status, Mapping) else {}
        )
    except ValidationError as err:
        return ObservedGateway(None, None, None, None, format_validation_error(err, "status"))
    return ObservedGateway(
        parsed.address,
        parsed.gateway_name,
        parsed.gateway_namespace,
        parsed.provider_config_name,
        internal_address=parsed.internal_address,
    )
