"""An InferenceCluster's infrastructure: provisioning, serving stack, capacity and drift.

The InferenceCluster composer calls these steps after it has resolved its
pools' classes:
- `provision` (a cloud `source`, api/clouds/): composes that cloud's
  provisioning composite (EKSCluster, GKECluster, AKSCluster) in the function's
  system namespace and, once that cluster is reachable, the
  provider-kubernetes and provider-helm ClusterProviderConfigs that read its
  kubeconfig Secret; only then is a provider config name returned to publish;
- `serving_stack`: composes the ServingStack (unless `spec.servingStack.enabled`
  is false) and mirrors its ServingStackReady onto the cluster;
- `capacity`: a stocked-out pool publishes the nodes actually up, and
  InsufficientGPUCapacity names pool, zone and accelerator;
- `observe`: once the cluster is reachable, an Observe-only provider-kubernetes
  Object of the inventory agent's ConfigMap (`clusters/inventory.py`), so
  Crossplane watches it; its summary is the one live view of the cluster;
- `drift`: HardwareDrift compares the device shapes the inventory reports
  with the devices each pool's class declares (placement keeps the class), and
  the inventory's unschedulable replicas are published in status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.clouds import Cloud, cloud_named
from modelplane.api.common import format_validation_error
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.api.inference_cluster import (
    GPUPool,
    InferenceClusterSpec,
    InferenceClusterStatus,
    SchedulingConfig,
)
from modelplane.api.inventory import InventorySummary, parse_duration, stale_after
from modelplane.api.inventory_summary import epoch_seconds
from modelplane.api.memo import CopiedMemo
from modelplane.api.objects import condition, condition_status
from modelplane.api.provisioning import ProvisionedClusterView, read_provisioned_cluster
from modelplane.api.reasons import (
    CredentialsResolvedReason,
    HardwareDriftReason,
    InsufficientGPUCapacityReason,
    InventoryFreshReason,
    ReachableReason,
    ServingStackReadyReason,
)
from modelplane.api.serving_stack import (
    ChartVersions,
    InventoryConfig,
    ServingStackSpec,
    StackGateway,
    StackQueue,
    StackStorage,
    read_serving_stack,
)
from modelplane.compose.clusters.drift import hardware_drift
from modelplane.compose.clusters.infra import (
    node_pool_refs,
    node_pools,
    provider_configs,
    published_nodes,
    stockout_message,
    stockout_messages,
)
from modelplane.compose.clusters.inventory import (
    INVENTORY_KEY,
    inventory_observation,
    read_observed_inventory,
)
from modelplane.compose.common import as_desired, content_key, meta, parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult, DesiredResource, Resource

INFRA_KEY = "infrastructure"
STACK_KEY = "serving-stack"
HELM_PROVIDER_CONFIG_KEY = "provider-config-helm"
PROVIDER_CONFIG_KEYS = ("provider-config", HELM_PROVIDER_CONFIG_KEY)
GPU_SCHEDULERS: dict[str, Literal["KAI", "Volcano"]] = {
    c.KAI_SCHEDULER_NAME: "KAI",
    c.VOLCANO_SCHEDULER_NAME: "Volcano",
}


def parse_classes(objects: Iterable[Resource]) -> dict[str, InferenceClassSpec]:
    """The fetched InferenceClasses that parse, by name (the others are reported elsewhere)."""
    out = {}
    for obj in objects:
        spec, _ = parse_spec(InferenceClassSpec, obj)
        if spec is not None:
            out[str(meta(obj).get("name", ""))] = spec
    return out


@dataclass(frozen=True)
class Reach:
    """How far provisioning got: the provider config to publish (when reachable)."""

    provider_config: str | None
    view: ProvisionedClusterView | None
    problem: str | None = None  # why it cannot be composed, naming the field


def provisioning_composite(
    cloud: Cloud, name: str, spec: InferenceClusterSpec, pools: list[dict[str, Any]]
) -> tuple[Resource | None, str]:
    """The cloud's provisioning composite, or None and why (naming the InferenceCluster field)."""
    source = getattr(spec, cloud.block)
    block = f"spec.{cloud.block}"
    body = source.composite_spec(name, pools)
    if spec.storage and spec.storage.csi_drivers:
        body["csiDrivers"] = list(spec.storage.csi_drivers)
    try:
        cloud.spec_model.model_validate(body)
    except ValidationError as err:
        text = format_validation_error(err, block).replace(f"{block}.network.", f"{block}.")
        return None, text
    return {
        "apiVersion": c.INFRA_API_VERSION,
        "kind": cloud.composite_kind,
        "metadata": {
            "name": name,
            "namespace": c.SYSTEM_NAMESPACE,
            "labels": {c.LABEL_CLUSTER: name, c.LABEL_MANAGED_BY: c.MANAGED_BY},
        },
        "spec": body,
    }, ""


