"""The InferenceClass composer refuses device values the DRA CEL layer cannot read.

A class whose devices selectors cannot read would make every selector a non-match on
its pools, so the class is refused (Valid=False, a warning event naming the device and
attribute) instead of the replicas on its pools. The API schema refuses what a pattern
can express; the composer checks the rest with the CEL layer's own conversions.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.api import constants as c
from modelplane.compose.clusters import inference_class
from modelplane.compose.types import ComposeInput, ConditionOut, EventOut
from modelplane.dra import SemverError, device_errors, parse_semver

GPU: dict[str, Any] = {
    "name": "gpu",
    "driver": "gpu.nvidia.com",
    "deviceClassName": "gpu.nvidia.com",
    "attributes": {"driverVersion": {"version": "570.124.6"}},
    "capacity": {"memory": {"value": "80Gi"}},
}
QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
CANNOT_READ = "device 'gpu': the DRA CEL layer cannot read it"


def klass(**changes: Any) -> dict[str, Any]:
    device = copy.deepcopy(GPU)
    for field, value in changes.items():
        device[field] = {**device.get(field, {}), **value}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": "l4-1x"},
        "spec": {"devices": [device]},
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            # The case: accepted before, and no selector could then read it.
            {"attributes": {"driverVersion": {"version": "570.124.06"}}},
            "spec.devices[0].attributes.driverVersion.version: '570.124.06' is not a "
            "semantic version (e.g. 570.124.6; numbers without leading zeros)",
        ),
        (
            {"attributes": {"driverVersion": {"version": "18446744073709551616.0.0"}}},
            f"spec.devices[0].attributes.driverVersion: {CANNOT_READ}: parse semantic "
            'version: strconv.ParseUint: parsing "18446744073709551616": value out of range',
        ),
        (
            {"attributes": {"index": {"int": 2**63}}},
            "spec.devices[0].attributes.index.int: Input should be less than or equal to "
            "9223372036854775807",
        ),
        (
            {"capacity": {"memory": {"value": "1e1.5"}}},
            f"spec.devices[0].capacity.memory: {CANNOT_READ}: quantities must match the "
            f"regular expression '{QUANTITY_REGEX}'",
        ),
        (
            {"capacity": {"memory": {"value": "80e99999999999999999999"}}},
            f"spec.devices[0].capacity.memory: {CANNOT_READ}: unable to parse quantity's suffix",
        ),
        (
            {
                "attributes": {"driverVersion": {"version": "99999999999999999999.0.0"}},
                "capacity": {"memory": {"value": "1E1.0"}},
            },
            f"spec.devices[0].attributes.driverVersion: {CANNOT_READ}: parse semantic "
            'version: strconv.ParseUint: parsing "99999999999999999999": value out of range; '
            f"spec.devices[0].capacity.memory: {CANNOT_READ}: quantities must match the "
            f"regular expression '{QUANTITY_REGEX}'",
        ),
    ],
)
def test_values_the_cel_layer_cannot_read_make_the_class_invalid(
    changes: dict[str, Any], message: str
) -> None:
    r = inference_class.compose(ComposeInput(klass(**changes)))
    assert r.fatal is None
    assert r.ready == "False"
    assert r.status == {}
    assert r.conditions == [ConditionOut("Valid", "False", "InvalidSpec", message)]
    assert r.events == [EventOut("Warning", "InvalidSpec", message)]


@pytest.mark.parametrize(
    "version", ["570.124.6", "0.0.0", "1.2.3-rc.1+build.5", "18446744073709551615.0.0"]
)
def test_readable_versions_keep_the_class_valid(version: str) -> None:
    r = inference_class.compose(
        ComposeInput(klass(attributes={"driverVersion": {"version": version}}))
    )
    assert r.conditions == [
        ConditionOut("Valid", "True", "Valid", "devices per node: 1× gpu (DRA)")
    ]


IDENTIFIER = st.sampled_from(["0", "1", "01", "00", "10", "a", "rc", "-", "0a", "a-1", ""])
NUMBER = st.sampled_from(["0", "1", "01", "007", "570", "18446744073709551616"]) | st.integers(
    0, 2**70
).map(str)


@st.composite
def version_text(draw: st.DrawFn) -> str:
    """Near-miss versions: the shapes blang/semver accepts and the ones it does not."""
    text = draw(st.sampled_from(["", "v"])) + ".".join(
        draw(st.lists(NUMBER, min_size=2, max_size=4))
    )
    if draw(st.booleans()):
        text += "-" + ".".join(draw(st.lists(IDENTIFIER, min_size=1, max_size=3)))
    if draw(st.booleans()):
        text += "+" + ".".join(draw(st.lists(IDENTIFIER, min_size=1, max_size=2)))
    return text


@settings(max_examples=300, deadline=None)
@given(version_text() | st.text("0123456789.-+av", max_size=12))
def test_the_schema_pattern_and_the_cel_parser_agree(version: str) -> None:
    """The XRD's pattern accepts exactly what the parser does, up to the uint64 range
    (which a pattern cannot express and the composer checks)."""
    matches = re.fullmatch(c.SEMVER_PATTERN, version) is not None
    try:
        parse_semver(version)
        parsed = True
    except SemverError as e:
        parsed = False
        if matches:
            assert "value out of range" in str(e)
    if parsed:
        assert matches
    device = {"driver": "d.example.com", "attributes": {"v": {"version": version}}}
    assert (device_errors(device) == []) == parsed
