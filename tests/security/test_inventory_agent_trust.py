"""Issue 40, finding 7: the inventory agent trusts what engine pages and pods say.

Each test is one attack by whoever controls a replica's engine (its `/metrics`
page) or can create pods on a workload cluster, against the agent's real code:
real HTTP on loopback for the pages, the agent's loop for the writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, cast

import pytest
from loopback_http import serving

from modelplane.agent import inventory
from modelplane.agent.engines import ScrapeError, Scraper, Window, fetch, scrape
from modelplane.api import constants as c
from modelplane.api.inventory import read_inventory
from modelplane.kube.client import KubeClient

INT64_MAX = 2**63 - 1


class Dripper(BaseHTTPRequestHandler):
    """Announces a page and sends it one byte every 50 ms until told to stop (at most 3 s)."""

    stop: ClassVar[threading.Event]

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        end = time.monotonic() + 3.0
        with suppress(OSError):
            while not self.stop.wait(0.05) and time.monotonic() < end:
                self.wfile.write(b"#")
                self.wfile.flush()

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def dripping() -> Iterator[str]:
    stop = threading.Event()
    handler: type[Dripper] = type("D", (Dripper,), {"stop": stop})
    with serving(handler) as url:
        try:
            yield url
        finally:
            stop.set()


def running_pod(name: str, replica: str, namespace: str = "team-a") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": {c.LABEL_REPLICA: replica}},
        "status": {
            "phase": "Running",
            "podIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


class FakeKube:
    """The API calls the agent makes, answered from memory; records what it applies."""

    def __init__(self, running: list[dict[str, Any]]) -> None:
        self.running = running
        self.applied: list[tuple[float, dict[str, Any]]] = []

    def list_all(self, path: str, **query: str) -> list[dict[str, Any]]:
        if path == inventory.PODS and query.get("fieldSelector") == "status.phase=Running":
            return self.running
        return []

    def apply(self, path: str, manifest: dict[str, Any], manager: str) -> dict[str, Any]:
        self.applied.append((time.monotonic(), manifest))
        return manifest


def test_slow_dripping_metrics_page_is_cut_at_the_fetch_deadline() -> None:
    with dripping() as url:
        started = time.monotonic()
        with pytest.raises(ScrapeError, match="deadline"):
            fetch(url + "/metrics", 0.5, 1 << 20)
        elapsed = time.monotonic() - started
    # Every byte arrives well inside the timeout: only a deadline on the whole
    # page stops it (without one the fetch reads until the drip ends).
    assert elapsed < 1.5


def test_slow_dripping_pages_do_not_stop_inventory_writes() -> None:
    pods = [running_pod(f"p{i}", f"r{i}") for i in range(20)]
    with dripping() as url:
        port = int(url.rsplit(":", 1)[1])
        scraper = Scraper(port=port, timeout=0.5)
        kube = FakeKube(pods)
        started = time.monotonic()
        settings = inventory.Settings(scraper=scraper)
        failed = inventory.run(cast(KubeClient, kube), settings, rounds=1, log=lambda _: None)
    assert failed == 0
    ((at, written),) = kube.applied
    # 20 pods, 16 at a time, each cut at 0.5 s: two waves, about a second.
    assert at - started < 3.0
    summary, why = read_inventory(written["data"])
    assert why is None and summary is not None and summary.replicas is not None
    assert [r.reachable for r in summary.replicas] == [False] * 20


def test_engine_that_never_answers_is_cut_at_the_round_deadline() -> None:
    release = threading.Event()

    def hanging(url: str, timeout: float, limit: int) -> str:
        release.wait(10)  # a fetch that ignores its own timeout
        return ""

    scraper = Scraper(get=hanging, round_deadline=0.3)
    try:
        started = time.monotonic()
        (one,), _ = scrape([running_pod("p0", "r0")], scraper, Window(), "2026-11-01T00:00:00Z")
        elapsed = time.monotonic() - started
    finally:
        release.set()
    assert elapsed < 1.5
    assert one.reachable is False and "deadline" in (one.error or "")


def _page(counter: str, bucket_inf: str = "3", waiting: str = "2") -> str:
    return "\n".join(
        [
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting {waiting}",
            "# TYPE vllm:num_requests_running gauge",
            "vllm:num_requests_running 1",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            'vllm:time_to_first_token_seconds_bucket{le="0.5"} 1',
            f'vllm:time_to_first_token_seconds_bucket{{le="+Inf"}} {bucket_inf}',
            "vllm:time_to_first_token_seconds_count 3",
            "vllm:time_to_first_token_seconds_sum 1",
            "# TYPE http_requests_total counter",
            'http_requests_total{handler="/v1/completions",method="POST",status="2xx"} '
            f"{counter}",
            'http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} '
            f"{counter}",
            "",
        ]
    )


def _two_rounds(first: str, second: str) -> dict[str, Any]:
    """A replica's signals after two scrapes of its page, as the summary carries them."""
    pages = iter([first, second])
    scraper = Scraper(get=lambda url, t, n: next(pages))
    window = Window()
    scrape([running_pod("p0", "r0")], scraper, window, "2026-11-01T00:00:00Z")
    (one,), _ = scrape([running_pod("p0", "r0")], scraper, window, "2026-11-01T00:01:00Z")
    return one.to_dict()


