"""Building blocks for composing upjet managed resources and Crossplane Usages.

Managed resources use the Crossplane v2 namespaced API groups (`*.m.upbound.io`):
they live in the composite's namespace, name their provider config with a
`kind`, and reference each other with selectors that match the composite's
own resources (`matchControllerRef`) by Modelplane's labels. Every composed
resource gets an explicit, stable name so Usages can name it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds.base import CloudProviderConfigRef
from modelplane.api.memo import memo_function
from modelplane.api.objects import MAX_DNS_LABEL, condition_status
from modelplane.compose.objects import Ref, dns_label, usage
from modelplane.compose.types import Resource


def resource_name(cluster: str, *suffix: str) -> str:
    """The stable name of a composed resource of `cluster` (a DNS label)."""
    return _as_label("-".join((cluster, *suffix)))


@memo_function("compose.clusters.managed._as_label")
def _as_label(name: str) -> str:
    """`dns_label(name)`, remembered: a fleet's clusters compose dozens of names per
    call, the same names call after call (bounded; the name decides the answer)."""
    # Most names already are one, and `dns_label` returns those as they are.
    if len(name) <= MAX_DNS_LABEL and _PLAIN_LABEL.fullmatch(name):
        return name
    return dns_label(name)


_PLAIN_LABEL = re.compile(r"[a-z](?:[a-z0-9-]*[a-z0-9])?")
"""A name `dns_label` keeps unchanged: lower-case letters, digits and inner dashes,
starting with a letter."""


def labels(cluster: str, component: str, **extra: str) -> dict[str, str]:
    """Modelplane's labels on a composed resource; selectors match on them."""
    out = {c.LABEL_CLUSTER: cluster, c.LABEL_COMPONENT: component, c.LABEL_MANAGED_BY: c.MANAGED_BY}
    out.update(extra)
    return out


def selector(cluster: str, component: str, **extra: str) -> dict[str, Any]:
    """A reference selector matching this composite's resources of one component."""
    match = {c.LABEL_CLUSTER: cluster, c.LABEL_COMPONENT: component}
    match.update(extra)
    return {"matchControllerRef": True, "matchLabels": match}


def managed(
    ref: Ref,
    namespace: str,
    resource_labels: Mapping[str, str],
    for_provider: dict[str, Any],
    provider_config: CloudProviderConfigRef,
    *,
    init_provider: dict[str, Any] | None = None,
    connection_secret: str | None = None,
) -> Resource:
    """An upjet managed resource in the v2 namespaced shape."""
    spec: dict[str, Any] = {
        "forProvider": for_provider,
        "providerConfigRef": {"kind": provider_config.kind, "name": provider_config.name},
    }
    if init_provider:
        spec["initProvider"] = init_provider
    if connection_secret:
        spec["writeConnectionSecretToRef"] = {"name": connection_secret}
    return {
        "apiVersion": ref.api_version,
        "kind": ref.kind,
        "metadata": {"name": ref.name, "namespace": namespace, "labels": dict(resource_labels)},
        "spec": spec,
    }


def cluster_usage(
    resources: dict[str, Resource],
    cluster: str,
    namespace: str,
    of: Ref,
    by: Ref,
    reason: str,
) -> None:
    """Add a Usage named after its user (`by`) to `resources`: `of` waits for `by`.

    The names drop the cluster prefix both resources carry, so the key reads
    `<by>-uses-<of>` within one cluster's plan. Resources of different kinds may
    share a name (a subnet and its route table association): a second Usage
    whose key is taken names the kinds too rather than replace the first.
    """
    by_name, of_name = by.name.removeprefix(f"{cluster}-"), of.name.removeprefix(f"{cluster}-")
    key = f"{by_name}-uses-{of_name}"
    if f"usage-{key}" in resources:
        key = f"{by.kind.lower()}-{by_name}-uses-{of.kind.lower()}-{of_name}"
    resources[f"usage-{key}"] = usage(
        resource_name(cluster, "usage", key), namespace, of, by, reason
    )


def ready(observed: Resource | None) -> bool:
    """Whether an observed managed resource (or Release) reports Ready=True."""
    return condition_status(observed, c.CONDITION_READY) == "True"


def at_provider(observed: Resource | None) -> dict[str, Any]:
    """The observed resource's `status.atProvider`, or an empty dict."""
    status = (observed or {}).get("status")
    at = status.get("atProvider") if isinstance(status, dict) else None
    return at if isinstance(at, dict) else {}


def split_cidr(cidr: str, new_prefix: int, count: int) -> list[str]:
    """The first `count` subnets of prefix `new_prefix` inside `cidr`.

    Raises ValueError when `cidr` is not a network or cannot hold them.
    """
    network = ipaddress.ip_network(cidr, strict=True)
    if new_prefix < network.prefixlen:
        raise ValueError(f"{cidr} is smaller than a /{new_prefix}")
    subnets = []
    for i, subnet in enumerate(network.subnets(new_prefix=new_prefix)):
        if i >= count:
            break
        subnets.append(str(subnet))
    if len(subnets) < count:
        raise ValueError(f"{cidr} holds only {len(subnets)} /{new_prefix} subnets, {count} needed")
    return subnets
