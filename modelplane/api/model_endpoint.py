"""ModelEndpoint: one reachable OpenAI-compatible backend (SPEC §2).

Composed by a ModelDeployment for each Ready replica, or written by hand for an
external provider. The credential is a Secret reference only: Modelplane never
reads its value (the gateway injects it, see `compose/routing/model_service.py`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, field_validator, model_validator

from modelplane.api import constants as c
from modelplane.api.common import (
    ConditionedStatus,
    KubeModel,
    LocalSecretKeyRef,
    cel_rules,
    format_validation_error,
)

# An HTTP field name (RFC 9110 token).
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Upstream:
    """A parsed endpoint URL: where the gateway sends requests."""

    scheme: Literal["http", "https"]
    host: str
    port: int
    path: str
    is_ip: bool


def parse_url(url: str) -> Upstream:
    """Parse an endpoint URL; raise ValueError saying what is wrong.

    Accepted: `http(s)://host[:port][/path]` with a DNS name or an IP address;
    no credentials, query or fragment (a credential belongs in a Secret).
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{url!r}: scheme must be http or https")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{url!r}: credentials in the URL are not allowed; use authSecretRef")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: a query or fragment is not allowed")
    try:
        port = parts.port
    except ValueError as err:
        raise ValueError(f"{url!r}: invalid port") from err
    host = (parts.hostname or "").rstrip(".")
    is_ip = _is_ip(host)
    if not is_ip and not _HOSTNAME.match(host):
        raise ValueError(f"{url!r}: host must be a lower-case DNS name or an IP address")
    scheme: Literal["http", "https"] = "https" if parts.scheme == "https" else "http"
    default = 443 if scheme == "https" else 80
    return Upstream(scheme, host, port or default, parts.path.rstrip("/"), is_ip)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class WorkloadBackendRef(KubeModel):
    """What a replica's route sends traffic to on its cluster, in the replica's namespace
    there: a Service and its port, or another kind (an inference-extension InferencePool)."""

    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z]([-a-z0-9]*[a-z0-9])?$",
        description="The Service's (or other kind's) name, in the namespace of the same name.",
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="The Service port (for a Service only)."
    )
    kind: Literal["Service", "InferencePool"] = Field(
        default="Service", description="Service, or an inference-extension InferencePool."
    )
    group: str | None = Field(
        default=None,
        max_length=253,
        description="The kind's API group (none for a Service).",
    )

    @model_validator(mode="after")
    def _port(self) -> WorkloadBackendRef:
        if self.kind == "Service" and self.port is None:
            raise ValueError("a Service backendRef needs a port")
        if self.kind == "Service" and self.group:
            raise ValueError("a Service backendRef has no group")
        return self

    def manifest(self, weight: int | None = None) -> dict[str, Any]:
        """The Gateway API backendRef (namespace-local), with `weight` when given."""
        ref: dict[str, Any] = {"name": self.name}
        if self.kind == "Service":
            ref["port"] = self.port
        else:
            ref = {"group": self.group or "", "kind": self.kind, "name": self.name}
        if weight is not None:
            ref["weight"] = weight
        return ref


