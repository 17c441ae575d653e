"""ModelDeployment API: the pydantic types and the generated XRD agree, case by case.

Each spec is accepted or rejected by hand-written expectation; the types
(what composers parse with) and the XRD (what the API server enforces, via
the conformance oracle's CEL and schema evaluation) must both reach it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from oracles import conformance_module
from pydantic import ValidationError

from modelplane.api.kinds import MODEL_DEPLOYMENT
from modelplane.api.model_deployment import ModelDeploymentSpec, ModelDeploymentStatus
from modelplane.api.xrd import xrd

ENGINE = {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0"}]}}
SELECTOR = {
    "devices": [{"name": "gpu", "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}]}]
}
ROLE = {"nodeSelector": SELECTOR, "workers": {"template": ENGINE}}
UNIFIED = {"nodeSelector": SELECTOR, "workers": {"template": ENGINE}}


def spec(**fields: Any) -> dict[str, Any]:
    out = copy.deepcopy(UNIFIED)
    for k, v in fields.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def devices(n: int, selectors: int = 1) -> dict[str, Any]:
    sel = [{"cel": "true"}] * selectors
    return {"devices": [{"name": f"d{i}", "selectors": sel} for i in range(n)]}


CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("unified", spec(), True),
    ("disaggregated", spec(nodeSelector=None, workers=None, prefill=ROLE, decode=ROLE), True),
    ("both forms", spec(prefill=ROLE, decode=ROLE), False),
    ("neither form", spec(nodeSelector=None, workers=None), False),
    ("prefill without decode", spec(nodeSelector=None, workers=None, prefill=ROLE), False),
    ("nodeSelector without workers", spec(workers=None), False),
    ("no device requests", spec(nodeSelector={"devices": []}), False),
    ("16 device requests", spec(nodeSelector=devices(16)), True),
    ("17 device requests", spec(nodeSelector=devices(17)), False),
    ("8 selectors", spec(nodeSelector=devices(1, 8)), True),
    ("9 selectors", spec(nodeSelector=devices(1, 9)), False),
    ("no selectors", spec(nodeSelector=devices(1, 0)), False),
    (
        "duplicate request names",
        spec(nodeSelector={"devices": devices(1)["devices"] * 2}),
        False,
    ),
    ("zero replicas", spec(replicas=0), True),
    ("negative replicas", spec(replicas=-1), False),
    (
        "no engine container",
        spec(workers={"template": {"spec": {"containers": [{"name": "vllm", "image": "x"}]}}}),
        False,
    ),
    (
        "two engine containers",
        spec(
            workers={
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "engine", "image": "x"},
                            {"name": "engine", "image": "y"},
                        ]
                    }
                }
            }
        ),
        False,
    ),
    (
        "engine plus a sidecar",
        spec(
            workers={
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "engine", "image": "x"},
                            {"name": "proxy", "image": "y"},
                        ]
                    }
                }
            }
        ),
        True,
    ),
    (
        "topology",
        spec(
            workers={
                "count": 2,
                "topology": {"tensor": 8, "pipeline": 2, "data": 2, "dataLocal": 2},
                "template": ENGINE,
            }
        ),
        True,
    ),
    (
        "pipeline × data not a multiple of dataLocal",
        spec(workers={"topology": {"pipeline": 3, "dataLocal": 2}, "template": ENGINE}),
        False,
    ),
    (
        "cluster selector and tolerations",
        spec(
            clusterSelector={
                "matchLabels": {"tier": "premium"},
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}],
            },
            tolerations=[{"key": "drain", "operator": "Exists", "effect": "NoExecute"}],
        ),
        True,
    ),
    ("priority class", spec(priority="inference-high"), True),
    ("priority not a name", spec(priority="Inference High"), False),
    ("one cache", spec(caches=[{"name": "weights"}]), True),
    ("two caches", spec(caches=[{"name": "a"}, {"name": "b"}]), False),
    ("unknown field", spec(replica=2), False),
]


@pytest.fixture(scope="module")
def crd_schema() -> Any:
    crdcheck = conformance_module("crdcheck")
    registry = crdcheck.Registry()
    registry.add(crdcheck.xrd_to_crd(xrd(MODEL_DEPLOYMENT)))
    return registry


@pytest.mark.parametrize(("name", "body", "valid"), CASES, ids=[c[0] for c in CASES])
def test_types_accept_exactly_the_valid_specs(name: str, body: dict[str, Any], valid: bool) -> None:
    try:
        ModelDeploymentSpec.model_validate(body)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == valid


@pytest.mark.parametrize(("name", "body", "valid"), CASES, ids=[c[0] for c in CASES])
def test_xrd_accepts_exactly_the_valid_specs(
    name: str, body: dict[str, Any], valid: bool, crd_schema: Any
) -> None:
    obj = {
        "apiVersion": MODEL_DEPLOYMENT.api_version,
        "kind": "ModelDeployment",
        "metadata": {"name": "m", "namespace": "ml"},
        "spec": body,
    }
    issues = crd_schema.validate(obj)
    assert (not issues) == valid, [(i.path, i.message) for i in issues]


def test_scale_subresource_points_at_replicas_and_selector() -> None:
    (version,) = xrd(MODEL_DEPLOYMENT)["spec"]["versions"]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }


def test_status_bounds_the_explanation() -> None:
    entry = {"cluster": "a", "reason": "Tainted", "message": "m"}
    ModelDeploymentStatus.model_validate({"unschedulable": [entry] * 32})
    with pytest.raises(ValidationError):
        ModelDeploymentStatus.model_validate({"unschedulable": [entry] * 33})
    with pytest.raises(ValidationError):
        ModelDeploymentStatus.model_validate({"unschedulable": [{**entry, "message": "x" * 1025}]})
