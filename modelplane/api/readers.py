"""One tolerant, typed reader per kind: how one kind reads what another publishes.

Observed objects arrive as raw dicts written by other composers and
controllers, and may be partial or malformed. Every module outside `api`
reads another kind's spec or status through these readers, never by dict key:

- `read_inference_cluster(obj)` → `ObservedInferenceCluster` (labels, taints,
  readiness, `status.gpuPools`, `providerConfigName`, `gatewayAddress`, the
  spec blocks a replica needs);
- `read_model_replica(obj)` → `ObservedModelReplica` (identity, roles, readiness);
- `read_model_deployment(obj)` → `ObservedModelDeployment` (the typed status).

A malformed entry is handled here, in one place, and kept as *unknown* with a
reason (`modelplane.api.reasons.UnknownReason`) rather than silently dropped:
an unreadable pool is not an absent pool, and a replica on it must be kept.
Readers never raise on any input.

The wire names come from the status models themselves (`_wire`), so the
writers (which construct those models) and the readers cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from modelplane.api import constants as c
from modelplane.api.autoscaling import ReplicaSignals, read_replica_signals, report_key
from modelplane.api.backends import DECLARED
from modelplane.api.common import Condition, format_validation_error
from modelplane.api.frozen import FrozenDict, memoized
from modelplane.api.inference_class import Device
from modelplane.api.inference_cluster import (
    DEFAULT_POD_SECURITY,
    POD_SECURITY_LEVELS,
    GatewayRef,
    GPUPool,
    InferenceClusterSpec,
    InferenceClusterStatus,
    Packing,
    Pool,
    SchedulingConfig,
    ServingStackConfig,
    StorageConfig,
    Taint,
    UnschedulableReplica,
)
from modelplane.api.model_deployment import (
    ModelDeploymentStatus,
    Placement,
    Topology,
    Workers,
)
from modelplane.api.model_endpoint import WorkloadBackendRef
from modelplane.api.model_replica import (
    ModelReplicaSpec,
    ModelReplicaStatus,
    ResolvedDeviceRequest,
)
from modelplane.api.objects import condition_status, is_condition_true, label_value, replica_base
from modelplane.api.reasons import UnknownReason
from modelplane.api.roles import DISAGGREGATED_ROLES, is_disaggregated, role_fields
from modelplane.api.serving_stack import InventoryConfig

T = TypeVar("T")


# Observed data beyond the API's own limits is clamped to them, so the work a
# reader's caller does stays bounded by what the XRD could ever admit.
def _limit(model: type[BaseModel], name: str) -> int:
    """The `le` bound the API declares on an integer field."""
    for item in model.model_fields[name].metadata:
        bound = getattr(item, "le", None)
        if isinstance(bound, int):
            return bound
    raise LookupError(f"{model.__name__}.{name} declares no upper bound")


MAX_WORKERS = _limit(Workers, "count")
MAX_TOPOLOGY = _limit(Topology, "pipeline")
MAX_REQUEST_COUNT = _limit(ResolvedDeviceRequest, "count")


def _wire(model: type[BaseModel], name: str) -> str:
    """The wire (camelCase) name of a status model's field."""
    alias = model.model_fields[name].alias
    return alias if alias is not None else name


_GPU_POOLS = _wire(InferenceClusterStatus, "gpu_pools")
GPU_POOLS_PATH = f"status.{_GPU_POOLS}"
"""Where an InferenceCluster publishes its pools (for messages that name the field)."""
_PROVIDER_CONFIG = _wire(InferenceClusterStatus, "provider_config_name")
_GATEWAY_ADDRESS = _wire(InferenceClusterStatus, "gateway_address")
_UNSCHEDULABLE = _wire(InferenceClusterStatus, "unschedulable_replicas")
_SIGNALS = _wire(InferenceClusterStatus, "replica_signals")
_POOL_NAME = _wire(GPUPool, "name")
_POOL_CLASS = _wire(GPUPool, "class_name")
_POOL_NODES = _wire(GPUPool, "nodes")
_POOL_DEVICES = _wire(GPUPool, "devices")
_POOL_REASON = _wire(GPUPool, "reason")
_POOL_MESSAGE = _wire(GPUPool, "message")
_POOL_NOTE = _wire(GPUPool, "capacity_note")
_POOL_PRICE = _wire(GPUPool, "price_per_device_hour")
_POOL_CAPACITY = _wire(GPUPool, "capacity_type")


def _is_map(value: Any) -> bool:
    # Observed objects are dicts (plain, or read-only subclasses); the ABC check is the
    # slow fallback.
    return isinstance(value, (dict, Mapping))