def provisioning_plan(
    cloud: Cloud, name: str, spec: InferenceClusterSpec, classes: Mapping[str, InferenceClassSpec]
) -> tuple[Resource | None, list[str]]:
    """The cloud's provisioning composite for the pools' classes, or None and each reason
    it cannot be composed (naming the InferenceCluster's field)."""
    pools, problems = node_pools(cloud, spec.pools, classes)
    if problems:
        return None, [p.message for p in problems]
    xr, why = provisioning_composite(cloud, name, spec, pools)
    return xr, [] if xr is not None else [why]


def provisioning_problems(
    name: str, spec: InferenceClusterSpec, classes: Mapping[str, InferenceClassSpec]
) -> list[str]:
    """Why a cluster of a cloud `source` could not be provisioned from these classes
    (the composer's NotProvisionable); empty for an existing cluster or when it can."""
    cloud = cloud_named(spec.source)
    return [] if cloud is None else provisioning_plan(cloud, name, spec, classes)[1]


def provision(
    inp: ComposeInput,
    result: ComposeResult,
    name: str,
    spec: InferenceClusterSpec,
    classes: Mapping[str, InferenceClassSpec],
    pc_name: str,
) -> Reach:
    """Compose the provisioning composite and, once reachable, the provider configs."""
    cloud = cloud_named(spec.source)
    if cloud is None:
        raise ValueError(f"source {spec.source!r} is not a cloud: nothing to provision")
    xr, problems = provisioning_plan(cloud, name, spec, classes)
    if xr is None:
        return Reach(None, None, "; ".join(problems))
    observed = inp.observed.get(INFRA_KEY)
    ready = condition_status(observed, c.CONDITION_READY) == "True"
    result.desired[INFRA_KEY] = DesiredResource(xr, "True" if ready else "False")
    view = read_provisioned_cluster(observed)
    status = view.status
    secret = status.kubeconfig_secret if status is not None else None
    if view.reachable and secret is not None:
        identity = status.identity if status is not None else None
        configs = provider_configs(name, pc_name, secret.to_dict(), identity)
        for key, obj in configs.items():
            result.desired[key] = DesiredResource(obj, "True" if key in inp.observed else "False")
        result.condition(
            c.CONDITION_CREDENTIALS_RESOLVED,
            True,
            CredentialsResolvedReason.RESOLVED,
            f"kubeconfig of the provisioned {cloud.name} cluster from Secret "
            f"{secret.namespace}/{secret.name} key {secret.key!r}"
            + (f", token from identity {identity.type}" if identity else ""),
        )
        return Reach(pc_name, view)
    # Not (or no longer) reachable: provider configs already composed stay,
    # because replicas' Objects use them; nothing new is published.
    for key in PROVIDER_CONFIG_KEYS:
        if key in inp.observed:
            result.desired[key] = DesiredResource(as_desired(inp.observed[key]), "False")
    waiting = _message(observed, c.CONDITION_CONTROL_PLANE_READY) or view.problem
    result.condition(
        c.CONDITION_CREDENTIALS_RESOLVED,
        False,
        CredentialsResolvedReason.WAITING_FOR_CLUSTER,
        f"waiting for the {cloud.name} cluster to be reachable"
        + (f": {waiting}" if waiting else ""),
    )
    return Reach(None, view)


def _message(obj: Resource | None, type_: str) -> str | None:
    cond = condition(obj, type_)
    message = cond.get("message") if cond is not None else None
    return str(message) if message else None


def _stack_storage(
    spec: InferenceClusterSpec, view: ProvisionedClusterView | None
) -> StackStorage | None:
    status = view.status if view is not None else None
    drivers = list(spec.storage.csi_drivers or []) if spec.storage else []
    cloud = cloud_named(spec.source)
    # The network only travels to a cloud whose StorageClasses need it.
    needs_network = cloud is not None and "network" in cloud.storage_facts
    storage = StackStorage(
        csi_drivers=drivers or None,
        shared_filesystem_id=status.shared_filesystem_id if status else None,
        network=status.network if status is not None and needs_network else None,
    )
    return storage if storage.to_dict() else None


