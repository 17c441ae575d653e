"""Engine signals: scrape each Ready replica pod's Prometheus metrics, summarise per replica.

The inventory agent lists the Ready pods labelled `modelplane.ai/replica`,
GETs `http://<podIP>:<port>/metrics` from each with a timeout and a bound on
the bytes read, parses the text with prometheus_client's text-format parser
and keeps, per pod, the last few samples (`Window`). Per replica it publishes
a `ReplicaSignals`: window averages of requests waiting and running and of
KV-cache use, the time-to-first-token p90 over the window (from the
histogram's bucket increase between the window's first and last scrape), the
window and the scrape time, and the inference requests its HTTP server
answered in the window and how many of those were server errors. A pod
that does not answer, answers with an error, too much or something that
does not parse makes its replica `reachable: false` with the reason: it is
never reported as idle.

The metric names, per engine (vLLM v1; the older `gpu_cache_usage_perc`
is read when the newer name is absent):

| signal | vLLM metric | type |
|---|---|---|
| requests waiting | `vllm:num_requests_waiting` | gauge |
| requests running | `vllm:num_requests_running` | gauge |
| KV-cache use (0–1) | `vllm:kv_cache_usage_perc` (`vllm:gpu_cache_usage_perc`) | gauge |
| time to first token | `vllm:time_to_first_token_seconds` | histogram |
| requests answered, 5xx errors | `http_requests_total{handler, method, status}` | counter |
| requests finished (no HTTP counter) | `vllm:request_success_total{finish_reason}` | counter |

The HTTP counter is not vLLM's own: vLLM's OpenAI server instruments its
FastAPI app with prometheus-fastapi-instrumentator (`Instrumentator(...)
.add().instrument(app)`, with `/metrics`, `/health`, `/ping`, `/load`,
`/version` and `/server_info` excluded), whose default metric is that
counter. What this module relies on: `handler` is the route's path template
(so `/v1/chat/completions`, never a raw URL), `status` is grouped by class
("2xx", "4xx", "5xx"; `should_group_status_codes` defaults to true, an
ungrouped "503" is read the same way), and a label set's series appears on
its first request, so an engine that has answered nothing shows the
counter's `# TYPE` line and no sample (known: zero). Only the OpenAI
inference routes count (`INFERENCE_HANDLERS`): `/v1/models`, health and the
like answer no inference and would dilute the error rate. Per pod,
`requests` is the counter's increase over the window summed over its series,
`errors` that of the 5xx series, each series' increase taken between
consecutive scrapes as Prometheus' `increase()` does: a value lower than the
one before is a reset (the engine restarted) and counts from 0. Unknown
(None, never 0) with a single scrape in the window, or a scrape whose page
lacked the counter.

An engine without the HTTP counter (llm-d-inference-sim alone serves only
`vllm:*` names; the local fleet puts a front before it that adds the counter,
`modelplane.dev.engine_front`) still counts the requests it finished in vLLM's
own `vllm:request_success_total`, one series per finish reason, written once
the request is done and never for a request refused before it reached the
engine: `/v1/models` and health never touch it, and neither does a request
failed with an HTTP error (the double's injected failures leave every `vllm:*`
counter as it was). So there `requests` is that counter's increase and
`errors` is unknown, never 0: an error rate read from it would call every
failure a success. A page with the engine's `vllm:num_requests_running` gauge
but no such counter has finished nothing yet (the counter's series appear with
their first request, as the double's do): zero, not unknown.

A replica's counts are its pods' sums, unknown when any pod's is (a part of
the traffic would pass for all of it). A disaggregated replica (pods of
roles `prefill` and `decode`) sees each request twice: the decode pod's
routing sidecar sends it to a prefill engine first (one token), then to its
own engine. Only the decode pods' counters and time-to-first-token
histogram count for it: the decode engine answers the client, and its
counters see each request once whatever the number of prefill pods. Its
TTFT starts when the decode engine receives the request, after the prefill,
so on a disaggregated replica it is a lower bound of what the client waits.
The gauges (waiting, running, KV-cache use) are the load of every pod and
stay summed over all roles.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import math
import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prometheus_client.parser import text_string_to_metric_families

from modelplane.api import constants as c
from modelplane.api.autoscaling import MAX_REPLICA_SIGNALS, MAX_SIGNAL_ERROR, ReplicaSignals
from modelplane.api.inventory_summary import epoch_seconds

K = TypeVar("K")


@dataclass(frozen=True)
class EngineMetrics:
    """One engine's metric names for the signals."""

    waiting: str
    running: str
    kv_cache: tuple[str, ...]
    ttft: str
    http_requests: str  # a counter labelled handler and status (the sample's name, `_total`)
    inference_handlers: frozenset[str]  # the handlers (route templates) that serve inference
    finished: str  # the engine's own finished-request counter (the sample's name, `_total`)


