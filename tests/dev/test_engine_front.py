"""The engine front against a scripted upstream on loopback: answers pass through
unchanged (sized, and streamed chunk by chunk), and `/metrics` adds vLLM's
`http_requests_total` counted as vLLM's instrumentator counts (handler, method,
status class; health and metrics left out; an unknown route under "none").
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from modelplane.dev import engine_front

PAGE = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0.0\n"
STREAM = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n', b"data: [DONE]\n\n"]


class Upstream(BaseHTTPRequestHandler):
    """The double as scripted: a sized JSON answer, a chunked stream, a 503, a page."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/metrics":
            self._send(200, PAGE.encode())
        else:
            self._send(200, b'{"data": []}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if request.get("fail"):
            self._send(503, b'{"error": "injected"}')
        elif request.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in STREAM:
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._send(200, json.dumps({"echo": request}).encode())


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def front() -> Iterator[int]:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server = engine_front.serve(_port(), upstream.server_address[1])
    for s in (upstream, server):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        for s in (server, upstream):
            s.shutdown()
            s.server_close()


def _call(port: int, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = json.dumps(body) if body is not None else None
        conn.request(method, path, data, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def _counted(port: int, expect: int = 200) -> dict[tuple[str, str, str], float]:
    status, page = _call(port, "GET", "/metrics")
    assert status == expect
    out = {}
    for family in text_string_to_metric_families(page.decode()):
        for s in family.samples:
            if s.name == "http_requests_total":
                out[(s.labels["handler"], s.labels["method"], s.labels["status"])] = s.value
    return out


def test_answers_pass_through_unchanged(front: int) -> None:
    assert _call(front, "POST", "/v1/completions", {"prompt": "hi"}) == (
        200,
        b'{"echo": {"prompt": "hi"}}',
    )
    assert _call(front, "POST", "/v1/chat/completions", {"stream": True}) == (
        200,
        b"".join(STREAM),
    )
    assert _call(front, "POST", "/v1/chat/completions", {"fail": True}) == (
        503,
        b'{"error": "injected"}',
    )


def test_the_counter_counts_as_vllm_does(front: int) -> None:
    assert _counted(front) == {}  # the family is there before any request
    for _ in range(3):
        _call(front, "POST", "/v1/chat/completions", {})
    _call(front, "POST", "/v1/chat/completions", {"stream": True})
    _call(front, "POST", "/v1/chat/completions", {"fail": True})
    _call(front, "GET", "/v1/models")
    _call(front, "GET", "/health")
    _call(front, "GET", "/v2/whatever?x=1")
    assert _counted(front) == {
        ("/v1/chat/completions", "POST", "2xx"): 4.0,
        ("/v1/chat/completions", "POST", "5xx"): 1.0,
        ("/v1/models", "GET", "2xx"): 1.0,
        ("none", "GET", "2xx"): 1.0,
    }


def test_the_metrics_page_keeps_the_doubles(front: int) -> None:
    _, page = _call(front, "GET", "/metrics")
    names = {f.name for f in text_string_to_metric_families(page.decode())}
    assert names == {"vllm:num_requests_running", "http_requests"}


def test_an_engine_that_does_not_answer_is_a_502() -> None:
    server = engine_front.serve(_port(), _port())  # nothing listens upstream
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        status, _ = _call(port, "POST", "/v1/chat/completions", {})
        assert status == 502
        # Its page is a 502 too (the agent calls the replica unreachable), counter and all.
        assert _counted(port, 502) == {("/v1/chat/completions", "POST", "5xx"): 1.0}
    finally:
        server.shutdown()
        server.server_close()