@pytest.mark.parametrize(
    ("second", "unknown"),
    [
        (_page("1", bucket_inf="+Inf"), "ttftP90Seconds"),  # an +Inf bucket count
        (_page("1e308"), "requests"),  # two 1e308 series overflow to inf
        (_page("+Inf"), "requests"),
        (_page("NaN"), "requests"),
    ],
    ids=["inf-bucket", "1e308-counter", "inf-counter", "nan-counter"],
)
def test_nonfinite_metric_values_do_not_crash_the_agent(second: str, unknown: str) -> None:
    got = _two_rounds(_page("0"), second)
    assert got["reachable"] is True
    assert got["requestsWaiting"] == 2.0  # the rest of the page still counts
    assert unknown not in got  # unknown, not a number


def test_huge_counter_is_not_written_as_a_huge_integer() -> None:
    got = _two_rounds(_page("0"), _page("1e300"))
    assert "requests" not in got and "errors" not in got
    for value in got.values():
        assert not isinstance(value, int) or abs(value) <= INT64_MAX


def test_huge_gauge_or_negative_gauge_is_unknown_not_a_failed_round() -> None:
    got = _two_rounds(_page("0", waiting="1e300"), _page("1", waiting="-5"))
    assert got["reachable"] is True
    assert "requestsWaiting" not in got
    assert got["requests"] == 2


# ── Stale inventory: reported, and never acted on ────────────────────────────

REPORTED_AT = "2026-03-01T12:00:00Z"  # the fixture summary's observedAt


def _signals_data(engine_metrics: bool) -> dict[str, str]:
    from modelplane.api.autoscaling import ReplicaSignals
    from modelplane.api.inventory_summary import summarize
    from tests.compose.test_cluster_inventory import STUCK_POD, _node

    summary = summarize([_node("n1")], [], [STUCK_POD], REPORTED_AT, 300)
    if engine_metrics:
        signal = ReplicaSignals(
            replica="chat-1a2b3c4d", reachable=True, scraped_at=REPORTED_AT,
            window_seconds=240, requests_waiting=0.0, requests_running=0.0,
        )  # fmt: skip
        summary = summary.model_copy(update={"replicas": [signal]})
    return summary.to_data()


def _compose_cluster(now: str | None, engine_metrics: bool = False) -> Any:
    from modelplane.compose.clusters import inference_cluster
    from modelplane.compose.types import ComposeInput
    from tests.compose.test_cluster_inventory import REQUIRED, _cluster, _observed

    stack = {"inventory": {"engineMetrics": True}} if engine_metrics else {}
    xr = _cluster(servingStack=stack) if stack else _cluster()
    observed = {"inventory": _observed(_signals_data(engine_metrics))}
    return inference_cluster.compose(ComposeInput(xr, observed, REQUIRED, now=now))


