"""The engine double's HTTP front: vLLM's request counter, which the double lacks.

vLLM's OpenAI server counts every request its HTTP server answers in
`http_requests_total{handler, method, status}` (prometheus-fastapi-instrumentator:
`handler` the route's path template, `status` grouped by class, "2xx", "5xx";
`/metrics`, `/health`, `/ping`, `/load`, `/version` and `/server_info` not
counted). The local fleet's engine double (llm-d-inference-sim) serves only the
`vllm:*` names, and a failure it injects (`--failure-injection-rate`) moves none
of them, so an error rate could not be read from it. This process stands where
vLLM's HTTP server would: it listens on the engine's port inside the Pod's
network namespace, runs the double on a port of its own (its child, gone with
it), passes every request and response through unchanged (a streamed answer
chunk by chunk), and serves `/metrics` as the double's page followed by that
counter. The inventory agent reads both, as it would from vLLM
(`modelplane.agent.engines`).

    python -m modelplane.dev.engine_front --port 8000 --upstream-port 18123 -- SIM ARGS...

It exits when the double does, so the kubelet restarts both.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import http.client
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What vLLM's instrumentator leaves out of the counter.
EXCLUDED = frozenset({"/metrics", "/health", "/ping", "/load", "/version", "/server_info"})
# vLLM's OpenAI routes: any other path is counted under handler "none", as the
# instrumentator does for a request no route matched.
ROUTES = frozenset(
    {
        "/v1/chat/completions",
        "/v1/completions",
        "/v1/models",
        "/v1/embeddings",
        "/v1/responses",
        "/v1/rerank",
        "/v1/score",
        "/v1/audio/transcriptions",
        "/v1/audio/translations",
        "/tokenize",
        "/detokenize",
        "/v1/load_lora_adapter",
        "/v1/unload_lora_adapter",
    }
)
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
    }
)
UPSTREAM_TIMEOUT = 600.0
CHUNK = 64 * 1024
METRIC = "http_requests_total"
_PR_SET_PDEATHSIG = 1


class Counter:
    """`http_requests_total` by (handler, method, status class), safe across threads."""

    def __init__(self) -> None:
        """An empty counter."""
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}

    def count(self, path: str, method: str, status: int) -> None:
        """Count one answered request, as vLLM's instrumentator would (or not at all)."""
        route = path.split("?", 1)[0]
        if route in EXCLUDED:
            return
        key = (route if route in ROUTES else "none", method, f"{status // 100}xx")
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def exposition(self) -> str:
        """The counter in Prometheus' text format (its TYPE line even with no sample)."""
        with self._lock:
            counts = sorted(self._counts.items())
        lines = [
            f"# HELP {METRIC} Total number of requests by method, status and handler.",
            f"# TYPE {METRIC} counter",
        ]
        lines += [
            f'{METRIC}{{handler="{h}",method="{m}",status="{s}"}} {float(n)}'
            for (h, m, s), n in counts
        ]
        return "\n".join(lines) + "\n"


def _headers(items: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in items if k.lower() not in HOP_BY_HOP]


class FrontServer(ThreadingHTTPServer):
    """The front's server: where the double listens, and the counter its answers move."""

    daemon_threads = True

    def __init__(self, port: int, upstream_port: int, counter: Counter) -> None:
        """Listen on `port` (every address of the Pod) for the double on `upstream_port`."""
        super().__init__(("", port), Front)
        self.upstream_port = upstream_port
        self.counter = counter


class Front(BaseHTTPRequestHandler):
    """Passes every request to the double and counts its answer; serves `/metrics`."""

    protocol_version = "HTTP/1.1"
    server: FrontServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # a line per request would drown the Pod's log

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/metrics":
            self._metrics()
        else:
            self._pass()

    def do_POST(self) -> None:
        self._pass()

    def do_PUT(self) -> None:
        self._pass()

    def do_DELETE(self) -> None:
        self._pass()

    def _metrics(self) -> None:
        status, page = _fetch(self.server.upstream_port, "/metrics")
        body = (page.rstrip("\n") + "\n" + self.server.counter.exposition()).encode()
        self._answer(status or 502, body, "text/plain; version=0.0.4")

    def _pass(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else None
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.server.upstream_port, timeout=UPSTREAM_TIMEOUT
        )
        try:
            conn.request(self.command, self.path, body, dict(_headers(self.headers.items())))
            resp = conn.getresponse()
        except OSError as err:
            conn.close()
            self.server.counter.count(self.path, self.command, 502)
            self._answer(502, f"engine unreachable: {err}\n".encode(), "text/plain")
            return
        try:
            self._relay(resp)
        finally:
            self.server.counter.count(self.path, self.command, resp.status)
            conn.close()

    def _relay(self, resp: http.client.HTTPResponse) -> None:
        """The double's answer, as it comes: sized, or re-chunked piece by piece (a
        streamed completion reaches the client token by token)."""
        self.send_response(resp.status, resp.reason)
        headers = _headers(resp.getheaders())
        for k, v in headers:
            self.send_header(k, v)
        sized = any(k.lower() == "content-length" for k, _ in headers)
        if not sized:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while chunk := resp.read1(CHUNK):
            if not sized:
                chunk = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
            self.wfile.write(chunk)
            self.wfile.flush()
        if not sized:
            self.wfile.write(b"0\r\n\r\n")

    def _answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _fetch(port: int, path: str) -> tuple[int, str]:
    """GET `path` from the double: (status, text); (0, "") when it does not answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10.0)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    except OSError:
        return 0, ""
    finally:
        conn.close()


def die_with_parent() -> None:
    """Run in a child before exec: SIGTERM when its parent goes, so no engine outlives
    the process that started it."""
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def serve(port: int, upstream_port: int, counter: Counter | None = None) -> FrontServer:
    """A front on `port` for the double on `upstream_port` (not yet serving: call
    `serve_forever`)."""
    return FrontServer(port, upstream_port, counter or Counter())


def main(argv: Sequence[str] | None = None) -> None:
    """Run the double given after `--` and the front before it until the double exits."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("engine", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = [a for a in args.engine if a != "--"]
    if not command:
        parser.error("the engine's command line goes after --")
    engine = subprocess.Popen(  # a list: never a shell
        command, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent
    )
    server = serve(args.port, args.upstream_port)
    signal.signal(signal.SIGTERM, lambda *_: engine.terminate())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    code = engine.wait()
    with contextlib.suppress(OSError):
        server.shutdown()
    sys.exit(code)


if __name__ == "__main__":
    main()