VLLM = EngineMetrics(
    waiting="vllm:num_requests_waiting",
    running="vllm:num_requests_running",
    kv_cache=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    ttft="vllm:time_to_first_token_seconds",
    http_requests="http_requests_total",
    inference_handlers=frozenset(
        {
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/embeddings",
            "/v1/responses",
            "/v1/audio/transcriptions",
            "/v1/audio/translations",
            "/v1/rerank",
            "/v1/score",
        }
    ),
    finished="vllm:request_success_total",
)
ENGINES: Mapping[str, EngineMetrics] = {"vllm": VLLM}

DEFAULT_PORT = 8000
DEFAULT_PATH = "/metrics"
DEFAULT_TIMEOUT = 2.0  # seconds per pod, whole answer: one slow engine must not stall the round
# Seconds for a whole round of scrapes: pods not answered by then count as
# unreachable, so the summary is written on time whatever the engines do.
DEFAULT_ROUND_DEADLINE = 30.0
# The largest count or gauge kept: beyond 2**53 a float no longer holds every
# integer, and summing a few pods' counters must stay inside int64.
MAX_VALUE = float(2**53)
READ_CHUNK = 64 * 1024
DEFAULT_MAX_BYTES = 4 * 1024 * 1024  # vLLM's page is ~100 KiB; LoRA labels multiply it
WINDOW_SAMPLES = 5  # scrapes averaged (at the default minute: five minutes)
PARALLEL = 16  # pods scraped at once: 256 replicas with 2 s timeouts stay under a minute


class ScrapeError(Exception):
    """A metrics endpoint that did not answer usefully (the message says why)."""


@dataclass(frozen=True)
class Sample:
    """What one scrape of one pod read."""

    at: int  # epoch seconds
    waiting: float | None
    running: float | None
    kv_cache: float | None
    ttft_buckets: tuple[tuple[float, float], ...]  # (upper bound, cumulative count)
    # Inference series of the HTTP counter: ((handler, method, status), count); None: no counter.
    http: tuple[tuple[tuple[str, str, str], float], ...] | None = None
    # The engine's finished-request counter by finish reason; None: not known (not an engine page).
    finished: tuple[tuple[str, float], ...] | None = None


Opener = Callable[[str, int, float], http.client.HTTPConnection]


