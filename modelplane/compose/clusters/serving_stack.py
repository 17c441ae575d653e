"""ServingStack composer: the software a workload cluster needs before replicas can run.

Composes, through the cluster's provider configs (provider-helm Releases and
provider-kubernetes Objects, all in the composite's namespace):
- Node Feature Discovery (labels GPU nodes; its workers tolerate the GPU taint);
- the NVIDIA DRA driver with GPU allocation enabled and compute domains off:
  it publishes the GPUs as ResourceSlices and registers DeviceClass
  `gpu.nvidia.com`; its kubelet plugin tolerates the GPU taint and finds the
  driver where the cloud installs it;
- LeaderWorkerSet;
- Envoy Gateway, its GatewayClass, and the inference Gateway the replicas'
  HTTPRoutes attach to (`status.gatewayAddress` is the address it reports):
  HTTPS only, routes only from replica namespaces, requests only with the
  fleet gateway's client certificate (`gateway_hop.py`);
- the KAI scheduler when asked for. Volcano is not installed: every Release
  pins a chart version the Helm values oracle knows, and it knows no Volcano
  chart, so asking for it sets ServingStackReady=False (InstallUnsupported)
  with what to do instead, rather than guessing a chart;
- one StorageClass per CSI driver, mapped to the cloud's own driver (its
  `Cloud.storage_classes`, api/clouds/);
- the inventory agent (`inventory_agent.py`) that reports the cluster's nodes,
  devices and unschedulable replicas to the InferenceCluster;
- Usages so releases go before the node pools they run on, the Gateway and
  its client check before the Envoy Gateway release that serves them, and the
  hop's certificates and issuers before the cert-manager release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds import cloud_named
from modelplane.api.gateway_hop import CLIENT_POLICY
from modelplane.api.reasons import ServingStackReadyReason, ValidReason
from modelplane.api.serving_stack import NodePoolRef, ReleaseStatus, ServingStackSpec
from modelplane.api.serving_stack import ServingStackStatus as StackStatus
from modelplane.compose import outcome
from modelplane.compose import readiness as rd
from modelplane.compose.clusters import gateway_hop
from modelplane.compose.clusters.inventory_agent import DEPLOYMENT_KEY, agent_objects
from modelplane.compose.clusters.managed import Ref, labels, ready, resource_name, usage
from modelplane.compose.common import meta, parse_spec
from modelplane.compose.objects import Item, wrap
from modelplane.compose.readiness import EXISTS, PROGRAMMED, WORKLOAD_AVAILABLE, wrapped
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Resource

GPU_TOLERATION = {"key": c.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
ENVOY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_CLASS = "modelplane-envoy"
# A Gateway is ready to route once its implementation reports it Programmed
# (the same readiness rule as the InferenceGateway's Gateway).
GATEWAY_PROGRAMMED = PROGRAMMED


@dataclass(frozen=True)
class Chart:
    """A chart the stack installs: where from, into which namespace."""

    key: str
    name: str
    repository: str
    namespace: str
    on_gpu_nodes: bool = False


NFD = Chart(
    "node-feature-discovery",
    "node-feature-discovery",
    "https://kubernetes-sigs.github.io/node-feature-discovery/charts",
    "node-feature-discovery",
    on_gpu_nodes=True,
)
DRA_DRIVER = Chart(
    "nvidia-dra-driver",
    "nvidia-dra-driver-gpu",
    "https://helm.ngc.nvidia.com/nvidia",
    "nvidia-dra-driver-gpu",
    on_gpu_nodes=True,
)
LWS = Chart("leaderworkerset", "lws", "oci://registry.k8s.io/lws/charts", "lws-system")
ENVOY_GATEWAY = Chart(
    "envoy-gateway", "gateway-helm", "oci://docker.io/envoyproxy", "envoy-gateway-system"
)
KAI = Chart("kai-scheduler", "kai-scheduler", "oci://ghcr.io/nvidia/kai-scheduler", "kai-scheduler")

STORAGE_CLASS_NAMES = {
    "SharedFilesystem": "modelplane-shared",
    "ObjectStorageMount": "modelplane-object",
    "BlockDevice": "modelplane-block",
}


def release_key(chart: Chart) -> str:
    """The composition resource name of a chart's Release."""
    return f"release-{chart.key}"


