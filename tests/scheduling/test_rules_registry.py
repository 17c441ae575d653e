"""The scheduler's rules: one per module in scheduling/rules/, each registered once.

A new rule is its module and one registration (`rules/__init__.py`); a rule
class defined there but registered nowhere would never run, and one registered
from elsewhere would hide from the folder that lists them.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from modelplane.scheduling import rules

REGISTERED = [*rules.FILTERS, *rules.POOL_FILTERS, *rules.SCORES, *rules.COST_PROFILE]
MODULES = sorted(m.name for m in pkgutil.iter_modules(rules.__path__))


def _is_rule(cls: type) -> bool:
    """A filter (admit and evict), a pool filter (refusals) or a score (score and prepare)."""
    methods = {name for name, _ in inspect.getmembers(cls, inspect.isfunction)}
    return {"admit", "evict"} <= methods or "refusals" in methods or {"score", "prepare"} <= methods


def _rule_classes(module_name: str) -> list[type]:
    module = importlib.import_module(f"{rules.__name__}.{module_name}")
    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and _is_rule(cls)
    ]


@pytest.mark.parametrize("module_name", MODULES)
def test_each_rule_module_holds_one_registered_rule(module_name: str) -> None:
    found = _rule_classes(module_name)
    assert len(found) == 1, f"rules/{module_name}.py defines {[c.__name__ for c in found]}"
    assert any(type(rule) is found[0] for rule in REGISTERED), f"{found[0]} is registered nowhere"


def test_every_registered_rule_lives_in_the_rules_folder() -> None:
    for rule in REGISTERED:
        assert type(rule).__module__.startswith(f"{rules.__name__}."), type(rule)


def test_the_folder_holds_the_rules_the_docs_list() -> None:
    assert MODULES == [
        "backend",
        "cache_readiness",
        "caches",
        "cluster_selector",
        "lowest_cost",
        "pod_security",
        "preemption",
        "readiness",
        "spot",
        "spread",
        "taints",
        "unschedulable",
    ]
