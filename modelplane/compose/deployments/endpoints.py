"""A ModelDeployment's ModelEndpoints: one per replica, only while it can serve.

A replica gets a ModelEndpoint exactly while it is Ready and its cluster
publishes a `gatewayAddress`; the endpoint's URL is the replica's
`status.endpoint`, i.e. its HTTPRoute's path under that gateway, and its
`cluster` names the InferenceCluster whose Gateway that is. A replica that
is warming up, draining or unreachable has none, so a ModelService never sends
it traffic (no 503s during warm-up or drain): the endpoint is withdrawn from
desired state the moment the replica stops being Ready, and Crossplane deletes
it.

The endpoint carries the deployment's template labels plus
`modelplane.ai/deployment`, which is what ModelServices select on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.frozen import memoized
from modelplane.api.memo import memo_function
from modelplane.api.model_endpoint import WorkloadBackendRef, parse_url, read_endpoint
from modelplane.api.objects import label_value
from modelplane.api.readers import ObservedInferenceCluster, ObservedModelReplica
from modelplane.compose.common import composite_metadata
from modelplane.compose.types import Resource
from modelplane.compose.unreadable import Unreadable, conditions_problem, shown, split


@dataclass(frozen=True)
class ReplicaView:
    """What decides one replica's endpoint (read from observed state by the caller)."""

    name: str
    ready: bool
    endpoint: str | None
    cluster_gateway: str | None
    cluster: str | None = None
    backend_ref: WorkloadBackendRef | None = None


def unreadable_status(replica: str, observed: Mapping[str, Any] | None) -> Unreadable | None:
    """What makes an observed replica's status unreadable for its endpoint, or None.

    Its conditions (whether it is Ready) and its `status.endpoint` (where it is
    reached) decide the endpoint; either malformed leaves both unknown.
    """
    problem = conditions_problem(observed)
    if problem is not None:
        field, why = split(problem)
    else:
        status = (observed or {}).get("status")
        url = status.get("endpoint") if isinstance(status, Mapping) else None
        if url is None or isinstance(url, str):
            return None
        field, why = "status.endpoint", f"{shown(url)}, not a string"
    kept = "its ModelEndpoint is kept as it is"
    return Unreadable(f"ModelReplica {replica}", field, why, kept)


def replica_view(
    name: str,
    cluster: str,
    replica: ObservedModelReplica | None,
    clusters: Mapping[str, ObservedInferenceCluster],
) -> ReplicaView:
    """What decides a replica's endpoint: its observed readiness and route, its cluster's
    gateway (`endpoint_for`)."""
    found = clusters.get(cluster)
    gateway = None if found is None else found.gateway_address
    return ReplicaView(
        name=name,
        ready=replica is not None and replica.ready,
        endpoint=replica.endpoint if replica is not None else None,
        cluster_gateway=gateway,
        cluster=cluster,
        backend_ref=replica.backend_ref if replica is not None else None,
    )


def endpoint_ready(obj: Resource) -> bool:
    """Whether an observed ModelEndpoint is Ready, read once per object version."""
    return memoized(obj, "model_deployment.endpoint_ready", lambda o: read_endpoint(o).ready)


def endpoint_key(replica_key: str) -> str:
    """The composed-resource key of the endpoint of the replica composed under `replica_key`."""
    return f"endpoint-{replica_key}"


def endpoint_for(
    replica: ReplicaView, deployment: str, namespace: str, user_labels: Mapping[str, str]
) -> Resource | None:
    """The replica's ModelEndpoint, or None while it must receive no traffic."""
    if not (replica.ready and replica.endpoint and replica.cluster_gateway):
        return None
    if not _valid_url(replica.endpoint):
        return None
    labels: dict[str, Any] = {
        **user_labels,
        c.LABEL_MANAGED_BY: c.MANAGED_BY,
        c.LABEL_DEPLOYMENT: label_value(deployment),
    }
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND_MODEL_ENDPOINT,
        "metadata": composite_metadata(replica.name, namespace, labels),
        # The cluster tells the fleet gateway which Gateway certificate to
        # verify and which client certificate to present (api/gateway_hop.py).
        "spec": {"url": replica.endpoint, **_cluster(replica)},
    }


# By content: every call asks again of the same replicas' URLs.
@memo_function("compose.deployments.endpoints._valid_url")
def _valid_url(url: str) -> bool:
    """Whether a replica's `status.endpoint` is a URL a ModelEndpoint may carry."""
    try:
        parse_url(url)
    except ValueError:
        return False
    return True


def _cluster(replica: ReplicaView) -> dict[str, Any]:
    """`spec.cluster` (and `spec.backendRef` when the replica publishes its entry) when the
    replica is reached through its cluster's HTTPS Gateway.

    A cluster whose `spec.gateway.address` names a plain-http URL gets none: a
    cluster hop is https, and an endpoint saying otherwise would be refused.
    """
    if not (replica.cluster and (replica.endpoint or "").startswith("https://")):
        return {}
    out: dict[str, Any] = {"cluster": replica.cluster}
    if replica.backend_ref is not None:
        out["backendRef"] = replica.backend_ref.to_dict()
    return out
