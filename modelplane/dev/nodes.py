"""Fake GPU nodes for a local workload cluster: Nodes kwok keeps alive, and their devices.

A workload cluster of `modelplane dev up` has no kubelet and no GPU. Each pool
node becomes a Node that kwok manages (annotation `kwok.x-k8s.io/node: fake`),
labelled with its pool and tainted like a GPU node, and the ResourceSlice the
NVIDIA DRA driver would publish for its devices (`api.dra_publish`, the same
shape `modelplane render` simulates), so kube-scheduler's own DRA allocator
decides where a claim fits. One untainted `system` node runs what is not a
replica (the inventory agent's Deployment, for one).

What a pool publishes is chosen here, not read from its InferenceClass: a pool
publishing fewer or smaller devices than its class declares is how hardware
drift is staged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modelplane.api import constants as c
from modelplane.api.dra_publish import node_slices
from modelplane.api.objects import dns_label
from modelplane.dev.kubeapi import Api

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_VALUE = "fake"
MANAGED_LABEL = "dev.modelplane.ai/fake-node"
SYSTEM_NODE = "system"
GPU_DRIVER = "gpu.nvidia.com"
# Room for any replica's CPU and memory: the GPUs are what is scarce.
NODE_ALLOCATABLE = {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "2Ti"}

Obj = dict[str, Any]


@dataclass(frozen=True)
class PoolNodes:
    """One pool of fake nodes: how many, and the devices each node publishes."""

    name: str
    nodes: int
    devices: tuple[Mapping[str, Any], ...] = ()
    zone: str | None = None


@dataclass(frozen=True)
class ClusterNodes:
    """The pools of one workload cluster (by its `dev` name, e.g. wl-1)."""

    cluster: str
    pools: tuple[PoolNodes, ...] = field(default_factory=tuple)


def class_devices(inference_class: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The DRA devices an InferenceClass manifest declares, as its pool's nodes publish them."""
    devices = ((inference_class.get("spec") or {}).get("devices")) or []
    return tuple(d for d in devices if isinstance(d, Mapping) and d.get("claim", "DRA") == "DRA")


def device_class(driver: str = GPU_DRIVER) -> Obj:
    """The DeviceClass a DRA driver installs: every device of that driver."""
    return {
        "apiVersion": c.DRA_API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
    }


def node_name(pool: str, index: int) -> str:
    """The name of a pool's index-th fake node."""
    return dns_label(f"{pool}-{index}")


def node(name: str, pool: str | None, zone: str | None = None) -> Obj:
    """A fake Node kwok manages; a pool's node carries the pool label and the GPU taint."""
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        MANAGED_LABEL: "true",
    }
    spec: Obj = {}
    if pool is not None:
        node_labels[c.LABEL_POOL] = pool
        spec["taints"] = [
            {"key": c.GPU_TAINT_KEY, "value": c.GPU_TAINT_VALUE, "effect": "NoSchedule"}
        ]
    if zone:
        node_labels["topology.kubernetes.io/zone"] = zone
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels,
            "annotations": {KWOK_ANNOTATION: KWOK_VALUE},
        },
        "spec": spec,
        "status": {
            "allocatable": dict(NODE_ALLOCATABLE),
            "capacity": dict(NODE_ALLOCATABLE),
        },
    }


def pool_objects(pool: PoolNodes) -> list[Obj]:
    """A pool's Nodes and their ResourceSlices."""
    out: list[Obj] = []
    for i in range(pool.nodes):
        name = node_name(pool.name, i)
        out.append(node(name, pool.name, pool.zone))
        out += node_slices(name, pool.devices)
    return out


@dataclass
class Published:
    """What one publish changed in a cluster."""

    applied: int = 0
    deleted: int = 0


def publish(api: Api, pools: Sequence[PoolNodes], exclusive: bool = False) -> Published:
    """Make the cluster's fake nodes of these pools exactly what they say.

    Creates the DeviceClass and the system node, applies every pool node and
    its slices, and deletes what the pools no longer have: nodes beyond their
    count and slices of devices no longer published. Pools not named are left
    alone, unless `exclusive`: then the cluster has these pools and no other.
    """
    done = Published()
    wanted = [device_class(), node(SYSTEM_NODE, None)]
    wanted += [obj for pool in pools for obj in pool_objects(pool)]
    nodes: dict[str, str] = {}  # node name -> uid, as applied
    for obj in wanted:
        if obj["kind"] == "ResourceSlice":
            obj = _owned(obj, nodes)
        applied = api.apply(obj)
        if obj["kind"] == "Node":
            nodes[obj["metadata"]["name"]] = str((applied.get("metadata") or {}).get("uid"))
        done.applied += 1
    names = None if exclusive else {p.name for p in pools}
    done.deleted = _prune(api, names, {o["metadata"]["name"] for o in wanted})
    return done


