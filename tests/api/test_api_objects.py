"""Label values and condition reading over raw objects."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from modelplane.api.frozen import frozen
from modelplane.api.objects import condition, condition_status, is_condition_true, label_value

K8S_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.mark.parametrize(
    "value",
    ["chat", "llama-3.1-70b", "a" * 63, "", "x.y_z-0"],
)
def test_valid_label_values_are_kept(value: str) -> None:
    assert label_value(value) == value


@pytest.mark.parametrize(
    "value",
    ["a" * 64, "my-very-long-deployment-name-" * 4, "-leading", "trailing.", "sp ace", "x" * 253],
)
def test_invalid_label_values_become_valid_and_stable(value: str) -> None:
    out = label_value(value)
    assert len(out) <= 63
    assert K8S_LABEL_VALUE.match(out)
    assert label_value(value) == out


def test_long_values_that_share_a_prefix_stay_distinct() -> None:
    a, b = "p" * 70 + "a", "p" * 70 + "b"
    assert label_value(a) != label_value(b)


def test_condition_status() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced"}]}}
    assert condition_status(obj, "Ready") == "True"
    assert condition_status(obj, "Synced") is None
    assert condition_status(obj, "Other") is None
    assert condition_status({"status": {"conditions": "junk"}}, "Ready") is None
    assert condition_status(None, "Ready") is None
    assert is_condition_true(obj, "Ready")
    assert not is_condition_true({"status": None}, "Ready")


@pytest.mark.parametrize(
    "wrap",
    [
        lambda x: x,
        lambda x: MappingProxyType(x),  # any Mapping reads, not only the exact dict types
        frozen,
    ],
    ids=["dict", "mapping", "frozen"],
)
def test_a_condition_is_read_from_any_mapping(wrap: Callable[[Any], Any]) -> None:
    ready = wrap({"type": "Ready", "status": "True"})
    status = wrap({"conditions": ["junk", None, wrap({"type": "Synced"}), ready]})
    obj = {"status": status}
    assert condition(obj, "Ready") == {"type": "Ready", "status": "True"}
    assert condition(obj, "Synced") == {"type": "Synced"}
    assert condition(obj, "Other") is None
    assert condition({"status": ["not", "a", "mapping"]}, "Ready") is None
    assert condition({"status": wrap({"conditions": wrap({"type": "Ready"})})}, "Ready") is None