def _installs(
    sched: SchedulingConfig | None,
) -> tuple[Literal["KAI", "Volcano"] | None, bool, list[StackQueue]]:
    """What `spec.scheduling` asks the stack to install: the GPU scheduler, Kueue, and
    the queue templates of the systems it installs (a platform team's keeps its queues)."""
    if sched is None or not sched.install:
        return None, False, []
    scheduler = GPU_SCHEDULERS.get(sched.scheduler_name or "")
    templates = sched.queue_templates()
    kueue = any(q.system == "Kueue" for q in templates)
    installed = {scheduler, "Kueue" if kueue else None} - {None}
    return scheduler, kueue, [q for q in templates if q.system in installed]


def _stack_spec(
    name: str, spec: InferenceClusterSpec, pc_name: str, view: ProvisionedClusterView | None
) -> ServingStackSpec:
    sched = spec.scheduling
    scheduler, kueue, queues = _installs(sched)
    gateway = (
        StackGateway(name=spec.gateway.name, namespace=spec.gateway.namespace)
        if spec.gateway is not None
        else StackGateway()
    )
    cloud = cloud_named(spec.source)
    refs = node_pool_refs(cloud, name, spec.pools) if cloud is not None else None
    return ServingStackSpec(
        cluster_name=name,
        provider_config_name=pc_name,
        cloud=spec.source,
        charts=(spec.serving_stack.charts if spec.serving_stack else None) or ChartVersions(),
        gateway=gateway,
        gpu_scheduler=scheduler,
        kueue=kueue,
        inference_pool=spec.serving_stack is None or spec.serving_stack.serves_inference_pools,
        kserve=bool(
            spec.serving_stack and spec.serving_stack.kserve and spec.serving_stack.kserve.enabled
        ),
        queues=queues or None,
        priority_classes=(sched.priority_classes if sched else None) or None,
        storage=_stack_storage(spec, view),
        node_pools=refs,
        inventory=inventory_config(spec),
        modelplane_image=spec.serving_stack.modelplane_image if spec.serving_stack else None,
        present=sorted(set(spec.serving_stack.present or ())) or None
        if spec.serving_stack
        else None,
        dynamo_namespace=_dynamo_namespace(spec),
    )


def _dynamo_namespace(spec: InferenceClusterSpec) -> str | None:
    """Dynamo's platform namespace, when the cluster says Dynamo is present (then checked)."""
    dynamo = spec.serving_stack.dynamo if spec.serving_stack else None
    return dynamo.namespace if dynamo is not None and dynamo.present else None


def _stack_spec_wire(
    inp: ComposeInput,
    name: str,
    spec: InferenceClusterSpec,
    pc_name: str,
    view: ProvisionedClusterView | None,
) -> dict[str, Any]:
    """The ServingStack's spec (wire form); remembered by the content of the
    InferenceCluster spec `spec` was read from, its name and provider config, when
    nothing provisioned adds to it (an Existing cluster).

    Every call gets a copy of its own.
    """
    if view is not None:
        return _stack_spec(name, spec, pc_name, view).to_dict()
    key = (content_key(inp.composite), name, pc_name)
    return _STACK_SPECS.get(key, lambda: _stack_spec(name, spec, pc_name, None).to_dict())


_STACK_SPECS = CopiedMemo("compose.clusters.sources._STACK_SPECS")


def serving_stack(
    inp: ComposeInput,
    result: ComposeResult,
    name: str,
    spec: InferenceClusterSpec,
    pc_name: str,
    view: ProvisionedClusterView | None,
) -> tuple[bool, str | None]:
    """Compose the ServingStack; return (ready, the gateway address it reports)."""
    if spec.serving_stack is not None and not spec.serving_stack.enabled:
        result.condition(
            c.CONDITION_SERVING_STACK_READY,
            True,
            ServingStackReadyReason.DISABLED,
            "spec.servingStack.enabled is false: the platform team installs the serving stack",
        )
        return True, None
    stack = {
        "apiVersion": c.INFRA_API_VERSION,
        "kind": "ServingStack",
        "metadata": {
            "name": name,
            "namespace": c.SYSTEM_NAMESPACE,
            "labels": {c.LABEL_CLUSTER: name, c.LABEL_MANAGED_BY: c.MANAGED_BY},
        },
        "spec": _stack_spec_wire(inp, name, spec, pc_name, view),
    }
    observed = inp.observed.get(STACK_KEY)
    cond = condition(observed, c.CONDITION_SERVING_STACK_READY)
    ready = cond is not None and cond.get("status") == "True"
    result.desired[STACK_KEY] = DesiredResource(stack, "True" if ready else "False")
    if cond is None:
        result.condition(
            c.CONDITION_SERVING_STACK_READY,
            False,
            ServingStackReadyReason.WAITING_FOR_CLUSTER,
            f"waiting for ServingStack {c.SYSTEM_NAMESPACE}/{name}",
        )
    else:
        reason = str(cond.get("reason") or ServingStackReadyReason.RELEASE_NOT_READY)
        message = str(cond.get("message") or "")
        result.condition(c.CONDITION_SERVING_STACK_READY, ready, reason, message)
    stack_view = read_serving_stack(observed)
    address = stack_view.status.gateway_address if stack_view.status else None
    return ready, address


