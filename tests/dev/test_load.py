"""`modelplane dev load`'s request loop and numbers, against an OpenAI-like server on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from modelplane.dev import load
from tests.loopback_http import serving


def test_percentiles_by_nearest_rank() -> None:
    ten = [float(v) for v in range(1, 11)]
    assert [load.percentile(ten, p) for p in (50, 90, 99, 100)] == [5.0, 9.0, 10.0, 10.0]
    assert load.percentile([0.3], 50) == 0.3
    assert load.percentile([], 90) is None
    # 200 values: p99 is the 198th, not the largest.
    two_hundred = [float(v) for v in range(1, 201)]
    assert load.percentile(two_hundred, 99) == 198.0


def test_summary_counts_statuses_and_errors_apart() -> None:
    outcomes = [
        load.Outcome(200, None, 0.1),
        load.Outcome(200, None, 0.3),
        load.Outcome(503, None, 0.2),
        load.Outcome(None, "ConnectionRefusedError", 0.0),
        load.Outcome(None, "TimeoutError", 5.0),
    ]
    got = load.summary(outcomes, sent=6, elapsed=2.0)
    assert got == {
        "sent": 6,
        "finished": 5,
        "succeeded": 2,
        "statuses": {"200": 2, "503": 1},
        "errors": {"ConnectionRefusedError": 1, "TimeoutError": 1},
        "elapsedSeconds": 2.0,
        "ratePerSecond": 2.5,
        # Over the three answered (0.1, 0.2, 0.3); the timed-out 5 s is no latency.
        "latencySeconds": {"p50": 0.2, "p90": 0.3, "p99": 0.3},
    }


class Seen:
    """What the server saw: each request's path and body, and the most in flight at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, dict[str, Any] | None]] = []
        self.inflight = 0
        self.most = 0


