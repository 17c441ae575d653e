"""ServingStack composer: the software a workload cluster needs before replicas can run.

Composes, through the cluster's provider configs (provider-helm Releases and
provider-kubernetes Objects, all in the composite's namespace), what the kinds
a replica sends need (docs/serving-stack.md has the table, kind by kind):
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
- InferencePool support: the Gateway API Inference Extension CRD
  (`stack/inference_pool.py`) and Envoy AI Gateway, whose extension server
  Envoy Gateway hands InferencePool backends to;
- cert-manager (release key `release-cert-manager`, namespace cert-manager):
  KServe's controller needs it, and the workload Gateway's certificates come
  from it; `cert_manager_usage` orders an object before it;
- KServe's LLMInferenceService CRD, controller and runtime presets when the
  cluster runs KServe;
- the GPU scheduler (KAI or Volcano) and Kueue when asked for, with the queues
  the replicas' pods name and the cluster's PriorityClasses (`stack/queues.py`);
- one StorageClass per CSI driver, mapped to the cloud's own driver (its
  `Cloud.storage_classes`, api/clouds/);
- the inventory agent (`inventory_agent.py`) that reports the cluster's nodes,
  devices and unschedulable replicas to the InferenceCluster;
- Usages so releases go before the node pools they run on, the Gateway and
  its client check before the Envoy Gateway release that serves them, the
  hop's certificates and issuers before cert-manager, and each queue before
  the release that serves its kind.

Every chart is pinned at a version the Helm values oracle knows (`stack/charts.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.clouds import cloud_named
from modelplane.api.gateway_hop import CLIENT_POLICY
from modelplane.api.memo import CopiedMemo
from modelplane.api.readers import ObservedModelReplica, read_model_replica
from modelplane.api.reasons import ServingStackReadyReason, ValidReason
from modelplane.api.serving_stack import PresentComponentStatus, ReleaseStatus, ServingStackSpec
from modelplane.api.serving_stack import ServingStackStatus as StackStatus
from modelplane.compose import outcome
from modelplane.compose import readiness as rd
from modelplane.compose.clusters import gateway_hop
from modelplane.compose.clusters.inventory_agent import DEPLOYMENT_KEY, agent_objects
from modelplane.compose.clusters.managed import labels, ready, resource_name
from modelplane.compose.clusters.stack import inference_pool, present, queues
from modelplane.compose.clusters.stack.charts import (
    CERT_MANAGER,
    ENVOY_GATEWAY,
    KAI,
    KSERVE_CONTROLLER,
    KUEUE,
    VOLCANO,
    Chart,
    charts,
    installs,
    release,
    release_key,
)
from modelplane.compose.common import content_key, meta, parse_spec
from modelplane.compose.objects import Item, Ref, usage, wrap
from modelplane.compose.readiness import (
    ACCEPTED,
    DEPLOYMENT_ROLLED_OUT,
    EXISTS,
    PROGRAMMED,
    wrapped,
)
from modelplane.compose.types import (
    ComposeInput,
    ComposeResult,
    DesiredResource,
    Requirement,
    Resource,
)

__all__ = ["cert_manager_usage", "compose", "release", "release_key"]

ENVOY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
GATEWAY_CLASS = "modelplane-envoy"
# A Gateway is ready to route once its implementation reports it Programmed
# (the same readiness rule as the InferenceGateway's Gateway).
GATEWAY_PROGRAMMED = PROGRAMMED
# A GatewayClass serves once its controller accepts it (the InferenceGateway's
# rule). The rule reads its status, so its Object is watched: a created-only
# Object shows the class as provider-kubernetes first observed it (`Pending`)
# until its next poll, ten minutes later by default.
GATEWAY_CLASS_ACCEPTED = ACCEPTED


STORAGE_CLASS_NAMES = {
    "SharedFilesystem": "modelplane-shared",
    "ObjectStorageMount": "modelplane-object",
    "BlockDevice": "modelplane-block",
}


REPLICAS_REQUIREMENT = "replicas"
# The release that serves each queueing system's kinds.
QUEUE_RELEASES: dict[str, Chart] = {"KAI": KAI, "Volcano": VOLCANO, "Kueue": KUEUE}


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
            GATEWAY_CLASS_ACCEPTED,
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


def _storage(spec: ServingStackSpec, namespace: str) -> tuple[dict[str, Resource], list[str]]:
    """The StorageClasses' Objects, and why each one not made yet waits (an event each)."""
    out = {}
    pending = []
    for driver in (spec.storage.csi_drivers or []) if spec.storage else []:
        sc, why = _storage_class(spec, driver)
        if sc is None:
            pending.append(str(why))
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
    return out, pending


