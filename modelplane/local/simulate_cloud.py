"""What the cloud providers and a provisioned cluster would report, simulated.

For `modelplane render`: upjet managed resources (`*.aws.m.upbound.io`,
`*.gcp.m.upbound.io`) become Synced and Ready with plausible external ids, and
a control plane that writes a connection secret gets its kubeconfig Secret.
Once a node pool is Ready its nodes appear on the workload cluster: one
observe-only provider-kubernetes Object per Node (and per ResourceSlice the
NVIDIA DRA driver would publish from the pool's class), labelled the way the
composers require them (`modelplane.ai/observe`).

Two fixtures, ConfigMaps labelled `modelplane.ai/render-fixture`, make a render
show what goes wrong in real clouds:
- `stock-out` (data: cluster, pool, zone, nodesUp): the pool's managed
  resource fails with the cloud's capacity error and only `nodesUp` nodes appear;
- `drift` (data: cluster, pool, device, and `attribute` or `capacity` with
  `value`): the published ResourceSlices carry that value instead of the class's.

Everything is derived from the objects themselves, so a second pass over an
unchanged store changes nothing.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

from modelplane.api import constants as c
from modelplane.api.objects import short_hash
from modelplane.api.readers import read_inference_cluster
from modelplane.compose.inference_cluster import provider_config_name
from modelplane.compose.objects import dns_label
from modelplane.local.conditions import Clock, set_condition
from modelplane.local.store import Key, Obj, ObjectStore, labels_of

CLOUD_SUFFIXES = (".aws.m.upbound.io", ".gcp.m.upbound.io")
FIXTURE_LABEL = "modelplane.ai/render-fixture"
OBSERVATION_LABEL = "modelplane.ai/render-observation"
NODE_POOL_COMPONENT = "node-pool"
# External id prefixes the clouds use, for plausible `status.atProvider.id`s.
_ID_PREFIX = {
    "VPC": "vpc-",
    "Subnet": "subnet-",
    "InternetGateway": "igw-",
    "NATGateway": "nat-",
    "EIP": "eipalloc-",
    "RouteTable": "rtb-",
    "SecurityGroup": "sg-",
    "FileSystem": "fs-",
    "MountTarget": "fsmt-",
}


@dataclass(frozen=True)
class StockOutFixture:
    """A pool the simulated cloud cannot fill."""

    cluster: str
    pool: str
    zone: str
    nodes_up: int


@dataclass(frozen=True)
class DriftFixture:
    """A value the simulated DRA driver publishes instead of the class's."""

    cluster: str
    pool: str
    device: str
    field: str  # "attribute" or "capacity"
    name: str
    value: str


def _group(obj: Obj) -> str:
    api_version = str(obj.get("apiVersion", ""))
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def is_cloud_managed(obj: Obj) -> bool:
    """Whether an object is an upjet managed resource of the v2 namespaced AWS/GCP groups."""
    return _group(obj).endswith(CLOUD_SUFFIXES)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def fixtures(store: ObjectStore) -> tuple[list[StockOutFixture], list[DriftFixture]]:
    """The stock-out and drift fixtures among the store's ConfigMaps."""
    stockouts, drifts = [], []
    for cm in store.list("v1", "ConfigMap"):
        kind = labels_of(cm).get(FIXTURE_LABEL)
        data = cm.get("data") or {}
        if kind == "stock-out":
            stockouts.append(
                StockOutFixture(
                    str(data.get("cluster", "")),
                    str(data.get("pool", "")),
                    str(data.get("zone", "")),
                    _int(data.get("nodesUp")),
                )
            )
        elif kind == "drift":
            field = "capacity" if "capacity" in data else "attribute"
            drifts.append(
                DriftFixture(
                    str(data.get("cluster", "")),
                    str(data.get("pool", "")),
                    str(data.get("device", "")),
                    field,
                    str(data.get(field, "")),
                    str(data.get("value", "")),
                )
            )
    return stockouts, drifts


def _pool_of(obj: Obj) -> tuple[str, str] | None:
    lbl = labels_of(obj)
    if lbl.get(c.LABEL_COMPONENT) != NODE_POOL_COMPONENT or c.LABEL_POOL not in lbl:
        return None
    return lbl.get(c.LABEL_CLUSTER, ""), lbl[c.LABEL_POOL]


def _stocked_out(obj: Obj, stockouts: list[StockOutFixture]) -> StockOutFixture | None:
    where = _pool_of(obj)
    for s in stockouts:
        if where == (s.cluster, s.pool):
            return s
    return None