def openai(seen: Seen, delay: float = 0.0) -> type:
    """A server that answers chat completions: 503 for every 4th request (by its index)."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            seen.requests.append(("GET", self.path, None))
            self._answer(200, {"object": "list", "data": [{"id": "m-first"}, {"id": "m-2"}]})

        def do_POST(self) -> None:
            with seen.lock:
                seen.inflight += 1
                seen.most = max(seen.most, seen.inflight)
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with seen.lock:
                    seen.requests.append(("POST", self.path, body))
                time.sleep(delay)
                index = int(body["messages"][0]["content"].rsplit(" ", 1)[1])
                self._answer(503 if index % 4 == 3 else 200, {"object": "chat.completion"})
            finally:
                with seen.lock:
                    seen.inflight -= 1

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def target(seen: Seen, delay: float = 0.0) -> Iterator[load.Target]:
    with serving(openai(seen, delay)) as base:
        yield load.Target(base + "/svc/demo", load.plain)


def test_a_run_sends_rate_times_duration_and_counts_what_came_back() -> None:
    seen = Seen()
    with target(seen) as t:
        got = load.run(load.Plan(rate=50, duration=1.0, concurrency=4), t, "m")
    # 50 requests (indices 0..49); 3, 7, ..., 47 answered 503: twelve of them.
    assert (got["sent"], got["finished"], got["succeeded"]) == (50, 50, 38)
    assert got["statuses"] == {"200": 38, "503": 12}
    assert got["errors"] == {}
    assert all(v is not None for v in got["latencySeconds"].values())
    posts = [(p, b) for m, p, b in seen.requests if m == "POST"]
    assert {p for p, _ in posts} == {"/svc/demo/v1/chat/completions"}
    assert sorted(int(b["messages"][0]["content"].split()[-1]) for _, b in posts) == list(range(50))
    assert {b["model"] for _, b in posts} == {"m"}


def test_each_request_is_as_long_as_the_plan_asks() -> None:
    """--prompt-words and --max-tokens: an echoing engine (the fleet's double) works on
    a request as long as its prompt, so these set how hard the load is."""
    seen = Seen()
    with target(seen) as t:
        load.run(load.Plan(rate=20, duration=0.2, prompt_words=40, max_tokens=64), t, "m")
    posts = [b for m, _, b in seen.requests if m == "POST"]
    assert len(posts) == 4
    for body in posts:
        words = body["messages"][0]["content"].split()
        assert len(words) == 40 and words[:2] == ["load", "request"]
        assert body["max_tokens"] == 64
    assert sorted(int(b["messages"][0]["content"].split()[2]) for b in posts) == [0, 1, 2, 3]
    one = json.loads(load.chat_body("m", 7, words=1))
    assert one["messages"][0]["content"] == "load" and one["max_tokens"] == 16


def test_the_cap_bounds_the_count_whatever_rate_and_duration_ask() -> None:
    seen = Seen()
    plan = load.Plan(rate=100, duration=60, max_requests=5)
    assert plan.total == 5
    with target(seen) as t:
        got = load.run(plan, t, "m")
    assert (got["sent"], got["finished"]) == (5, 5)
    assert len(seen.requests) == 5


def test_no_more_than_concurrency_in_flight_and_none_sent_after_the_duration() -> None:
    seen = Seen()
    plan = load.Plan(rate=100, duration=0.5, concurrency=2)  # 50 due in the half second
    with target(seen, delay=0.3) as t:
        got = load.run(plan, t, "m")
    assert seen.most <= 2
    # Two at a time, each taking 0.3 s: the run cannot send all 50 within 0.5 s.
    assert got["sent"] < plan.total
    assert got["finished"] == got["sent"] == len(seen.requests)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_connection_errors_are_counted_by_kind_and_have_no_latency() -> None:
    t = load.Target(f"http://127.0.0.1:{_closed_port()}", load.plain)
    got = load.run(load.Plan(rate=20, duration=0.2), t, "m")
    assert got["errors"] == {"ConnectionRefusedError": 4}
    assert got["statuses"] == {} and got["succeeded"] == 0
    assert got["latencySeconds"] == {"p50": None, "p90": None, "p99": None}


def test_a_request_that_waits_longer_than_the_timeout_gives_up() -> None:
    seen = Seen()
    with target(seen, delay=2.0) as t:
        got = load.run(load.Plan(rate=10, duration=0.1, timeout=0.2), t, "m")
    assert got["errors"] == {"TimeoutError": 1}


def test_the_model_defaults_to_the_first_listed() -> None:
    seen = Seen()
    with target(seen) as t:
        assert load.first_model(t) == "m-first"
    assert seen.requests == [("GET", "/svc/demo/v1/models", None)]
    gone = load.Target(f"http://127.0.0.1:{_closed_port()}", load.plain)
    with pytest.raises(load.LoadError, match="pass --model"):
        load.first_model(gone, timeout=1.0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0, "duration": 1},
        {"rate": 1, "duration": 0},
        {"rate": 1, "duration": 1, "timeout": 0},
        {"rate": 1, "duration": 1, "concurrency": 0},
        {"rate": 1, "duration": 1, "max_requests": 0},
        {"rate": 1, "duration": 1, "prompt_words": 0},
        {"rate": 1, "duration": 1, "max_tokens": 0},
    ],
)
def test_a_plan_that_cannot_end_or_send_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(load.LoadError):
        load.Plan(**kwargs)


def test_only_http_addresses() -> None:
    with pytest.raises(load.LoadError, match="not an http URL"):
        load.Target("https://10.100.255.1", load.plain)


def test_the_command_defaults_are_the_plans() -> None:
    """`modelplane dev load` keeps its option defaults beside the option (the CLI does not
    import the load generator until it runs): they must be the plan's own."""
    from modelplane.cli.dev import load_

    defaults = {p.name: p.default for p in load_.params}
    assert defaults["prompt_words"] == load.PROMPT_WORDS
    assert defaults["max_tokens"] == load.MAX_TOKENS
