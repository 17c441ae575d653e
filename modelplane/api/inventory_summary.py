"""Summarise a workload cluster's Nodes, ResourceSlices and pods into an InventorySummary.

A pure function shared by the inventory agent (which lists the objects from the
cluster's API server) and `modelplane render` (which simulates them), so both
report exactly the same way. Bad input is skipped, never raised on: a node
without a pool label, a slice without a node, an attribute that is not a valid
DRA value.

- Pools are the values of node label `modelplane.ai/pool`; `readyNodes` counts
  nodes whose `Ready` condition is True.
- Device shapes: each device a pool's node publishes, without its identity
  attributes (`uuid`, `index`, `minor`, PCI addresses: they differ between
  otherwise identical devices), grouped by (driver, attributes, capacity, how
  many such devices the node has); `nodes` counts the nodes with that group.
- Unschedulable replicas: pods labelled `modelplane.ai/replica` that are
  Pending with condition PodScheduled=False, reason Unschedulable, since at
  least `grace_seconds` before `now`; grouped by replica (pods, earliest time,
  the scheduler's message, the pool the pods select).
"""

from __future__ import annotations

import calendar
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from modelplane.api import constants as c
from modelplane.api.inference_class import DeviceAttribute, DeviceCapacity
from modelplane.api.inference_cluster import UnschedulableReplica
from modelplane.api.inventory import (
    MAX_ATTRIBUTES,
    MAX_DRIVER_COUNTS,
    MAX_POOLS,
    MAX_SHAPES,
    MAX_UNSCHEDULABLE,
    MAX_ZONES,
    DeviceShape,
    DriverCount,
    InventorySummary,
    PoolInventory,
    ZoneCount,
)

ZONE_LABEL = "topology.kubernetes.io/zone"
# Attributes that tell identical devices apart; a shape leaves them out.
IDENTITY_ATTRIBUTES = frozenset(
    {"uuid", "index", "minor", "pciBusID", "pcieRoot", "serialNumber", "parentUUID"}
)
MESSAGE_MAX = 512
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(Z|z|[+-]\d{2}:\d{2})$"
)

Obj = Mapping[str, Any]
ShapeKey = tuple[str, str, str]  # driver, attributes JSON, capacity JSON


def epoch_seconds(stamp: str) -> int | None:
    """Seconds since the epoch of an RFC 3339 time, or None when it is not one."""
    m = _RFC3339.match(stamp or "")
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(x) for x in m.groups()[:6])
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    offset = m.group(7)
    shift = 0
    if offset not in ("Z", "z"):
        sign = 1 if offset[0] == "+" else -1
        shift = sign * (int(offset[1:3]) * 3600 + int(offset[4:6]) * 60)
    return calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) - shift


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, (dict, Mapping)) else {}  # dicts first: no ABC check


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _condition(obj: Obj, type_: str) -> Mapping[str, Any]:
    for cond in _list(_map(obj.get("status")).get("conditions")):
        if isinstance(cond, Mapping) and cond.get("type") == type_:
            return cond
    return {}


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _attributes(raw: Any) -> dict[str, DeviceAttribute]:
    out: dict[str, DeviceAttribute] = {}
    for name, value in sorted(_map(raw).items(), key=lambda kv: str(kv[0])):
        if _short(str(name)) in IDENTITY_ATTRIBUTES or len(out) >= MAX_ATTRIBUTES:
            continue
        try:
            out[str(name)] = DeviceAttribute.model_validate(value)
        except ValidationError:
            continue  # not a DRA attribute value: nothing to compare it with
    return out


def _capacity(raw: Any) -> dict[str, DeviceCapacity]:
    out: dict[str, DeviceCapacity] = {}
    for name, value in sorted(_map(raw).items(), key=lambda kv: str(kv[0])):
        if len(out) >= MAX_ATTRIBUTES:
            break
        try:
            out[str(name)] = DeviceCapacity.model_validate({"value": _map(value).get("value")})
        except ValidationError:
            continue
    return out