def _fresh(result: Any) -> Any:
    return next((x for x in result.conditions if x.type == "InventoryFresh"), None)


def test_stuck_agent_inventory_is_reported_stale_and_not_acted_on() -> None:
    # 60 s interval, no engine scraping: an unchanged summary is rewritten every
    # 10 rounds, so 12 rounds (720 s) without a report is no live agent.
    fresh = _compose_cluster("2026-03-01T12:12:00Z")
    assert (_fresh(fresh).status, str(_fresh(fresh).reason)) == ("True", "Fresh")
    assert fresh.status["unschedulableReplicas"][0]["replica"] == "chat-1a2b3c4d"

    stale = _compose_cluster("2026-03-01T12:12:01Z")
    cond = _fresh(stale)
    assert (cond.status, str(cond.reason)) == ("False", "Stale")
    assert "since observedAt 2026-03-01T12:00:00Z" in cond.message
    assert "past the 720 s its 60s interval allows" in cond.message
    assert "modelplane-system/modelplane-inventory" in cond.message
    assert "unschedulableReplicas" not in stale.status  # no replica is moved on it
    assert any(e.reason == "Stale" for e in stale.events)


def test_stale_engine_signals_do_not_reach_the_autoscaler() -> None:
    from modelplane.api.readers import read_inference_cluster

    # Scraping engines, the agent writes every round: 3 rounds (180 s) is the bound.
    fresh = _compose_cluster("2026-03-01T12:03:00Z", engine_metrics=True)
    assert [s["replica"] for s in fresh.status["replicaSignals"]] == ["chat-1a2b3c4d"]
    stale = _compose_cluster("2026-03-01T12:03:01Z", engine_metrics=True)
    assert str(_fresh(stale).reason) == "Stale"
    assert "replicaSignals" not in stale.status

    # A status that still holds the old reports next to InventoryFresh=False: the
    # reader the autoscaler and the scheduler use gives neither.
    cluster = {
        "metadata": {"name": "east"},
        "status": {
            **fresh.status,
            "conditions": [{"type": "InventoryFresh", "status": "False", "reason": "Stale"}],
        },
    }
    read = read_inference_cluster(cluster)
    assert read is not None
    assert (
        read.signal("chat-1a2b3c4d", "team-a") is None
        and read.stuck("chat-1a2b3c4d", "team-a") is None
    )
    cluster["status"]["conditions"][0]["status"] = "True"
    read = read_inference_cluster(cluster)
    assert read is not None and read.signal("chat-1a2b3c4d", "team-a") is not None


def test_without_a_call_time_freshness_is_not_judged() -> None:
    # The embedded control plane (`modelplane render`) passes no time: renders are
    # unchanged and nothing is taken for stale.
    result = _compose_cluster(None)
    assert _fresh(result) is None
    assert result.status["unschedulableReplicas"]


def test_the_served_function_gives_composers_the_call_time(monkeypatch: Any) -> None:
    import datetime

    import crossplane.function.proto.v1.run_function_pb2 as fnv1

    from modelplane.compose import registry
    from modelplane.compose.types import ComposeInput, ComposeResult
    from modelplane.crossplane import FunctionRunner
    from modelplane.crossplane.convert import dict_to_struct

    seen: list[str | None] = []

    def record(inp: ComposeInput) -> ComposeResult:
        seen.append(inp.now)
        return ComposeResult()

    monkeypatch.setattr(registry, "composer_for", lambda api, kind: record)
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="t"))
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "InferenceCluster"}
    xr["metadata"] = {"name": "east"}
    req.observed.composite.resource.CopyFrom(dict_to_struct(xr))
    moment = datetime.datetime(2026, 3, 1, 13, 0, 5, tzinfo=datetime.UTC)
    FunctionRunner(clock=lambda: moment).run(req)
    FunctionRunner().run(req)
    assert seen == ["2026-03-01T13:00:05Z", None]


