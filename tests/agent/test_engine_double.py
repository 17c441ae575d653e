"""The agent's real scrape against the real engine double on loopback.

Two doubles run as the local fleet's kubelet starts them (`kubelet.engine_argv`:
behind the front that adds vLLM's `http_requests_total`, with
`--force-dummy-tokenizer`, so no model hub is ever asked): one serves, the
other fails every request with its failure injection (`server_error`, HTTP
503). Between two scrapes the test sends them known requests; what the agent
reports must be what was sent. Skipped when the double is not built
(`modelplane dev parts --build`).
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from modelplane.agent.engines import Scraper, Window, fetch, scrape
from modelplane.api import constants as c
from modelplane.dev import kubelet, parts

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
CHATS = 12  # answered by the serving double
STREAMED = 3  # of those, streamed
UNKNOWN_MODEL = 2  # 404s from the serving double: refused before the engine
LISTED = 4  # GET /v1/models and /health: no inference
FAILED = 5  # sent to the failing double: every one a 503


def _binary() -> str:
    part = parts.parts()["llm-d-inference-sim"]
    if not shutil.which("go") or not parts.is_built(part):
        pytest.skip("the engine double is not built (modelplane dev parts --build)")
    return str(parts.part_dir(part) / "bin" / "llm-d-inference-sim")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _call(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = json.dumps(body) if body is not None else None
        conn.request(method, path, data, {"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@contextmanager
def _double(binary: str, *extra: str) -> Iterator[int]:
    """One double on a free loopback port, as the fleet runs it (plus `extra` flags)."""
    port = _free_port()
    engine = kubelet.Engine(MODEL, (MODEL,), port, "/health", port)
    # Both doubles share loopback here (a Pod has a network namespace of its own).
    argv = [*kubelet.engine_argv(binary, engine, _free_port()), *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _call(port, "GET", "/health") == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"the engine double did not answer on port {port}")
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _pod(name: str, port: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml", "labels": {c.LABEL_REPLICA: name}},
        "status": {
            "phase": "Running",
            "podIP": f"127.0.0.1:{port}",  # the test's fetch reads the port from here
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _get(url: str, timeout: float, limit: int) -> str:
    # Scraper.url puts the pod's "address" in brackets; it holds host:port here.
    address = url.split("[", 1)[1].split("]", 1)[0]
    return fetch(f"http://{address}/metrics", timeout, limit)


def _finished(port: int) -> float:
    """The double's finished-request count (its counter is updated after the answer)."""
    text = fetch(f"http://127.0.0.1:{port}/metrics", 5, 1 << 20)
    lines = [ln for ln in text.splitlines() if ln.startswith("vllm:request_success_total{")]
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in lines)


def test_the_agent_reports_what_the_double_was_sent() -> None:
    binary = _binary()
    with ExitStack() as stack:
        serving = stack.enter_context(_double(binary))
        failing = stack.enter_context(
            _double(binary, "--failure-injection-rate=100", "--failure-types", "server_error")
        )
        pods = [_pod("serving", serving), _pod("failing", failing)]
        scraper, window = Scraper(get=_get), Window()
        scrape(pods, scraper, window, "2026-11-01T01:00:00Z")
        chat = {"model": MODEL, "messages": [{"role": "user", "content": "hello there"}]}
        statuses = [
            _call(serving, "POST", "/v1/chat/completions", {**chat, "stream": i < STREAMED})
            for i in range(CHATS)
        ]
        statuses += [
            _call(serving, "POST", "/v1/chat/completions", {**chat, "model": "other"})
            for _ in range(UNKNOWN_MODEL)
        ]
        statuses += [_call(serving, "GET", p) for p in ("/v1/models", "/health") * (LISTED // 2)]
        failed = [_call(failing, "POST", "/v1/chat/completions", chat) for _ in range(FAILED)]
        assert statuses == [200] * CHATS + [404] * UNKNOWN_MODEL + [200] * LISTED
        assert failed == [503] * FAILED
        deadline = time.monotonic() + 10
        while _finished(serving) < CHATS and time.monotonic() < deadline:
            time.sleep(0.1)
        signals, _ = scrape(pods, scraper, window, "2026-11-01T01:01:00Z")
    got = {s.replica: s for s in signals}
    ok, bad = got["serving"], got["failing"]
    # Every chat completion answered, once, and the 404s (answered by the inference
    # route, as vLLM counts them); /v1/models and health not at all. None failed.
    assert (ok.reachable, ok.samples, ok.window_seconds) == (True, 2, 60)
    assert (ok.requests, ok.errors, ok.ttft_requests) == (CHATS + UNKNOWN_MODEL, 0, CHATS)
    # Each first token at the double's fixed 20 ms: all in the (0.01, 0.02] bucket,
    # whose 90th percentile Prometheus interpolates at 0.01 + 0.9 × 0.01.
    assert ok.ttft_p90_seconds == 0.019
    assert (ok.requests_waiting, ok.requests_running, ok.kv_cache_utilization) == (0, 0, 0)
    # The failing double finished nothing; the front counted each of its 503s.
    assert (bad.reachable, bad.requests, bad.errors, bad.ttft_p90_seconds) == (
        True,
        FAILED,
        FAILED,
        None,
    )
