"""The agent's engine scraper against fake vLLM engines on loopback (real HTTP, real text)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from modelplane.agent.engines import (
    VLLM,
    ScrapeError,
    Scraper,
    Window,
    fetch,
    parse,
    quantile,
    scrape,
)
from modelplane.api import constants as c
from modelplane.api.inventory import InventorySummary, read_inventory
from tests.loopback_http import serving

BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5)


def vllm_page(waiting: float, running: float, kv: float, ttft: dict[float, int]) -> str:
    """A /metrics page as vLLM v1 writes it (two models' label sets for the gauges)."""
    lines = [
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        f'vllm:num_requests_waiting{{engine="0",model_name="m"}} {waiting}',
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}',
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {kv}',
        "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
        "# TYPE vllm:time_to_first_token_seconds histogram",
    ]
    total = 0
    for bound in (*BUCKETS, float("inf")):
        total = ttft.get(bound, total)
        le = "+Inf" if bound == float("inf") else str(bound)
        lines.append(
            f'vllm:time_to_first_token_seconds_bucket{{engine="0",le="{le}",model_name="m"}} '
            f"{total}"
        )
    lines += [
        f'vllm:time_to_first_token_seconds_count{{engine="0",model_name="m"}} {total}',
        f'vllm:time_to_first_token_seconds_sum{{engine="0",model_name="m"}} {total * 0.3}',
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
        "# TYPE process_cpu_seconds_total counter",
        "process_cpu_seconds_total 12.5",
    ]
    return "\n".join(lines) + "\n"