def _stockout_message(obj: Obj, fixture: StockOutFixture) -> str:
    for_provider = (obj.get("spec") or {}).get("forProvider") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    if _group(obj).endswith(".aws.m.upbound.io"):
        instance = (for_provider.get("instanceTypes") or ["the requested"])[0]
        return (
            f"async create failed: waiting for EKS Node Group ({fixture.cluster}:{name}) create: "
            "unexpected state 'CREATE_FAILED', wanted target 'ACTIVE'. last error: "
            "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. "
            f"InsufficientInstanceCapacity - We currently do not have sufficient {instance} "
            f"capacity in the Availability Zone you requested ({fixture.zone})."
        )
    project = for_provider.get("project", "project")
    return (
        "async create failed: error waiting for creating GKE NodePool: "
        f"code=ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/{project}/zones/{fixture.zone}' "
        "does not have enough resources available to fulfill the request. "
        "Try a different zone, or try again later."
    )


def _at_provider(obj: Obj) -> dict[str, Any]:
    kind = str(obj.get("kind", ""))
    name = str((obj.get("metadata") or {}).get("name", ""))
    digest = short_hash(_group(obj), kind, name, length=17)
    at: dict[str, Any] = {"id": _ID_PREFIX.get(kind, "") + digest if kind in _ID_PREFIX else name}
    if kind == "Cluster" and _group(obj).startswith("eks."):
        at.update(
            status="ACTIVE",
            endpoint=f"https://{digest.upper()}.gr7.eks.amazonaws.com",
            vpcConfig={"clusterSecurityGroupId": "sg-" + short_hash(name, "cluster-sg", length=17)},
        )
    elif kind == "Cluster":
        at.update(endpoint="34.0.0." + str(int(digest[:2], 16) % 250 + 1))
    elif kind == "NodeGroup":
        at["status"] = "ACTIVE"
    return at


def _kubeconfig(cluster_obj: Obj) -> str:
    name = str((cluster_obj.get("metadata") or {}).get("name", ""))
    endpoint = _at_provider(cluster_obj).get("endpoint", "https://127.0.0.1")
    server = endpoint if str(endpoint).startswith("https://") else f"https://{endpoint}"
    text = (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {name}\n  cluster:\n    server: {server}\n"
        f"contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n"
        f"current-context: {name}\n"
        f"users:\n- name: {name}\n  user:\n    token: simulated\n"
    )
    return base64.b64encode(text.encode()).decode()


def _connection_secret(store: ObjectStore, obj: Obj) -> None:
    ref = (obj.get("spec") or {}).get("writeConnectionSecretToRef") or {}
    name = ref.get("name")
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    if not name:
        return
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "connection.crossplane.io/v1alpha1",
        "data": {c.KUBECONFIG_CONNECTION_KEY: _kubeconfig(obj)},
    }
    existing = store.get(Key.of(secret))
    if existing is None or existing.get("data") != secret["data"]:
        if existing is not None:
            secret["metadata"] = {**existing["metadata"], **secret["metadata"]}
        store.put(secret)


def simulate_managed(store: ObjectStore, obj: Obj, clock: Clock, stockouts: list) -> None:
    """One managed resource as its provider would report it (in place)."""
    status = obj.setdefault("status", {})
    status["atProvider"] = {**(status.get("atProvider") or {}), **_at_provider(obj)}
    fixture = _stocked_out(obj, stockouts)
    if fixture is not None:
        message = _stockout_message(obj, fixture)
        if obj.get("kind") == "NodeGroup":
            status["atProvider"]["status"] = "CREATE_FAILED"
        set_condition(obj, "Synced", "False", "ReconcileError", message, clock)
        set_condition(obj, "LastAsyncOperation", "False", "AsyncCreateFailure", message, clock)
        set_condition(obj, "Ready", "False", "Creating", "", clock)
        return
    set_condition(obj, "Synced", "True", "ReconcileSuccess", "", clock)
    set_condition(obj, "Ready", "True", "Available", "", clock)
    _connection_secret(store, obj)


def _requested(obj: Obj) -> int:
    spec = obj.get("spec") or {}
    for block in (spec.get("forProvider") or {}, spec.get("initProvider") or {}):
        scaling = block.get("scalingConfig") or {}
        for value in (scaling.get("desiredSize"), block.get("nodeCount")):
            if value is not None:
                return _int(value)
        if block.get("initialNodeCount") is not None:
            return _int(block["initialNodeCount"])
    return 0