def _shape_key(driver: str, device: Any) -> ShapeKey:
    attrs = {k: v.to_dict() for k, v in _attributes(_map(device).get("attributes")).items()}
    caps = {k: v.value for k, v in _capacity(_map(device).get("capacity")).items()}
    return driver, json.dumps(attrs, sort_keys=True), json.dumps(caps, sort_keys=True)


def _raw_shape(driver: str, device: Any) -> str | None:
    """What a device's shape is read from, as text (None: not JSON text can name).

    Identity attributes are left out, so a node's identical devices share it.
    """
    d = _map(device)
    attrs = {
        k: v
        for k, v in _map(d.get("attributes")).items()
        if _short(str(k)) not in IDENTITY_ATTRIBUTES
    }
    try:
        return json.dumps([driver, attrs, d.get("capacity")], sort_keys=True)
    except (TypeError, ValueError):
        return None


class _ShapeKeys:
    """`_shape_key`, read once per distinct raw shape: nodes repeat the same devices.

    Devices that share their attribute and capacity objects (as one class's
    simulated devices do) are known equal without writing them out.
    """

    def __init__(self) -> None:
        self._seen: dict[str, ShapeKey] = {}
        # By the ids of the objects read; the objects are held, so ids stay theirs.
        self._shared: dict[tuple[str, int, int], tuple[ShapeKey, Any, Any]] = {}

    def __call__(self, driver: str, device: Any) -> ShapeKey:
        d = _map(device)
        attributes, capacity = d.get("attributes"), d.get("capacity")
        same = (driver, id(attributes), id(capacity))
        hit = self._shared.get(same)
        if hit is not None:
            return hit[0]
        key = self._read(driver, device)
        self._shared[same] = (key, attributes, capacity)
        return key

    def _read(self, driver: str, device: Any) -> ShapeKey:
        raw = _raw_shape(driver, device)
        if raw is None:
            return _shape_key(driver, device)
        key = self._seen.get(raw)
        if key is None:
            key = self._seen[raw] = _shape_key(driver, device)
        return key


def _devices_by_node(slices: Iterable[Obj]) -> dict[str, dict[str, list[Any]]]:
    """node → driver → devices its slices publish (slices without a node are skipped)."""
    out: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for s in slices:
        spec = _map(_map(s).get("spec"))
        node, driver = spec.get("nodeName"), spec.get("driver")
        if not isinstance(node, str) or not node or not isinstance(driver, str) or not driver:
            continue
        out[node][driver].extend(d for d in _list(spec.get("devices")) if isinstance(d, Mapping))
    return out


def _node_pool(node: Obj) -> tuple[str, str] | None:
    meta = _map(node.get("metadata"))
    name, pool = meta.get("name"), _map(meta.get("labels")).get(c.LABEL_POOL)
    if not isinstance(name, str) or not name or not isinstance(pool, str) or not pool:
        return None
    return name, pool


def _shapes(counts: Counter[tuple[ShapeKey, int]]) -> tuple[list[DeviceShape], bool]:
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shapes = [
        DeviceShape(
            driver=driver,
            attributes={k: DeviceAttribute.model_validate(v) for k, v in json.loads(a).items()},
            capacity={k: DeviceCapacity(value=v) for k, v in json.loads(q).items()},
            devices_per_node=per_node,
            nodes=nodes,
        )
        for ((driver, a, q), per_node), nodes in ordered[:MAX_SHAPES]
    ]
    return shapes, len(ordered) > MAX_SHAPES


