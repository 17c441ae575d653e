"""The function's Prometheus metrics, scraped over HTTP from a running endpoint."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from prometheus_client.parser import text_string_to_metric_families

from modelplane.compose import registry
from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import dict_to_struct
from modelplane.crossplane.metrics import FunctionMetrics, serve_metrics

DEPLOYMENT = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelDeployment",
    "metadata": {"name": "chat", "namespace": "ml-team"},
    "spec": {"replicas": 2},
}


def request(composite: dict[str, Any]) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    return req


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_scrape_the_functions_metrics(monkeypatch: Any) -> None:
    def scaled(inp: ComposeInput) -> ComposeResult:
        result = ComposeResult()
        result.status = {
            "replicas": 4,
            "placements": [{"unschedulable": True}],
            "autoscaling": {"desiredReplicas": 5, "currentReplicas": 2, "reason": "ScaledUp"},
        }
        return result

    real = registry.composer_for
    monkeypatch.setattr(
        registry,
        "composer_for",
        lambda api, kind: scaled if kind == "ModelDeployment" else real(api, kind),
    )
    metrics = FunctionMetrics()
    runner = FunctionRunner(metrics=metrics, log_errors=False)
    server = serve_metrics(metrics, 0, "127.0.0.1", None)
    try:
        asyncio.run(runner.RunFunction(request(DEPLOYMENT), None))
        widget = {**DEPLOYMENT, "apiVersion": "test.modelplane.ai/v1", "kind": "Widget"}
        asyncio.run(runner.RunFunction(request(widget), None))  # no composer: fatal
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as rsp:
            text = rsp.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    got = samples(text)
    who = (("deployment", "chat"), ("namespace", "ml-team"))
    assert got[("modelplane_function_calls_total", (("kind", "ModelDeployment"),))] == 1
    assert got[("modelplane_function_calls_total", (("kind", "Widget"),))] == 1
    assert got[("modelplane_function_fatal_results_total", (("kind", "Widget"),))] == 1
    assert ("modelplane_function_fatal_results_total", (("kind", "ModelDeployment"),)) not in got
    assert got[("modelplane_function_call_seconds_count", (("kind", "ModelDeployment"),))] == 1
    assert got[("modelplane_function_request_bytes_count", (("kind", "Widget"),))] == 1
    assert got[("modelplane_deployment_replicas_placed", who)] == 4
    # 5 wanted, 4 placed, and one kept unschedulable on its cluster.
    assert got[("modelplane_deployment_replicas_unschedulable", who)] == 2
    assert got[("modelplane_autoscaling_desired_replicas", who)] == 5
    assert got[("modelplane_autoscaling_decisions_total", (*who, ("reason", "ScaledUp")))] == 1
    print("\n" + "\n".join(line for line in text.splitlines() if "modelplane_" in line))


def test_insecure_metrics_listen_on_loopback_only() -> None:
    server = serve_metrics(FunctionMetrics(), 0, None, None)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.shutdown()
        server.server_close()
