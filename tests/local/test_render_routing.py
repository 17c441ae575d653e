"""Rendering examples/routing: gateway address, weighted services, no Secret value anywhere."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.local import ControlPlane, load_paths
from modelplane.local.gateway_sim import gateway_address
from modelplane.local.output import dump_yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "routing"
API = "modelplane.ai/v1alpha1"


def _render() -> tuple[list[dict[str, Any]], Any]:
    inputs = load_paths([str(EXAMPLE)])
    return inputs, ControlPlane(inputs).run()


def test_gateway_publishes_the_simulated_address_and_services_use_it() -> None:
    _, result = _render()
    gw = result.get(API, "InferenceGateway", "default")
    assert gw is not None
    # The address is the Gateway's on the cluster it runs on: the provider config
    # its Object reaches (the control plane's own here).
    (wrapper,) = [
        o
        for o in result.store.objects()
        if o["kind"] == "Object"
        and o["spec"]["forProvider"]["manifest"]["kind"] == "Gateway"
        and o["spec"]["forProvider"]["manifest"]["metadata"]["name"] == "modelplane"
    ]
    cluster = wrapper["spec"]["providerConfigRef"]["name"]
    address = f"https://{gateway_address('envoy-gateway-system', 'modelplane', cluster)}"
    assert gw["status"]["address"] == address
    svc = result.get(API, "ModelService", "llama-spillover", "ml-team")
    assert svc is not None
    # Served under its own host on the gateway.
    assert svc["status"]["address"] == "https://llama.inference.example.com"


def test_example_endpoint_without_its_secret_is_listed_but_gets_no_traffic() -> None:
    _, result = _render()
    eu = result.get(API, "ModelEndpoint", "llama-saas-eu", "ml-team")
    assert eu is not None and eu["status"]["ready"] is False
    cond = next(x for x in eu["status"]["conditions"] if x["type"] == "CredentialsResolved")
    assert (cond["status"], cond["reason"]) == ("False", "SecretNotFound")
    assert "ml-team/saas-eu-api-key" in cond["message"]
    svc = result.get(API, "ModelService", "llama-spillover", "ml-team")
    assert svc is not None
    table = {e["name"]: (e["weight"], e["ready"]) for e in svc["status"]["endpoints"]}
    assert table["llama-saas-eu"] == (0, False)
    assert svc["status"]["endpointsReady"].endswith(f"/{len(table)}")


def test_no_rendered_object_but_the_input_secret_holds_its_value() -> None:
    inputs, result = _render()
    values: list[str] = []
    for doc in inputs:
        if doc["kind"] == "Secret":
            for value in (doc.get("stringData") or {}).values():
                values += [value, base64.b64encode(value.encode()).decode()]
            for value in (doc.get("data") or {}).values():
                values += [value, base64.b64decode(value).decode()]
    assert values
    secrets = {
        (d["metadata"]["namespace"], d["metadata"]["name"]) for d in inputs if d["kind"] == "Secret"
    }
    emitted = [
        o
        for o in result.store.objects()
        if not (
            o["kind"] == "Secret"
            and (o["metadata"].get("namespace"), o["metadata"]["name"]) in secrets
        )
    ]
    text = dump_yaml(emitted) + "".join(f"{e}" for events in result.events.values() for e in events)
    for value in values:
        assert value not in text


def test_tree_shows_each_service_with_its_address_and_weighted_endpoints() -> None:
    out = CliRunner().invoke(cli, ["render", str(EXAMPLE), "-o", "tree"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "Address https://llama.inference.example.com" in out.output
    assert "llama-saas  weight 50 (5.0%) ready" in out.output
    assert "llama-saas-eu  weight 0 (0.0%) not ready" in out.output
    assert "weight 100 (10.0%) ready" in out.output  # the canary replica


def test_canary_splits_90_10_between_the_two_deployments_replicas() -> None:
    _, result = _render()
    svc = result.get(API, "ModelService", "llama", "ml-team")
    assert svc is not None
    by_deployment: dict[str, list[int]] = {}
    for entry in svc["status"]["endpoints"]:
        endpoint = result.get(API, "ModelEndpoint", entry["name"], "ml-team")
        assert endpoint is not None and entry["ready"] is True
        labels = endpoint["metadata"]["labels"]
        assert labels["model"] == "llama-3-8b"
        by_deployment.setdefault(labels["modelplane.ai/deployment"], []).append(entry["weight"])
    assert by_deployment == {"llama-stable": [450, 450], "llama-canary": [100]}
    # Replicas of two deployments sit under different paths, but the fleet gateway
    # weighs clusters (one Backend each, no second hop), and the service's own route
    # on each cluster weighs its replicas: 550 for eu-west (canary 100 + stable 450).
    assert "/ml-team/llama-" in endpoint["spec"]["url"]
    obj = "kubernetes.m.crossplane.io/v1alpha1"
    assert result.get(obj, "Object", "llama-hop", "ml-team") is None
    route = result.get(obj, "Object", "llama-route", "ml-team")
    assert route is not None
    refs = route["spec"]["forProvider"]["manifest"]["spec"]["rules"][0]["backendRefs"]
    assert sorted(r["weight"] for r in refs) == [450, 550]
    west = result.get(obj, "Object", "llama-cluster-eu-west-route", "ml-team")
    assert west is not None
    (rule,) = west["spec"]["forProvider"]["manifest"]["spec"]["rules"]
    assert sorted(r["weight"] for r in rule["backendRefs"]) == [100, 450]


def test_warming_up_replica_gets_no_endpoint_and_its_service_waits() -> None:
    _, result = _render()
    replicas = [
        r
        for r in result.store.list(API, "ModelReplica", "ml-team")
        if r["spec"]["deploymentName"] == "qwen-warming"
    ]
    assert len(replicas) == 1
    ready = next(x for x in replicas[0]["status"]["conditions"] if x["type"] == "Ready")
    assert ready["status"] == "False"
    assert result.get(API, "ModelEndpoint", replicas[0]["metadata"]["name"], "ml-team") is None
    svc = result.get(API, "ModelService", "qwen", "ml-team")
    assert svc is not None
    cond = next(x for x in svc["status"]["conditions"] if x["type"] == "EndpointsReady")
    assert (cond["status"], cond["reason"]) == ("False", "NoReadyEndpoints")
    assert "address" not in svc["status"]
