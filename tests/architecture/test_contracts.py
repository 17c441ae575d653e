"""Kinds talk through typed status models and their readers in `modelplane.api`.

Status wire names (`gpuPools`, `providerConfigName`, ...) may be spelled only in
`api`; everyone else reads through `modelplane.api.readers` and writes by
constructing the status model. A raw key elsewhere is how a renamed field
silently turns into "0 nodes" (issue 9).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from modelplane.api.inference_cluster import GPUPool, InferenceClusterStatus

PACKAGE = Path(__file__).resolve().parents[2] / "modelplane"

# Wire names of statuses one kind writes and another reads.
CONTRACT_KEYS = sorted(
    {
        f.alias
        for model in (InferenceClusterStatus, GPUPool)
        for name, f in model.model_fields.items()
        if f.alias and name not in ("conditions", "name", "message", "reason", "nodes")
    }
)


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_the_contract_keys_are_the_ones_other_kinds_read() -> None:
    assert CONTRACT_KEYS == [
        "capacityNote",
        "capacityType",
        "className",
        "devices",
        "gatewayAddress",
        "gpuPools",
        "observedGatewayAddress",
        "pricePerDeviceHour",
        "providerConfigName",
        "replicaSignals",
        "unschedulableReplicas",
    ]


def _params() -> list[object]:
    out: list[object] = []
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = str(p.relative_to(PACKAGE))
        if rel.startswith("api/"):
            continue
        out.append(pytest.param(p, id=rel))
    return out


@pytest.mark.parametrize("path", _params())
def test_no_status_wire_name_outside_api(path: Path) -> None:
    leaked = _string_constants(path) & {
        "gpuPools",
        "observedGatewayAddress",
        "providerConfigName",
        "gatewayAddress",
        "unschedulableReplicas",
    }
    assert not leaked, f"{path}: read {sorted(leaked)} through modelplane.api.readers"