def _map(value: Any) -> Mapping[str, Any]:
    return value if _is_map(value) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def as_int(value: Any, default: int) -> int:
    """An integer field of observed state (protobuf Structs carry numbers as floats)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


def _bounded(value: Any, default: int, limit: int) -> int:
    return min(limit, max(1, as_int(value, default)))


# ── InferenceCluster ────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Unknown:
    """Why a published entry cannot be verified: a reason code and what to fix."""

    reason: UnknownReason
    message: str


class ObservedPool(NamedTuple):
    """A pool an InferenceCluster publishes in `status.gpuPools`.

    `devices` are the class's devices in wire form (what the DRA CEL layer
    evaluates). When `unknown` is set the pool is published but cannot be
    verified: its devices are not to be matched against. (A NamedTuple: fleets
    publish thousands of pools and this is read on every reconcile.)
    """

    name: str
    class_name: str
    nodes: int
    devices: Sequence[Mapping[str, Any]] = ()
    unknown: Unknown | None = None
    note: str | None = None  # why it offers fewer nodes than asked (a stock-out)
    price: float | None = None  # per device-hour; None when not declared (or unreadable)
    # Spot capacity the cloud may reclaim: True, False, or None when capacityType does
    # not read (no new replica without allowSpot goes there; none is evicted for it).
    spot: bool | None = False

    @property
    def known(self) -> bool:
        """Whether the pool's devices and size can be trusted."""
        return self.unknown is None


@dataclass(frozen=True)
class StuckReplica:
    """A replica the cluster reports as unschedulable past its grace period."""

    replica: str
    pool: str | None
    pods: int
    since: str
    message: str


def read_unschedulable(status: Mapping[str, Any]) -> dict[str, StuckReplica]:
    """`status.unschedulableReplicas` by `report_key`; malformed entries are skipped."""
    out: dict[str, StuckReplica] = {}
    for raw in _list(status.get(_UNSCHEDULABLE)):
        entry = _map(raw)
        replica = _str(entry.get(_wire(UnschedulableReplica, "replica")))
        if replica is None:
            continue
        namespace = _str(entry.get(_wire(UnschedulableReplica, "namespace")))
        out[report_key(replica, namespace)] = StuckReplica(
            replica=replica,
            pool=_str(entry.get(_wire(UnschedulableReplica, "pool"))),
            pods=max(1, as_int(entry.get(_wire(UnschedulableReplica, "pods")), 1)),
            since=_str(entry.get(_wire(UnschedulableReplica, "since"))) or "",
            message=_str(entry.get(_wire(UnschedulableReplica, "message"))) or "",
        )
    return out


