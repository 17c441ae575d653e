"""The scenario table of k8s.io/dynamic-resource-allocation/cel/compile_test.go (1.34 subset).

Each scenario gives an expression, a device (driver, attributes, capacity) and the
expected compile error, match error or match result, as upstream. Scenarios for
list-typed attributes and `includes()` (added after 1.34) are left out; upstream's
estimated-cost expectations have no counterpart here (see test_dra_cost_bound.py).
Error fragments are compared on meaning where cel-go and the C++ runtime word them
differently (noted per row).
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.dra.cel import CompileError, compile_selector

NESTED = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
EXPENSIVE = (
    f"{NESTED}.all(x, {NESTED}.all(y, {NESTED}.all(z, {NESTED}.all(z2, {NESTED}.all(z3, "
    f"{NESTED}.all(z4, {NESTED}.all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)

ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

# name: (expression, device, expected) where expected is
# ("compile", fragment) | ("match-error", fragments) | ("match", bool)
SCENARIOS: dict[str, tuple[str, dict[str, Any], tuple[str, Any]]] = {
    "true": ("true", {}, ("match", True)),
    "false": ("false", {}, ("match", False)),
    "syntax-error": ("?!", {}, ("compile", "Syntax error")),
    "type-error": ("1", {}, ("compile", "must evaluate to bool or the unknown type, not int")),
    # upstream: "no such key: noSuchAttr"
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        {},
        ("match-error", ["noSuchAttr"]),
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        {},
        ("match-error", ["noSuchAttr"]),
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', {}, ("match", False)),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        {"attributes": {"dra.example.com/something": {"bool": True}}},
        ("match", True),
    ),
    "empty-driver-name": ('device.driver == ""', {}, ("match", True)),
    "real-driver-name": (
        'device.driver == "dra.example.com"',
        {"driver": "dra.example.com"},
        ("match", True),
    ),
    "driver-name-qualifier": (
        'device.attributes["dra.example.com"].name',
        {"driver": "dra.example.com", "attributes": {"name": {"bool": True}}},
        ("match", True),
    ),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        {"driver": "dra.example.com", "attributes": {"name": {"bool": True}}},
        ("match", True),
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        {"driver": "dra.example.com", "attributes": {"name": {"bool": True}}},
        ("match", True),
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        {"driver": "dra.example.com", "attributes": {"other.example.com/name": {"bool": True}}},
        ("match", True),
    ),
    "bool": (
        'device.attributes["dra.example.com"].name',
        {"driver": "dra.example.com", "attributes": {"name": {"bool": True}}},
        ("match", True),
    ),
    "int": (
        'device.attributes["dra.example.com"].name > 0',
        {"driver": "dra.example.com", "attributes": {"name": {"int": 1}}},
        ("match", True),
    ),
    "string": (
        'device.attributes["dra.example.com"].name == "fish"',
        {"driver": "dra.example.com", "attributes": {"name": {"string": "fish"}}},
        ("match", True),
    ),
    # upstream: "got 'types.Int', expected iterable type"
    "macro-exists-on-int": (
        'device.attributes["dra.example.com"].name.exists(x, x > 0)',
        {"driver": "dra.example.com", "attributes": {"name": {"int": 1}}},
        ("match-error", []),
    ),
    "macro-exists-on-bool": (
        'device.attributes["dra.example.com"].name.exists(x, x == true)',
        {"driver": "dra.example.com", "attributes": {"name": {"bool": True}}},
        ("match-error", []),
    ),
    "macro-exists-on-string": (
        'device.attributes["dra.example.com"].name.exists(x, x == "fish")',
        {"driver": "dra.example.com", "attributes": {"name": {"string": "fish"}}},
        ("match-error", []),
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        {"driver": "dra.example.com", "attributes": {"name": {"version": "1.0.0"}}},
        ("match", True),
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
        '&& isSemver("v1.0.0", true)',
        {"driver": "dra.example.com", "attributes": {"name": {"version": "1.0.0"}}},
        ("match", True),
    ),
    "macro-exists-on-version": (
        'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        {"driver": "dra.example.com", "attributes": {"name": {"version": "1.0.0"}}},
        ("match-error", []),
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {"driver": "dra.example.com", "capacity": {"name": {"value": "1Mi"}}},
        ("match", True),
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {"driver": "dra.example.com", "capacity": {"name": {"value": "1Mi"}}},
        ("match", True),
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {},
        ("match", True),
    ),
    "all": (
        ALL,
        {
            "driver": "dra.example.com",
            "attributes": {
                "bool": {"bool": True},
                "int": {"int": 1},
                "string": {"string": "fish"},
                "version": {"version": "1.0.0"},
            },
            "capacity": {"quantity": {"value": "1Mi"}},
        },
        ("match", True),
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b '
        '&& device.attributes["dra.example.com"].c',
        {
            "driver": "dra.example.com",
            "attributes": {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        },
        ("match", True),
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        {"driver": "dra.example.com", "attributes": {"services": {"string": "some_example_value"}}},
        ("match", True),
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        {"driver": "dra.example.com", "attributes": {"services": {"string": "some_example_value"}}},
        ("match", True),
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        {"driver": "dra.example.com", "attributes": {"services": {"string": "some_example_value"}}},
        ("match", True),
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        {"driver": "dra.example.com", "attributes": {"services": {"string": "asymetric"}}},
        ("match", True),
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        {"driver": "dra.example.com", "capacity": {"memory": {"value": "1Mi"}}},
        ("match", True),
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        {"driver": "dra.example.com", "capacity": {"memory": {"value": "1Mi"}}},
        ("match", True),
    ),
    # upstream: "actual cost limit exceeded"; here the engine's iteration budget stops it.
    "expensive": (EXPENSIVE, {"driver": "dra.example.com"}, ("match-error", ["budget"])),
    "allow_multiple_allocations": (
        "device.allowMultipleAllocations == true",
        {"driver": "dra.example.com", "allowMultipleAllocations": True},
        ("match", True),
    ),
    "allow_multiple_allocations_default": (
        "device.allowMultipleAllocations == false",
        {"driver": "dra.example.com"},
        ("match", True),
    ),
    "allow_multiple_allocations_false": (
        "device.allowMultipleAllocations == false",
        {"driver": "dra.example.com", "allowMultipleAllocations": False},
        ("match", True),
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str) -> None:
    expression, device, (kind, expected) = SCENARIOS[name]
    if kind == "compile":
        with pytest.raises(CompileError) as info:
            compile_selector(expression)
        assert expected in str(info.value)
        return
    outcome = compile_selector(expression).evaluate(device)
    if kind == "match-error":
        assert outcome.value is None
        assert outcome.error
        for fragment in expected:
            assert fragment in outcome.error
        assert compile_selector(expression).matches(device) is False
    else:
        assert outcome.error is None
        assert outcome.value is expected
