"""The function's own Prometheus metrics (`modelplane function serve --metrics-port`).

Measured in the serving process around each RunFunction call, from the
request and the response only (the composers stay pure and know nothing of
it): calls, latency and fatal results per kind, request sizes, and for
ModelDeployments the replicas placed and not placed and the autoscaler's
decisions, read from the desired composite's status.

Served with prometheus_client's own HTTP server on its own registry. With the
server's TLS directory (tls.crt, tls.key, ca.crt) the endpoint requires a
client certificate signed by that CA (nothing is served anonymously); with
`--insecure` it listens on loopback unless an address is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import json_format
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

_SIZE_BUCKETS = tuple(float(4**k * 1024) for k in range(9))  # 1 KiB .. 64 MiB
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _struct(message: Any) -> dict[str, Any]:
    try:
        out = json_format.MessageToDict(message)
    except Exception:  # a metric must never fail a call
        return {}
    return out if isinstance(out, dict) else {}


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class FunctionMetrics:
    """The function's metrics on one registry; `observe` after every call."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        """Create the metrics on `registry` (a new one by default)."""
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "modelplane_function_calls", "RunFunction calls.", ["kind"], registry=r
        )
        self.seconds = Histogram(
            "modelplane_function_call_seconds",
            "RunFunction latency.",
            ["kind"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.fatal = Counter(
            "modelplane_function_fatal_results", "Calls answered fatal.", ["kind"], registry=r
        )
        self.request_bytes = Histogram(
            "modelplane_function_request_bytes",
            "Serialized RunFunctionRequest size.",
            ["kind"],
            buckets=_SIZE_BUCKETS,
            registry=r,
        )
        labels = ["namespace", "deployment"]
        self.placed = Gauge(
            "modelplane_deployment_replicas_placed",
            "Replicas placed and counted.",
            labels,
            registry=r,
        )
        self.unschedulable = Gauge(
            "modelplane_deployment_replicas_unschedulable",
            "Desired replicas with no place (or kept unschedulable on their cluster).",
            labels,
            registry=r,
        )
        self.desired = Gauge(
            "modelplane_autoscaling_desired_replicas",
            "The autoscaler's replica count.",
            labels,
            registry=r,
        )
        self.decisions = Counter(
            "modelplane_autoscaling_decisions",
            "Autoscaler decisions that changed the replica count.",
            [*labels, "reason"],
            registry=r,
        )

    def observe(
        self, req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, seconds: float
    ) -> None:
        """Count one call: its kind, latency, size, fatality and deployment numbers."""
        observed = _struct(req.observed.composite.resource)
        kind = str(observed.get("kind") or "unknown")
        self.calls.labels(kind).inc()
        self.seconds.labels(kind).observe(seconds)
        self.request_bytes.labels(kind).observe(req.ByteSize())
        if any(r.severity == fnv1.SEVERITY_FATAL for r in rsp.results):
            self.fatal.labels(kind).inc()
            return
        if kind == "ModelDeployment":
            self._deployment(observed, _struct(rsp.desired.composite.resource))

    def _deployment(self, observed: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
        meta = observed.get("metadata") or {}
        who = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        status = desired.get("status") or {}
        placed = _int(status.get("replicas"))
        if placed is None:
            return
        auto = status.get("autoscaling") or {}
        want = _int(auto.get("desiredReplicas"))
        if want is None:
            want = _int((observed.get("spec") or {}).get("replicas"))
        stuck = sum(1 for p in status.get("placements") or [] if p.get("unschedulable"))
        self.placed.labels(*who).set(placed)
        self.unschedulable.labels(*who).set(max(0, (want or 0) - placed) + stuck)
        desired_count, current = (
            _int(auto.get("desiredReplicas")),
            _int(auto.get("currentReplicas")),
        )
        if desired_count is None:
            return
        self.desired.labels(*who).set(desired_count)
        if desired_count != current:
            self.decisions.labels(*who, str(auto.get("reason") or "")).inc()


def serve_metrics(
    metrics: FunctionMetrics, port: int, address: str | None, tls_certs_dir: str | None
) -> Any:
    """Start the metrics endpoint in a thread; the server (mutual TLS with a certs dir)."""
    if tls_certs_dir:
        server, _ = start_http_server(
            port,
            address or "0.0.0.0",  # clients must present a certificate
            registry=metrics.registry,
            certfile=os.path.join(tls_certs_dir, "tls.crt"),
            keyfile=os.path.join(tls_certs_dir, "tls.key"),
            client_cafile=os.path.join(tls_certs_dir, "ca.crt"),
            client_auth_required=True,
        )
        return server
    server, _ = start_http_server(port, address or "127.0.0.1", registry=metrics.registry)
    return server