@dataclass(frozen=True)
class ObservedInferenceCluster:
    """An InferenceCluster as other kinds see it."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    ready: bool
    pools: tuple[ObservedPool, ...]  # sorted by name; unknown pools included
    provider_config_name: str | None = None
    gateway_address: str | None = None
    gateway: GatewayRef | None = None
    scheduling: SchedulingConfig | None = None
    # Entries that could not be read at all (no pool name, unreadable taints or
    # spec blocks), each "field path: why". A replica whose pinned pool is not
    # found on a cluster with unreadable pool entries cannot be judged either.
    unreadable: tuple[str, ...] = ()
    scheduling_error: str | None = None  # spec.scheduling present but invalid
    storage: StorageConfig | None = None  # spec.storage (model caches' storage class)
    # Serving backends the cluster runs (`read_backends`); None when
    # spec.servingStack cannot be read, so support cannot be verified.
    backends: frozenset[str] | None = frozenset({c.BACKEND_NATIVE})
    # Whether it serves InferencePools (`read_inference_pools`), which every
    # disaggregated replica routes through; None when that cannot be read.
    inference_pools: bool | None = True
    # Replicas whose pods the cluster could not schedule past the grace period
    # (`status.unschedulableReplicas`), by replica name.
    unschedulable: Mapping[str, StuckReplica] = field(default_factory=dict)
    # `spec.servingStack.modelplaneImage`: what Modelplane's programs run there
    # instead of the function's image; None when absent or not an image.
    modelplane_image: str | None = None
    # Engine signals per replica (`status.replicaSignals`), by pod label value.
    signals: Mapping[str, ReplicaSignals] = field(default_factory=dict)
    # Whether its inventory agent scrapes the engines' metrics
    # (`read_engine_metrics`): False means it reports no engine signal at all;
    # None when spec.servingStack cannot be read (or was not read).
    engine_metrics: bool | None = None
    # `spec.podSecurity`: the Pod Security level of its namespaces; a value that
    # does not read is `restricted`, the strictest (fail closed).
    pod_security: str = DEFAULT_POD_SECURITY
    # `spec.pools[].maxNodeCount` by pool name, for the pools that set one: the
    # published `nodes` already count up to it, so growing such a pool means
    # raising it (the what-if names it). Entries that do not read are left out.
    ceilings: Mapping[str, int] = field(default_factory=dict)

    # What later layers derive from this reading alone (the scheduler's interned
    # pools), by their key. A reading of a decoded object is made once per
    # object version and never changes, so neither does anything derived from
    # it; not part of the reading's value (equality, repr).
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def signal(self, replica: str, namespace: str) -> ReplicaSignals | None:
        """The engine signals the cluster reports for ModelReplica `namespace/replica`, if any.

        Only pods in the replica's own namespace speak for it: a report on pods
        elsewhere that carry its label is someone else's (an agent that reports
        no namespace is read as before).
        """
        if not self.signals:
            return None
        base = replica_base(replica)
        found = self.signals.get(report_key(base, namespace))
        return found if found is not None else self.signals.get(base)

    @cached_property  # asked per pool, per call: read once per reading
    def packing(self) -> Packing:
        """How the cluster packs pods on a pool's nodes (`spec.scheduling.packing`).

        Absent, or a scheduling block that does not read: the default
        kube-scheduler's, Spread — the assumption that never over-promises room
        for a large replica.
        """
        config = self.scheduling if self.scheduling is not None else SchedulingConfig()
        return config.effective_packing

    def stuck(self, replica: str, namespace: str) -> StuckReplica | None:
        """What the cluster reports about ModelReplica `namespace/replica` being unschedulable.

        The inventory agent reports a replica by its pods' `modelplane.ai/replica`
        label (`objects.replica_base` of the ModelReplica's name) and their
        namespace: only pods in the replica's own namespace speak for it.
        """
        if not self.unschedulable:
            return None
        base = replica_base(replica)
        found = self.unschedulable.get(report_key(base, namespace))
        return found if found is not None else self.unschedulable.get(base)

    @property
    def published(self) -> bool:
        """Whether `status.gpuPools` lists any pool (known or unknown)."""
        return bool(self.pools)

    @cached_property
    def has_unknown_pools(self) -> bool:
        """Whether some published pool is unknown."""
        return any(p.unknown is not None for p in self.pools)

    @property
    def pools_unreadable(self) -> bool:
        """Whether some `status.gpuPools` entry could not even be named."""
        return any(u.startswith(f"status.{_GPU_POOLS}") for u in self.unreadable)

    def pool(self, name: str) -> ObservedPool | None:
        """The published pool called `name`, or None."""
        return next((p for p in self.pools if p.name == name), None)


def _unknown_pool(name: str, class_name: str, nodes: int, message: str) -> ObservedPool:
    return ObservedPool(name, class_name, nodes, (), Unknown(UnknownReason.UNREADABLE, message))


def _read_unknown(raw: Mapping[str, Any], name: str, class_name: str, nodes: int) -> ObservedPool:
    """A pool the cluster composer published as unknown, with its reason."""
    reason = raw.get(_POOL_REASON)
    try:
        why = UnknownReason(str(reason))
    except ValueError:
        why = UnknownReason.UNREADABLE
    message = raw.get(_POOL_MESSAGE)
    text = message if isinstance(message, str) else f"pool {name} is unknown ({reason})"
    return ObservedPool(name, class_name, max(0, nodes), (), Unknown(why, text))


def _read_pool(raw: Mapping[str, Any], name: str, i: int) -> ObservedPool:
    """One named `status.gpuPools` entry; anything malformed makes it unknown.

    Fleets publish thousands of pools and every reconcile reads them all, so
    the common case (plain dicts, protobuf's float numbers) is checked inline.
    """
    class_name = raw.get(_POOL_CLASS)
    if type(class_name) is not str:
        class_name = ""
    nodes = raw.get(_POOL_NODES)
    if type(nodes) is not int:  # decoded counts are ints, or protobuf's floats
        nodes = int(nodes) if type(nodes) is float and nodes.is_integer() else as_int(nodes, -1)
    if raw.get(_POOL_REASON) is not None:
        return _read_unknown(raw, name, class_name, nodes)
    if nodes < 0:
        why = f"status.{_GPU_POOLS}[{i}].{_POOL_NODES}: not a count of nodes"
        return _unknown_pool(name, class_name, 0, why)
    devices = raw.get(_POOL_DEVICES)
    if isinstance(devices, list):  # a read-only FrozenList from the decode cache too
        for d in devices:
            if type(d) is not dict and not isinstance(d, Mapping):
                break
        else:
            note = raw.get(_POOL_NOTE)
            note = note if type(note) is str else None
            return ObservedPool(name, class_name, nodes, devices, None, note, *_pricing(raw))
    why = f"status.{_GPU_POOLS}[{i}].{_POOL_DEVICES}: not a device list"
    return _unknown_pool(name, class_name, nodes, why)


_SPOT: Mapping[str | None, bool] = MappingProxyType({None: False, "OnDemand": False, "Spot": True})
# What a pool that declares neither a price nor a capacity type reads as (most do).
_UNPRICED: tuple[float | None, bool | None] = (None, False)


def _pricing(raw: Mapping[str, Any]) -> tuple[float | None, bool | None]:
    """A pool's price per device-hour (None unless a non-negative number) and whether it is Spot."""
    price = raw.get(_POOL_PRICE)
    capacity = raw.get(_POOL_CAPACITY)
    if price is None and capacity is None:
        return _UNPRICED
    spot = _SPOT.get(capacity) if capacity is None or isinstance(capacity, str) else None
    if not isinstance(price, (int, float)) or isinstance(price, bool):
        return None, spot
    value = float(price)
    return (value if 0 <= value < math.inf else None), spot  # NaN fails too


def _read_pools(status: Mapping[str, Any]) -> tuple[tuple[ObservedPool, ...], list[str]]:
    pools: dict[str, ObservedPool] = {}
    unreadable: list[str] = []
    raw = status.get(_GPU_POOLS)
    if raw is not None and not isinstance(raw, list):
        unreadable.append(f"status.{_GPU_POOLS}: not a list")
    for i, entry in enumerate(_list(raw)):
        is_map = type(entry) is dict or isinstance(entry, Mapping)
        name = entry.get(_POOL_NAME) if is_map else None
        if type(name) is not str or not name:
            unreadable.append(f"status.{_GPU_POOLS}[{i}]: no pool name")
        elif name not in pools:  # names are unique; keep the first
            pools[name] = _read_pool(entry, name, i)
    return tuple([pools[k] for k in sorted(pools)]), unreadable


def _read_taints(spec: Mapping[str, Any], unreadable: list[str]) -> tuple[Taint, ...]:
    taints = []
    for i, raw in enumerate(_list(spec.get("taints"))):
        try:
            taints.append(Taint.model_validate(raw))
        except ValidationError as err:
            unreadable.append(format_validation_error(err, f"spec.taints[{i}]"))
    return tuple(taints)


def _read_block(
    model: type[GatewayRef] | type[SchedulingConfig] | type[StorageConfig], raw: Any, path: str
) -> tuple[Any, str | None]:
    if raw is None:
        return None, None
    try:
        return model.model_validate(raw), None
    except ValidationError as err:
        return None, format_validation_error(err, path)


_SCHEDULING = _wire(InferenceClusterSpec, "scheduling")
_GATEWAY = _wire(InferenceClusterSpec, "gateway")
_STORAGE = _wire(InferenceClusterSpec, "storage")
_SCHEDULING_PATH, _GATEWAY_PATH, _STORAGE_PATH = (
    f"spec.{_SCHEDULING}",
    f"spec.{_GATEWAY}",
    f"spec.{_STORAGE}",
)
_SERVING_STACK = _wire(InferenceClusterSpec, "serving_stack")
_POD_SECURITY = _wire(InferenceClusterSpec, "pod_security")
# The setting that says whether a cluster's inventory agent scrapes engine metrics.
ENGINE_METRICS_SETTING = (
    f"spec.{_SERVING_STACK}.{_wire(ServingStackConfig, 'inventory')}."
    f"{_wire(InventoryConfig, 'engine_metrics')}"
)
# The setting that says whether a cluster serves InferencePools.
INFERENCE_POOL_SETTING = (
    f"spec.{_SERVING_STACK}.{_wire(ServingStackConfig, 'inference_pool')}.enabled"
)


def read_backends(spec: Mapping[str, Any]) -> tuple[frozenset[str] | None, str | None]:
    """The serving backends a cluster runs, from its `spec.servingStack`.

    Each backend declared in `api.backends` whose enabling setting is true
    (Native needs none; KServe `servingStack.kserve.enabled`, set when the
    serving stack installs KServe's LLMInferenceService controller, or the platform
    team did when the stack is disabled). An
    unreadable block gives None (unknown) and the error naming the field.
    """
    return _backends(*_read_stack_config(spec))


def _backends(
    stack: ServingStackConfig | None, error: str | None
) -> tuple[frozenset[str] | None, str | None]:
    if error is not None:
        return None, error
    return frozenset(b.name for b in DECLARED.values() if b.enabled(stack)), None


def _read_stack_config(spec: Mapping[str, Any]) -> tuple[ServingStackConfig | None, str | None]:
    raw = spec.get(_SERVING_STACK)
    if raw is None:
        return None, None
    try:
        return ServingStackConfig.model_validate(raw), None
    except ValidationError as err:
        return None, format_validation_error(err, f"spec.{_SERVING_STACK}")


def read_engine_metrics(spec: Mapping[str, Any]) -> bool | None:
    """Whether a cluster's inventory agent scrapes its engines' metrics (ENGINE_METRICS_SETTING).

    Only an agent that runs and has `engineMetrics: true` reports engine signals
    (off by default, as is an agent the disabled stack does not run); None when
    `spec.servingStack` cannot be read.
    """
    return _engine_metrics(*_read_stack_config(spec))


def _engine_metrics(stack: ServingStackConfig | None, error: str | None) -> bool | None:
    if error is not None:
        return None
    inventory = stack.inventory if stack is not None else None
    return inventory is not None and inventory.enabled and inventory.engine_metrics


def not_scraping(
    clusters: Mapping[str, ObservedInferenceCluster], names: Iterable[str]
) -> tuple[str, ...]:
    """The clusters among `names` whose inventory agents scrape no engine metrics, sorted.

    Only a cluster known not to scrape (`engine_metrics` False) is named; one
    whose setting cannot be read is not.
    """
    return tuple(
        sorted({n for n in names if (cl := clusters.get(n)) and cl.engine_metrics is False})
    )


NOT_SCRAPING_SHOWN = 8
"""How many clusters `not_scraping_text` names before it says how many more."""


def not_scraping_text(names: Sequence[str]) -> str:
    """Why clusters report no engine signal, naming them and the setting that turns it on."""
    shown = ", ".join(names[:NOT_SCRAPING_SHOWN])
    if len(names) > NOT_SCRAPING_SHOWN:
        shown += f" and {len(names) - NOT_SCRAPING_SHOWN} more"
    if len(names) == 1:
        return (
            f"the inventory agent of cluster {shown} does not scrape engine metrics, so it "
            f"reports no engine signal: set {ENGINE_METRICS_SETTING}: true on that "
            "InferenceCluster"
        )
    return (
        f"the inventory agents of clusters {shown} do not scrape engine metrics, so they report "
        f"no engine signal: set {ENGINE_METRICS_SETTING}: true on those InferenceClusters"
    )


def read_inference_pools(spec: Mapping[str, Any]) -> bool | None:
    """Whether a cluster serves InferencePools (`spec.servingStack.inferencePool`, on by
    default); None when its `spec.servingStack` cannot be read."""
    return _inference_pools(*_read_stack_config(spec))


def _inference_pools(stack: ServingStackConfig | None, error: str | None) -> bool | None:
    if error is not None:
        return None
    return stack is None or stack.serves_inference_pools


def read_inference_cluster(obj: Mapping[str, Any]) -> ObservedInferenceCluster | None:
    """Read an InferenceCluster; None only when it has no name.

    Pools are read from `status.gpuPools`: a named entry that is malformed is
    kept as an unknown pool (reason `Unreadable`), one published as unknown by
    the cluster composer keeps its reason; an entry without a name is listed
    in `unreadable`. Never raises.
    """
    # A decoded object of the function's cache is read once per version.
    return memoized(obj, "read_inference_cluster", _read_inference_cluster)


def read_pod_security(spec: Mapping[str, Any]) -> str:
    """A cluster spec's Pod Security level: the default when unset, `restricted` when
    it is not one of the levels (a level that does not read never loosens a check)."""
    raw = spec.get(_POD_SECURITY)
    if raw is None:
        return DEFAULT_POD_SECURITY
    return raw if raw in POD_SECURITY_LEVELS else "restricted"


def read_published_pools(obj: Mapping[str, Any]) -> dict[str, ObservedPool]:
    """An InferenceCluster's published pools by name, read as `read_inference_cluster`
    reads them, without reading (and validating) the rest of it; none without a name."""
    if _str(_map(obj.get("metadata")).get("name")) is None:
        return {}
    pools, _ = _read_pools(_map(obj.get("status")))
    return {p.name: p for p in pools}


def _read_inference_cluster(obj: Mapping[str, Any]) -> ObservedInferenceCluster | None:
    meta = _map(obj.get("metadata"))
    name = _str(meta.get("name"))
    if name is None:
        return None
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    pools, unreadable = _read_pools(status)
    taints = _read_taints(spec, unreadable)
    gateway, gateway_error = _read_block(GatewayRef, spec.get(_GATEWAY), _GATEWAY_PATH)
    if gateway_error is not None:
        unreadable.append(gateway_error)
    scheduling, scheduling_error = _read_block(
        SchedulingConfig, spec.get(_SCHEDULING), _SCHEDULING_PATH
    )
    storage, storage_error = _read_block(StorageConfig, spec.get(_STORAGE), _STORAGE_PATH)
    if storage_error is not None:
        unreadable.append(storage_error)
    # `spec.servingStack` validated once for the three readings made of it.
    stack = _read_stack_config(spec)
    backends, backends_error = _backends(*stack)
    if backends_error is not None:
        unreadable.append(backends_error)
    # A cluster whose inventory is stale publishes none of its reports; should a
    # status still hold some, no decision rests on them either.
    stale = condition_status(obj, c.CONDITION_INVENTORY_FRESH) == "False"
    # Read-only containers: a reading is remembered on its object (`memoized`) and
    # handed to every call that sees that object version.
    return ObservedInferenceCluster(
        name=name,
        labels=FrozenDict({str(k): str(v) for k, v in _map(meta.get("labels")).items()}),
        taints=taints,
        ready=is_condition_true(obj, c.CONDITION_READY),
        pools=pools,
        provider_config_name=_str(status.get(_PROVIDER_CONFIG)),
        gateway_address=_str(status.get(_GATEWAY_ADDRESS)),
        gateway=gateway,
        scheduling=scheduling,
        unreadable=tuple(unreadable),
        scheduling_error=scheduling_error,
        storage=storage,
        backends=backends,
        inference_pools=_inference_pools(*stack),
        unschedulable=_frozen({} if stale else read_unschedulable(status)),
        signals=_frozen({} if stale else read_replica_signals(status.get(_SIGNALS))),
        engine_metrics=_engine_metrics(*stack),
        pod_security=read_pod_security(spec),
        modelplane_image=read_modelplane_image(spec),
        ceilings=read_ceilings(spec),
    )


# Most clusters report no stuck replica and no engine signal: their readings share
# one empty map rather than each building its own.
_NOTHING: Mapping[str, Any] = FrozenDict()


def _frozen(entries: dict[str, T]) -> Mapping[str, T]:
    return FrozenDict(entries) if entries else _NOTHING


_POOLS = _wire(InferenceClusterSpec, "pools")
_POOL_SPEC_NAME = _wire(Pool, "name")
_POOL_CEILING = _wire(Pool, "max_node_count")


_NO_CEILINGS: Mapping[str, int] = FrozenDict()


def read_ceilings(spec: Mapping[str, Any]) -> Mapping[str, int]:
    """Each pool's autoscaling ceiling (`spec.pools[].maxNodeCount`) by pool name, for
    the pools that set one; an entry without a name or a count is left out."""
    out: dict[str, int] = {}
    for raw in _list(spec.get(_POOLS)):
        # Every cold read of every cluster passes here, and most pools set no
        # ceiling: those cost one lookup.
        if type(raw) is not dict and not isinstance(raw, Mapping):
            continue
        raw_ceiling = raw.get(_POOL_CEILING)
        if raw_ceiling is None:
            continue
        name, ceiling = raw.get(_POOL_SPEC_NAME), as_int(raw_ceiling, -1)
        if isinstance(name, str) and ceiling >= 0:
            out.setdefault(name, ceiling)
    return FrozenDict(out) if out else _NO_CEILINGS


def read_modelplane_image(spec: Mapping[str, Any]) -> str | None:
    """A cluster's `spec.servingStack.modelplaneImage`; None when absent or not an image."""
    image = _map(spec.get(_SERVING_STACK)).get("modelplaneImage")
    if isinstance(image, str) and re.match(c.IMAGE_PATTERN, image):
        return image
    return None


@dataclass(frozen=True)
class ObservedDevice:
    """One device of a published pool, as the scheduler counts it."""

    name: str
    dra: bool  # claimed through DRA (False: Synthetic, matched but never claimed)
    driver: str
    device_class_name: str
    count: int
    wire: Mapping[str, Any]  # the device as published, for the DRA CEL layer


_DEVICE_NAME = _wire(Device, "name")
_DEVICE_CLAIM = _wire(Device, "claim")
_DEVICE_CLASS = _wire(Device, "device_class_name")
_DEVICE_COUNT = _wire(Device, "count")


def read_devices(devices: Sequence[Any]) -> tuple[ObservedDevice, ...]:
    """Read a pool's published devices (`ObservedPool.devices`); never raises.

    A device without a name is called `device-<i>`; a malformed count counts 1
    (a negative one 0); a device that is not a mapping has no attributes.
    """
    out = []
    for i, raw in enumerate(devices):
        d = raw if isinstance(raw, Mapping) else {}
        out.append(
            ObservedDevice(
                name=str(d.get(_DEVICE_NAME, f"device-{i}")),
                dra=d.get(_DEVICE_CLAIM, "DRA") == "DRA",
                driver=str(d.get(_wire(Device, "driver")) or ""),
                device_class_name=str(d.get(_DEVICE_CLASS) or ""),
                count=max(0, as_int(d.get(_DEVICE_COUNT), 1)),
                wire=d,
            )
        )
    return tuple(out)


# ── ModelReplica ────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ObservedRequest:
    """One resolved DRA request of an observed replica (what it holds in its pool)."""

    device_class_name: str
    count: int
    selectors: tuple[str, ...]


@dataclass(frozen=True)
class ObservedRole:
    """One role of an observed replica: its pool, resolved requests and workers.

    `workers` and `nodes_per_worker` are clamped to the API's limits, so no
    observed value can make a caller's work unbounded.
    """

    role: str
    pool: str
    requests: tuple[ObservedRequest, ...]
    nodes_per_worker: int
    workers: int
    raw_requests: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def request_key(self) -> tuple[tuple[str, int, tuple[str, ...]], ...]:
        """The requests as a hashable key (for caching what they hold in a pool)."""
        return tuple((r.device_class_name, r.count, r.selectors) for r in self.requests)


class ReplayOrder(NamedTuple):
    """The order replicas are replayed in when they contend for capacity.

    Compared as a tuple, field by field: Ready replicas first, then those with
    a creation time, oldest first, then by namespace and name (a total order,
    so every replay is deterministic).
    """

    not_ready: int  # 0 for a Ready replica
    no_created: int  # 0 when the creation time is known
    created: str  # creationTimestamp: RFC 3339 in UTC, so text order is time order
    namespace: str
    name: str


UNKNOWN_ORDER = ReplayOrder(1, 1, "", "", "")
"""The order of a replica nothing is known about: after every known one."""


@dataclass(frozen=True)
class ObservedModelReplica:
    """A ModelReplica as the scheduler and the deployment composer see it."""

    namespace: str
    name: str
    deployment: str
    cluster: str
    index: int  # -1 when the replica names none
    ready: bool
    created: str
    roles: tuple[ObservedRole, ...]
    deployment_is_label: bool = False  # `deployment` is a label value, not the name
    endpoint: str | None = None
    workload_namespace: str | None = None
    # status.backendRef: what its route sends to on its cluster (None: absent or malformed)
    backend_ref: WorkloadBackendRef | None = None
    priority: str | None = None  # spec.priority: a PriorityClass name
    preempts: tuple[tuple[str, str], ...] = ()  # spec.preempts: (namespace, name) of each
    deleting: bool = False  # metadata.deletionTimestamp is set: it is on its way out
    # What later layers derive from this reading alone (what it charges its pools), as
    # `ObservedInferenceCluster.derived`; never copied to another reading.
    derived: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def belongs_to(self, namespace: str, deployment: str) -> bool:
        """Whether this replica is one of deployment `namespace/deployment`."""
        if self.namespace != namespace:
            return False
        if self.deployment_is_label:
            return self.deployment == label_value(deployment)
        return self.deployment == deployment

    def role(self, name: str) -> ObservedRole | None:
        """The observed role called `name`, or None."""
        return next((r for r in self.roles if r.role == name), None)

    @cached_property  # sorted by, many times per call: built once per reading
    def order(self) -> ReplayOrder:
        """Contention order: Ready first, then oldest, then (namespace, name)."""
        return ReplayOrder(
            0 if self.ready else 1,
            0 if self.created else 1,
            self.created,
            self.namespace,
            self.name,
        )


_POOL_KEY = _wire(ModelReplicaSpec, "node_pool_name")
_REPLICA_ENDPOINT = _wire(ModelReplicaStatus, "endpoint")
_REPLICA_NAMESPACE = _wire(ModelReplicaStatus, "namespace")
_REPLICA_BACKEND_REF = _wire(ModelReplicaStatus, "backend_ref")
_REQUESTS_KEY = _wire(ModelReplicaSpec, "device_requests")
_WORKERS_KEY = _wire(ModelReplicaSpec, "workers")


def _read_request(raw: Mapping[str, Any]) -> ObservedRequest:
    selectors = tuple(
        str(s.get("cel"))
        for s in _list(raw.get("selectors"))
        if isinstance(s, Mapping) and s.get("cel")
    )
    return ObservedRequest(
        str(raw.get("deviceClassName") or ""),
        _bounded(raw.get("count"), 1, MAX_REQUEST_COUNT),
        selectors,
    )


def _read_role(spec: Mapping[str, Any], role: str) -> ObservedRole | None:
    fields = role_fields(spec, role)
    pool = _str(fields.get(_POOL_KEY))
    if pool is None:
        return None
    raw = tuple(r for r in _list(fields.get(_REQUESTS_KEY)) if isinstance(r, Mapping))
    workers = _map(fields.get(_WORKERS_KEY))
    topo = _map(workers.get("topology"))
    pipeline = _bounded(topo.get("pipeline"), 1, MAX_TOPOLOGY)
    data = _bounded(topo.get("data"), 1, MAX_TOPOLOGY)
    local = _bounded(topo.get("dataLocal"), 1, MAX_TOPOLOGY)
    return ObservedRole(
        role=role,
        pool=pool,
        requests=tuple(_read_request(r) for r in raw),
        nodes_per_worker=max(1, (pipeline * data) // local),
        workers=_bounded(workers.get("count"), 1, MAX_WORKERS),
        raw_requests=raw,
    )


def _read_roles(spec: Mapping[str, Any]) -> tuple[ObservedRole, ...]:
    names = DISAGGREGATED_ROLES if is_disaggregated(spec) else (c.ROLE_UNIFIED,)
    roles = (_read_role(spec, name) for name in names)
    return tuple(r for r in roles if r is not None)


def _identity(
    meta: Mapping[str, Any], spec: Mapping[str, Any], clusters_by_label: Mapping[str, str]
) -> tuple[str | None, str | None, bool]:
    labels = _map(meta.get("labels"))
    cluster = _str(spec.get("clusterName"))
    if cluster is None:
        label = labels.get(c.LABEL_CLUSTER)
        cluster = clusters_by_label.get(label, label) if isinstance(label, str) else None
    deployment = _str(spec.get("deploymentName"))
    is_label = deployment is None
    if is_label:
        value = labels.get(c.LABEL_DEPLOYMENT)
        deployment = value if isinstance(value, str) else None
    return cluster, deployment, is_label


def read_model_replica(
    obj: Mapping[str, Any], clusters_by_label: Mapping[str, str] | None = None
) -> ObservedModelReplica | None:
    """Read a ModelReplica; None when it names no cluster or deployment.

    The spec names the deployment and cluster in full; the labels carry them
    as label values (shortened when long), so a replica known only by its
    labels keeps the deployment's label value (`deployment_is_label`) and has
    its cluster looked up in `clusters_by_label` (label value → cluster name).
    A role without a pool is left out (the replica then names no pool). Never
    raises. A read-only object is read once (`memoized`) when its spec names
    its cluster, as `clusters_by_label` then plays no part.
    """
    if _str(_map(obj.get("spec")).get("clusterName")) is not None:
        return memoized(obj, "read_model_replica", _read_model_replica)
    return _read_model_replica(obj, clusters_by_label)


def _read_model_replica(
    obj: Mapping[str, Any], clusters_by_label: Mapping[str, str] | None = None
) -> ObservedModelReplica | None:
    meta, spec = _map(obj.get("metadata")), _map(obj.get("spec"))
    cluster, deployment, is_label = _identity(meta, spec, clusters_by_label or {})
    if cluster is None or deployment is None:
        return None
    labels = _map(meta.get("labels"))
    status = _map(obj.get("status"))
    created = meta.get("creationTimestamp")
    return ObservedModelReplica(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        deployment=deployment,
        cluster=cluster,
        index=as_int(spec.get("index"), as_int(labels.get(c.LABEL_REPLICA_INDEX), -1)),
        deployment_is_label=is_label,
        ready=is_condition_true(obj, c.CONDITION_READY),
        created=created if isinstance(created, str) else "",
        roles=memoized(spec, "model_replica_roles", _read_roles),
        endpoint=_str(status.get(_REPLICA_ENDPOINT)),
        workload_namespace=_str(status.get(_REPLICA_NAMESPACE)),
        backend_ref=_backend_ref(status.get(_REPLICA_BACKEND_REF)),
        priority=_str(spec.get("priority")),
        preempts=_preempts(spec.get("preempts")),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def _backend_ref(raw: Any) -> WorkloadBackendRef | None:
    """A replica's `status.backendRef`, or None when absent or malformed (the replica is
    then reached the way it was before it published one)."""
    if not _is_map(raw):
        return None
    try:
        return WorkloadBackendRef.model_validate(raw)
    except ValidationError:
        return None


def _preempts(raw: Any) -> tuple[tuple[str, str], ...]:
    """`spec.preempts` as (namespace, name) pairs; malformed entries name nothing."""
    pairs = ((_str(e.get("namespace")), _str(e.get("name"))) for e in _list(raw) if _is_map(e))
    return tuple(sorted((ns, n) for ns, n in pairs if ns and n))


# ── ModelDeployment ─────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ObservedModelDeployment:
    """A ModelDeployment's status as the CLI and the local views read it.

    `status` is the typed status; entries that did not validate are left out
    of it and listed in `unreadable` ("field path: why"), never silently.
    """

    namespace: str
    name: str
    status: ModelDeploymentStatus
    unreadable: tuple[str, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        """The status condition of `type_`, or None."""
        return next((x for x in self.status.conditions or () if x.type == type_), None)


def _tolerant_status(raw: Mapping[str, Any]) -> tuple[ModelDeploymentStatus, list[str]]:
    try:
        return ModelDeploymentStatus.model_validate(raw), []
    except ValidationError as err:
        problems = [format_validation_error(err, "status")]
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            ModelDeploymentStatus.model_validate({key: value})
        except ValidationError:
            if isinstance(value, list):
                kept[key] = [v for v in value if _entry_ok(key, v)]
            continue
        kept[key] = value
    try:
        return ModelDeploymentStatus.model_validate(kept), problems
    except ValidationError:
        return ModelDeploymentStatus(), problems


def _entry_ok(key: str, value: Any) -> bool:
    try:
        ModelDeploymentStatus.model_validate({key: [value]})
    except ValidationError:
        return False
    return True


def read_model_deployment(obj: Mapping[str, Any]) -> ObservedModelDeployment:
    """Read a ModelDeployment's status tolerantly (malformed entries listed, not raised)."""
    meta = _map(obj.get("metadata"))
    status, problems = _tolerant_status(_map(obj.get("status")))
    return ObservedModelDeployment(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        status=status,
        unreadable=tuple(problems),
    )


_PLACEMENTS = _wire(ModelDeploymentStatus, "placements")
_REPLICA_NAME = _wire(Placement, "replica_name")
DRAINING = "Draining"


def _is_draining(entry: Mapping[str, Any]) -> bool:
    if entry.get("draining") is True:
        return True
    return any(entry.get(key) == DRAINING for key in ("phase", "state", "status"))


def draining_replicas(obj: Mapping[str, Any]) -> frozenset[str]:
    """Names of the replicas a ModelDeployment's `status.placements` marks as draining.

    Tolerant of how the mark is written (`draining: true`, or `Draining` as the
    entry's phase or state) and of its absence: a deployment whose status says
    nothing about draining has none.
    """
    status = _map(obj.get("status"))
    names = set()
    for entry in _list(status.get(_PLACEMENTS)):
        if _is_draining(_map(entry)):
            name = _str(_map(entry).get(_REPLICA_NAME))
            if name:
                names.add(name)
    return frozenset(names)


@dataclass(frozen=True)
class ObservedPlacer:
    """A ModelDeployment as a preemption is checked against it: its priority, and the
    replicas its own status says it placed (a tenant cannot write another's status)."""

    namespace: str
    name: str
    priority: str | None
    placed: frozenset[str]


def read_placer(obj: Mapping[str, Any]) -> ObservedPlacer | None:
    """A ModelDeployment's `spec.priority` and `status.placements[*].replicaName`;
    None without a name or namespace. Entries that do not read place nothing."""
    meta = _map(obj.get("metadata"))
    name, namespace = _str(meta.get("name")), _str(meta.get("namespace"))
    if name is None or namespace is None:
        return None
    priority = _str(_map(obj.get("spec")).get("priority"))
    entries = _map(obj.get("status")).get(_PLACEMENTS)
    placed = frozenset(
        n
        for e in (entries if isinstance(entries, list) else [])
        if (n := _str(_map(e).get(_REPLICA_NAME))) is not None
    )
    return ObservedPlacer(namespace, name, priority, placed)