def capacity(
    result: ComposeResult,
    spec: InferenceClusterSpec,
    pools: list[GPUPool],
    view: ProvisionedClusterView,
) -> None:
    """Publish only the nodes up of a stocked-out pool; set InsufficientGPUCapacity."""
    messages = stockout_messages(view)
    by_name = {p.name: p for p in spec.pools}
    for published in pools:
        pool = by_name.get(published.name)
        if pool is not None:
            published.nodes = min(published.nodes, published_nodes(view, pool))
            note = stockout_message(view, pool.name)
            # The scheduler's explanation says why this pool is short.
            published.capacity_note = f"cloud stock-out: {note}" if note else None
    if messages:
        message = "; ".join(messages)
        result.condition(
            c.CONDITION_INSUFFICIENT_GPU_CAPACITY,
            True,
            InsufficientGPUCapacityReason.STOCK_OUT,
            message,
        )
        result.warn(str(InsufficientGPUCapacityReason.STOCK_OUT), message)
        return
    result.condition(
        c.CONDITION_INSUFFICIENT_GPU_CAPACITY,
        False,
        InsufficientGPUCapacityReason.CAPACITY_AVAILABLE,
        "no pool reports a cloud stock-out",
    )


def inventory_config(spec: InferenceClusterSpec) -> InventoryConfig:
    """`spec.servingStack.inventory`, defaulted."""
    stack = spec.serving_stack
    return (stack.inventory if stack is not None else None) or InventoryConfig()


def observes_inventory(spec: InferenceClusterSpec) -> bool:
    """Whether an inventory agent runs: the stack's, unless disabled; with the stack
    disabled, only one the platform team runs and declares with `inventory.enabled`."""
    stack = spec.serving_stack
    if stack is None:
        return True
    if stack.inventory is not None:
        return stack.inventory.enabled
    return stack.enabled


def observe(
    inp: ComposeInput, result: ComposeResult, name: str, spec: InferenceClusterSpec, pc: str | None
) -> tuple[InventorySummary | None, tuple[HardwareDriftReason, str]]:
    """Compose the inventory observation; return its summary, or why there is none."""
    if not observes_inventory(spec):
        return None, (
            HardwareDriftReason.NOT_OBSERVED,
            "no inventory agent reports this cluster: spec.servingStack.inventory.enabled is "
            "false (or the serving stack is disabled and the inventory is not enabled)",
        )
    observed = inp.observed.get(INVENTORY_KEY)
    if pc is None and observed is None:
        return None, (HardwareDriftReason.NOT_OBSERVED, "waiting for the cluster to be reachable")
    # Kept while the cluster is unreachable: it only observes, and its last
    # answer is still the best one.
    obj = inventory_observation(name, pc) if pc is not None else as_desired(observed or {})
    result.desired[INVENTORY_KEY] = DesiredResource(obj, "True" if observed else "False")
    reading = read_observed_inventory(observed)
    if reading.summary is not None:
        return reading.summary, (HardwareDriftReason.NO_DRIFT, "")
    missing = HardwareDriftReason.NOT_OBSERVED
    reason = missing if reading.missing else HardwareDriftReason.INVENTORY_INVALID
    return None, (reason, reading.problem)