def _usage_key(cluster: str, of: Ref, by: Ref) -> str:
    return f"{by.name.removeprefix(cluster + '-')}-uses-{of.name.removeprefix(cluster + '-')}"


def _add_usage(
    out: dict[str, Resource], spec: ServingStackSpec, namespace: str, of: Ref, by: Ref, why: str
) -> None:
    key = _usage_key(spec.cluster_name, of, by)
    out[f"usage-{key}"] = usage(
        resource_name(spec.cluster_name, "usage", key), namespace, of, by, why
    )


def release_ref(spec: ServingStackSpec, chart: Chart) -> Ref:
    """The stack's Release of `chart` as a Usage names it."""
    return Ref(c.PROVIDER_HELM_API_VERSION, "Release", resource_name(spec.cluster_name, chart.key))


def cert_manager_usage(
    spec: ServingStackSpec, namespace: str, by: Ref, reason: str
) -> tuple[str, Resource]:
    """A Usage keeping cert-manager's Release until `by` (e.g. a Certificate's Object) is gone.

    Returns its composed-resource key and the Usage; the Release is the stack's
    `release-cert-manager` (namespace cert-manager on the cluster).
    """
    out: dict[str, Resource] = {}
    _add_usage(out, spec, namespace, release_ref(spec, CERT_MANAGER), by, reason)
    ((key, resource),) = out.items()
    return key, resource


