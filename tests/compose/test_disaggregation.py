"""Prefill → decode on the native backend: the pool, the picker, the sidecar, NIXL."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from replicas import placed_by, ready_caches

from modelplane.compose.replica import disaggregation
from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput

HERE = Path(__file__).resolve().parent
KSERVE = HERE / "expected" / "model_replica_kserve"


def _native(name: str) -> dict[str, Any]:
    case = yaml.safe_load((KSERVE / name).read_text())
    replica = copy.deepcopy(case["replica"])
    del replica["spec"]["backend"]
    required = {
        "cluster": [case["cluster"]],
        "deployment": placed_by(replica),
        **ready_caches(replica),
    }
    res = compose(ComposeInput(composite=replica, required=required))
    assert res.fatal is None
    return {
        k: d.resource["spec"]["forProvider"]["manifest"]
        for k, d in res.desired.items()
        if d.resource["kind"] == "Object"
    }


def test_a_unified_replica_gets_no_pool_or_picker() -> None:
    out = _native("kserve-single-gpu.yaml")
    assert not [k for k in out if k == "inferencepool" or k.startswith("picker-")]
    assert out["route"]["spec"]["rules"][0]["backendRefs"][0]["port"] == 8000


def test_a_disaggregated_replica_flows_through_its_pool() -> None:
    out = _native("kserve-disaggregated.yaml")
    base = "llama-pd-0b1c2d3e"
    assert out["route"]["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": base}
    ]
    pool = out["inferencepool"]["spec"]
    assert pool["endpointPickerRef"]["name"] == out["picker-service"]["metadata"]["name"]
    members = pool["selector"]["matchLabels"]
    prefill = out["prefill-deployment"]["spec"]["template"]
    decode = out["decode-deployment"]["spec"]["template"]
    picker = out["picker-deployment"]["spec"]["template"]
    for pod, role in ((prefill, "prefill"), (decode, "decode")):
        labels = pod["metadata"]["labels"]
        assert members.items() <= labels.items()
        assert labels[disaggregation.ROLE_LABEL] == role  # what the P/D filters read
        engine = next(x for x in pod["spec"]["containers"] if x["name"] == "engine")
        kv = [a for a in engine["args"] if a.startswith("--kv-transfer-config=")]
        assert [json.loads(a.split("=", 1)[1]) for a in kv] == [
            {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        ]
    assert not members.items() <= picker["metadata"]["labels"].items()
    # Decode: the sidecar takes the engine port and hands requests to the engine on 8200.
    [sidecar] = decode["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    assert "--port=8000" in sidecar["args"] and "--vllm-port=8200" in sidecar["args"]
    engine = next(x for x in decode["spec"]["containers"] if x["name"] == "engine")
    assert "--port=8200" in engine["args"]
    assert engine["readinessProbe"]["httpGet"]["port"] == 8200
    assert "initContainers" not in prefill["spec"]
    config = json.loads(out["picker-config"]["data"]["config.yaml"])
    assert [p["name"] for p in config["schedulingProfiles"]] == ["prefill", "decode"]
    assert {"type": "pd-profile-handler"} in config["plugins"]