def _pool(
    name: str,
    nodes: list[Obj],
    published: Mapping[str, Mapping[str, list[Any]]],
    shape_key: _ShapeKeys,
) -> PoolInventory:
    zones: Counter[str] = Counter()
    drivers: Counter[tuple[str, int]] = Counter()
    shapes: Counter[tuple[ShapeKey, int]] = Counter()
    ready = 0
    for node in nodes:
        meta = _map(node.get("metadata"))
        ready += 1 if _condition(node, "Ready").get("status") == "True" else 0
        zone = _map(meta.get("labels")).get(ZONE_LABEL)
        if isinstance(zone, str) and zone:
            zones[zone] += 1
        for driver, devices in sorted(published.get(str(meta.get("name")), {}).items()):
            drivers[(driver, len(devices))] += 1
            for key, per_node in Counter(shape_key(driver, d) for d in devices).items():
                shapes[(key, per_node)] += 1
    kept, truncated = _shapes(shapes)
    return PoolInventory(
        name=name[:63],
        nodes=len(nodes),
        ready_nodes=ready,
        zones=[ZoneCount(zone=z, nodes=n) for z, n in sorted(zones.items())[:MAX_ZONES]],
        driver_counts=[
            DriverCount(driver=d, devices=k, nodes=n)
            for (d, k), n in sorted(drivers.items())[:MAX_DRIVER_COUNTS]
        ],
        shapes=kept,
        shapes_truncated=truncated,
    )


def _pending_since(pod: Obj) -> tuple[str, int, str] | None:
    """(since, its epoch seconds, message) of a pod its scheduler could not place."""
    if _map(pod.get("status")).get("phase") != "Pending":
        return None
    cond = _condition(pod, "PodScheduled")
    if cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
        return None
    since = str(cond.get("lastTransitionTime") or "")
    at = epoch_seconds(since)
    return (since, at, str(cond.get("message") or "")) if at is not None else None


def _unschedulable(pods: Iterable[Obj], now: int, grace: int) -> list[UnschedulableReplica]:
    """Per replica label and namespace of the pods (one report each, never merged)."""
    found: dict[tuple[str, str], UnschedulableReplica] = {}
    for pod in pods:
        meta = _map(pod.get("metadata"))
        replica = _map(meta.get("labels")).get(c.LABEL_REPLICA)
        namespace = meta.get("namespace")
        namespace = namespace[:63] if isinstance(namespace, str) and namespace else None
        pending = _pending_since(pod) if isinstance(replica, str) and replica else None
        if pending is None or now - pending[1] < grace:
            continue
        since, at, message = pending
        pool = _map(_map(pod.get("spec")).get("nodeSelector")).get(c.LABEL_POOL)
        key = (str(replica), namespace or "")
        seen = found.get(key)
        if seen is not None:
            earlier = (epoch_seconds(seen.since) or at) <= at
            found[key] = seen.model_copy(
                update={"pods": seen.pods + 1, "since": seen.since if earlier else since}
            )
            continue
        found[key] = UnschedulableReplica(
            replica=str(replica)[:253],
            namespace=namespace,
            pool=pool[:63] if isinstance(pool, str) and pool else None,
            since=since,
            message=message[: MESSAGE_MAX - 3] + "..." if len(message) > MESSAGE_MAX else message,
        )
    return [found[k] for k in sorted(found)]


def summarize(
    nodes: Iterable[Obj],
    slices: Iterable[Obj],
    pods: Iterable[Obj],
    now: str,
    grace_seconds: int,
) -> InventorySummary:
    """The bounded summary of one cluster as of `now` (RFC 3339)."""
    by_pool: dict[str, list[Obj]] = defaultdict(list)
    for node in nodes:
        where = _node_pool(_map(node))
        if where is not None:
            by_pool[where[1]].append(node)
    published = _devices_by_node(slices)
    names = sorted(by_pool)
    shape_key = _ShapeKeys()
    pools = [_pool(name, by_pool[name], published, shape_key) for name in names[:MAX_POOLS]]
    stuck = _unschedulable(pods, epoch_seconds(now) or 0, max(0, grace_seconds))
    return InventorySummary(
        observed_at=now,
        pools=pools,
        pools_truncated=len(names) > MAX_POOLS,
        unschedulable=stuck[:MAX_UNSCHEDULABLE],
        unschedulable_truncated=len(stuck) > MAX_UNSCHEDULABLE,
    )