def fetch(url: str, timeout: float, max_bytes: int, opener: Opener | None = None) -> str:
    """GET `url` (http only) within `timeout` seconds in all; ScrapeError unless had whole.

    `opener` (host, port, timeout) returns a connection already connected, for
    a network the agent's own is not (the local fleet's namespace).

    The timeout bounds the whole exchange, not each read: a page that drips a
    byte at a time is cut at the deadline like one that never answers, and so
    is one that drips its status line or headers (a watchdog shuts the
    connection down at the deadline, which ends any read blocked on it).
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ScrapeError(f"{url!r} is not an http URL")
    deadline = time.monotonic() + timeout
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    watchdog = threading.Timer(timeout, _cut, args=(conn,))
    watchdog.daemon = True
    try:
        if opener is None:
            conn.connect()
        else:
            conn = opener(parts.hostname, parts.port or 80, timeout)
            watchdog.args = [conn]
        watchdog.start()
        conn.request("GET", parts.path or "/", headers={"Accept": "text/plain"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise ScrapeError(f"HTTP {resp.status} from {url}")
        body = _read_by(resp, conn, deadline, max_bytes + 1)
    except (OSError, http.client.HTTPException) as err:
        late = f" (timed out: no whole answer within the {timeout:g} s deadline)"
        late = late if time.monotonic() >= deadline else ""
        raise ScrapeError(f"{url}: {type(err).__name__}: {err}{late}") from err
    finally:
        watchdog.cancel()
        conn.close()
    if len(body) > max_bytes:
        raise ScrapeError(f"{url}: more than {max_bytes} bytes")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ScrapeError(f"{url}: not UTF-8 text") from err


def _cut(conn: http.client.HTTPConnection) -> None:
    """Shut a connection down at its deadline, so a read blocked on it returns."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read_by(
    resp: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: float, limit: int
) -> bytes:
    """At most `limit` bytes of the body, read before `deadline` (monotonic) or TimeoutError."""
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the page was not whole within the deadline ({got} bytes read)")
        if conn.sock is not None:
            conn.sock.settimeout(left)
        chunk = resp.read1(min(READ_CHUNK, limit - got))
        if not chunk:
            if resp.length:  # the connection ended before the announced length
                raise http.client.IncompleteRead(b"".join(chunks), resp.length)
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _known(value: float) -> bool:
    """Whether a sample's value can stand for a count or gauge (finite, not absurd)."""
    return math.isfinite(value) and abs(value) <= MAX_VALUE


def parse(text: str, engine: EngineMetrics, at: int) -> Sample:
    """The signals in one page of Prometheus text (summed over label sets, e.g. models)."""
    sums: dict[str, float] = {}
    buckets: dict[float, float] | None = {}
    series: dict[tuple[str, str, str], float] | None = None
    finished: dict[str, float] | None = {}
    usable = True  # every inference series of the HTTP counter is a count
    wanted = {engine.waiting, engine.running, *engine.kv_cache}
    try:
        for family in text_string_to_metric_families(text):
            if engine.http_requests in (family.name, family.name + "_total"):
                series = series if series is not None else {}  # the counter is there, maybe empty
            for s in family.samples:
                if s.name in wanted and _known(s.value) and s.value >= 0:
                    sums[s.name] = sums.get(s.name, 0.0) + s.value
                elif s.name == engine.ttft + "_bucket" and "le" in s.labels:
                    buckets = _add_bucket(buckets, s.labels["le"], s.value)
                elif s.name == engine.http_requests and series is not None:
                    usable &= _count_request_series(
                        series, s.labels, s.value, engine.inference_handlers
                    )
                elif s.name == engine.finished:
                    finished = _add_finished(finished, s.labels.get("finish_reason", ""), s.value)
    except (ValueError, TypeError, IndexError) as err:
        raise ScrapeError(f"not Prometheus text: {err}") from err
    sums = {name: v for name, v in sums.items() if v <= MAX_VALUE}  # many huge label sets
    kv = next((sums[n] for n in engine.kv_cache if n in sums), None)
    # Without the running gauge the page is no engine's: its finished count is not
    # known; nor is it on a page whose HTTP counter is there but unusable (the
    # counts are broken, not absent).
    engine_page = engine.running in sums and (series is None or usable)
    return Sample(
        at=at,
        waiting=sums.get(engine.waiting),
        running=sums.get(engine.running),
        kv_cache=None if kv is None else min(1.0, max(0.0, kv)),
        ttft_buckets=tuple(sorted((buckets or {}).items())),
        http=None if series is None or not usable else tuple(sorted(series.items())),
        finished=None if finished is None or not engine_page else tuple(sorted(finished.items())),
    )


def _add_finished(
    into: dict[str, float] | None, reason: str, value: float
) -> dict[str, float] | None:
    """Add one finished-request sample by finish reason; None once any is no count."""
    if into is None or not _known(value) or value < 0:
        return None
    into[reason] = into.get(reason, 0.0) + value
    return into if into[reason] <= MAX_VALUE else None