def _owned(slice_: Obj, nodes: Mapping[str, str]) -> Obj:
    """The slice owned by its Node, as a DRA driver's kubelet plugin publishes it.

    A Node deleted then takes its slices with it (the garbage collector), so
    its devices stop being offered, as on a real cluster.
    """
    node_name_ = slice_["spec"]["nodeName"]
    if node_name_ not in nodes:
        return slice_
    owner = {"apiVersion": "v1", "kind": "Node", "name": node_name_, "uid": nodes[node_name_]}
    return {**slice_, "metadata": {**slice_["metadata"], "ownerReferences": [owner]}}


def _prune(api: Api, pools: set[str] | None, wanted: set[str]) -> int:
    """Delete the named pools' (None: every pool's) nodes and slices no longer wanted."""
    deleted = 0
    theirs = set()
    for obj in api.list("v1", "Node", selector=MANAGED_LABEL):
        name = obj["metadata"]["name"]
        pool = (obj["metadata"].get("labels") or {}).get(c.LABEL_POOL)
        if pool is not None and (pools is None or pool in pools):
            theirs.add(name)
            if name not in wanted:
                deleted += api.delete("v1", "Node", name)
    for obj in api.list(c.DRA_API_VERSION, "ResourceSlice"):
        name = obj["metadata"]["name"]
        if (obj.get("spec") or {}).get("nodeName") in theirs and name not in wanted:
            deleted += api.delete(c.DRA_API_VERSION, "ResourceSlice", name)
    return deleted


def declared_pools(
    cluster: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]
) -> tuple[PoolNodes, ...]:
    """The pools an Existing InferenceCluster manifest declares, publishing their classes' devices.

    A pool whose class is not among `classes` publishes no devices.
    """
    out = []
    for pool in ((cluster.get("spec") or {}).get("pools")) or []:
        klass = classes.get(str(pool.get("className")), {})
        count = int(pool.get("nodeCount", 1))
        out.append(PoolNodes(str(pool["name"]), count, class_devices(klass)))
    return tuple(out)


# --- the fleet file ------------------------------------------------------------------


class FleetFileError(ValueError):
    """The fleet file is not what `dev up --nodes` reads; the message names the field."""


def _devices(entry: Mapping[str, Any], classes: Mapping[str, Any], where: str) -> tuple:
    if "devices" in entry:
        devices = entry["devices"]
        if not isinstance(devices, list):
            raise FleetFileError(f"{where}.devices: a list of devices")
        return tuple(devices)
    name = str(entry.get("className"))
    if name not in classes:
        raise FleetFileError(
            f"{where}.className: {name!r} is not an InferenceClass in the file "
            "(give the class, or the devices the pool publishes)"
        )
    return class_devices(classes[name])


def _pool(entry: Any, classes: Mapping[str, Any], where: str) -> PoolNodes:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise FleetFileError(f"{where}: a pool needs a name")
    nodes = entry.get("nodes", 1)
    if not isinstance(nodes, int) or nodes < 0:
        raise FleetFileError(f"{where}.nodes: a count of nodes (0 or more)")
    zone = entry.get("zone")
    return PoolNodes(entry["name"], nodes, _devices(entry, classes, where), zone)


def read_fleet_file(path: Path) -> list[ClusterNodes]:
    """Read the pools of each workload cluster from a fleet file.

    The file holds InferenceClass manifests and one document of kind
    `DevFleet`: `clusters: {wl-1: {pools: [{name, nodes, className | devices, zone}]}}`.
    """
    docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, Mapping)]
    classes = {
        d["metadata"]["name"]: d
        for d in docs
        if d.get("kind") == "InferenceClass" and isinstance(d.get("metadata"), Mapping)
    }
    fleets = [d for d in docs if d.get("kind") == "DevFleet"]
    if len(fleets) != 1:
        raise FleetFileError(f"{path}: exactly one document of kind DevFleet")
    clusters = fleets[0].get("clusters") or {}
    if not isinstance(clusters, Mapping):
        raise FleetFileError("DevFleet.clusters: a map of workload cluster name to its pools")
    out = []
    for cluster, body in clusters.items():
        entries = (body or {}).get("pools") or []
        where = f"DevFleet.clusters.{cluster}.pools"
        out.append(
            ClusterNodes(
                str(cluster),
                tuple(_pool(e, classes, f"{where}[{i}]") for i, e in enumerate(entries)),
            )
        )
    return out
