"""InferenceGateway composer: Envoy Gateway on the control plane, and its Gateway.

Composes, on the control plane itself:
- the control plane's own provider configs (provider-kubernetes and
  provider-helm `ClusterProviderConfig`s with `InjectedIdentity`, named
  `modelplane-control-plane`): what this gateway and every ModelService target;
- a provider-helm `Release` of Envoy Gateway (chart `gateway-helm` at the pinned
  `spec.chart.version`), with the Backend API enabled (external FQDN/IP
  backends are off by default in Envoy Gateway);
- as provider-kubernetes Objects: the `GatewayClass`, parameterised by an
  `EnvoyProxy` that fixes the data plane's Service name (and applies
  `spec.envoyProxy`: replicas, Service type), and the `Gateway` with the
  listeners of `spec.listeners` (routes from every namespace may attach: each
  ModelService's route lives in its own namespace).

`status.address` is read from the observed Gateway's `status.addresses`; until
it has one, `GatewayReady=False NoAddress` and ModelServices wait.
`status.internalAddress` is the Envoy Service's in-cluster host:port of the
first plain-HTTP listener: the target of a ModelService's second hop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.api import constants as c
from modelplane.api.inference_gateway import InferenceGatewaySpec, InferenceGatewayStatus, Listener
from modelplane.api.kinds import INFERENCE_GATEWAY
from modelplane.api.reasons import GatewayReadyReason, ValidReason
from modelplane.compose import outcome
from modelplane.compose import readiness as rd
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.routing import gateway_objects as gwo
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Resource

ENVOY_PROXY_NAME = "modelplane"
KEY_PC_KUBERNETES = "provider-config-kubernetes"
KEY_PC_HELM = "provider-config-helm"
KEY_RELEASE = "release"
KEY_GATEWAY_CLASS = "gatewayclass"
KEY_ENVOY_PROXY = "envoyproxy"
KEY_GATEWAY = "gateway"
LABELS = {c.LABEL_MANAGED_BY: c.MANAGED_BY}


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose Envoy Gateway and the control-plane Gateway; publish its address."""
    result = ComposeResult()
    name = str(meta(inp.composite).get("name") or "")
    spec, error = parse_spec(InferenceGatewaySpec, inp.composite)
    if spec is not None and name != INFERENCE_GATEWAY.singleton_name:
        spec, error = None, INFERENCE_GATEWAY.singleton_message
    if spec is None:
        return outcome.hold(
            inp, result, c.CONDITION_VALID, ValidReason.INVALID_SPEC, error, readiness=_ready
        )
    result.condition(
        c.CONDITION_VALID, True, ValidReason.VALID, f"gateway-helm {spec.chart.version}"
    )
    wanted = desired(spec)
    all_ready = True
    for key, (resource, rule) in wanted.items():
        ok = gwo.observed(rule, inp.observed.get(key))
        all_ready = all_ready and ok
        result.desired[key] = DesiredResource(resource, "True" if ok else "False")
    status = InferenceGatewayStatus(
        gateway_name=c.CONTROL_PLANE_GATEWAY_NAME,
        gateway_namespace=spec.namespace,
        provider_config_name=c.CONTROL_PLANE_PROVIDER_CONFIG,
        internal_address=internal_address(spec),
    )
    host = observed_address(inp.observed.get(KEY_GATEWAY))
    if host is not None:
        status.address = base_url(host, spec.listeners)
    result.status = status.to_dict()
    if status.address is None:
        message = (
            f"Gateway {spec.namespace}/{c.CONTROL_PLANE_GATEWAY_NAME} has no address yet: "
            "ModelServices wait for it"
        )
        result.condition(c.CONDITION_GATEWAY_READY, False, GatewayReadyReason.NO_ADDRESS, message)
        result.ready = "False"
        return result
    result.condition(
        c.CONDITION_GATEWAY_READY,
        True,
        GatewayReadyReason.ADDRESSED,
        f"Gateway {spec.namespace}/{c.CONTROL_PLANE_GATEWAY_NAME} at {status.address}",
    )
    result.ready = "True" if all_ready else "False"
    return result


def desired(spec: InferenceGatewaySpec) -> dict[str, tuple[Resource, gwo.ReadyWhen]]:
    """Every composed resource with its readiness rule."""
    pc = c.CONTROL_PLANE_PROVIDER_CONFIG
    out: dict[str, tuple[Resource, gwo.ReadyWhen]] = {
        KEY_PC_KUBERNETES: (_provider_config(c.PROVIDER_KUBERNETES_API_VERSION), _EXISTS_PC),
        KEY_PC_HELM: (_provider_config(c.PROVIDER_HELM_API_VERSION), _EXISTS_PC),
        KEY_RELEASE: (release(spec), _RELEASE),
    }

    def obj(key: str, manifest: Resource, rule: gwo.ReadyWhen) -> None:
        name = f"{c.CONTROL_PLANE_GATEWAY_NAME}-{key}"
        wrapped = gwo.wrap(name, c.CONTROL_PLANE_NAMESPACE, pc, manifest, rule, LABELS)
        out[key] = (wrapped, rule)

    obj(KEY_GATEWAY_CLASS, gateway_class(spec), gwo.ACCEPTED)
    obj(KEY_ENVOY_PROXY, envoy_proxy(spec), gwo.EXISTS)
    obj(KEY_GATEWAY, gateway(spec), gwo.PROGRAMMED)
    return out


# Provider configs have no status and a Release reports Ready itself; neither
# is an Object, so their rules are not registered.
_EXISTS_PC = gwo.ReadyWhen("ProviderConfigExists", {}, lambda obj: obj is not None)
_RELEASE = gwo.ReadyWhen("ReleaseReady", {}, rd.object_ready)


