"""Issue 40, finding 9: the function's smaller edges a client or tenant can lean on.

The metrics endpoint over real mTLS (certificates made with the openssl
command), and the per-deployment series a namespace leaves behind.
"""

from __future__ import annotations

import copy
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest

from modelplane.api.model_deployment import ModelDeploymentSpec
from modelplane.compose.deployments import model_deployment
from modelplane.compose.deployments.scaling import plan_scaling
from modelplane.compose.types import ComposeInput
from modelplane.crossplane import metrics as function_metrics
from modelplane.crossplane.convert import dict_to_struct
from modelplane.crossplane.metrics import FunctionMetrics, serve_metrics
from tests.compose import test_deployment_endpoints as endpoints_fixture

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _issue(name: str, cn: str, cwd: Path, ext: str) -> None:
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=cwd)  # fmt: skip
    (cwd / f"{name}.ext").write_text(ext)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-out", f"{name}.crt",
             "-extfile", f"{name}.ext", cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca", cwd=d)  # fmt: skip
    _issue("tls", "function-modelplane", d, "subjectAltName=IP:127.0.0.1\n")
    _issue("client", "prometheus", d, "extendedKeyUsage=clientAuth\n")
    return d


def _scrape(port: int, certs: Path) -> str:
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    context.load_cert_chain(str(certs / "client.crt"), str(certs / "client.key"))
    url = f"https://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=3, context=context) as rsp:
        return str(rsp.read().decode())


@needs_openssl
def test_idle_tcp_connection_does_not_block_the_mtls_metrics_endpoint(certs: Path) -> None:
    server = serve_metrics(FunctionMetrics(), 0, "127.0.0.1", str(certs))
    port = server.server_address[1]
    idle = socket.create_connection(("127.0.0.1", port))  # connects, never says hello
    try:
        time.sleep(0.2)  # the server has accepted it
        started = time.monotonic()
        text = _scrape(port, certs)
        assert time.monotonic() - started < 2.0
        assert "modelplane_function_calls" in text
    finally:
        idle.close()
        server.shutdown()
        server.server_close()


@needs_openssl
def test_client_without_a_certificate_gets_no_metrics(certs: Path) -> None:
    server = serve_metrics(FunctionMetrics(), 0, "127.0.0.1", str(certs))
    port = server.server_address[1]
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    try:
        with pytest.raises(OSError):  # the handshake, or the first read, is refused
            urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", timeout=3, context=context)
        assert "modelplane_function_calls" in _scrape(port, certs)  # and it still serves
    finally:
        server.shutdown()
        server.server_close()


def _call(name: str, *, deleting: bool = False, reason: str = "ScaledUp") -> tuple[Any, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team-a"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    composite = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": meta,
    }
    req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    rsp = fnv1.RunFunctionResponse()
    status = {"replicas": 2, "autoscaling": {"desiredReplicas": 3, "currentReplicas": 2,
              "reason": reason}}  # fmt: skip
    rsp.desired.composite.resource.CopyFrom(dict_to_struct({"status": status}))
    return req, rsp


def _deployments(m: FunctionMetrics) -> set[str]:
    text = "".join(
        f"{s.labels.get('deployment')}\n"
        for family in m.registry.collect()
        for s in family.samples
        if "deployment" in s.labels
    )
    return set(text.split())


def test_deleted_deployment_leaves_no_metric_series() -> None:
    m = FunctionMetrics()
    m.observe(*_call("chat"), 0.01)
    m.observe(*_call("other"), 0.01)
    assert _deployments(m) == {"chat", "other"}
    m.observe(*_call("chat", deleting=True), 0.01)
    assert _deployments(m) == {"other"}


