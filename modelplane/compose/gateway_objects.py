"""provider-kubernetes Objects on the control plane: Envoy Gateway resources.

The InferenceGateway and every ModelService compose what Envoy Gateway reads
(GatewayClass, Gateway, EnvoyProxy, HTTPRoute, Backend, HTTPRouteFilter) as
provider-kubernetes Objects on the control plane's own provider config, like a
replica's manifests on its cluster (`objects.py`). Each declares its readiness
rule: a condition of the wrapped object (`Accepted`, `Programmed`) or, for
objects with no status, existence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import condition_status
from modelplane.compose import objects
from modelplane.compose.types import Resource


@dataclass(frozen=True)
class ReadyWhen:
    """A composed Object's readiness rule.

    `condition` names a condition of the wrapped object (`Accepted`,
    `Programmed`); `route` reads an HTTPRoute's `status.parents`; neither means
    the Object is ready once the wrapped object exists.
    """

    condition: str | None = None
    route: bool = False

    def cel(self) -> str | None:
        """The provider's CEL readiness query, None for SuccessfulCreate."""
        if self.route:
            return objects.ROUTE_ACCEPTED_CEL
        if self.condition is None:
            return None
        return (
            "has(object.status) && has(object.status.conditions) && "
            f"object.status.conditions.exists(x, x.type == '{self.condition}' "
            "&& x.status == 'True')"
        )

    def observed(self, obj: Mapping[str, Any] | None) -> bool:
        """Whether an observed Object meets the rule."""
        if obj is None:
            return False
        if self.route:
            return objects.route_accepted(dict(obj))
        if self.condition is None:
            return objects.config_ready(dict(obj))
        value = condition_status(wrapped_status(obj), self.condition)
        if value is not None:
            return value == "True"
        return condition_status(obj, c.CONDITION_READY) == "True"


EXISTS = ReadyWhen()
ACCEPTED = ReadyWhen("Accepted")
PROGRAMMED = ReadyWhen("Programmed")
ROUTE = ReadyWhen(route=True)


def wrapped_status(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The wrapped object as last observed (`status.atProvider.manifest`), if reported."""
    status = (obj or {}).get("status")
    at = status.get("atProvider") if isinstance(status, Mapping) else None
    manifest = at.get("manifest") if isinstance(at, Mapping) else None
    return manifest if isinstance(manifest, Mapping) else None


def wrapped_manifest(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The manifest an Object wraps (`spec.forProvider.manifest`), if it is an object."""
    spec = obj.get("spec")
    provider = spec.get("forProvider") if isinstance(spec, Mapping) else None
    manifest = provider.get("manifest") if isinstance(provider, Mapping) else None
    return manifest if isinstance(manifest, Mapping) else None


def wrap(
    name: str,
    namespace: str,
    provider_config: str,
    manifest: Resource,
    ready: ReadyWhen,
    labels: dict[str, str],
    *,
    references: list[dict[str, Any]] | None = None,
) -> Resource:
    """Wrap `manifest` in an Object on the control plane with its readiness rule."""
    obj = objects.wrap(name, namespace, provider_config, manifest, "Config", labels)
    query = ready.cel()
    if query is not None:
        obj["spec"]["readiness"] = {"policy": "DeriveFromCelQuery", "celQuery": query}
    if references:
        obj["spec"]["references"] = references
    return obj
