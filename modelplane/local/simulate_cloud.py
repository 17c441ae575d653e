"""What the cloud providers and a provisioned cluster would report, simulated.

For `modelplane render`: every cloud's upjet managed resources (its
`Cloud.render_kinds`) become Synced and Ready with what the cloud's composer
says its provider reports (`ProviderReports`: plausible external ids,
endpoints, stock-out messages), and a control plane that writes a connection
secret gets the Secret its provider writes, with the keys that provider writes
(`ProviderReports.connection`: an EKS ClusterAuth's `kubeconfig`, `endpoint`,
`clusterCA`; a GKE Cluster's `kubeconfig` without a credential; an AKS
KubernetesCluster's `kubeconfig` and its parts).

Each workload cluster's inventory agent is simulated too: the Observe-only
Object of its ConfigMap (`compose/clusters/inventory.py`) observes the summary the
SAME summarizer the agent runs (`api.inventory_summary.summarize`) makes of the
simulated cluster: the nodes of each Ready node pool of a provisioned cluster
(or `nodeCount` nodes per pool of an Existing one), labelled with their pool,
and the ResourceSlices the NVIDIA DRA driver would publish from the pool's class.

Three fixtures, ConfigMaps labelled `modelplane.ai/render-fixture`, make a render
show what goes wrong in real clusters:
- `stock-out` (data: cluster, pool, zone, nodesUp): the pool's managed
  resource fails with the cloud's capacity error and only `nodesUp` nodes appear;
- `drift` (data: cluster, pool, device, and `attribute` or `capacity` with
  `value`): the published ResourceSlices carry that value instead of the class's;
- `unschedulable` (data: cluster, deployment (`name` or `namespace/name`), pool,
  message, since): every ModelReplica of that deployment placed on that
  cluster's pool has a pod Pending Unschedulable since `since`, which the agent
  reports. A pod carries its replica in label `modelplane.ai/replica`, whose
  value is the ModelReplica's name as a DNS label of at most 40 characters
  (`api.objects.replica_base`).

- `signals` (data: deployment (`name` or `namespace/name`), optional
  cluster, requestsWaiting and requestsRunning (totals, spread evenly over
  the deployment's Ready replicas there), kvCacheUtilization and
  ttftP90Seconds (each replica's), requests and errors (each replica's
  inference requests answered in the window and, of those, HTTP 5xx:
  non-negative integers), optional revision, scrapedAt): the simulated agent
  reports those engine signals for each Ready replica of the deployment (on
  that cluster; with `revision`, only a ModelReplica labelled
  `modelplane.ai/revision` with that value, and the totals spread over those)
  whose ModelEndpoint is Ready (requests reach a replica only through one),
  as it would after scraping the engines' metrics; autoscaling and
  progressive rollouts read them. Any other replica reports nothing, and so
  does every replica on a cluster whose agent scrapes no engine metrics
  (`spec.servingStack.inventory.engineMetrics` not true), as the real agent
  would: the render lists each such fixture and cluster as a warning
  (`ignored_signals`). With `draining: "true"` a fixture speaks only for
  the replicas whose ModelEndpoint is `draining` (the autoscaler removes
  them), and no other fixture does: what their engines report after they
  left the routes, with its own `scrapedAt` (requests still in flight, or
  none, before or after the drain timeout).

Everything is derived from the objects themselves, so a second pass over an
unchanged store changes nothing.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import json
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING, Any, cast

from modelplane.api import constants as c
from modelplane.api.autoscaling import ReplicaSignals
from modelplane.api.clouds import cloud_managing
from modelplane.api.dra_publish import node_slices
from modelplane.api.inventory import InventorySummary
from modelplane.api.inventory_summary import summarize
from modelplane.api.model_replica import ModelReplicaSpec
from modelplane.api.objects import is_condition_true, label_value, replica_base, short_hash
from modelplane.api.readers import (
    ENGINE_METRICS_SETTING,
    ObservedPool,
    read_engine_metrics,
    read_published_pools,
)
from modelplane.compose.objects import dns_label
from modelplane.compose.registry import cloud_module, load
from modelplane.local.conditions import EPOCH, Clock, set_condition, writable_dict
from modelplane.local.passes import Passes
from modelplane.local.store import Key, Obj, ObjectStore, labels_of

if TYPE_CHECKING:
    from modelplane.compose.clusters.clouds.provisioned import ProviderReports

FIXTURE_LABEL = "modelplane.ai/render-fixture"
OBJECT_API_VERSION = c.PROVIDER_KUBERNETES_API_VERSION
NODE_POOL_COMPONENT = "node-pool"


@dataclass(frozen=True)
class StockOutFixture:
    """A pool the simulated cloud cannot fill."""

    cluster: str
    pool: str
    zone: str
    nodes_up: int


@dataclass(frozen=True)
class UnschedulableFixture:
    """A deployment whose replicas the simulated cluster's scheduler cannot place on a pool."""

    cluster: str
    deployment: str  # `name` or `namespace/name`
    pool: str
    message: str
    since: str