def _usages(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    """The Usages the spec alone decides (every one but the queues', `_queue_usages`)."""
    out: dict[str, Resource] = {}
    pools = [(p.gpu, Ref(p.api_version, p.kind, p.name)) for p in spec.node_pools or []]
    for chart, _ in charts(spec):
        by = release_ref(spec, chart)
        for gpu, of in pools:
            if gpu and not chart.on_gpu_nodes:
                continue
            _add_usage(out, spec, namespace, of, by, "releases go before node pools")
    if installs(spec, ENVOY_GATEWAY):
        _envoy_usages(out, spec, namespace)
    if installs(spec, CERT_MANAGER):
        _cert_manager_usages(out, spec, namespace)
    return out


def _envoy_usages(out: dict[str, Resource], spec: ServingStackSpec, namespace: str) -> None:
    envoy = release_ref(spec, ENVOY_GATEWAY)
    for key in ("gateway", "gateway-class", gateway_hop.POLICY_KEY):
        gw = Ref(c.PROVIDER_KUBERNETES_API_VERSION, "Object", resource_name(spec.cluster_name, key))
        _add_usage(
            out, spec, namespace, envoy, gw, "the Gateway goes before the Envoy Gateway release"
        )


def _cert_manager_usages(out: dict[str, Resource], spec: ServingStackSpec, namespace: str) -> None:
    for key in gateway_hop.CERT_MANAGER_KEYS:
        cert = Ref(
            c.PROVIDER_KUBERNETES_API_VERSION, "Object", resource_name(spec.cluster_name, key)
        )
        usage_key, resource = cert_manager_usage(
            spec, namespace, cert, "the hop's certificates and issuers go before cert-manager"
        )
        out[usage_key] = resource
    if spec.kserve:
        # KServe's controller chart holds cert-manager Certificates.
        key, resource = cert_manager_usage(
            spec,
            namespace,
            release_ref(spec, KSERVE_CONTROLLER),
            "KServe's certificates go before cert-manager",
        )
        out[key] = resource


def _queue_usages(
    spec: ServingStackSpec, namespace: str, objects: dict[str, Resource]
) -> dict[str, Resource]:
    """A Usage per queue among `objects`: the queue goes before the release serving it."""
    out: dict[str, Resource] = {}
    for obj in objects.values():
        system = _queue_system(obj)
        if system is not None:
            by = Ref(c.PROVIDER_KUBERNETES_API_VERSION, "Object", obj["metadata"]["name"])
            of = release_ref(spec, QUEUE_RELEASES[system])
            _add_usage(out, spec, namespace, of, by, "queues go before the release serving them")
    return out


def _queue_system(obj: Resource) -> str | None:
    """Which queueing system serves a wrapped manifest (None: not a queue)."""
    manifest = obj["spec"]["forProvider"]["manifest"]
    group = str(manifest["apiVersion"]).split("/", 1)[0]
    return {
        "scheduling.run.ai": "KAI",
        "scheduling.volcano.sh": "Volcano",
        "kueue.x-k8s.io": "Kueue",
    }.get(group)


def _replicas(
    inp: ComposeInput, spec: ServingStackSpec, result: ComposeResult
) -> list[ObservedModelReplica]:
    """The ModelReplicas placed on the cluster, when the stack makes queues for them."""
    if not spec.queues:
        return []
    result.requirements[REPLICAS_REQUIREMENT] = Requirement(
        api_version=c.API_VERSION,
        kind="ModelReplica",
        match_labels=queues.replicas_label(spec.cluster_name),
    )
    out = []
    for obj in inp.required.get(REPLICAS_REQUIREMENT, []):
        replica = read_model_replica(obj)
        if replica is not None and replica.cluster == spec.cluster_name:
            out.append(replica)
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
    if key == "gateway-class":
        return obs is not None and GATEWAY_CLASS_ACCEPTED.reads(obs)
    if key.startswith("gateway-hop-"):
        # cert-manager's Ready, the ClientTrafficPolicy's acceptance: the rule each declared.
        return obs is not None and rd.observed_ready(obs)
    if key == DEPLOYMENT_KEY:
        return obs is not None and DEPLOYMENT_ROLLED_OUT.reads(obs)
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
    fixed = _fixed_resources(inp, spec, namespace)
    for message in fixed.pending:
        result.normal("StorageClassPending", message)
    scheduling = _scheduling(inp, spec, namespace, result)
    objects: dict[str, Resource] = {**fixed.objects, **scheduling}
    usages = {**fixed.usages, **_queue_usages(spec, namespace, scheduling)}
    resources = {**fixed.releases, **objects, **usages}
    for key, resource in resources.items():
        ok = _readiness(inp, key, resource)
        result.desired[key] = DesiredResource(resource, "True" if ok else "False")
    _status(inp, result, spec)
    return result


@dataclass(frozen=True)
class _Fixed:
    """What the stack's spec, namespace and image alone decide: the releases, the
    objects but the queues, the Usages but the queues', the StorageClasses that wait."""

    releases: dict[str, Resource]
    objects: dict[str, Resource]
    usages: dict[str, Resource]
    pending: list[str]


_FIXED = CopiedMemo("compose.clusters.serving_stack._FIXED")


def _fixed_resources(inp: ComposeInput, spec: ServingStackSpec, namespace: str) -> _Fixed:
    """`_fixed`, remembered by the spec's content, namespace and image.

    A stack's spec changes rarely while its composer is called every time what
    it observes does (a fleet's thousand stacks, several times each). Every
    call gets a copy of its own; the InferencePool CRD's Object is built every
    call instead, as it shares the CRD's read-only constant.
    """
    key = (content_key(inp.composite), namespace, inp.image)
    releases, gateway, rest, usages, pending = _FIXED.get(
        key, lambda: _fixed(spec, namespace, inp.image)
    )
    crd = inference_pool.crd_object(spec, namespace)
    return _Fixed(releases, {**gateway, **crd, **rest}, usages, pending)


def _fixed(spec: ServingStackSpec, namespace: str, image: str) -> tuple[Any, ...]:
    """The releases, the objects before the CRD's and after it, the Usages, the waiting."""
    storage, pending = _storage(spec, namespace)
    releases = {
        release_key(chart): release(chart, version, spec, namespace)
        for chart, version in charts(spec)
    }
    gateway = {**_gateway_objects(spec, namespace), **gateway_hop.objects(spec, namespace)}
    rest = {**storage, **agent_objects(spec, namespace, image), **present.objects(spec, namespace)}
    return releases, gateway, rest, _usages(spec, namespace), pending


def _scheduling(
    inp: ComposeInput, spec: ServingStackSpec, namespace: str, result: ComposeResult
) -> dict[str, Resource]:
    """Queues and PriorityClasses; until the replicas are fetched, the observed leaf queues."""
    replicas = _replicas(inp, spec, result)
    out = queues.scheduling_objects(spec, namespace, replicas)
    if spec.queues and not inp.fetched(REPLICAS_REQUIREMENT):
        # Not fetched yet (the first call of a reconcile): keep what exists.
        for key, obs in inp.observed.items():
            if key not in out and _is_object(obs) and _queue_system(obs) is not None:
                out[key] = obs
    return out


def _is_object(obj: Resource) -> bool:
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
    return obj.get("kind") == "Object" and isinstance(manifest, dict) and "apiVersion" in manifest


def _status(inp: ComposeInput, result: ComposeResult, spec: ServingStackSpec) -> None:
    statuses = [
        ReleaseStatus(
            name=chart.key,
            chart=chart.name,
            version=version,
            ready=ready(inp.observed.get(release_key(chart))),
        )
        for chart, version in charts(spec)
    ]
    gateway = inp.observed.get("gateway")
    found = present.statuses(spec, inp.observed)
    status = StackStatus(
        releases=statuses, present=found or None, gateway_address=_gateway_address(gateway)
    )
    result.status.update(status.to_dict())
    result.condition(c.CONDITION_VALID, True, ValidReason.VALID, "ServingStack spec is valid")
    policy = inp.observed.get(gateway_hop.POLICY_KEY)
    missing = [p for p in found if not p.found]
    ok, reason, message = (
        (False, str(ServingStackReadyReason.COMPONENT_MISSING), _missing(missing))
        if missing
        else _stack_ready(spec, statuses, gateway, policy)
    )
    if ok and found:
        message += f"; present and found: {', '.join(p.name for p in found)}"
    result.condition(c.CONDITION_SERVING_STACK_READY, ok, reason, message)
    result.ready = "True" if ok else "False"


def _missing(missing: list[PresentComponentStatus]) -> str:
    """Which components marked present were not found, and by which CRDs."""
    dynamo = [p for p in missing if p.name == present.DYNAMO]
    rest = [p for p in missing if p.name != present.DYNAMO]
    named = "; ".join(f"{p.name} (CRD {', '.join(p.missing or ())})" for p in rest)
    parts = (
        [
            f"marked present in spec.servingStack.present but not found on the cluster: {named}; "
            "install them, or remove them from present so the stack installs them"
        ]
        if rest
        else []
    )
    parts += [
        "Dynamo (spec.servingStack.dynamo.present) not found on the cluster: "
        f"{', '.join(p.missing or ())}; its platform team installs Dynamo, the stack does not"
        for p in dynamo
    ]
    return ". ".join(parts)


def _hop_enforced(policy: Resource | None) -> bool:
    return policy is not None and gateway_hop.POLICY_ACCEPTED.reads(policy)


def _stack_ready(
    spec: ServingStackSpec,
    statuses: list[ReleaseStatus],
    gateway: Resource | None,
    policy: Resource | None = None,
) -> tuple[bool, str, str]:
    """ServingStackReady: (status, reason, message)."""
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
            f"ClientTrafficPolicy {spec.gateway.namespace}/{CLIENT_POLICY} is not accepted yet: "
            "until it is, the Gateway's client certificate check is not in force",
        )
    return (
        True,
        ServingStackReadyReason.READY,
        f"{len(statuses)} release(s) ready; Gateway programmed",
    )