def _pool_devices(store: ObjectStore, cluster: str, pool: str) -> list[dict[str, Any]]:
    """The class devices the InferenceCluster publishes for `pool` (wire form)."""
    ic = store.get(Key(c.API_VERSION, "InferenceCluster", "", cluster))
    observed = read_inference_cluster(ic) if ic is not None else None
    published = observed.pool(pool) if observed is not None else None
    if published is None or not published.known:
        return []
    return [dict(d) for d in published.devices if d.get("claim", "DRA") == "DRA"]


def _observation(namespace: str, cluster: str, manifest: Obj) -> Obj:
    kind = str(manifest["kind"])
    name = dns_label(f"{cluster}-observed-{kind.lower()}-{manifest['metadata']['name']}")
    return {
        "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
        "kind": "Object",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                c.LABEL_CLUSTER: cluster,
                c.LABEL_OBSERVE: kind,
                OBSERVATION_LABEL: "true",
            },
        },
        "spec": {
            "managementPolicies": ["Observe"],
            "forProvider": {"manifest": manifest},
            "providerConfigRef": {
                "kind": "ClusterProviderConfig",
                "name": provider_config_name(cluster),
            },
        },
        "status": {"atProvider": {"manifest": copy.deepcopy(manifest)}},
    }


def _node(name: str, pool: str, zone: str | None) -> Obj:
    node_labels = {c.LABEL_POOL: pool}
    if zone:
        node_labels["topology.kubernetes.io/zone"] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            ]
        },
    }


def _slice_device(device: dict[str, Any], index: int, drifts: list[DriftFixture]) -> Obj:
    attributes = copy.deepcopy(device.get("attributes") or {})
    capacity = copy.deepcopy(device.get("capacity") or {})
    for d in drifts:
        if d.device != device.get("name"):
            continue
        if d.field == "capacity":
            capacity[d.name] = {"value": d.value}
        else:
            attributes[d.name] = {"string": d.value}
    out: Obj = {"name": f"{device.get('name')}-{index}"}
    if attributes:
        out["attributes"] = attributes
    if capacity:
        out["capacity"] = capacity
    return out


def _slices(node: str, devices: list[dict[str, Any]], drifts: list[DriftFixture]) -> list[Obj]:
    by_driver: dict[str, list[Obj]] = {}
    for device in devices:
        for i in range(_int(device.get("count"), 1)):
            by_driver.setdefault(str(device.get("driver")), []).append(
                _slice_device(device, i, drifts)
            )
    return [
        {
            "apiVersion": c.DRA_API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": dns_label(f"{node}-{driver}")},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": items,
            },
        }
        for driver, items in sorted(by_driver.items())
    ]


def _pool_observations(
    store: ObjectStore, obj: Obj, stockouts: list[StockOutFixture], drifts: list[DriftFixture]
) -> list[Obj]:
    where = _pool_of(obj)
    if where is None:
        return []
    cluster, pool = where
    fixture = _stocked_out(obj, stockouts)
    if fixture is None and (obj.get("status") or {}).get("conditions") is None:
        return []
    count = min(fixture.nodes_up, _requested(obj)) if fixture else _requested(obj)
    zone = fixture.zone if fixture else None
    namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    devices = _pool_devices(store, cluster, pool)
    mine = [d for d in drifts if (d.cluster, d.pool) == (cluster, pool)]
    out = []
    for i in range(count):
        node = _node(dns_label(f"{cluster}-{pool}-{i}"), pool, zone)
        out.append(_observation(namespace, cluster, node))
        for s in _slices(node["metadata"]["name"], devices, mine):
            out.append(_observation(namespace, cluster, s))
    return out


def simulate_cloud(store: ObjectStore, clock: Clock) -> list[Key]:
    """Update every cloud managed resource, connection Secret and node observation.

    Managed resources change in place: their keys are returned. Secrets and
    observations are put into the store.
    """
    stockouts, drifts = fixtures(store)
    managed = [obj for _, obj in store.items() if is_cloud_managed(obj)]
    for obj in managed:
        simulate_managed(store, obj, clock, stockouts)
    wanted: dict[Key, Obj] = {}
    for obj in managed:
        for observed in _pool_observations(store, obj, stockouts, drifts):
            wanted[Key.of(observed)] = observed
    for key, obj in store.items():
        if labels_of(obj).get(OBSERVATION_LABEL) == "true" and key not in wanted:
            store.delete(key)
    for key, observed in wanted.items():
        existing = store.get(key)
        if existing is None or existing.get("spec") != observed["spec"]:
            if existing is not None:
                observed["metadata"] = {**existing["metadata"], **observed["metadata"]}
            store.put(observed)
    return [Key.of(obj) for obj in managed]