def _add_bucket(
    into: dict[float, float] | None, le: str, value: float
) -> dict[float, float] | None:
    """Add one histogram bucket sample; None (the histogram unknown) once any bucket is unusable.

    A bucket whose count is not a usable number, or whose bound is NaN, would
    make every quantile of the histogram a guess: the whole histogram is dropped.
    """
    bound = float(le)
    if into is None or math.isnan(bound) or not _known(value) or value < 0:
        return None
    into[bound] = into.get(bound, 0.0) + value
    return into if into[bound] <= MAX_VALUE else None


def _count_request_series(
    into: dict[tuple[str, str, str], float],
    labels: Mapping[str, str],
    value: float,
    handlers: frozenset[str],
) -> bool:
    """Add one HTTP counter sample to `into` when it counts an inference handler.

    False when it does but its value is no count (not finite, negative or
    absurd): a counter missing one series would pass a part for the whole.
    """
    handler = labels.get("handler", "")
    if handler not in handlers:
        return True
    if not _known(value) or value < 0:
        return False
    key = (handler, labels.get("method", ""), labels.get("status", ""))
    into[key] = into.get(key, 0.0) + value
    return into[key] <= MAX_VALUE


def _is_server_error(status: str) -> bool:
    """Whether a `status` label ("5xx" grouped, or "503" ungrouped) is an HTTP server error."""
    return len(status) == 3 and status[0] == "5"


def _increase(
    window: Sequence[Sample], pick: Callable[[Sample], Sequence[tuple[K, float]]]
) -> dict[K, float]:
    """Each series' increase over `window`, a drop being a reset counted from 0 (`increase()`)."""
    grown: dict[K, float] = {}
    for before, after in itertools.pairwise(window):
        prior = dict(pick(before))
        for key, count in pick(after):
            was = prior.get(key, 0.0)
            grown[key] = grown.get(key, 0.0) + (count - was if count >= was else count)
    return grown


def requests_answered(window: Sequence[Sample]) -> tuple[int, int | None] | None:
    """(requests, 5xx errors) the pod answered over `window`; None when unknown.

    From the HTTP counter when every scrape had it; else from the engine's
    finished-request counter, whose errors are unknown (None): it never sees a
    request that failed. None with one scrape or a page with neither counter.
    """
    if len(window) < 2:
        return None
    if all(s.http is not None for s in window):
        grown = _increase(window, lambda s: s.http or ())
        requests = sum(grown.values())
        errors: float | None = sum(n for k, n in grown.items() if _is_server_error(k[2]))
    elif all(s.finished is not None for s in window):
        requests, errors = sum(_increase(window, lambda s: s.finished or ()).values()), None
    else:
        return None
    if requests > MAX_VALUE:
        return None  # many huge series: no count an int64 field should carry
    return round(requests), None if errors is None else round(errors)