def _charts(spec: ServingStackSpec) -> list[tuple[Chart, str]]:
    versions = spec.charts
    out = [
        (NFD, versions.node_feature_discovery),
        (DRA_DRIVER, versions.nvidia_dra_driver),
        (LWS, versions.leader_worker_set),
        (ENVOY_GATEWAY, versions.envoy_gateway),
    ]
    if spec.gpu_scheduler == "KAI":
        out.append((KAI, versions.kai_scheduler))
    return out


def _values(chart: Chart, spec: ServingStackSpec) -> dict[str, Any]:
    if chart is NFD:
        return {"worker": {"tolerations": [dict(GPU_TOLERATION)]}}
    if chart is DRA_DRIVER:
        values: dict[str, Any] = {
            "gpuResourcesEnabledOverride": True,
            "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
            "kubeletPlugin": {"tolerations": [dict(GPU_TOLERATION)]},
        }
        # Where the cloud's node image puts the NVIDIA driver, when not at `/`.
        cloud = cloud_named(spec.cloud)
        root = cloud.driver_root if cloud is not None else None
        if root:
            values["nvidiaDriverRoot"] = root
        return values
    return {}


def release(chart: Chart, version: str, spec: ServingStackSpec, namespace: str) -> Resource:
    """One provider-helm Release of the stack, pinned to `version`."""
    for_provider: dict[str, Any] = {
        "chart": {"name": chart.name, "repository": chart.repository, "version": version},
        "namespace": chart.namespace,
    }
    values = _values(chart, spec)
    if values:
        for_provider["values"] = values
    return {
        "apiVersion": c.PROVIDER_HELM_API_VERSION,
        "kind": "Release",
        "metadata": {
            "name": resource_name(spec.cluster_name, chart.key),
            "namespace": namespace,
            "labels": labels(spec.cluster_name, chart.key),
        },
        "spec": {
            "forProvider": for_provider,
            "providerConfigRef": {
                "kind": "ClusterProviderConfig",
                "name": spec.provider_config_name,
            },
        },
    }


def _gateway_objects(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    cluster, pc = spec.cluster_name, spec.provider_config_name
    obj_labels = labels(cluster, "gateway")
    gw = spec.gateway
    gateway_class = {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS},
        "spec": {"controllerName": ENVOY_CONTROLLER},
    }
    gw_namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": gw.namespace}}
    gateway = {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": gw.name, "namespace": gw.namespace},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            # HTTPS with client certificates only: `gateway_hop.py`.
            "listeners": [gateway_hop.listener()],
        },
    }
    items = (
        Item(
            "gateway-class",
            resource_name(cluster, "gateway-class"),
            gateway_class,
            EXISTS,
            "GatewayClass",
        ),
        Item(
            "gateway-namespace",
            resource_name(cluster, "gateway-namespace"),
            gw_namespace,
            EXISTS,
            "Namespace",
            deletable=False,
        ),
        Item("gateway", resource_name(cluster, "gateway"), gateway, GATEWAY_PROGRAMMED, "Gateway"),
    )
    out = {item.key: wrap(item, namespace, pc, obj_labels) for item in items}
    return out


def _storage_class(spec: ServingStackSpec, driver: str) -> tuple[dict[str, Any] | None, str | None]:
    """The StorageClass for one csiDrivers entry, or why it cannot be made yet."""
    cloud = cloud_named(spec.cloud)
    if cloud is None:
        return None, f"{driver}: an Existing cluster brings its own StorageClass"
    wanted = cloud.storage_classes[driver]
    parameters = dict(wanted.parameters)
    if wanted.needs is not None:
        fact = getattr(spec.storage, wanted.needs.fact, None) if spec.storage else None
        if not fact:
            return None, f"{driver}: waiting for {wanted.needs.waiting_for}"
        parameters[wanted.needs.parameter] = fact
    provisioner = wanted.provisioner
    sc: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS_NAMES[driver]},
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer" if driver == "BlockDevice" else "Immediate",
    }
    if parameters:
        sc["parameters"] = parameters
    return sc, None


