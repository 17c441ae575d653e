"""Stock-out detection and hardware drift: tables of provider reports → verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api.clouds import Cloud, cloud_named
from modelplane.api.inference_class import Device
from modelplane.api.inventory_summary import summarize
from modelplane.compose.clusters.clouds import PROVISIONERS
from modelplane.compose.clusters.clouds.capacity import (
    nodes_up,
    pool_stockout,
    stockout_message,
    zone_in,
)
from modelplane.compose.clusters.drift import Drift, _compare, hardware_drift

NOW = "2026-01-01T00:00:00Z"


def _mr(*messages: str, at: dict[str, Any] | None = None) -> dict[str, Any]:
    conditions = [{"type": "Synced", "status": "False", "message": m} for m in messages]
    return {"status": {"conditions": conditions, "atProvider": at or {}}}


# (cloud, managed resource, stocked out?, zone named by the message)
STOCKOUTS = [
    pytest.param(
        "EKS",
        _mr(
            "AsgInstanceLaunchFailures: Could not launch On-Demand Instances. "
            "InsufficientInstanceCapacity - We currently do not have sufficient p5.48xlarge "
            "capacity in the Availability Zone you requested (us-east-1c)."
        ),
        True,
        "us-east-1c",
        id="aws-insufficient-capacity",
    ),
    pytest.param(
        "EKS",
        _mr("InsufficientInstanceCapacity in us-gov-west-1a"),
        True,
        "us-gov-west-1a",
        id="aws-govcloud-zone",
    ),
    pytest.param(
        "EKS",
        _mr("AsgInstanceLaunchFailures: You are not authorized to use launch template"),
        False,
        None,
        id="aws-other-launch-failure",
    ),
    pytest.param(
        "GKE",
        _mr(
            "code=ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/p/zones/us-central1-a' does "
            "not have enough resources available to fulfill the request."
        ),
        True,
        "us-central1-a",
        id="gcp-zone-exhausted",
    ),
    pytest.param(
        "GKE",
        _mr(at={"statusMessage": "GCE_STOCKOUT in europe-west4-b"}),
        True,
        "europe-west4-b",
        id="gcp-stockout-in-status",
    ),
    pytest.param(
        "GKE",
        _mr("InsufficientInstanceCapacity"),
        False,
        None,
        id="aws-code-on-gcp-is-not-a-stockout",
    ),
    pytest.param("GKE", {}, False, None, id="no-status"),
    pytest.param(
        "AKS",
        _mr(
            'polling after CreateOrUpdate: Code="SkuNotAvailable" Message="The requested VM '
            "size for resource 'Following SKUs have failed for Capacity Restrictions: "
            "Standard_ND96isr_H100_v5' is currently not available in location 'eastus2'.\""
        ),
        True,
        None,
        id="azure-sku-not-available",
    ),
    pytest.param(
        "AKS",
        _mr('Code="OverconstrainedZonalAllocationRequest" Message="Allocation failed."'),
        True,
        None,
        id="azure-overconstrained-zonal",
    ),
    pytest.param(
        "AKS",
        _mr('Code="QuotaExceeded" Message="Operation could not be completed"'),
        False,
        None,
        id="azure-quota-is-not-a-stockout",
    ),
    pytest.param("AKS", _mr("ZONE_RESOURCE_POOL_EXHAUSTED"), False, None, id="gcp-code-on-azure"),
]


def _cloud(name: str) -> Cloud:
    cloud = cloud_named(name)
    assert cloud is not None
    return cloud


@pytest.mark.parametrize(("cloud", "managed", "stocked", "zone"), STOCKOUTS)
def test_stockout_detection(cloud: str, managed: dict[str, Any], stocked: bool, zone: Any) -> None:
    message = stockout_message(_cloud(cloud), managed)
    assert (message is not None) == stocked
    if message is not None:
        assert zone_in(_cloud(cloud), message) == zone


@pytest.mark.parametrize("provisioner", PROVISIONERS, ids=lambda p: p.cloud.name)
def test_every_cloud_recognises_the_stockout_its_provider_reports(provisioner: Any) -> None:
    # The render simulation writes this message; the composer must read it back.
    pool = {"metadata": {"name": "c-pool-gpu"}, "spec": {"forProvider": {}}}
    message = provisioner.reports.stockout(pool, "c", "zone-1")
    assert stockout_message(provisioner.cloud, _mr(message)) == message


def test_a_stockout_counts_only_ready_nodes_of_the_pool_and_never_more_than_requested() -> None:
    managed = _mr("GCE_STOCKOUT")
    found = pool_stockout(
        _cloud("GKE"), "a100", "nvidia-tesla-a100", 2, managed, declared_zone="z-1", up=5
    )
    assert found is not None
    assert (found.zone, found.accelerator, found.nodes_up, found.requested) == (
        "z-1",
        "nvidia-tesla-a100",
        2,
        2,
    )
    assert pool_stockout(_cloud("GKE"), "a100", None, 2, _mr("quota exceeded")) is None


def _node(name: str, pool: str | None, ready: str = "True") -> dict[str, Any]:
    labels = {"modelplane.ai/pool": pool} if pool else {}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def test_nodes_up_counts_ready_nodes_with_the_pool_label() -> None:
    nodes = [_node("a", "h100"), _node("b", "h100", "False"), _node("c", "l4"), _node("d", None)]
    inventory = summarize(nodes, [], [], NOW, 0)
    assert (nodes_up("h100", inventory), nodes_up("l4", inventory), nodes_up("x", inventory)) == (
        1,
        1,
        0,
    )
    assert nodes_up("h100", None) is None  # no inventory: unknown, not zero


GPU = Device.model_validate(
    {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": 2,
        "attributes": {"gpu.nvidia.com/productName": {"string": "NVIDIA H100 80GB HBM3"}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
)
FABRIC = Device.model_validate({"name": "ib", "claim": "Synthetic", "driver": "ib.example.com"})


def _slice(node: str, *devices: dict[str, Any], driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    return {
        "kind": "ResourceSlice",
        "spec": {"driver": driver, "nodeName": node, "devices": list(devices)},
    }


def _gpu(name: str, memory: str = "80Gi", product: str = "NVIDIA H100 80GB HBM3") -> dict:
    return {
        "name": name,
        "attributes": {"productName": {"string": product}, "uuid": {"string": name}},
        "capacity": {"memory": {"value": memory}},
    }


# (observed objects, expected drifts)
DRIFTS = [
    pytest.param(
        [_node("n1", "h100"), _slice("n1", _gpu("g0"), _gpu("g1"))],
        [],
        id="matches",
    ),
    pytest.param(
        # 80Gi declared, 81920Mi published: the same quantity.
        [_node("n1", "h100"), _slice("n1", _gpu("g0", "81920Mi"), _gpu("g1"))],
        [],
        id="same-quantity-other-unit",
    ),
    pytest.param(
        [
            _node("n1", "h100"),
            _node("n2", "h100"),
            _slice("n1", _gpu("g0", "40Gi"), _gpu("g1", "40Gi")),
            _slice("n2", _gpu("g0", "40Gi"), _gpu("g1")),
        ],
        [Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi", nodes=2)],
        id="capacity-40Gi-on-two-nodes",
    ),
    pytest.param(
        [_node("n1", "h100"), _slice("n1", _gpu("g0", product="NVIDIA A100"), _gpu("g1"))],
        [Drift("h100", "gpu", "attribute productName", "NVIDIA H100 80GB HBM3", "NVIDIA A100")],
        id="attribute-differs",
    ),
    pytest.param(
        [_node("n1", "h100"), _slice("n1", _gpu("g0"))],
        [Drift("h100", "gpu", "count", "2", "1")],
        id="fewer-devices",
    ),
    pytest.param(
        [_node("n1", "h100"), _slice("n1", _gpu("g0"), _gpu("g1"), driver="other.example.com")],
        [Drift("h100", "gpu", "count", "2", "0")],
        id="other-driver-publishes-nothing-for-the-class",
    ),
    pytest.param(
        [_node("n1", "l4"), _slice("n1", _gpu("g0", "24Gi"))],
        [],
        id="another-pools-node",
    ),
    pytest.param([], [], id="nothing-observed"),
]


@pytest.mark.parametrize(("observed", "want"), DRIFTS)
def test_hardware_drift(observed: list[dict[str, Any]], want: list[Drift]) -> None:
    # Through the summary, as live: the agent summarises, the composer compares.
    nodes = [o for o in observed if o["kind"] == "Node"]
    slices = [o for o in observed if o["kind"] == "ResourceSlice"]
    inventory = summarize(nodes, slices, [], NOW, 0)
    assert hardware_drift("h100", [GPU, FABRIC], inventory.pool("h100")) == want


def test_a_drift_names_pool_device_field_and_both_values() -> None:
    text = Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi", nodes=2).describe()
    assert text == (
        "pool 'h100' device 'gpu': capacity memory is 40Gi on 2 node(s), the class declares 80Gi"
    )


# A class device with one attribute of each DRA type and a capacity; the slices
# below publish it as written, with other values, or not at all.
TYPED = Device.model_validate(
    {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": 1,
        "attributes": {
            "cores": {"int": 132},
            "fast": {"bool": True},
            "driverVersion": {"version": "1.2.3"},
            "gpu.nvidia.com/arch": {"string": "hopper"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
)
TYPED_ATTRS = {
    "cores": {"int": 132},
    "fast": {"bool": True},
    "driverVersion": {"version": "1.2.3"},
    "arch": {"string": "hopper"},
}


def _typed_drift(attributes: dict[str, Any], capacity: dict[str, Any]) -> list[Drift]:
    """Drift of TYPED against one node publishing one device, through the summary."""
    published = _slice("n1", {"name": "g0", "attributes": attributes, "capacity": capacity})
    inventory = summarize([_node("n1", "h100")], [published], [], NOW, 0)
    return hardware_drift("h100", [TYPED], inventory.pool("h100"))


def _drift(field: str, declared: str, observed: str) -> Drift:
    return Drift("h100", "gpu", field, declared, observed)


MEMORY = {"memory": {"value": "80Gi"}}
TYPED_DRIFTS = [
    pytest.param(TYPED_ATTRS, MEMORY, [], id="int-bool-version-string-as-declared"),
    pytest.param(
        # The driver's domain on either side is not part of the name.
        {**TYPED_ATTRS, "gpu.nvidia.com/cores": {"int": 132}},
        MEMORY,
        [],
        id="domain-prefixed-name-published",
    ),
    pytest.param(
        {**TYPED_ATTRS, "cores": {"int": 114}, "fast": {"bool": False}},
        MEMORY,
        [_drift("attribute cores", "132", "114"), _drift("attribute fast", "true", "false")],
        id="int-and-bool-differ",
    ),
    pytest.param(
        {**TYPED_ATTRS, "driverVersion": {"version": "1.3.0"}},
        MEMORY,
        [_drift("attribute driverVersion", "1.2.3", "1.3.0")],
        id="version-differs",
    ),
    pytest.param(
        {"cores": {"int": 132}},
        {},
        [
            _drift("attribute arch", "hopper", "absent"),
            _drift("attribute driverVersion", "1.2.3", "absent"),
            _drift("attribute fast", "true", "absent"),
            _drift("capacity memory", "80Gi", "absent"),
        ],
        id="missing-attributes-and-capacity",
    ),
    pytest.param(
        # Published without a value (an empty attribute, a bare string, a capacity
        # with no value): nothing the class can be compared with, so absent.
        {**TYPED_ATTRS, "fast": {}, "driverVersion": "1.2.3"},
        {"memory": {}},
        [
            _drift("attribute driverVersion", "1.2.3", "absent"),
            _drift("attribute fast", "true", "absent"),
            _drift("capacity memory", "80Gi", "absent"),
        ],
        id="valueless-attributes-and-capacity",
    ),
    pytest.param(
        TYPED_ATTRS,
        {"memory": {"value": "lots"}},
        [_drift("capacity memory", "80Gi", "absent")],
        id="capacity-not-a-quantity",
    ),
]


@pytest.mark.parametrize(("attributes", "capacity", "want"), TYPED_DRIFTS)
def test_drift_on_typed_missing_and_valueless_attributes(
    attributes: dict[str, Any], capacity: dict[str, Any], want: list[Drift]
) -> None:
    assert _typed_drift(attributes, capacity) == want


@pytest.mark.parametrize(
    ("published", "declared", "observed"),
    [
        ({"string": "132"}, "132 (int)", "132 (string)"),
        ({"bool": True}, "132 (int)", "true (bool)"),
    ],
    ids=["string-for-int", "bool-for-int"],
)
def test_an_attribute_published_with_another_type_is_a_drift(
    published: dict[str, Any], declared: str, observed: str
) -> None:
    # A selector comparing with the int 132 would not match any of these.
    drifts = _typed_drift({**TYPED_ATTRS, "cores": published}, MEMORY)
    assert drifts == [_drift("attribute cores", declared, observed)]


def test_an_int_attribute_carried_as_a_whole_float_is_the_same_int() -> None:
    # protobuf Structs carry every number as a double.
    assert _typed_drift({**TYPED_ATTRS, "cores": {"int": 132.0}}, MEMORY) == []


def test_a_published_value_not_of_its_own_key_type_keeps_its_own_type() -> None:
    # The summarizer normalizes slices; a raw shape can still hold a string under `int`.
    shape = {"attributes": {**TYPED_ATTRS, "cores": {"int": "132"}}, "capacity": MEMORY}
    assert _compare(TYPED, shape) == [("attribute cores", "132 (int)", "132 (str)")]


# Killers for survivors of a mutation sample (issue 24).


def _pool_drift(observed: list[dict[str, Any]], devices: list[Device]) -> list[Drift]:
    nodes = [o for o in observed if o["kind"] == "Node"]
    slices = [o for o in observed if o["kind"] == "ResourceSlice"]
    return hardware_drift("h100", devices, summarize(nodes, slices, [], NOW, 0).pool("h100"))


def test_names_published_only_with_the_drivers_domain_are_compared_without_it() -> None:
    # Only prefixed names on the slice: stripping the driver's domain is what matches them.
    prefixed = {f"gpu.nvidia.com/{k}": v for k, v in TYPED_ATTRS.items()}
    assert _typed_drift(prefixed, {"gpu.nvidia.com/memory": {"value": "80Gi"}}) == []


def test_a_capacity_declared_with_the_drivers_domain_matches_the_bare_published_name() -> None:
    declared = Device.model_validate(
        {
            **TYPED.model_dump(by_alias=True, exclude_none=True),
            "capacity": {"gpu.nvidia.com/memory": {"value": "80Gi"}},
        }
    )
    shape = {"attributes": TYPED_ATTRS, "capacity": MEMORY}
    assert _compare(declared, shape) == []
    assert _compare(declared, {**shape, "capacity": {"memory": {"value": "40Gi"}}}) == [
        ("capacity memory", "80Gi", "40Gi")
    ]


def test_a_driver_sorting_before_the_class_driver_does_not_hide_the_count() -> None:
    # driver_counts is sorted by driver: "a.example.com" comes first and must be skipped,
    # not end the count (the gpu driver publishes one device of two).
    observed = [
        _node("n1", "h100"),
        _slice("n1", {"name": "x0"}, driver="a.example.com"),
        _slice("n1", _gpu("g0")),
    ]
    assert _pool_drift(observed, [GPU]) == [Drift("h100", "gpu", "count", "2", "1")]
    observed[-1] = _slice("n1", _gpu("g0"), _gpu("g1"))
    assert _pool_drift(observed, [GPU]) == []


def test_nodes_publishing_no_device_and_silent_nodes_add_up_on_one_count_drift() -> None:
    # n1's slice lists no device (0 published), n2 publishes no slice at all: both count 0.
    observed = [
        _node("n1", "h100"),
        _node("n2", "h100"),
        _node("n3", "h100"),
        _slice("n1"),
        _slice("n3", _gpu("g0"), _gpu("g1")),
    ]
    assert _pool_drift(observed, [GPU]) == [Drift("h100", "gpu", "count", "2", "0", nodes=2)]


def test_a_shape_drifting_on_one_node_of_two_counts_one_node() -> None:
    observed = [
        _node("n1", "h100"),
        _node("n2", "h100"),
        _slice("n1", _gpu("g0", "40Gi"), _gpu("g1", "40Gi")),
        _slice("n2", _gpu("g0"), _gpu("g1")),
    ]
    assert _pool_drift(observed, [GPU]) == [
        Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi", nodes=1)
    ]


def test_every_dra_device_of_the_class_reports_its_drift() -> None:
    nic = Device.model_validate(
        {"name": "nic", "driver": "nic.example.com", "deviceClassName": "nic", "count": 1}
    )
    observed = [_node("n1", "h100"), _slice("n1", _gpu("g0", "40Gi"), _gpu("g1", "40Gi"))]
    assert _pool_drift(observed, [GPU, nic]) == [
        Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi"),
        Drift("h100", "nic", "count", "1", "0"),
    ]


# A raw shape (not through the summarizer, which drops what does not validate).
RAW_SHAPES = [
    pytest.param({"cores": {"int": 132.0}}, MEMORY, [], id="whole-float-is-the-int"),
    pytest.param(
        {"arch": {"string": 7}},
        MEMORY,
        [("attribute arch", "hopper (string)", "7 (int)")],
        id="int-under-string-keeps-its-type",
    ),
    pytest.param(
        {"fast": {"bool": "yes"}},
        MEMORY,
        [("attribute fast", "true (bool)", "yes (str)")],
        id="str-under-bool-keeps-its-type",
    ),
    pytest.param(
        {}, {"memory": {"value": None}}, [("capacity memory", "80Gi", "absent")], id="null-value"
    ),
    pytest.param(
        {},
        {"memory": {"value": "lots"}},
        [("capacity memory", "80Gi", "lots")],
        id="not-a-quantity-differs",
    ),
]


@pytest.mark.parametrize(("attributes", "capacity", "want"), RAW_SHAPES)
def test_raw_shapes_compare_by_type_and_value(
    attributes: dict[str, Any], capacity: dict[str, Any], want: list[tuple[str, str, str]]
) -> None:
    shape = {"attributes": {**TYPED_ATTRS, **attributes}, "capacity": capacity}
    assert _compare(TYPED, shape) == want


def test_a_summary_compared_again_answers_for_the_device_it_is_compared_with() -> None:
    # The comparison is remembered per published shape (by content) and device
    # (every call compares a cluster's summary with the same class devices, and
    # a fleet's clusters publish the same shapes): the same summary compared
    # with another class's device answers for that device, and another
    # cluster's summary of the same shapes reuses what was compared.
    from modelplane.compose.clusters import drift

    drift._COMPARED.clear()
    nodes = [_node("n1", "h100")]
    slices = [_slice("n1", _gpu("g0", "40Gi"), _gpu("g1", "40Gi"))]
    pool = summarize(nodes, slices, [], NOW, 0).pool("h100")
    want = [Drift("h100", "gpu", "capacity memory", "80Gi", "40Gi")]
    assert hardware_drift("h100", [GPU], pool) == want
    assert hardware_drift("h100", [GPU], pool) == want
    smaller = Device.model_validate({**GPU.to_dict(), "capacity": {"memory": {"value": "40Gi"}}})
    assert hardware_drift("h100", [smaller], pool) == []
    assert hardware_drift("h100", [GPU], pool) == want
    remembered = len(drift._COMPARED._entries)
    assert remembered == 2  # one shape, two devices
    other = summarize(
        [_node("m1", "h100")], [_slice("m1", _gpu("x", "40Gi"), _gpu("y", "40Gi"))], [], NOW, 0
    )
    assert hardware_drift("h100", [GPU], other.pool("h100")) == want
    assert len(drift._COMPARED._entries) == remembered
    # Another published shape is compared on its own.
    full = summarize(nodes, [_slice("n1", _gpu("g0", "80Gi"), _gpu("g1", "80Gi"))], [], NOW, 0)
    assert hardware_drift("h100", [GPU], full.pool("h100")) == []
    assert len(drift._COMPARED._entries) == remembered + 1