def freshness(
    inp: ComposeInput,
    result: ComposeResult,
    spec: InferenceClusterSpec,
    inventory: InventorySummary | None,
) -> InventorySummary | None:
    """InventoryFresh from the report's age at this call; a stale report loses its signals.

    Judged only when the call's time is known (`ComposeInput.now`) and the report
    reads. A stale report keeps its pools (HardwareDrift compares them; nothing
    newer exists) but publishes no unschedulable replica and no engine signal:
    neither may move or scale a replica on what the agent saw long ago.
    """
    now = epoch_seconds(inp.now or "")
    at = epoch_seconds(inventory.observed_at) if inventory is not None else None
    if inventory is None or now is None or at is None:
        return inventory
    config = inventory_config(spec)
    bound = stale_after(parse_duration(config.interval), config.engine_metrics)
    age = now - at
    if age <= bound:
        result.condition(
            c.CONDITION_INVENTORY_FRESH,
            True,
            InventoryFreshReason.FRESH,
            # Not its age: a message that changed at every call would be a
            # status write at every call.
            f"the inventory agent reported at {inventory.observed_at}, within the {bound} s "
            f"its {config.interval} interval allows",
        )
        return inventory
    message = (
        f"no report from the inventory agent since observedAt {inventory.observed_at}, "
        f"past the {bound} s its {config.interval} interval allows: its unschedulable "
        "replicas and engine signals are not used until it reports again; check Deployment "
        f"{c.INVENTORY_NAMESPACE}/{c.INVENTORY_CONFIGMAP} on the cluster (its log names the "
        "call that fails)"
    )
    result.condition(c.CONDITION_INVENTORY_FRESH, False, InventoryFreshReason.STALE, message)
    result.warn(str(InventoryFreshReason.STALE), message)
    return inventory.model_copy(update={"unschedulable": [], "replicas": None})


# What provider-kubernetes says when it cannot reach a cluster's API server at
# all (as opposed to an object it could not read or write there).
UNREACHABLE_ERRORS = (
    "connection refused",
    "connection reset",
    "i/o timeout",
    "no such host",
    "no route to host",
    "tls handshake timeout",
    "context deadline exceeded",
    "dial tcp",
)


def reachability(inp: ComposeInput, result: ComposeResult) -> bool | None:
    """Whether the cluster's API server answers, from the inventory observation's last poll.

    The Observe-only Object of the agent's ConfigMap is observed at each write
    it watches and, its readiness never met (`inventory.PROBE`), every 30 s
    whatever the provider's `--poll`, so its `Synced` says within about 30 s
    whether provider-kubernetes reached the cluster: a connection error is an
    unreachable API server (False); any other answer is an answering one (True).
    Without that Object there is no probe (None, and no `Reachable` condition).
    """
    observed = inp.observed.get(INVENTORY_KEY)
    if observed is None:
        return None  # no probe: the condition is left out rather than guessed
    synced = condition(observed, c.CONDITION_SYNCED) or {}
    message = str(synced.get("message") or "")
    if synced.get("status") == "False" and any(e in message.lower() for e in UNREACHABLE_ERRORS):
        result.condition(
            c.CONDITION_REACHABLE,
            False,
            ReachableReason.UNREACHABLE,
            f"the cluster's API server did not answer: {message[:400]}; no new replica is "
            "placed here until it does, and the replicas here are kept",
        )
        result.warn(str(ReachableReason.UNREACHABLE), message[:400])
        return False
    result.condition(c.CONDITION_REACHABLE, True, ReachableReason.REACHABLE, "")
    return True


def drift(
    result: ComposeResult,
    status: InferenceClusterStatus,
    pools: list[GPUPool],
    inventory: InventorySummary | None,
    why: tuple[HardwareDriftReason, str],
) -> None:
    """HardwareDrift from the inventory's device shapes; its unschedulable replicas in status."""
    if inventory is None:
        result.condition(c.CONDITION_HARDWARE_DRIFT, None, why[0], why[1])
        if why[0] == HardwareDriftReason.INVENTORY_INVALID:
            result.warn(str(why[0]), why[1])
        return
    status.unschedulable_replicas = list(inventory.unschedulable) or None
    status.replica_signals = list(inventory.replicas or []) or None
    found = [
        d
        for p in pools
        if p.devices
        for d in hardware_drift(p.name, p.devices, inventory.pool(p.name))
    ]
    if not found:
        result.condition(
            c.CONDITION_HARDWARE_DRIFT,
            False,
            HardwareDriftReason.NO_DRIFT,
            "the published ResourceSlices match every pool's class",
        )
        return
    message = "; ".join(d.describe() for d in found)
    result.condition(c.CONDITION_HARDWARE_DRIFT, True, HardwareDriftReason.DRIFTED, message)
    result.warn(str(HardwareDriftReason.DRIFTED), message)