def quantile(
    q: float, first: Sequence[tuple[float, float]], last: Sequence[tuple[float, float]]
) -> tuple[float | None, int]:
    """The q-quantile of a histogram's increase between two scrapes, as Prometheus interpolates.

    (value, observations); value None with no observation in between.
    """
    before = dict(first)
    delta = [(b, max(0.0, n - before.get(b, 0.0))) for b, n in last]
    if not delta or delta[-1][1] <= 0:
        return None, 0
    total = delta[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound, count in delta:
        if count >= rank:
            if math.isinf(bound):
                return lower, int(total)  # the largest finite bound, as histogram_quantile
            inside = count - below
            share = 0.0 if inside <= 0 else (rank - below) / inside
            return lower + (bound - lower) * share, int(total)
        lower, below = bound, count
    return lower, int(total)


@dataclass
class Window:
    """The last samples of each pod, so a replica's signals cover a window, not an instant."""

    size: int = WINDOW_SAMPLES
    pods: dict[str, deque[Sample]] = field(default_factory=dict)

    def add(self, pod: str, sample: Sample) -> deque[Sample]:
        """Keep `sample` as the pod's newest; the pod's window."""
        window = self.pods.setdefault(pod, deque(maxlen=self.size))
        window.append(sample)
        return window

    def forget_except(self, pods: set[str]) -> None:
        """Drop the windows of pods no longer seen."""
        for gone in set(self.pods) - pods:
            del self.pods[gone]


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _pod_ref(pod: Mapping[str, Any]) -> tuple[str, str, str, str, str] | None:
    """(replica, namespace, pod name, pod IP, role) of a Ready, running replica pod; else None.

    The namespace is the API server's, not the pod's say: it is what the control
    plane checks against the replica's own before the pod speaks for it.
    """
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if not isinstance(meta, Mapping) or not isinstance(status, Mapping):
        return None
    labels = meta.get("labels") or {}
    replica, role = labels.get(c.LABEL_REPLICA), labels.get(c.LABEL_ROLE)
    ip, name, namespace = status.get("podIP"), meta.get("name"), meta.get("namespace")
    ready = any(
        isinstance(x, Mapping) and x.get("type") == "Ready" and x.get("status") == "True"
        for x in status.get("conditions") or []
    )
    if not ready or status.get("phase") != "Running":
        return None
    if not all(isinstance(v, str) and v for v in (replica, ip, name, namespace)):
        return None
    return str(replica), str(namespace), str(name), str(ip), str(role or "")


@dataclass(frozen=True)
class Scraper:
    """How the agent scrapes: port, path, bounds, engine, and the fetch (tests pass theirs)."""

    port: int = DEFAULT_PORT
    path: str = DEFAULT_PATH
    timeout: float = DEFAULT_TIMEOUT
    round_deadline: float = DEFAULT_ROUND_DEADLINE
    max_bytes: int = DEFAULT_MAX_BYTES
    engine: EngineMetrics = VLLM
    get: Callable[[str, float, int], str] = fetch

    def url(self, ip: str) -> str:
        """The metrics URL of a pod at `ip` (IPv6 in brackets)."""
        host = f"[{ip}]" if ":" in ip else ip
        return f"http://{host}:{self.port}{self.path}"


def _replica(
    key: tuple[str, str], pods: Sequence[tuple[str, deque[Sample] | str]], scraped_at: str
) -> ReplicaSignals:
    """One replica's signals from its pods' (role, window) (an error string for a pod that failed).

    Requests and TTFT are counted on the decode pods alone when there are some
    (a disaggregated replica: see the module's notes), on every pod otherwise.
    """
    replica, namespace = key
    errors = [w for _, w in pods if isinstance(w, str)]
    windows = [w for _, w in pods if not isinstance(w, str)]
    if errors or not windows:
        error = (errors[0] if errors else "no Ready pod")[:MAX_SIGNAL_ERROR]
        return ReplicaSignals(
            replica=replica, namespace=namespace, pods=len(pods), reachable=False, error=error,
            scraped_at=scraped_at, window_seconds=0, samples=0,
        )  # fmt: skip
    span = max(w[-1].at - w[0].at for w in windows)
    samples = min(len(w) for w in windows)

    def total(pick: Callable[[Sample], float | None]) -> float | None:
        per_pod = [_mean([pick(s) for s in w]) for w in windows]
        known = [v for v in per_pod if v is not None]
        return round(sum(known), 4) if known else None

    kv = _mean([_mean([s.kv_cache for s in w]) for w in windows])
    decode = [w for role, w in pods if role == c.ROLE_DECODE and not isinstance(w, str)]
    counting = decode or windows
    merged_first: dict[float, float] = {}
    merged_last: dict[float, float] = {}
    for w in counting:
        for b, n in w[0].ttft_buckets if len(w) > 1 else ():
            merged_first[b] = merged_first.get(b, 0.0) + n
        for b, n in w[-1].ttft_buckets if len(w) > 1 else ():
            merged_last[b] = merged_last.get(b, 0.0) + n
    p90, requests = quantile(0.9, sorted(merged_first.items()), sorted(merged_last.items()))
    if requests > MAX_VALUE:
        p90 = None  # pods' huge histograms summed: no count an int64 field should carry
    answered = _sum_known([requests_answered(w) for w in counting])
    if answered is not None and answered[0] > MAX_VALUE:
        answered = None
    return ReplicaSignals(
        replica=replica,
        namespace=namespace,
        pods=len(pods),
        reachable=True,
        scraped_at=scraped_at,
        window_seconds=span,
        samples=samples,
        requests_waiting=total(lambda s: s.waiting),
        requests_running=total(lambda s: s.running),
        kv_cache_utilization=None if kv is None else round(kv, 4),
        ttft_p90_seconds=None if p90 is None else round(p90, 4),
        ttft_requests=requests if p90 is not None else None,
        requests=None if answered is None else answered[0],
        errors=None if answered is None else answered[1],
    )


def _sum_known(
    per_pod: Sequence[tuple[int, int | None] | None],
) -> tuple[int, int | None] | None:
    """The pods' (requests, errors) summed; None when any pod's is unknown (a part is no total).

    Errors are unknown when any pod's are: a sum over some pods would pass for all of them.
    """
    if not per_pod or any(p is None for p in per_pod):
        return None
    counted = [p for p in per_pod if p is not None]
    errors = [p[1] for p in counted]
    total = None if any(e is None for e in errors) else sum(e or 0 for e in errors)
    return sum(p[0] for p in counted), total


def _within(
    deadline: float,
    one: Callable[[tuple[str, str, str, str, str]], Sample | str],
    refs: Sequence[tuple[str, str, str, str, str]],
) -> list[Sample | str]:
    """`one` of each ref, in parallel; a ref not done within `deadline` seconds is an error.

    The round returns at the deadline whatever the engines do; a fetch still
    running is left to end at its own timeout, in a thread nobody waits for.
    """
    pool = ThreadPoolExecutor(max_workers=PARALLEL)
    futures: list[Future[Sample | str]] = [pool.submit(one, ref) for ref in refs]
    wait(futures, timeout=deadline)
    pool.shutdown(wait=False, cancel_futures=True)
    late = f"no answer within the round's {deadline:g} s deadline"
    return [
        f.result() if f.done() and not f.cancelled() else f"pod {ref[2]}: {late}"
        for f, ref in zip(futures, refs, strict=True)
    ]


def scrape(
    pods: Sequence[Mapping[str, Any]], scraper: Scraper, window: Window, now: str
) -> tuple[list[ReplicaSignals], bool]:
    """Per replica and namespace of its pods, its signals as of `now` (RFC 3339).

    (signals, truncated). Pods carrying one replica's label in two namespaces
    make two reports, never one merged: the control plane reads only the one
    from the replica's own namespace.
    """
    at = epoch_seconds(now) or 0
    refs = sorted({r for pod in pods if (r := _pod_ref(pod)) is not None})

    def one(ref: tuple[str, str, str, str, str]) -> Sample | str:
        try:
            text = scraper.get(scraper.url(ref[3]), scraper.timeout, scraper.max_bytes)
            return parse(text, scraper.engine, at)
        except ScrapeError as err:
            return f"pod {ref[2]}: {err}"

    results = _within(scraper.round_deadline, one, refs)
    by_replica: dict[tuple[str, str], list[tuple[str, deque[Sample] | str]]] = {}
    for (replica, namespace, name, _, role), got in zip(refs, results, strict=True):
        pod = f"{namespace}/{name}"  # pod names are unique per namespace only
        entry = got if isinstance(got, str) else window.add(pod, got)
        by_replica.setdefault((replica, namespace), []).append((role, entry))
    window.forget_except({f"{ref[1]}/{ref[2]}" for ref in refs})
    keys = sorted(by_replica)
    out = [_replica(k, by_replica[k], now) for k in keys[:MAX_REPLICA_SIGNALS]]
    return out, len(keys) > MAX_REPLICA_SIGNALS
