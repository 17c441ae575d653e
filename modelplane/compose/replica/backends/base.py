"""The serving-backend seam of the ModelReplica composer.

A backend turns one placed replica (its context and roles) into the items its
cluster receives — the workload, whatever the workload needs (claim
templates, Services) — and names the Service its route enters through. The
composer does everything around it: resolving the cluster, the namespace, the
HTTPRoute, the scheduler's PodGroup, readiness and status. A backend is a
plain object with a `name` and a pure `build`; it declares each item's
readiness rule (`modelplane.compose.readiness`) and stamps pods through the
shared modules (`workload.pod_template`, `stamping/`, `engines/`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from modelplane.api import constants as c
from modelplane.api.backends import BackendDeclaration
from modelplane.api.model_replica import PlacedRole
from modelplane.compose import readiness
from modelplane.compose.objects import Item
from modelplane.compose.replica import workload
from modelplane.compose.replica.stamping import dra
from modelplane.compose.replica.workload import ReplicaContext
from modelplane.compose.types import Resource


@dataclass(frozen=True)
class Entry:
    """Where the replica's HTTPRoute sends traffic: a Service on the cluster and its port.

    `kind`/`group` name another backend kind than a Service, e.g. an
    inference-extension InferencePool (`service` is then its name).
    """

    service: str
    port: int
    kind: str = "Service"
    group: str = ""


@dataclass
class BackendBuild:
    """What a backend composes for one replica."""

    items: list[Item]
    entry: Entry
    pods: int  # every pod of the replica (a gang PodGroup's minMember)
    warnings: list[str] = field(default_factory=list)  # each becomes a warning event
    # Observed items the backend still needs though it no longer composes them
    # (a claim template pods may still be recreated from); kept unchanged.
    retained: list[str] = field(default_factory=list)


class ServingBackend(Protocol):
    """One way to run a replica's engine on its cluster.

    `declaration` is its entry in `api.backends`: its name and the cluster
    setting that enables it (which the scheduler checks before placing).
    """

    name: str
    declaration: BackendDeclaration

    def build(
        self,
        ctx: ReplicaContext,
        roles: Sequence[PlacedRole],
        observed: Mapping[str, Resource],
    ) -> BackendBuild:
        """Compose the replica's serving items; `observed` are its observed composed resources."""
        ...


def claim_template(ctx: ReplicaContext, role: PlacedRole) -> tuple[Resource, Item] | None:
    """The role's DRA ResourceClaimTemplate and its item, the same for every backend;
    None when the role requests no devices.

    The template's digest is in the item's key and its Object's name: a changed
    template is a new composed resource, so Crossplane deletes the old Object (and
    its template) instead of trying to rename it.
    """
    if not role.device_requests:
        return None
    template, digest = dra.claim_template(
        workload.role_name(ctx, role),
        {"namespace": ctx.namespace, "labels": {**ctx.labels, c.LABEL_ROLE: role.name}},
        role.device_requests,
    )
    item = Item(
        f"{role.name}-claims-{digest}",
        workload.object_name(ctx, role, "claims", digest),
        template,
        readiness.EXISTS,
        f"ResourceClaimTemplate ({role.name})",
    )
    return template, item