def _storage(spec: ServingStackSpec, namespace: str, result: ComposeResult) -> dict[str, Resource]:
    out = {}
    for driver in (spec.storage.csi_drivers or []) if spec.storage else []:
        sc, why = _storage_class(spec, driver)
        if sc is None:
            result.normal("StorageClassPending", str(why))
            continue
        key = f"storage-class-{STORAGE_CLASS_NAMES[driver]}"
        item = Item(
            key,
            resource_name(spec.cluster_name, STORAGE_CLASS_NAMES[driver]),
            sc,
            EXISTS,
            "StorageClass",
        )
        out[key] = wrap(
            item, namespace, spec.provider_config_name, labels(spec.cluster_name, "storage-class")
        )
    return out


def _usages(
    spec: ServingStackSpec,
    namespace: str,
    releases: dict[str, Resource],
    hop_objects: dict[str, Resource],
) -> dict[str, Resource]:
    out: dict[str, Resource] = {}
    cluster = spec.cluster_name

    def add(of: Ref, by: Ref, reason: str) -> None:
        key = f"{by.name.removeprefix(cluster + '-')}-uses-{of.name.removeprefix(cluster + '-')}"
        out[f"usage-{key}"] = usage(resource_name(cluster, "usage", key), namespace, of, by, reason)

    pools: list[NodePoolRef] = spec.node_pools or []
    for chart, _ in _charts(spec):
        rel = Ref(
            c.PROVIDER_HELM_API_VERSION, "Release", releases[release_key(chart)]["metadata"]["name"]
        )
        for pool in pools:
            if pool.gpu and not chart.on_gpu_nodes:
                continue
            add(Ref(pool.api_version, pool.kind, pool.name), rel, "releases go before node pools")
    envoy = Ref(
        c.PROVIDER_HELM_API_VERSION,
        "Release",
        releases[release_key(ENVOY_GATEWAY)]["metadata"]["name"],
    )
    for key in ("gateway", "gateway-class", gateway_hop.POLICY_KEY):
        obj = Ref(c.PROVIDER_KUBERNETES_API_VERSION, "Object", resource_name(cluster, key))
        add(envoy, obj, "the Gateway goes before the Envoy Gateway release")
    for of, by in gateway_hop.usages_of_cert_manager(cluster, releases, hop_objects):
        add(of, by, "certificates and issuers go before cert-manager")
    return out


def _gateway_address(observed: Resource | None) -> str | None:
    """The first address the observed Gateway reports; None while it reports none.

    Every level may be absent or null (`atProvider: null` before the provider
    first observes the Gateway): that is "no address yet", never an exception.
    """
    status = (wrapped(observed) or {}).get("status")
    addresses = status.get("addresses") if isinstance(status, dict) else None
    for addr in addresses if isinstance(addresses, list) else ():
        if isinstance(addr, dict) and addr.get("value"):
            return str(addr["value"])
    return None


def _gateway_programmed(observed: Resource | None) -> bool:
    return observed is not None and GATEWAY_PROGRAMMED.reads(observed)


def _readiness(inp: ComposeInput, key: str, resource: Resource) -> bool:
    obs = inp.observed.get(key)
    if resource.get("kind") == "Usage":
        return True
    if resource.get("kind") == "Release":
        return ready(obs)
    if key == "gateway":
        return _gateway_programmed(obs)
    if key.startswith("gateway-hop-"):
        # cert-manager's Ready, the ClientTrafficPolicy's acceptance: the rule each declared.
        return obs is not None and rd.observed_ready(obs)
    if key == DEPLOYMENT_KEY:
        return obs is not None and WORKLOAD_AVAILABLE.reads(obs)
    return obs is not None and EXISTS.reads(obs)