def _ready(obj: Resource) -> bool:
    kind = str(obj.get("kind"))
    if kind == "ClusterProviderConfig":
        return gwo.observed(_EXISTS_PC, obj)
    if kind == "Release":
        return gwo.observed(_RELEASE, obj)
    return rd.observed_ready(obj)


def _provider_config(api_version: str) -> Resource:
    return {
        "apiVersion": api_version,
        "kind": "ClusterProviderConfig",
        "metadata": {"name": c.CONTROL_PLANE_PROVIDER_CONFIG, "labels": dict(LABELS)},
        "spec": {"credentials": {"source": "InjectedIdentity"}},
    }


def release(spec: InferenceGatewaySpec) -> Resource:
    """The provider-helm Release installing Envoy Gateway."""
    return {
        "apiVersion": c.PROVIDER_HELM_API_VERSION,
        "kind": "Release",
        "metadata": {
            "name": "modelplane-envoy-gateway",
            "namespace": c.CONTROL_PLANE_NAMESPACE,
            "labels": dict(LABELS),
        },
        "spec": {
            "forProvider": {
                "chart": {
                    "name": c.ENVOY_GATEWAY_CHART,
                    "repository": spec.chart.repository,
                    "version": spec.chart.version,
                },
                "namespace": spec.namespace,
                # Backend (external FQDN/IP upstreams) is an opt-in API.
                "values": {"config": {"envoyGateway": {"extensionApis": {"enableBackend": True}}}},
            },
            "providerConfigRef": {
                "kind": "ClusterProviderConfig",
                "name": c.CONTROL_PLANE_PROVIDER_CONFIG,
            },
        },
    }


def gateway_class(spec: InferenceGatewaySpec) -> Resource:
    """The GatewayClass served by Envoy Gateway's controller."""
    body: dict[str, Any] = {
        "controllerName": c.ENVOY_GATEWAY_CONTROLLER,
        "parametersRef": {
            "group": c.ENVOY_GATEWAY_GROUP,
            "kind": "EnvoyProxy",
            "name": ENVOY_PROXY_NAME,
            "namespace": spec.namespace,
        },
    }
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "GatewayClass",
        "metadata": {"name": c.CONTROL_PLANE_GATEWAY_CLASS, "labels": dict(LABELS)},
        "spec": body,
    }


def envoy_proxy(spec: InferenceGatewaySpec) -> Resource:
    """The EnvoyProxy: a fixed Service name (the second hop's target), replicas, type.

    The data plane's Service is otherwise named by a hash; a fixed name lets a
    ModelService address the gateway from inside the control plane.
    """
    settings = spec.envoy_proxy
    service: dict[str, Any] = {"name": c.ENVOY_SERVICE_NAME}
    kubernetes: dict[str, Any] = {"envoyService": service}
    if settings is not None and settings.replicas is not None:
        kubernetes["envoyDeployment"] = {"replicas": settings.replicas}
    if settings is not None and settings.service_type is not None:
        service["type"] = settings.service_type
    provider: dict[str, Any] = {"type": "Kubernetes", "kubernetes": kubernetes}
    return {
        "apiVersion": c.ENVOY_GATEWAY_API_VERSION,
        "kind": "EnvoyProxy",
        "metadata": {"name": ENVOY_PROXY_NAME, "namespace": spec.namespace, "labels": dict(LABELS)},
        "spec": {"provider": provider},
    }


def _listener(listener: Listener) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": listener.name,
        "protocol": listener.protocol,
        "port": listener.port,
        # Each ModelService's HTTPRoute lives in the service's own namespace.
        "allowedRoutes": {"namespaces": {"from": "All"}},
    }
    if listener.hostname:
        out["hostname"] = listener.hostname
    if listener.certificate_secret_ref is not None:
        out["tls"] = {
            "mode": "Terminate",
            "certificateRefs": [
                {"group": "", "kind": "Secret", "name": listener.certificate_secret_ref.name}
            ],
        }
    return out


def gateway(spec: InferenceGatewaySpec) -> Resource:
    """The control-plane Gateway every ModelService attaches to."""
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {
            "name": c.CONTROL_PLANE_GATEWAY_NAME,
            "namespace": spec.namespace,
            "labels": dict(LABELS),
        },
        "spec": {
            "gatewayClassName": c.CONTROL_PLANE_GATEWAY_CLASS,
            "listeners": [_listener(x) for x in spec.listeners],
        },
    }


def observed_address(obj: Mapping[str, Any] | None) -> str | None:
    """The first address the observed Gateway reports, if any."""
    status = (gwo.wrapped_status(obj) or {}).get("status")
    addresses = status.get("addresses") if isinstance(status, Mapping) else None
    for entry in addresses if isinstance(addresses, list) else ():
        value = entry.get("value") if isinstance(entry, Mapping) else None
        if isinstance(value, str) and value:
            return value
    return None


def base_url(host: str, listeners: list[Listener]) -> str:
    """The gateway's base URL: HTTPS when a listener offers it, the port when not default."""
    listener = next((x for x in listeners if x.protocol == "HTTPS"), listeners[0])
    scheme = listener.protocol.lower()
    default = 443 if scheme == "https" else 80
    shown = f"[{host}]" if ":" in host else host
    port = "" if listener.port == default else f":{listener.port}"
    return f"{scheme}://{shown}{port}"


def internal_address(spec: InferenceGatewaySpec) -> str | None:
    """host:port of the first plain-HTTP listener on the Envoy Service, in-cluster."""
    listener = next((x for x in spec.listeners if x.protocol == "HTTP"), None)
    if listener is None:
        return None
    host = f"{c.ENVOY_SERVICE_NAME}.{spec.namespace}.svc.cluster.local"
    return f"{host}:{listener.port}"