class ModelEndpointSpec(KubeModel):
    """Where the backend is and how the gateway authenticates to it."""

    model_config = KubeModel.model_config | {
        "json_schema_extra": cel_rules(
            (
                "self.url.startsWith('http://') || self.url.startsWith('https://')",
                "url must start with http:// or https://",
            ),
            (
                "!has(self.cluster) || self.url.startsWith('https://')",
                "an endpoint on a cluster's Gateway (cluster) is reached over https",
            ),
        )
    }

    url: str = Field(
        min_length=8,
        max_length=2048,
        description="The backend's base URL (http or https); OpenAI paths are appended to it.",
    )
    auth_secret_ref: LocalSecretKeyRef | None = Field(
        default=None,
        description=(
            "A Secret key in this namespace holding the header value exactly as sent "
            "(for Authorization: `Bearer <token>`). The gateway injects it; Modelplane "
            "never reads it."
        ),
    )
    header_name: str = Field(
        default=c.DEFAULT_AUTH_HEADER,
        min_length=1,
        max_length=256,
        pattern=HEADER_NAME_PATTERN,
        description="The request header the credential is injected into.",
    )
    cluster: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        description=(
            "The InferenceCluster whose inference Gateway serves this endpoint (a "
            "ModelDeployment sets it on its replicas' endpoints). The fleet gateway then "
            "reaches it over mutual TLS: it verifies that Gateway's certificate against the "
            "cluster's CA and presents the fleet's client certificate for that cluster."
        ),
    )
    backend_ref: WorkloadBackendRef | None = Field(
        default=None,
        description=(
            "With `cluster` (ignored without): what the replica's route on that cluster "
            "sends traffic to, in "
            "the endpoint's namespace there (a ModelDeployment sets it from the replica's "
            "`status.backendRef`). A ModelService then reaches the endpoint through one route "
            "of its own on that cluster, which weighs the cluster's endpoints, so the fleet "
            "gateway weighs clusters and fails over between them on its own."
        ),
    )
    draining: bool | None = Field(
        default=None,
        description=(
            "True while the replica behind it is being removed (autoscaling): every "
            "ModelService gives it weight 0, and the replica is deleted only once they all do."
        ),
    )
    canary_percent: int | None = Field(
        default=None,
        ge=1,
        le=99,
        description=(
            "Set on the endpoints of a new revision while a rollout wave is analysed "
            "(ModelDeployment spec.rollout.analysis.trafficPercent): within each ModelService "
            "group, the endpoints that set it share this percentage of the group's traffic "
            "and the others the rest."
        ),
    )
    rewrite_path: str | None = Field(
        default=None,
        max_length=1024,
        pattern=r"^/[^?#]*$",
        description="Upstream path prefix replacing the URL's path (e.g. `/` or `/openai`).",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        parse_url(v)
        return v

    @model_validator(mode="after")
    def _cluster_https(self) -> ModelEndpointSpec:
        if self.cluster is not None and not self.url.startswith("https://"):
            raise ValueError("an endpoint on a cluster's Gateway (cluster) is reached over https")
        return self

    def upstream(self) -> Upstream:
        """The parsed URL (valid by construction)."""
        return parse_url(self.url)

    def upstream_path(self) -> str:
        """The path prefix the gateway sends before the OpenAI path ('' for the root)."""
        path = self.rewrite_path if self.rewrite_path is not None else self.upstream().path
        return path.rstrip("/")


class ModelEndpointStatus(ConditionedStatus):
    """Whether the endpoint may receive traffic."""

    ready: bool | None = Field(
        default=None, description="True when the spec is valid and its Secret exists."
    )


@dataclass(frozen=True)
class ObservedEndpoint:
    """A ModelEndpoint as another kind sees it (read through `read_endpoint`).

    `spec` is None when the spec does not parse; `problem` then says why. Such
    an endpoint is kept as known-but-unusable: it is never routed to, and it
    still shows in a service's `status.endpoints`.

    `unknown` is set when the spec reads but the status does not (a status or
    condition of the wrong shape, a `ready` that is not a boolean): whether it
    is Ready cannot be told, so `ready` is False and a reader keeps what it
    did with the endpoint before (`unknown` names the field). `unreadable` is
    set when the metadata does not read (name, namespace or labels of the
    wrong shape): which endpoint it is, and which selector it matches, cannot
    be told either.
    """

    name: str
    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    spec: ModelEndpointSpec | None = None
    ready: bool = False
    problem: str | None = None
    unknown: str | None = None
    unreadable: str | None = None  # metadata does not read: which endpoint it is is unknown


def _metadata_problem(meta: Any) -> str | None:
    """What makes an endpoint's metadata unreadable (name, namespace, labels); None if it reads."""
    if not isinstance(meta, Mapping):
        return f"metadata: {type(meta).__name__}, not an object"
    for key in ("name", "namespace"):
        if not isinstance(meta.get(key), str) or not meta.get(key):
            return f"metadata.{key}: {meta.get(key)!r} is not a name"
    labels = meta.get("labels")
    if labels is not None and not (
        isinstance(labels, Mapping) and all(isinstance(v, str) for v in labels.values())
    ):
        return "metadata.labels: not an object of strings"
    return None


def _status_problem(status: Any) -> str | None:
    """What makes a ModelEndpoint's status unreadable, naming the field; None when it reads."""
    if status is None:
        return None
    if not isinstance(status, Mapping):
        return f"status: {type(status).__name__}, not an object"
    ready = status.get("ready")
    if ready is not None and not isinstance(ready, bool):
        return f"status.ready: {ready!r} is not a boolean"
    found = status.get("conditions")
    if found is not None and not (
        isinstance(found, list) and all(isinstance(x, Mapping) for x in found)
    ):
        return "status.conditions: not a list of objects"
    return None


def read_endpoint(obj: Mapping[str, Any]) -> ObservedEndpoint:
    """The one tolerant reader of an observed ModelEndpoint."""
    meta = obj.get("metadata")
    bad_meta = _metadata_problem(meta)
    meta = meta if isinstance(meta, Mapping) else {}
    raw_labels = meta.get("labels")
    labels = (
        {str(k): str(v) for k, v in raw_labels.items()} if isinstance(raw_labels, Mapping) else {}
    )
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    if bad_meta is not None:
        return ObservedEndpoint(name, namespace, labels, problem=bad_meta, unreadable=bad_meta)
    raw_spec = obj.get("spec")
    body = (
        {k: v for k, v in raw_spec.items() if k != "crossplane"}
        if isinstance(raw_spec, Mapping)
        else None
    )
    if body is None:
        return ObservedEndpoint(name, namespace, labels, problem="spec: must be an object")
    try:
        spec = ModelEndpointSpec.model_validate(body)
    except ValidationError as err:
        return ObservedEndpoint(
            name, namespace, labels, problem=format_validation_error(err, "spec")
        )
    status = obj.get("status")
    unknown = _status_problem(status)
    if unknown is None:
        try:
            parsed = ModelEndpointStatus.model_validate(status or {})
        except ValidationError as err:
            unknown = format_validation_error(err, "status")
        else:
            return ObservedEndpoint(name, namespace, labels, spec, ready=parsed.ready is True)
    return ObservedEndpoint(name, namespace, labels, spec, problem=unknown, unknown=unknown)