def compose(inp: ComposeInput) -> ComposeResult:
    """Compose one cluster's serving stack and report whether it is ready."""
    result = ComposeResult()
    spec, error = parse_spec(ServingStackSpec, inp.composite)
    if spec is None:
        return outcome.hold(
            inp,
            result,
            c.CONDITION_VALID,
            ValidReason.INVALID_SPEC,
            f"invalid ServingStack: {error}",
        )
    namespace = str(meta(inp.composite).get("namespace") or c.SYSTEM_NAMESPACE)
    releases = {
        release_key(chart): release(chart, version, spec, namespace)
        for chart, version in _charts(spec)
    }
    resources: dict[str, Resource] = {
        **releases,
        **_gateway_objects(spec, namespace),
        **gateway_hop.objects(spec, namespace),
        **_storage(spec, namespace, result),
        **agent_objects(spec, namespace),
        **_usages(spec, namespace, releases, gateway_hop.objects(spec, namespace)),
    }
    unsupported = unsupported_install(spec)
    if unsupported is not None:
        result.warn(ServingStackReadyReason.INSTALL_UNSUPPORTED, unsupported)
    for key, resource in resources.items():
        ok = _readiness(inp, key, resource)
        result.desired[key] = DesiredResource(resource, "True" if ok else "False")
    _status(inp, result, spec)
    return result


def _status(inp: ComposeInput, result: ComposeResult, spec: ServingStackSpec) -> None:
    statuses = [
        ReleaseStatus(
            name=chart.key,
            chart=chart.name,
            version=version,
            ready=ready(inp.observed.get(release_key(chart))),
        )
        for chart, version in _charts(spec)
    ]
    gateway = inp.observed.get("gateway")
    status = StackStatus(releases=statuses, gateway_address=_gateway_address(gateway))
    result.status.update(status.to_dict())
    result.condition(c.CONDITION_VALID, True, ValidReason.VALID, "ServingStack spec is valid")
    policy = inp.observed.get(gateway_hop.POLICY_KEY)
    ok, reason, message = _stack_ready(spec, statuses, gateway, policy)
    result.condition(c.CONDITION_SERVING_STACK_READY, ok, reason, message)
    result.ready = "True" if ok else "False"


def unsupported_install(spec: ServingStackSpec) -> str | None:
    """Why the GPU scheduler the stack is asked to install cannot be, if it cannot.

    Only Volcano: its chart is not among those the Helm values oracle knows, and
    a Release is composed only at a pinned version that oracle checked.
    """
    if spec.gpu_scheduler != "Volcano":
        return None
    return (
        "spec.scheduling asks to install Volcano (schedulerName: volcano, install: true), "
        "but Modelplane installs no Volcano: it composes a Helm release only at a pinned "
        "chart version its values check knows, and it knows no Volcano chart. Install "
        "Volcano on the cluster yourself, then set spec.scheduling.install to false"
    )


def _hop_enforced(policy: Resource | None) -> bool:
    return policy is not None and gateway_hop.POLICY_ACCEPTED.reads(policy)


def _stack_ready(
    spec: ServingStackSpec,
    statuses: list[ReleaseStatus],
    gateway: Resource | None,
    policy: Resource | None = None,
) -> tuple[bool, str, str]:
    """ServingStackReady: (status, reason, message); an unsupported install comes first,
    as no amount of waiting fixes it."""
    unsupported = unsupported_install(spec)
    if unsupported is not None:
        return False, ServingStackReadyReason.INSTALL_UNSUPPORTED, unsupported
    waiting = [r for r in statuses if not r.ready]
    if waiting:
        names = ", ".join(f"{r.name} ({r.chart} {r.version})" for r in waiting)
        return False, ServingStackReadyReason.RELEASE_NOT_READY, f"release(s) not ready: {names}"
    if not _gateway_programmed(gateway):
        return (
            False,
            ServingStackReadyReason.GATEWAY_NOT_PROGRAMMED,
            f"Gateway {spec.gateway.namespace}/{spec.gateway.name} is not Programmed yet",
        )
    if not _hop_enforced(policy):
        return (
            False,
            ServingStackReadyReason.GATEWAY_NOT_PROGRAMMED,
            f"ClientTrafficPolicy {spec.gateway.namespace}/{CLIENT_POLICY} is not "
            "accepted yet: until it is, the Gateway's client certificate check is not in force",
        )
    return (
        True,
        ServingStackReadyReason.READY,
        f"{len(statuses)} release(s) ready; Gateway programmed",
    )