def engine(body: str | bytes, *, delay: float = 0.0, status: int = 200) -> type:
    """A handler serving `body` at /metrics after `delay` seconds."""
    data = body.encode() if isinstance(body, str) else body

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay)
            self.send_response(status if self.path == "/metrics" else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def pod(name: str, replica: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml", "labels": {c.LABEL_REPLICA: replica}},
        "status": {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@contextmanager
def engines(**handlers: type) -> Iterator[dict[str, int]]:
    """Serve each handler on loopback; yields pod name → port."""
    with ExitStack() as stack:
        yield {
            name: int(stack.enter_context(serving(h)).rsplit(":", 1)[1])
            for name, h in handlers.items()
        }


def scrape_pods(
    pods: list[tuple[str, str]], servers: dict[str, type], *, timeout: float = 1.0,
    max_bytes: int = 1 << 20, window: Window | None = None, now: str = "2026-11-01T01:00:00Z",
) -> list[dict[str, Any]]:  # fmt: skip
    """Scrape `pods` ((pod, replica)) whose engines are `servers` (by pod); the signals.

    Each pod gets its own loopback address (127.0.0.N); the fetch goes, over
    real HTTP, to the port that pod's fake engine listens on (none: refused).
    """
    with engines(**servers) as ports:
        objs, port_of = [], {}
        for i, (name, replica) in enumerate(pods):
            p = pod(name, replica)
            p["status"]["podIP"] = ip = f"127.0.0.{i + 2}"
            port_of[ip] = ports.get(name, 1)
            objs.append(p)

        def get(url: str, t: float, limit: int) -> str:
            ip = url.split("//", 1)[1].split(":", 1)[0]
            return fetch(f"http://127.0.0.1:{port_of[ip]}/metrics", t, limit)

        scraper = Scraper(timeout=timeout, max_bytes=max_bytes, get=get)
        signals, truncated = scrape(objs, scraper, window or Window(), now)
    assert not truncated
    return [s.to_dict() for s in signals]


def test_reads_vllm_signals_over_http() -> None:
    page = vllm_page(7, 3, 0.42, {0.1: 0, 0.25: 50, 0.5: 90, 1.0: 100})
    (one,) = scrape_pods([("p0", "r0")], {"p0": engine(page)})
    assert one == {
        "replica": "r0",
        "namespace": "ml",
        "pods": 1,
        "reachable": True,
        "scrapedAt": "2026-11-01T01:00:00Z",
        "windowSeconds": 0,
        "samples": 1,
        "requestsWaiting": 7.0,
        "requestsRunning": 3.0,
        "kvCacheUtilization": 0.42,
    }


def test_window_averages_and_ttft_p90_from_bucket_increase() -> None:
    window = Window()
    first = vllm_page(2, 2, 0.2, {0.1: 10, 0.25: 10, 0.5: 10, 1.0: 10})
    # Between the scrapes: 100 more requests, 60 under 0.25 s, 80 under 0.5 s, all under 1 s.
    second = vllm_page(6, 4, 0.6, {0.1: 10, 0.25: 70, 0.5: 90, 1.0: 110})
    scrape_pods([("p0", "r0")], {"p0": engine(first)}, window=window)
    (one,) = scrape_pods(
        [("p0", "r0")], {"p0": engine(second)}, window=window, now="2026-11-01T01:01:00Z"
    )
    assert one["windowSeconds"] == 60
    assert one["samples"] == 2
    assert (one["requestsWaiting"], one["requestsRunning"]) == (4.0, 3.0)  # (2+6)/2, (2+4)/2
    assert one["kvCacheUtilization"] == 0.4
    # p90 of 100: rank 90 falls in (0.5, 1.0] holding 20 (80 → 100): 0.5 + 0.5 × 10/20.
    assert one["ttftP90Seconds"] == 0.75
    assert one["ttftRequests"] == 100


def test_a_slow_engine_is_unreachable_not_idle() -> None:
    page = vllm_page(0, 0, 0, {})
    started = time.monotonic()
    (one,) = scrape_pods([("p0", "r0")], {"p0": engine(page, delay=2.0)}, timeout=0.3)
    assert time.monotonic() - started < 1.9
    assert one["reachable"] is False
    assert "timed out" in one["error"]
    assert "requestsWaiting" not in one


def test_a_broken_page_is_unreachable() -> None:
    (one,) = scrape_pods([("p0", "r0")], {"p0": engine("vllm:num_requests_waiting{ 1 2 3\n")})
    assert one["reachable"] is False
    assert "not Prometheus text" in one["error"]


def test_an_error_status_is_unreachable() -> None:
    (one,) = scrape_pods([("p0", "r0")], {"p0": engine("oops", status=500)})
    assert one["reachable"] is False
    assert "HTTP 500" in one["error"]


def test_a_huge_page_is_cut_and_unreachable() -> None:
    page = vllm_page(1, 1, 0.1, {}) + "# filler\n" * 200_000  # ~1.8 MB
    (one,) = scrape_pods([("p0", "r0")], {"p0": engine(page)}, max_bytes=64 * 1024)
    assert one["reachable"] is False
    assert f"more than {64 * 1024} bytes" in one["error"]


def test_the_default_page_limit_is_four_mebibytes() -> None:
    # vLLM's page is about 100 KiB; the agent allows 4 MiB unless told otherwise.
    asked: list[tuple[str, float, int]] = []

    def get(url: str, timeout: float, max_bytes: int) -> str:
        asked.append((url, timeout, max_bytes))
        return vllm_page(1, 1, 0.1, {})

    signals, _ = scrape([pod("p0", "r0")], Scraper(get=get), Window(), "2026-11-01T01:00:00Z")
    assert asked == [("http://127.0.0.1:8000/metrics", 2.0, 4 * 1024 * 1024)]
    assert [s.reachable for s in signals] == [True]


@pytest.mark.parametrize(("size", "whole"), [(1000, True), (1001, False)])
def test_a_page_of_exactly_the_limit_is_read_one_byte_more_is_not(size: int, whole: bool) -> None:
    with serving(engine(b"x" * size)) as address:
        if whole:
            assert fetch(f"{address}/metrics", 1.0, 1000) == "x" * size
        else:
            with pytest.raises(ScrapeError, match="more than 1000 bytes"):
                fetch(f"{address}/metrics", 1.0, 1000)


def test_a_missing_engine_is_unreachable() -> None:
    # No server for p0: the connection is refused.
    (one,) = scrape_pods([("p0", "r0")], {})
    assert one["reachable"] is False
    assert one["error"].startswith("pod p0: ")


def test_one_failing_pod_makes_its_replica_unreachable() -> None:
    page = vllm_page(5, 1, 0.5, {})
    got = scrape_pods(
        [("a0", "ra"), ("b0", "rb"), ("b1", "rb")],
        {"a0": engine(page), "b0": engine(page), "b1": engine("x", status=503)},
    )
    assert [(s["replica"], s["reachable"], s.get("requestsWaiting")) for s in got] == [
        ("ra", True, 5.0),
        ("rb", False, None),
    ]


def test_pods_not_ready_are_not_scraped() -> None:
    objs = [pod("p0", "r0", ready=False)]
    calls: list[str] = []

    def get(url: str, t: float, limit: int) -> str:
        calls.append(url)
        return ""

    signals, _ = scrape(objs, Scraper(get=get), Window(), "2026-11-01T01:00:00Z")
    assert (signals, calls) == ([], [])


@pytest.mark.parametrize("field", ["podIP", "name"])
def test_a_pod_without_an_address_or_name_is_not_scraped(field: str) -> None:
    p = pod("p0", "r0")
    if field == "podIP":
        p["status"]["podIP"] = ""
    else:
        p["metadata"]["name"] = ""
    asked: list[str] = []

    def get(url: str, timeout: float, max_bytes: int) -> str:
        asked.append(url)
        return vllm_page(1, 1, 0.1, {})

    signals, _ = scrape([p], Scraper(get=get), Window(), "2026-11-01T01:00:00Z")
    assert (signals, asked) == ([], [])


def test_quantile_as_prometheus_interpolates() -> None:
    # 10 observations: 4 ≤ 0.1, 8 ≤ 0.5, 10 ≤ 1. p90: rank 9 in (0.5, 1] (8 → 10): 0.75.
    assert quantile(0.9, [], [(0.1, 4), (0.5, 8), (1.0, 10), (float("inf"), 10)]) == (0.75, 10)
    # Beyond the last finite bucket: its bound.
    assert quantile(0.9, [], [(0.1, 1), (float("inf"), 10)]) == (0.1, 10)
    assert quantile(0.9, [(1.0, 5)], [(1.0, 5)]) == (None, 0)


def test_fifty_replicas_fit_the_summary() -> None:
    """50 fake engines on loopback: the summary's size and the time to scrape them."""
    page = vllm_page(3, 5, 0.61, {0.1: 40, 0.25: 80, 0.5: 95, 1.0: 100})
    servers = {f"p{i:02d}": engine(page) for i in range(50)}
    window = Window()
    started = time.monotonic()
    signals = scrape_pods([(p, f"chat-{p}") for p in servers], servers, window=window)
    seconds = time.monotonic() - started
    summary = InventorySummary.model_validate(
        {"observedAt": "2026-11-01T01:00:00Z", "replicas": signals}
    )
    data = summary.to_data()
    size = len(data[c.INVENTORY_DATA_KEY].encode())
    parsed, problem = read_inventory(data)
    assert problem is None and parsed is not None and parsed.replicas is not None
    assert len(parsed.replicas) == 50 and all(s.reachable for s in parsed.replicas)
    print(f"\n50 replicas: summary {size} bytes, scraped in {seconds:.2f} s")
    print(json.dumps(signals[0], sort_keys=True))
    assert size < 20_000  # far below a ConfigMap's 1 MiB


@pytest.mark.parametrize("ip", ["10.0.0.7", "fd00::7"])
def test_url_of_a_pod(ip: str) -> None:
    host = f"[{ip}]" if ":" in ip else ip
    assert Scraper().url(ip) == f"http://{host}:8000/metrics"


# The HTTP counter as prometheus-fastapi-instrumentator writes it on vLLM's page:
# `# HELP`/`# TYPE` always, one series per (handler, method, status) once it has counted.
HTTP_HEAD = [
    "# HELP http_requests_total Total number of requests by method, status and handler.",
    "# TYPE http_requests_total counter",
]


def http_page(counts: dict[tuple[str, str], int], *, method: str = "POST") -> str:
    """vLLM's page (idle gauges) plus the HTTP counter's series, by (handler, status)."""
    lines = [*HTTP_HEAD]
    for (handler, status), n in counts.items():
        labels = f'handler="{handler}",method="{method}",status="{status}"'
        lines.append(f"http_requests_total{{{labels}}} {float(n)}")
    # The instrumentator's `_created` gauges: timestamps, never counts.
    lines += [
        "# HELP http_requests_created Total number of requests by method, status and handler.",
        "# TYPE http_requests_created gauge",
        'http_requests_created{handler="/v1/completions",method="POST",status="2xx"} 1.7e9',
    ]
    return vllm_page(0, 0, 0, {}) + "\n".join(lines) + "\n"


def scrape_series(pages: list[dict[str, str]], pods: list[tuple[str, str]]) -> dict[str, Any]:
    """Scrape the pods once per page set (pod → page), a minute apart; the last signals."""
    window = Window()
    got: list[dict[str, Any]] = []
    for minute, by_pod in enumerate(pages):
        servers = {name: engine(page) for name, page in by_pod.items()}
        now = f"2026-11-01T01:{minute:02d}:00Z"
        got = scrape_pods(pods, servers, window=window, now=now)
    (one,) = got
    return one


def test_requests_and_errors_are_the_inference_counters_increase() -> None:
    first = {
        ("/v1/completions", "2xx"): 10,
        ("/v1/chat/completions", "2xx"): 5,
        ("/v1/chat/completions", "5xx"): 1,
        ("/v1/chat/completions", "4xx"): 2,
        ("/tokenize", "2xx"): 40,
        ("/health", "2xx"): 300,
        ("/metrics", "2xx"): 60,
    }
    second = {
        **first,
        ("/v1/completions", "2xx"): 25,  # +15
        ("/v1/chat/completions", "2xx"): 10,  # +5
        ("/v1/chat/completions", "5xx"): 3,  # +2, errors
        ("/v1/chat/completions", "4xx"): 7,  # +5, the client's fault: not errors
        ("/v1/embeddings", "503"): 4,  # new series, ungrouped status: +4, errors
        ("/tokenize", "2xx"): 90,  # not inference: ignored
        ("/health", "5xx"): 9,  # not inference: ignored
        ("/metrics", "2xx"): 61,
    }
    one = scrape_series([{"p0": http_page(first)}, {"p0": http_page(second)}], [("p0", "r0")])
    assert (one["requests"], one["errors"]) == (15 + 5 + 2 + 5 + 4, 2 + 4)
    assert one["samples"] == 2


def test_a_counter_that_went_down_counts_from_zero() -> None:
    # Minute 1: the engine restarted (100 → 20): 20 since the restart, not -80.
    pages = [
        {("/v1/completions", "2xx"): 100, ("/v1/completions", "5xx"): 10},
        {("/v1/completions", "2xx"): 20, ("/v1/completions", "5xx"): 2},
        {("/v1/completions", "2xx"): 30, ("/v1/completions", "5xx"): 2},
    ]
    one = scrape_series([{"p0": http_page(p)} for p in pages], [("p0", "r0")])
    assert (one["requests"], one["errors"]) == (20 + 2 + 10, 2)


def test_each_method_is_a_series_of_its_own() -> None:
    # POST went down (100 → 20: reset, 20 counted) while GET grew (5 → 10: +5): 25.
    # Added up per handler and status instead, 105 → 30 would count 30.
    pages = [
        http_page({("/v1/completions", "2xx"): 100})
        + http_page({("/v1/completions", "2xx"): 5}, method="GET"),
        http_page({("/v1/completions", "2xx"): 20})
        + http_page({("/v1/completions", "2xx"): 10}, method="GET"),
    ]
    one = scrape_series([{"p0": p} for p in pages], [("p0", "r0")])
    assert (one["requests"], one["errors"]) == (25, 0)


def test_a_restarted_engine_whose_series_are_gone_counts_nothing_for_them() -> None:
    # After the restart no request has come yet: the page has the counter, no series.
    pages = [{("/v1/completions", "2xx"): 100}, {}]
    one = scrape_series([{"p0": http_page(p)} for p in pages], [("p0", "r0")])
    assert (one["requests"], one["errors"]) == (0, 0)


def test_one_scrape_or_no_counter_is_unknown_not_zero() -> None:
    single = scrape_series([{"p0": http_page({("/v1/completions", "2xx"): 5})}], [("p0", "r0")])
    assert "requests" not in single and "errors" not in single
    # Two scrapes of an engine's page without the HTTP counter and without
    # vLLM's finished-request counter (whose series appear with the first
    # request): nothing finished, and failures are not counted anywhere.
    bare = vllm_page(1, 1, 0.1, {})
    none = scrape_series([{"p0": bare}, {"p0": bare}], [("p0", "r0")])
    assert none["requests"] == 0 and "errors" not in none
    assert none["requestsWaiting"] == 1.0  # the other signals are still read
    # The HTTP counter on one scrape of the window only: its increase is not
    # known, and the page without it counts no finished request either.
    half = scrape_series(
        [{"p0": bare}, {"p0": http_page({("/v1/completions", "2xx"): 5})}], [("p0", "r0")]
    )
    assert half["requests"] == 0 and "errors" not in half


def test_a_replica_sums_its_pods_and_is_unknown_when_a_pod_is() -> None:
    pods = [("p0", "r0"), ("p1", "r0")]
    a0, a1 = {("/v1/completions", "2xx"): 10}, {("/v1/completions", "2xx"): 16}
    b0 = {("/v1/completions", "2xx"): 3, ("/v1/completions", "5xx"): 1}
    b1 = {("/v1/completions", "2xx"): 4, ("/v1/completions", "5xx"): 5}
    one = scrape_series(
        [{"p0": http_page(a0), "p1": http_page(b0)}, {"p0": http_page(a1), "p1": http_page(b1)}],
        pods,
    )
    assert (one["pods"], one["requests"], one["errors"]) == (2, 6 + 1 + 4, 4)
    # A pod whose page counts nothing (no counter, no engine gauge): all unknown.
    blank = "# TYPE other gauge\nother 1\n"
    partial = scrape_series(
        [{"p0": http_page(a0), "p1": blank}, {"p0": http_page(a1), "p1": blank}], pods
    )
    assert "requests" not in partial and "errors" not in partial
    # A pod counting finished requests only: requests summed, errors unknown.
    bare = vllm_page(0, 0, 0, {})
    mixed = scrape_series(
        [{"p0": http_page(a0), "p1": bare}, {"p0": http_page(a1), "p1": bare}], pods
    )
    assert mixed["requests"] == 6 and "errors" not in mixed


def test_an_unreachable_replica_is_reported_under_its_pods_namespace() -> None:
    (one,) = scrape_pods([("p0", "r0")], {})  # refused
    assert (one["replica"], one["namespace"], one["reachable"]) == ("r0", "ml", False)


def test_ttft_buckets_are_the_pages_cumulative_counts() -> None:
    sample = parse(vllm_page(0, 0, 0, {0.1: 3, 0.25: 5}), VLLM, 0)
    inf = float("inf")
    assert sample.ttft_buckets == (
        (0.1, 3.0), (0.25, 5.0), (0.5, 5.0), (1.0, 5.0), (2.5, 5.0), (inf, 5.0)
    )  # fmt: skip


def test_a_negative_inference_count_makes_the_counter_unknown() -> None:
    page = http_page({("/v1/completions", "2xx"): 4, ("/v1/chat/completions", "2xx"): -3})
    assert parse(page, VLLM, 0).http is None


def test_a_page_without_kv_cache_use_reads_it_unknown() -> None:
    page = "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n"
    sample = parse(page, VLLM, 0)
    assert (sample.waiting, sample.kv_cache) == (2.0, None)


class StatusDripper(BaseHTTPRequestHandler):
    """Sends its status line one byte every 50 ms (at most 3 s), never ending it."""

    def do_GET(self) -> None:
        end = time.monotonic() + 3.0
        with suppress(OSError):
            self.wfile.write(b"HTTP/1.1 2")
            while time.monotonic() < end:
                self.wfile.write(b"0")
                self.wfile.flush()
                time.sleep(0.05)

    def log_message(self, *args: Any) -> None:
        pass


def test_an_engine_dripping_its_status_line_is_cut_at_the_deadline() -> None:
    # Each byte comes well inside the timeout: only the deadline's cut ends the read.
    with serving(StatusDripper) as address:
        started = time.monotonic()
        with pytest.raises(ScrapeError, match=r"within the 0\.5 s deadline"):
            fetch(f"{address}/metrics", 0.5, 1 << 20)
        assert time.monotonic() - started < 1.5


def test_an_error_before_the_deadline_is_not_called_a_timeout() -> None:
    class Short(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"abcd")

        def log_message(self, *args: Any) -> None:
            pass

    with serving(Short) as address, pytest.raises(ScrapeError) as caught:
        fetch(f"{address}/metrics", 2.0, 1 << 20)
    expected = "IncompleteRead: IncompleteRead(4 bytes read, 6 more expected)"
    assert str(caught.value) == f"{address}/metrics: {expected}"
