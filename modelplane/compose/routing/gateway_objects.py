"""provider-kubernetes Objects on the control plane: Envoy Gateway resources.

The InferenceGateway and every ModelService compose what Envoy Gateway reads
(GatewayClass, Gateway, EnvoyProxy, HTTPRoute, Backend, HTTPRouteFilter) as
provider-kubernetes Objects on the control plane's own provider config, like a
replica's manifests on its cluster (`objects.py`). Each declares its readiness
rule (`readiness.py`): a condition of the wrapped object (`Accepted` for a
GatewayClass or Backend, `Programmed` for a Gateway), a route's acceptance by
its Gateway, or, for objects with no status, existence. The rules are
registered, so an early stop reads every kept Object by the rule it declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.compose import objects
from modelplane.compose import readiness as rd
from modelplane.compose.types import Resource

ReadyWhen = rd.ReadinessRule
EXISTS = rd.EXISTS
ROUTE = rd.ROUTE_ACCEPTED
ACCEPTED = rd.ACCEPTED
PROGRAMMED = rd.PROGRAMMED


def observed(rule: rd.ReadinessRule, obj: Resource | None) -> bool:
    """Whether an observed Object (None: not observed) meets `rule`."""
    return rule.ready(obj) == "True"


def wrapped_status(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The wrapped object as last observed (`status.atProvider.manifest`), if reported."""
    return rd.wrapped(dict(obj) if obj is not None else None)


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
    ready: rd.ReadinessRule,
    labels: dict[str, str],
    *,
    references: list[dict[str, Any]] | None = None,
) -> Resource:
    """Wrap `manifest` in an Object on the control plane with its readiness rule."""
    kind = str(manifest.get("kind", ""))
    item = objects.Item(key=name, name=name, manifest=manifest, rule=ready, what=f"{kind} {name}")
    obj = objects.wrap(item, namespace, provider_config, labels)
    if references:
        obj["spec"]["references"] = references
    return obj
