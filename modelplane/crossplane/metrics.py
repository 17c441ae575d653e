"""The function's own Prometheus metrics (`modelplane function serve --metrics-port`).

Measured in the serving process around each RunFunction call, from the
request and the response only (the composers stay pure and know nothing of
it): calls, latency and fatal results per kind, request sizes, and for
ModelDeployments the replicas placed and not placed and the autoscaler's
decisions, read from the desired composite's status.

Served with prometheus_client's own HTTP server on its own registry. With the
server's TLS directory (tls.crt, tls.key, ca.crt) the endpoint requires a
client certificate signed by that CA (nothing is served anonymously); with
`--insecure` it listens on loopback unless an address is given. The TLS
handshake runs in each connection's own thread under a timeout, never in the
accepting loop: a client that connects and sends nothing holds one thread for
at most HANDSHAKE_TIMEOUT seconds and blocks no other scrape.

A deployment's series are removed when its composite is being deleted, or
when it has not been reconciled for SERIES_TTL seconds (Crossplane calls the
function at every poll, so a deployment that is gone stops being seen).
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import crossplane.function.proto.v1.run_function_pb2 as fnv1
from google.protobuf import json_format
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    make_wsgi_app,
    start_http_server,
)

from modelplane.api import constants as c

_SIZE_BUCKETS = tuple(float(4**k * 1024) for k in range(9))  # 1 KiB .. 64 MiB
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
HANDSHAKE_TIMEOUT = 10.0  # seconds a client has to finish TLS, and then between reads
# A deployment not reconciled for this long is taken for gone: Crossplane
# calls the function for every composite at each poll (a minute by default).
SERIES_TTL = 3600.0


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

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Create the metrics on `registry` (a new one by default)."""
        self.registry = registry or CollectorRegistry()
        self._clock = clock
        self._lock = threading.Lock()
        # Per (namespace, deployment): when last seen, and the decision reasons counted.
        self._seen: dict[tuple[str, str], float] = {}
        self._reasons: dict[tuple[str, str], set[str]] = {}
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
        if kind == c.KIND_MODEL_DEPLOYMENT:
            self._deployment(observed, _struct(rsp.desired.composite.resource))

    def _deployment(self, observed: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
        meta = observed.get("metadata") or {}
        who = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        self._prune(self._clock())
        if meta.get("deletionTimestamp"):
            self.forget(*who)
            return
        with self._lock:
            self._seen[who] = self._clock()
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
            reason = str(auto.get("reason") or "")
            with self._lock:
                self._reasons.setdefault(who, set()).add(reason)
            self.decisions.labels(*who, reason).inc()

    def forget(self, namespace: str, deployment: str) -> None:
        """Remove every series of one deployment (it is gone, or being deleted)."""
        who = (namespace, deployment)
        with self._lock:
            self._seen.pop(who, None)
            reasons = self._reasons.pop(who, set())
        for gauge in (self.placed, self.unschedulable, self.desired):
            with contextlib.suppress(KeyError):  # a series never set
                gauge.remove(*who)
        for reason in reasons:
            with contextlib.suppress(KeyError):
                self.decisions.remove(*who, reason)

    def _prune(self, now: float) -> None:
        """Forget the deployments not reconciled for SERIES_TTL seconds."""
        with self._lock:
            gone = [who for who, at in self._seen.items() if now - at > SERIES_TTL]
        for who in gone:
            self.forget(*who)


class _Quiet(WSGIRequestHandler):
    """Serves the metrics page without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing."""


class _TLSPerConnection(ThreadingMixIn, WSGIServer):
    """mTLS whose handshake runs in the connection's thread, bounded by a timeout.

    Wrapping the listening socket instead would handshake inside accept(), in
    the one serving loop: a client that connects and stays silent would stop
    every other scrape.
    """

    daemon_threads = True
    context: ssl.SSLContext

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Handshake (at most HANDSHAKE_TIMEOUT seconds), then serve the request over TLS."""
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError:  # ssl.SSLError included: no certificate, a silent client, garbage
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()


def _mtls_context(certs_dir: str) -> ssl.SSLContext:
    """A server context that requires a client certificate signed by the directory's CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_verify_locations(os.path.join(certs_dir, "ca.crt"))
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_cert_chain(os.path.join(certs_dir, "tls.crt"), os.path.join(certs_dir, "tls.key"))
    return context


def _serve_mtls(registry: CollectorRegistry, port: int, address: str, certs_dir: str) -> Any:
    family = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    server_class = type("MetricsServer", (_TLSPerConnection,), {"address_family": family[0][0]})
    server: _TLSPerConnection = make_server(
        address, port, make_wsgi_app(registry), server_class, handler_class=_Quiet
    )
    server.context = _mtls_context(certs_dir)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_metrics(
    metrics: FunctionMetrics, port: int, address: str | None, tls_certs_dir: str | None
) -> Any:
    """Start the metrics endpoint in a thread; the server (mutual TLS with a certs dir)."""
    if tls_certs_dir:
        # Clients must present a certificate, so every address may listen.
        return _serve_mtls(metrics.registry, port, address or "0.0.0.0", tls_certs_dir)
    server, _ = start_http_server(port, address or "127.0.0.1", registry=metrics.registry)
    return server
