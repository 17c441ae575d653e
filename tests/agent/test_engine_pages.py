"""Which counters the agent reads for requests and errors, over stored /metrics pages.

`pages/double-*.txt` are the engine double's own pages (llm-d-inference-sim
v0.10.2, started with the local fleet's flags), saved before any request and
after five finished ones (three chat completions, one streamed, one
completion; a `/v1/models`, a `/health` and a request for an unknown model
were sent too and left no trace).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from modelplane.agent.engines import VLLM, Sample, Scraper, Window, parse, requests_answered, scrape
from modelplane.api import constants as c

PAGES = Path(__file__).parent / "pages"
IDLE = (PAGES / "double-idle.txt").read_text()
FIVE = (PAGES / "double-5-finished.txt").read_text()

GAUGES = (
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{model_name="m"} 0\n'
    "# TYPE vllm:num_requests_waiting gauge\n"
    'vllm:num_requests_waiting{model_name="m"} 0\n'
)


def finished(**by_reason: int) -> str:
    """vLLM's finished-request counter, one series per finish reason."""
    lines = ["# TYPE vllm:request_success_total counter"]
    lines += [
        f'vllm:request_success_total{{finish_reason="{r}",model_name="m"}} {n}'
        for r, n in by_reason.items()
    ]
    return "\n".join(lines) + "\n"


def http(**by_handler_status: int) -> str:
    """The HTTP counter vLLM's server adds: key `handler__status` ("v1_models__2xx")."""
    lines = ["# TYPE http_requests_total counter"]
    for key, n in by_handler_status.items():
        handler, status = key.split("__")
        path = "/" + handler.replace("_", "/")
        labels = f'handler="{path}",method="POST",status="{status}"'
        lines.append(f"http_requests_total{{{labels}}} {n}")
    return "\n".join(lines) + "\n"


def counted(first: str, second: str) -> tuple[int, int | None] | None:
    """(requests, errors) over two scrapes of one pod's pages."""
    return requests_answered([parse(first, VLLM, 0), parse(second, VLLM, 60)])


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        # The double: no HTTP counter; vLLM's counter appears with its first request.
        (IDLE, FIVE, (5, None)),
        (FIVE, FIVE, (0, None)),
        # Every finish reason is a request answered (stop, length, abort).
        (GAUGES + finished(stop=3), GAUGES + finished(stop=7, length=2, abort=1), (7, None)),
        # A restart: the counter went down, counted from 0 (as Prometheus' increase()).
        (GAUGES + finished(stop=9), GAUGES + finished(stop=4), (4, None)),
        # The HTTP counter, where there is one, counts requests and errors; it wins.
        (
            GAUGES + finished(stop=1) + http(v1_chat_completions__2xx=1),
            GAUGES
            + finished(stop=9)
            + http(v1_chat_completions__2xx=9, v1_chat_completions__5xx=3),
            (8 + 3, 3),
        ),
        # /v1/models and health answer no inference: neither requests nor errors.
        (
            GAUGES + http(v1_completions__2xx=2, v1_models__2xx=5, health__5xx=0),
            GAUGES
            + http(v1_completions__2xx=4, v1_models__2xx=50, health__5xx=7, v1_models__5xx=2),
            (2, 0),
        ),
        # Neither counter nor the engine's gauges: no engine page, not known.
        ("# TYPE other gauge\nother 1\n", "# TYPE other gauge\nother 1\n", None),
        # An HTTP counter that is there but no count: unknown, not vLLM's count instead.
        (
            GAUGES + finished(stop=1) + http(v1_completions__2xx=1),
            GAUGES
            + finished(stop=5)
            + http()
            + 'http_requests_total{handler="/v1/completions",method="POST",status="2xx"} NaN\n',
            None,
        ),
    ],
    ids=[
        "double-idle-to-five",
        "double-unchanged",
        "finish-reasons-summed",
        "finished-reset",
        "http-counter-first",
        "non-inference-paths-excluded",
        "no-engine-page",
        "broken-http-counter",
    ],
)
def test_requests_and_errors_per_page_pair(
    first: str, second: str, expected: tuple[int, int | None] | None
) -> None:
    assert counted(first, second) == expected


def test_the_doubles_pages_give_the_other_signals_too() -> None:
    idle, five = parse(IDLE, VLLM, 0), parse(FIVE, VLLM, 60)
    assert (idle.waiting, idle.running, idle.kv_cache, idle.ttft_buckets) == (0, 0, 0, ())
    assert idle.finished == ()  # an engine page that has finished nothing yet: zero
    assert dict(five.ttft_buckets)[0.02] == 5 and dict(five.ttft_buckets)[0.01] == 0
    assert five.finished == (("stop", 5.0),)
    assert five.http is None