def test_deployment_no_longer_reconciled_leaves_no_metric_series() -> None:
    now = [1000.0]
    m = FunctionMetrics(clock=lambda: now[0])
    for i in range(50):  # a namespace that churns through names
        m.observe(*_call(f"d{i}", reason=f"r{i % 3}"), 0.01)
    now[0] += function_metrics.SERIES_TTL + 1
    m.observe(*_call("still-here"), 0.01)
    assert _deployments(m) == {"still-here"}
    names = {f.name for f in m.registry.collect() for s in f.samples if s.labels}
    assert "modelplane_autoscaling_decisions" in names  # still-here's own series


# ── The deployment composer: what a replica's status may make it do ─────────


def test_huge_status_replicas_is_not_the_autoscalers_floor() -> None:
    spec = ModelDeploymentSpec.model_validate(
        {
            "replicas": 2,
            "autoscaling": {"maxReplicas": 4, "targets": {"queueDepthPerReplica": 5}},
            "nodeSelector": {"devices": [{"name": "gpu", "selectors": [{"cel": "true"}]}]},
            "workers": {"template": {"spec": {"containers": [{"name": "engine"}]}}},
        }
    )
    # Whoever can write the status subresource writes a billion counted replicas.
    scaling = plan_scaling(spec, {"replicas": 10**9}, {}, {})
    assert scaling is not None
    assert scaling.ask == 4  # bounded by maxReplicas (no more replicas exist)
    assert plan_scaling(spec, {"replicas": 3}, {}, {}).ask == 3  # type: ignore[union-attr]


def _compose_with_replica_status(status: Any) -> Any:
    """The deployment composed with its one replica's status replaced, its endpoint observed."""
    replica = endpoints_fixture.observed_replica(True, endpoints_fixture.URL)
    replica["status"] = status
    endpoint = {**endpoints_fixture.EXPECTED_ENDPOINT, "status": {"ready": True}}
    inp = ComposeInput(
        composite=copy.deepcopy(endpoints_fixture.DEPLOYMENT),
        observed={
            endpoints_fixture.REPLICA_KEY: replica,
            endpoints_fixture.ENDPOINT_KEY: endpoint,
        },
        required={
            "inference-clusters": [endpoints_fixture.cluster("203.0.113.10")],
            "model-replicas": [],
            "fleet-quotas": [],
            "priority-classes": [],
        },
    )
    return model_deployment.compose_with(inp, endpoints_fixture.scheduler)


def test_readable_replica_status_still_decides_its_endpoint() -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}], "endpoint": endpoints_fixture.URL}
    assert endpoints_fixture.ENDPOINT_KEY in _compose_with_replica_status(ready).desired
    not_ready = {**ready, "conditions": [{"type": "Ready", "status": "False"}]}
    withdrawn = _compose_with_replica_status(not_ready)
    assert endpoints_fixture.ENDPOINT_KEY not in withdrawn.desired
    assert all(x.type != "InputsReadable" for x in withdrawn.conditions)


@pytest.mark.parametrize(
    ("status", "field"),
    [
        ("garbage", "status"),
        ({"conditions": "Ready"}, "status.conditions"),
        ({"conditions": [{"type": "Ready", "status": True}]}, "status.conditions[0].status"),
        (
            {"conditions": [{"type": "Ready", "status": "True"}], "endpoint": 42},
            "status.endpoint",
        ),
    ],
    ids=["status-string", "conditions-string", "condition-status-bool", "endpoint-number"],
)
def test_malformed_replica_status_does_not_withdraw_its_endpoint(status: Any, field: str) -> None:
    result = _compose_with_replica_status(status)
    kept = result.desired.get(endpoints_fixture.ENDPOINT_KEY)
    assert kept is not None, "the endpoint was withdrawn"
    assert kept.resource == endpoints_fixture.EXPECTED_ENDPOINT  # as observed, status aside
    cond = next(x for x in result.conditions if x.type == "InputsReadable")
    assert cond.status == "False" and cond.reason == "Unreadable"
    assert f"ModelReplica chat-a0: {field} " in cond.message
    assert any(e.reason == "Unreadable" for e in result.events)