@dataclass(frozen=True)
class Fixtures:
    """Every render fixture of the store, by kind."""

    stockouts: list[StockOutFixture]
    drifts: list[DriftFixture]
    unschedulable: list[UnschedulableFixture]
    signals: list[dict[str, str]] = field(default_factory=list)


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
    """Whether an object is a managed resource of a registered cloud's provider."""
    return cloud_managing(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) is not None


def _reports(obj: Obj) -> ProviderReports:
    cloud = cloud_managing(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if cloud is None:
        raise ValueError(f"{obj.get('apiVersion')} {obj.get('kind')} is no cloud's resource")
    # The cloud's composer module, imported when a render first meets its resources
    # (a render without clouds loads none).
    return cast("ProviderReports", load((cloud_module(cloud.name), "PROVISIONER.reports")))


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _drift(data: dict[str, Any]) -> DriftFixture:
    field = "capacity" if "capacity" in data else "attribute"
    return DriftFixture(
        str(data.get("cluster", "")),
        str(data.get("pool", "")),
        str(data.get("device", "")),
        field,
        str(data.get(field, "")),
        str(data.get("value", "")),
    )


def _unschedulable(data: dict[str, Any]) -> UnschedulableFixture:
    return UnschedulableFixture(
        *(str(data.get(k, "")) for k in ("cluster", "deployment", "pool", "message", "since"))
    )


def fixtures(store: ObjectStore) -> Fixtures:
    """The stock-out, drift and unschedulable fixtures among the store's ConfigMaps."""
    found = Fixtures([], [], [])
    for cm in store.list("v1", "ConfigMap"):
        kind = labels_of(cm).get(FIXTURE_LABEL)
        data = cm.get("data") or {}
        if kind == "stock-out":
            found.stockouts.append(
                StockOutFixture(
                    str(data.get("cluster", "")),
                    str(data.get("pool", "")),
                    str(data.get("zone", "")),
                    _int(data.get("nodesUp")),
                )
            )
        elif kind == "drift":
            found.drifts.append(_drift(data))
        elif kind == "unschedulable":
            found.unschedulable.append(_unschedulable(data))
        elif kind == "signals":
            found.signals.append({str(k): str(v) for k, v in data.items()})
    return found


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
    return _reports(obj).stockout(obj, fixture.cluster, fixture.zone)


def _at_provider(obj: Obj) -> dict[str, Any]:
    kind = str(obj.get("kind", ""))
    name = str((obj.get("metadata") or {}).get("name", ""))
    digest = short_hash(_group(obj), kind, name, length=17)
    return _reports(obj).at_provider(obj, digest)


def _connection_details(store: ObjectStore, obj: Obj) -> dict[str, str]:
    """The connection details obj's provider writes, each key as that provider names it."""
    api_version = str(obj.get("apiVersion", ""))
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")

    def lookup(kind: str, name: str) -> dict[str, Any]:
        other = store.get(Key(api_version, kind, namespace, name))
        return _at_provider(other) if other is not None else {}

    details = _reports(obj).connection(obj, lookup)
    return {k: base64.b64encode(v.encode()).decode() for k, v in details.items()}


def _connection_secret(store: ObjectStore, obj: Obj) -> None:
    ref = (obj.get("spec") or {}).get("writeConnectionSecretToRef") or {}
    name = ref.get("name")
    namespace = (obj.get("metadata") or {}).get("namespace") or "default"
    data = _connection_details(store, obj)
    if not name or not data:
        return
    secret: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            # As crossplane-runtime publishes it: the managed resource controls
            # its connection Secret, so deleting the resource deletes the Secret.
            "ownerReferences": [
                {
                    "apiVersion": obj.get("apiVersion"),
                    "kind": obj.get("kind"),
                    "name": (obj.get("metadata") or {}).get("name"),
                    "uid": (obj.get("metadata") or {}).get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "type": "connection.crossplane.io/v1alpha1",
        "data": data,
    }
    existing = store.get(Key.of(secret))
    if existing is None or existing.get("data") != secret["data"]:
        if existing is not None:
            secret["metadata"] = {**existing["metadata"], **secret["metadata"]}
        store.put(secret)


def simulate_managed(store: ObjectStore, obj: Obj, clock: Clock, stockouts: list) -> None:
    """One managed resource as its provider would report it (in place)."""
    status = writable_dict(obj, "status")
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


Published = dict[str, ObservedPool]
"""An InferenceCluster's published pools, by name (`read_published_pools`)."""


def _pool_devices(observed: Published, pool: str) -> list[dict[str, Any]]:
    """The class devices the InferenceCluster publishes for `pool` (wire form)."""
    published = observed.get(pool)
    if published is None or not published.known:
        return []
    return [dict(d) for d in published.devices if d.get("claim", "DRA") == "DRA"]


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


def _drifted(device: dict[str, Any], drifts: list[DriftFixture]) -> dict[str, Any]:
    """The device as the simulated driver publishes it: the class's, edited by any drift."""
    mine = [d for d in drifts if d.device == device.get("name")]
    if not mine:
        return device  # shared with the class's devices: only read
    attributes = copy.deepcopy(device.get("attributes") or {})
    capacity = copy.deepcopy(device.get("capacity") or {})
    for d in mine:
        if d.field == "capacity":
            capacity[d.name] = {"value": d.value}
        else:
            attributes[d.name] = {"string": d.value}
    return {**device, "attributes": attributes, "capacity": capacity}


def _slices(node: str, devices: list[dict[str, Any]], drifts: list[DriftFixture]) -> list[Obj]:
    return node_slices(node, [_drifted(d, drifts) for d in devices])


World = tuple[list[Obj], list[Obj]]  # a simulated cluster's Nodes and ResourceSlices


PoolPlan = tuple[str, int, str | None, list[dict[str, Any]], list[tuple[str, ...]]]
"""One simulated pool: name, nodes up, zone, the class devices published, its drifts."""


def _pool_plan(
    observed: Published,
    cluster: str,
    pool: str,
    count: int,
    zone: str | None,
    drifts: list,
) -> PoolPlan:
    devices = _pool_devices(observed, pool)
    mine = [astuple(d) for d in drifts if (d.cluster, d.pool) == (cluster, pool)]
    return pool, count, zone, devices, mine


def _pool_world(cluster: str, plan: PoolPlan) -> World:
    pool, count, zone, devices, raw_drifts = plan
    mine = [DriftFixture(*d) for d in raw_drifts]
    nodes, slices = [], []
    for i in range(count):
        node = _node(dns_label(f"{cluster}-{pool}-{i}"), pool, zone)
        nodes.append(node)
        slices += _slices(node["metadata"]["name"], devices, mine)
    return nodes, slices


def _node_pool_plan(observed: Published, obj: Obj, found: Fixtures) -> PoolPlan | None:
    """What a provisioned node pool brought up (None: nothing yet)."""
    cluster, pool = _pool_of(obj) or ("", "")
    fixture = _stocked_out(obj, found.stockouts)
    if fixture is None and (obj.get("status") or {}).get("conditions") is None:
        return None
    count = min(fixture.nodes_up, _requested(obj)) if fixture else _requested(obj)
    zone = fixture.zone if fixture else None
    return _pool_plan(observed, cluster, pool, count, zone, found.drifts)


def _cluster_plan(
    store: ObjectStore, cluster: str, managed: list[Obj], found: Fixtures
) -> list[PoolPlan]:
    """The simulated cluster's pools: its node pools, or an Existing cluster's declared pools."""
    node_pools = [o for o in managed if (_pool_of(o) or ("",))[0] == cluster]
    ic = store.get(Key(c.API_VERSION, c.KIND_INFERENCE_CLUSTER, "", cluster))
    # Its published pools alone: the rest of a reading validates the whole spec.
    observed = read_published_pools(ic) if ic is not None else {}
    plans = [_node_pool_plan(observed, obj, found) for obj in node_pools]
    out = [p for p in plans if p is not None]
    spec = (ic or {}).get("spec") or {}
    if node_pools or spec.get("source") != "Existing":
        return out
    for pool in spec.get("pools") or []:
        name, count = str(pool.get("name", "")), _int(pool.get("nodeCount"), 1)
        out.append(_pool_plan(observed, cluster, name, count, None, found.drifts))
    return out


@functools.lru_cache(maxsize=4096)
def _summary_text(key: str) -> str:
    """The simulated agent's ConfigMap data (as JSON) for one cluster's plan, pods and time.

    Pure in its (JSON) key, so memoized: a render calls it for every cluster in
    every round. Its pools are the summary of the plans alone (`_pools_summary`).
    """
    _, plans, pods, now, signals = json.loads(key)
    pools = _pools_summary(json.dumps(plans))
    replicas = [ReplicaSignals.model_validate(s) for s in signals] or None
    update = {"pools": pools.pools, "pools_truncated": pools.pools_truncated, "replicas": replicas}
    summary = summarize([], [], pods, now, 0).model_copy(update=update)
    return json.dumps(summary.to_data())


STAND_IN_CLUSTER = "simulated"
"""The cluster name the nodes of `_pools_summary` are named after."""


@functools.lru_cache(maxsize=1024)
def _pools_summary(plans: str) -> InventorySummary:
    """The summary of the Nodes and ResourceSlices some pool plans bring up (no pods).

    A summary counts nodes, zones and device shapes per pool; a node's name only
    tells its devices apart from other nodes', and names built from any one
    cluster's name are distinct. So the plans alone decide it, whatever cluster
    they are on: a fleet of many alike clusters builds the costly Nodes and
    ResourceSlices once per kind of cluster, not once per cluster.
    """
    nodes: list[Obj] = []
    slices: list[Obj] = []
    for plan in json.loads(plans):
        more = _pool_world(STAND_IN_CLUSTER, tuple(plan))
        nodes, slices = nodes + more[0], slices + more[1]
    return summarize(nodes, slices, [], EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"), 0)


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _count(value: str | None) -> int | None:
    """A fixture's count: a non-negative integer, else None (not reported, never a crash)."""
    try:
        n = int(value) if value not in (None, "") else None
    except ValueError:
        return None
    return n if n is not None and n >= 0 else None


def _signals_of(fixture: dict[str, str], ready: list[str], n: int) -> list[dict[str, Any]]:
    """What the simulated agent reports for `ready` replicas (pod label values), of `n` sharing."""
    out = []
    for base in ready:
        waiting = _float(fixture.get("requestsWaiting"))
        running = _float(fixture.get("requestsRunning"))
        s = ReplicaSignals(
            replica=base,
            pods=1,
            reachable=True,
            scraped_at=fixture.get("scrapedAt") or EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
            window_seconds=300,
            samples=5,
            requests_waiting=None if waiting is None else round(waiting / n, 4),
            requests_running=None if running is None else round(running / n, 4),
            kv_cache_utilization=_float(fixture.get("kvCacheUtilization")),
            ttft_p90_seconds=_float(fixture.get("ttftP90Seconds")),
            ttft_requests=100 if fixture.get("ttftP90Seconds") else None,
            requests=_count(fixture.get("requests")),
            errors=_count(fixture.get("errors")),
        )
        out.append(s.to_dict())
    return out


def _routed(store: ObjectStore, meta: dict[str, Any]) -> bool:
    """Whether a replica's ModelEndpoint is Ready: requests reach it only through one."""
    key = Key(
        c.API_VERSION, c.KIND_MODEL_ENDPOINT, str(meta.get("namespace")), str(meta.get("name"))
    )
    endpoint = store.get(key)
    return endpoint is not None and is_condition_true(endpoint, c.CONDITION_READY)


def _of_deployment(deployment: str, replica: Obj) -> bool:
    """Whether `replica` belongs to the deployment a fixture names (`name` or `namespace/name`)."""
    namespace, _, name = deployment.rpartition("/")
    own = (replica.get("spec") or {}).get("deploymentName")
    return own == name and namespace in ("", (replica.get("metadata") or {}).get("namespace"))


def scrapes_engines(store: ObjectStore, cluster: str) -> bool:
    """Whether `cluster`'s inventory agent scrapes engine metrics, as the cluster composer
    would run it (`readers.read_engine_metrics`): only then does it report engine signals."""
    ic = store.get(Key(c.API_VERSION, c.KIND_INFERENCE_CLUSTER, "", cluster))
    return ic is not None and read_engine_metrics(ic.get("spec") or {}) is True


def _draining(store: ObjectStore, meta: dict[str, Any]) -> bool:
    """Whether a replica's ModelEndpoint says `draining: true` (the autoscaler removes it)."""
    key = Key(
        c.API_VERSION, c.KIND_MODEL_ENDPOINT, str(meta.get("namespace")), str(meta.get("name"))
    )
    endpoint = store.get(key)
    return endpoint is not None and (endpoint.get("spec") or {}).get("draining") is True


def _sharing(store: ObjectStore, fixture: dict[str, str]) -> list[tuple[str, str]]:
    """(cluster, pod label value) of each Ready, routed replica a `signals` fixture covers.

    A fixture with `draining: "true"` covers only replicas whose endpoint is
    draining; any other covers every one.
    """
    out: list[tuple[str, str]] = []
    draining_only = fixture.get("draining") == "true"
    for replica in store.list(c.API_VERSION, c.KIND_MODEL_REPLICA):
        meta, spec = replica.get("metadata") or {}, replica.get("spec") or {}
        if (
            spec.get("clusterName") in (fixture.get("cluster") or spec.get("clusterName"),)
            and _of_deployment(str(fixture.get("deployment", "")), replica)
            and fixture.get("revision") in (None, "", labels_of(replica).get(c.LABEL_REVISION))
            and is_condition_true(replica, c.CONDITION_READY)
            and _routed(store, meta)
            and (not draining_only or _draining(store, meta))
        ):
            out.append((str(spec.get("clusterName")), replica_base(str(meta.get("name")))))
    return out


def _replica_signals(store: ObjectStore, cluster: str, found: Fixtures) -> list[dict[str, Any]]:
    """Per Ready replica on `cluster` a `signals` fixture names, its simulated signals.

    None on a cluster whose agent scrapes no engine metrics: the real agent
    would report none there, whatever the fixture says (`ignored_signals`).
    A replica a `draining` fixture covers reports only what that one says.
    """
    out: list[dict[str, Any]] = []
    if not found.signals or not scrapes_engines(store, cluster):
        return out
    # Replicas a draining fixture covers: no other fixture speaks for them.
    drained = {r for f in found.signals if f.get("draining") == "true" for r in _sharing(store, f)}
    for fixture in found.signals:
        if fixture.get("cluster") not in (None, "", cluster):
            continue
        sharing = _sharing(store, fixture)
        if fixture.get("draining") != "true":
            # Its totals are spread over the replicas no draining fixture speaks for.
            sharing = [r for r in sharing if r not in drained]
        here = sorted(base for where, base in sharing if where == cluster)
        if here:
            out.extend(_signals_of(fixture, here, len(sharing)))
    return out


@dataclass(frozen=True)
class IgnoredSignals:
    """A `signals` fixture the render does not believe on one cluster: its agent
    scrapes no engine metrics, so the real one would report no engine signal there."""

    fixture: str  # the ConfigMap, namespace/name
    deployment: str  # as the fixture names it
    cluster: str

    @property
    def message(self) -> str:
        """The render's warning, naming the fixture, the cluster and the setting."""
        return (
            f"render fixture ConfigMap {self.fixture} (signals of {self.deployment}) is ignored "
            f"on cluster {self.cluster}: its inventory agent does not scrape engine metrics "
            f"({ENGINE_METRICS_SETTING} is not true), so a real cluster reports no engine "
            f"signal there; set it to true on InferenceCluster {self.cluster} for the fixture "
            "to apply"
        )


def _fixture_clusters(store: ObjectStore, data: dict[str, Any]) -> set[str]:
    """The clusters a `signals` fixture speaks for: its cluster, else every one hosting
    a replica of its deployment."""
    if data.get("cluster"):
        return {str(data["cluster"])}
    deployment = str(data.get("deployment", ""))
    return {
        str((r.get("spec") or {}).get("clusterName"))
        for r in store.list(c.API_VERSION, c.KIND_MODEL_REPLICA)
        if _of_deployment(deployment, r)
    }


def ignored_signals(store: ObjectStore) -> list[IgnoredSignals]:
    """Every (`signals` fixture, cluster) the simulated agent ignores, sorted.

    A cluster that does not exist is not listed: no agent reports it anyway.
    """
    out = []
    for cm in store.list("v1", "ConfigMap"):
        if labels_of(cm).get(FIXTURE_LABEL) != "signals":
            continue
        meta, data = cm.get("metadata") or {}, cm.get("data") or {}
        ref = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        for cluster in sorted(_fixture_clusters(store, data)):
            known = store.get(Key(c.API_VERSION, c.KIND_INFERENCE_CLUSTER, "", cluster))
            if known is not None and not scrapes_engines(store, cluster):
                out.append(IgnoredSignals(ref, str(data.get("deployment", "")), cluster))
    return out


def _fixture_matches(fixture: UnschedulableFixture, replica: Obj) -> bool:
    meta = replica.get("metadata") or {}
    namespace, _, name = fixture.deployment.rpartition("/")
    try:
        raw = {k: v for k, v in (replica.get("spec") or {}).items() if k != "crossplane"}
        spec = ModelReplicaSpec.model_validate(raw)
    except ValueError:
        return False
    return (
        spec.cluster_name == fixture.cluster
        and spec.deployment_name == name
        and namespace in ("", meta.get("namespace"))
        and fixture.pool in {r.node_pool_name for r in spec.roles().values()}
    )


def stuck_replicas(store: ObjectStore) -> frozenset[str]:
    """The pod label values (`modelplane.ai/replica`) of replicas an `unschedulable` fixture names.

    Their workloads stay unavailable in the render, as pods that never get a
    node would keep them.
    """
    found = fixtures(store)
    if not found.unschedulable:
        return frozenset()
    return frozenset(
        replica_base(str(replica["metadata"]["name"]))
        for replica in store.list(c.API_VERSION, c.KIND_MODEL_REPLICA)
        if any(_fixture_matches(f, replica) for f in found.unschedulable)
    )


def _stuck_pods(store: ObjectStore, cluster: str, found: Fixtures) -> list[Obj]:
    """One Pending, Unschedulable pod per replica an `unschedulable` fixture names."""
    pods = []
    for fixture in (f for f in found.unschedulable if f.cluster == cluster):
        for replica in store.list(c.API_VERSION, c.KIND_MODEL_REPLICA):
            if not _fixture_matches(fixture, replica):
                continue
            base = replica_base(str(replica["metadata"]["name"]))
            pods.append(
                {
                    "metadata": {"name": f"{base}-0", "labels": {c.LABEL_REPLICA: base}},
                    "spec": {"nodeSelector": {c.LABEL_POOL: label_value(fixture.pool)}},
                    "status": {
                        "phase": "Pending",
                        "conditions": [
                            {
                                "type": "PodScheduled",
                                "status": "False",
                                "reason": "Unschedulable",
                                "message": fixture.message,
                                "lastTransitionTime": fixture.since,
                            }
                        ],
                    },
                }
            )
    return pods


def _inventory_key(store: ObjectStore, obj: Obj, managed: list[Obj], found: Fixtures) -> str | None:
    """What the simulated agent's summary is made of (its JSON key), or None when the
    Object did not sync (no provider config): nothing is observed."""
    if not isinstance(_live(obj), dict):
        return None
    cluster = labels_of(obj).get(c.LABEL_CLUSTER, "")
    plans = _cluster_plan(store, cluster, managed, found)
    pods = _stuck_pods(store, cluster, found)
    # A fixed "now" (the Object's creation, or the latest fixture time): a second
    # pass over an unchanged store writes the same summary.
    created = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
    now = max(
        [created or EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ")]
        + [f.since for f in found.unschedulable if f.cluster == cluster and f.since]
    )
    signals = _replica_signals(store, cluster, found)
    return json.dumps([cluster, plans, pods, now, signals], sort_keys=True)


def _live(obj: Obj) -> Any:
    return ((obj.get("status") or {}).get("atProvider") or {}).get("manifest")


def _write_inventory(obj: Obj, key: str) -> None:
    """Write the simulated agent's summary where the Object observes the ConfigMap.

    The observed manifest is shared read-only once read: it is written anew.
    """
    at = writable_dict(writable_dict(obj, "status"), "atProvider")
    at["manifest"] = {**_live(obj), "data": json.loads(_summary_text(key))}


def _inventory_stamp(
    store: ObjectStore, obj: Obj, found: Fixtures, pooled: set[str]
) -> tuple[int | None, ...] | None:
    """Versions of everything an inventory Object's summary is made of, besides the Object.

    Equal stamps (at an equal Object version) mean an equal summary key
    (`_inventory_key`), so the key need not be built again. None for a cluster
    with managed node pools: the managed resources were just changed in place
    and their versions do not show it yet.
    """
    cluster = labels_of(obj).get(c.LABEL_CLUSTER, "")
    if cluster in pooled:
        return None
    replicas = bool(found.unschedulable or found.signals)
    return (
        store.version(Key(c.API_VERSION, c.KIND_INFERENCE_CLUSTER, "", cluster)),
        store.kind_version("v1", "ConfigMap"),
        store.kind_version(c.API_VERSION, c.KIND_MODEL_REPLICA) if replicas else None,
        store.kind_version(c.API_VERSION, c.KIND_MODEL_ENDPOINT) if found.signals else None,
    )


def _key_digest(key: str) -> bytes:
    """A summary key's digest: what a pass remembers of it instead of the (large) key."""
    return hashlib.blake2b(key.encode(), digest_size=20).digest()


def _simulate_inventories(
    store: ObjectStore, passes: Passes, managed: list[Obj], found: Fixtures
) -> list[Key]:
    """Write the simulated agent's summary into each inventory Object whose summary changed."""
    pooled = {(_pool_of(o) or ("",))[0] for o in managed}
    touched = []
    # The inventory Objects, from the label index (in key order).
    for key, obj in store.select(
        OBJECT_API_VERSION, "Object", labels={c.LABEL_COMPONENT: "inventory"}
    ):
        if not isinstance(_live(obj), dict):
            continue  # not synced (no provider config): nothing is observed
        last = passes.last_reads("inventory", store, key)
        stamp = _inventory_stamp(store, obj, found, pooled)
        if stamp is not None and isinstance(last, tuple) and last[0] == stamp:
            continue
        text = _inventory_key(store, obj, managed, found)
        digest = _key_digest(text) if text is not None else None
        if text is None:
            continue
        if isinstance(last, tuple) and last[1] == digest:
            passes.amend("inventory", key, (stamp, digest))  # the same summary, stamped anew
            continue
        _write_inventory(obj, text)
        passes.simulated("inventory", key, (stamp, digest))
        touched.append(key)
    return touched


def simulate_cloud(store: ObjectStore, clock: Clock, passes: Passes | None = None) -> list[Key]:
    """Update every cloud managed resource, connection Secret and observed inventory.

    Managed resources and inventory Objects change in place: their keys are
    returned. Secrets are put into the store. An inventory Object `passes`
    shows unchanged since its last pass, with the same simulated cluster,
    keeps the summary that pass wrote.
    """
    passes = Passes() if passes is None else passes
    found = fixtures(store)
    # Kind by kind from the store's index (keys sort by apiVersion and kind first,
    # so this is key order): scanning every object was most of a pass over a
    # fleet of existing clusters, which manage none.
    managed = [
        obj
        for api_version, kind in store.kinds()
        if cloud_managing(api_version, kind) is not None
        for _, obj in store.select(api_version, kind)
    ]
    for obj in managed:
        simulate_managed(store, obj, clock, found.stockouts)
    touched = [Key.of(obj) for obj in managed]
    return touched + _simulate_inventories(store, passes, managed, found)