# ── Pods that carry another namespace's replica label ────────────────────────

VICTIM = "chat-1a2b3c4d"  # team-a's replica (its pods' label value)


def _page_of(waiting: float) -> str:
    return f"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting {waiting}\n"


def test_pod_with_a_replica_label_in_another_namespace_is_not_merged_into_its_signals() -> None:
    from modelplane.api.readers import read_inference_cluster

    genuine = running_pod("engine-0", VICTIM, "team-a")
    forged = running_pod("forged-0", VICTIM, "team-b")
    forged["status"]["podIP"] = "127.0.0.9"
    pages = {"127.0.0.1": _page_of(40), "127.0.0.9": _page_of(0)}  # the forger says: idle
    scraper = Scraper(get=lambda url, t, n: pages[url.split("//")[1].split(":")[0]])
    signals, _ = scrape([genuine, forged], scraper, Window(), "2026-11-01T00:00:00Z")
    assert [(s.replica, s.namespace, s.pods, s.requests_waiting) for s in signals] == [
        (VICTIM, "team-a", 1, 40.0),
        (VICTIM, "team-b", 1, 0.0),
    ]
    cluster = {
        "metadata": {"name": "east"},
        "status": {"replicaSignals": [s.to_dict() for s in signals]},
    }
    read = read_inference_cluster(cluster)
    assert read is not None
    got = read.signal(VICTIM, "team-a")
    assert got is not None and got.requests_waiting == 40.0  # the forged pod is not counted
    # Forged pods alone (the replica's own are elsewhere, or not up yet): no signal.
    only_forged = {
        "metadata": {"name": "east"},
        "status": {"replicaSignals": [signals[1].to_dict()]},
    }
    read = read_inference_cluster(only_forged)
    assert read is not None and read.signal(VICTIM, "team-a") is None


def test_pending_pod_in_another_namespace_does_not_report_a_replica_unschedulable() -> None:
    from modelplane.api.inventory_summary import summarize
    from modelplane.api.readers import read_inference_cluster
    from tests.compose.test_cluster_inventory import STUCK_POD

    forged = {**STUCK_POD, "metadata": {**STUCK_POD["metadata"], "namespace": "team-b"}}
    summary = summarize([], [], [forged], REPORTED_AT, 300)
    assert [(u.replica, u.namespace) for u in summary.unschedulable] == [(VICTIM, "team-b")]
    status = {"unschedulableReplicas": [u.to_dict() for u in summary.unschedulable]}
    read = read_inference_cluster({"metadata": {"name": "east"}, "status": status})
    assert read is not None
    assert read.stuck(VICTIM, "team-a") is None  # the victim is not moved
    assert read.stuck(VICTIM, "team-b") is not None  # reported as what it is


class HeaderDripper(BaseHTTPRequestHandler):
    """Sends a status line, then its headers one byte every 50 ms (at most 3 s)."""

    def do_GET(self) -> None:
        end = time.monotonic() + 3.0
        with suppress(OSError):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Drip: ")
            while time.monotonic() < end:
                self.wfile.write(b"a")
                self.wfile.flush()
                time.sleep(0.05)

    def log_message(self, *_: Any) -> None:
        pass


def test_metrics_page_dripping_its_headers_is_cut_at_the_fetch_deadline() -> None:
    with serving(HeaderDripper) as url:
        started = time.monotonic()
        with pytest.raises(ScrapeError, match="deadline"):
            fetch(url + "/metrics", 0.5, 1 << 20)
        assert time.monotonic() - started < 1.5


def test_page_cut_short_of_its_length_is_not_taken_whole() -> None:
    class Short(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"# TYPE vllm:num_requests_waiting gauge\n")

        def log_message(self, *_: Any) -> None:
            pass

    with serving(Short) as url, pytest.raises(ScrapeError, match="IncompleteRead"):
        fetch(url + "/metrics", 2.0, 1 << 20)
