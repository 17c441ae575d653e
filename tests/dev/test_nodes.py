"""Fake GPU nodes: the Node and ResourceSlice shapes, and the fleet file's reading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelplane.api.inventory_summary import summarize
from modelplane.dev import nodes

L4 = {
    "name": "gpu",
    "claim": "DRA",
    "driver": "gpu.nvidia.com",
    "count": 2,
    "attributes": {"productName": {"string": "NVIDIA L4"}},
    "capacity": {"memory": {"value": "23034Mi"}},
}
CLASS = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "l4x2"},
    "spec": {"devices": [L4, {"name": "cpu", "claim": "Synthetic", "driver": "x.example.com"}]},
}


def test_a_pool_node_is_kwok_managed_labelled_and_tainted() -> None:
    got = nodes.node("l4-0", "l4", zone="z1")
    assert got["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert got["metadata"]["labels"]["modelplane.ai/pool"] == "l4"
    assert got["metadata"]["labels"]["topology.kubernetes.io/zone"] == "z1"
    assert got["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    system = nodes.node("system", None)
    assert "modelplane.ai/pool" not in system["metadata"]["labels"]
    assert system["spec"] == {}


def test_each_node_publishes_one_slice_per_driver_with_count_devices() -> None:
    pool = nodes.PoolNodes("l4", 2, nodes.class_devices(CLASS))
    objs = nodes.pool_objects(pool)
    assert [o["kind"] for o in objs] == ["Node", "ResourceSlice", "Node", "ResourceSlice"]
    rs = objs[1]
    assert rs["spec"]["nodeName"] == "l4-0"
    assert rs["spec"]["driver"] == "gpu.nvidia.com"
    assert rs["spec"]["pool"] == {"name": "l4-0", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in rs["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert rs["spec"]["devices"][0]["capacity"] == {"memory": {"value": "23034Mi"}}


def test_the_summarizer_reads_the_fake_nodes_as_the_class_declares() -> None:
    pool = nodes.PoolNodes("l4", 3, nodes.class_devices(CLASS))
    objs = nodes.pool_objects(pool)
    for o in objs:
        if o["kind"] == "Node":
            o["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    summary = summarize(
        [o for o in objs if o["kind"] == "Node"],
        [o for o in objs if o["kind"] == "ResourceSlice"],
        [],
        "2026-01-01T00:00:00Z",
        0,
    )
    (reported,) = summary.pools
    assert reported.name == "l4" and reported.ready_nodes == 3
    (shape,) = reported.shapes
    assert shape.devices_per_node == 2 and shape.nodes == 3


def test_the_fleet_file_names_pools_by_class_or_by_devices(tmp_path: Path) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(
        "apiVersion: modelplane.ai/v1alpha1\nkind: InferenceClass\nmetadata: {name: l4x2}\n"
        "spec:\n  devices:\n  - {name: gpu, driver: gpu.nvidia.com, count: 2}\n"
        "---\nkind: DevFleet\nclusters:\n  wl-1:\n    pools:\n"
        "    - {name: l4, nodes: 3, className: l4x2}\n"
        "    - {name: small, nodes: 1, devices: [{name: gpu, driver: gpu.nvidia.com, count: 1}]}\n"
    )
    (wl1,) = nodes.read_fleet_file(f)
    assert wl1.cluster == "wl-1"
    assert [(p.name, p.nodes, p.devices[0]["count"]) for p in wl1.pools] == [
        ("l4", 3, 2),
        ("small", 1, 1),
    ]


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        ("[{name: l4, nodes: 1, className: nope}]", "className: 'nope' is not an InferenceClass"),
        ("[{name: l4, nodes: -1, devices: []}]", "pools[0].nodes"),
        ("[{nodes: 1}]", "pools[0]: a pool needs a name"),
    ],
)
def test_a_bad_fleet_file_names_the_field(tmp_path: Path, pools: str, message: str) -> None:
    f = tmp_path / "fleet.yaml"
    f.write_text(f"kind: DevFleet\nclusters:\n  wl-1:\n    pools: {pools}\n")
    with pytest.raises(nodes.FleetFileError, match=re.escape(message)):
        nodes.read_fleet_file(f)


def test_declared_pools_publish_their_class_devices() -> None:
    cluster = {"spec": {"pools": [{"name": "l4", "className": "l4x2", "nodeCount": 2}]}}
    (pool,) = nodes.declared_pools(cluster, {"l4x2": CLASS})
    assert (pool.name, pool.nodes, [d["name"] for d in pool.devices]) == ("l4", 2, ["gpu"])


class _RecordingApi:
    """Applies as the API server would: every Node gets a uid; nothing to prune."""

    def __init__(self) -> None:
        self.applied: list[dict] = []

    def apply(self, obj: dict) -> dict:
        self.applied.append(obj)
        uid = f"uid-of-{obj['metadata']['name']}" if obj["kind"] == "Node" else "other"
        return {**obj, "metadata": {**obj["metadata"], "uid": uid}}

    def list(self, *_args: object, **_kwargs: object) -> list[dict]:
        return []


def test_a_pool_nodes_slices_are_owned_by_their_node_so_a_deleted_node_takes_them() -> None:
    api = _RecordingApi()
    nodes.publish(api, [nodes.PoolNodes("l4", 2, nodes.class_devices(CLASS))])  # type: ignore[arg-type]
    owners = {
        o["spec"]["nodeName"]: o["metadata"].get("ownerReferences")
        for o in api.applied
        if o["kind"] == "ResourceSlice"
    }
    assert owners == {
        "l4-0": [{"apiVersion": "v1", "kind": "Node", "name": "l4-0", "uid": "uid-of-l4-0"}],
        "l4-1": [{"apiVersion": "v1", "kind": "Node", "name": "l4-1", "uid": "uid-of-l4-1"}],
    }