def _pod(index: int, name: str, role: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {c.LABEL_REPLICA: "r0", c.LABEL_ROLE: role},
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.0.0.{index + 1}",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _ttft(count: int, bound: str) -> str:
    """A TTFT histogram with all `count` observations at or under `bound` (0.1 or 1)."""
    lines = ["# TYPE vllm:time_to_first_token_seconds histogram"]
    for le in ("0.1", "1", "+Inf"):
        n = count if le == "+Inf" or float(le) >= float(bound) else 0
        lines.append(f'vllm:time_to_first_token_seconds_bucket{{le="{le}",model_name="m"}} {n}')
    return "\n".join(lines) + "\n"


def _scrape_twice(roles: Mapping[str, str], pages: list[Mapping[str, str]]) -> dict[str, Any]:
    pods = [_pod(i, name, role) for i, (name, role) in enumerate(roles.items())]
    ips = {p["status"]["podIP"]: p["metadata"]["name"] for p in pods}
    window = Window()
    out: dict[str, Any] = {}
    for minute, by_pod in enumerate(pages):

        def get(url: str, _t: float, _n: int, by_pod: Mapping[str, str] = by_pod) -> str:
            return by_pod[ips[url.split("//", 1)[1].split(":", 1)[0]]]

        signals, _ = scrape(pods, Scraper(get=get), window, f"2026-11-01T01:0{minute}:00Z")
        (one,) = signals
        out = one.to_dict()
    return out


def test_a_disaggregated_request_counts_once_on_its_decode_pod() -> None:
    # Ten client requests: the decode pod's sidecar sends each to a prefill
    # engine first (max_tokens 1, finish "length"; slow, 1 s TTFT), then to its
    # own engine (finish "stop"; first token within 0.1 s). Two prefill pods
    # share the ten (6 + 4). Counted on every pod, they would be twenty.
    roles = {"prefill-0": c.ROLE_PREFILL, "prefill-1": c.ROLE_PREFILL, "decode-0": c.ROLE_DECODE}
    before = {n: GAUGES + finished() + _ttft(0, "0.1") for n in roles}
    after = {
        "prefill-0": GAUGES.replace("} 0\n", "} 2\n", 1) + finished(length=6) + _ttft(6, "1"),
        "prefill-1": GAUGES + finished(length=4) + _ttft(4, "1"),
        "decode-0": GAUGES.replace("} 0\n", "} 1\n", 1) + finished(stop=10) + _ttft(10, "0.1"),
    }
    one = _scrape_twice(roles, [before, after])
    assert (one["pods"], one["requests"], one["ttftRequests"]) == (3, 10, 10)
    assert "errors" not in one
    assert one["ttftP90Seconds"] == pytest.approx(0.09)  # decode's: 0.9 of the way to 0.1
    # The load is every pod's: running averaged per pod over the window, summed.
    assert one["requestsRunning"] == pytest.approx((2 + 0) / 2 + (1 + 0) / 2)


def test_a_replica_of_one_role_counts_all_its_pods() -> None:
    roles = {"engine-0": c.ROLE_UNIFIED, "engine-1": c.ROLE_UNIFIED}
    before = {n: GAUGES + finished() for n in roles}
    after = {"engine-0": GAUGES + finished(stop=3), "engine-1": GAUGES + finished(stop=5)}
    one = _scrape_twice(roles, [before, after])
    assert (one["requests"], "errors" in one) == (8, False)


def test_errors_unknown_on_one_pod_make_the_replicas_unknown() -> None:
    roles = {"engine-0": c.ROLE_UNIFIED, "engine-1": c.ROLE_UNIFIED}
    before = {"engine-0": GAUGES + http(), "engine-1": GAUGES + finished()}
    after = {
        "engine-0": GAUGES + http(v1_completions__2xx=3, v1_completions__5xx=1),
        "engine-1": GAUGES + finished(stop=5),
    }
    one = _scrape_twice(roles, [before, after])
    assert (one["requests"], "errors" in one) == (4 + 5, False)


def test_samples_keep_the_finished_counter_apart_from_the_http_one() -> None:
    sample = parse(GAUGES + finished(stop=2) + http(v1_completions__2xx=3), VLLM, 0)
    assert sample == Sample(
        at=0, waiting=0, running=0, kv_cache=None, ttft_buckets=(),
        http=((("/v1/completions", "POST", "2xx"), 3.0),), finished=(("stop", 2.0),),
    )  # fmt: skip
