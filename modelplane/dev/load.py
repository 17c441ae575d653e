"""A bounded load of OpenAI chat completions, and what it measured (`modelplane dev load`).

Requests go out open-loop at a fixed rate: request i is due `i / rate`
seconds after the start, whatever the earlier ones are doing, so a slow
server meets the load a client fleet would send rather than a politely
waiting one. At most `concurrency` are in flight: a request due while all
are busy waits for a free one (its latency counts from when it is sent). The
load is bounded three ways: no request is sent after `duration` seconds, never
more than `max_requests` in all, and each one gives up when connecting, sending
or any read waits longer than `timeout` seconds. So the run ends by itself
soon after `duration + timeout` seconds unless a server drips its answer.

Every request ends as an HTTP status or a connection error (refused, reset,
timed out: the exception's name). Latency percentiles cover the requests that
got an HTTP status, successes or not, by nearest rank: the p-th percentile of
n sorted latencies is the ceil(p/100 · n)-th.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

# Opens a connection to (host, port) within a timeout: plain, or inside the fleet's network.
Opener = Callable[[str, int, float], http.client.HTTPConnection]
PERCENTILES = (50, 90, 99)
MAX_REQUESTS = 10_000  # the default cap on a run, whatever rate × duration asks for
PROMPT_WORDS = 3  # "load request <i>"
MAX_TOKENS = 16


class LoadError(ValueError):
    """A load that cannot be sent as asked (the message says why)."""


@dataclass(frozen=True)
class Plan:
    """How much load: requests per second, for how long, how many at once, the caps."""

    rate: float
    duration: float
    concurrency: int = 8
    max_requests: int = MAX_REQUESTS
    timeout: float = 30.0
    # Each request's size: its prompt in words, and the reply's cap in tokens.
    prompt_words: int = PROMPT_WORDS
    max_tokens: int = MAX_TOKENS

    def __post_init__(self) -> None:
        if not (self.rate > 0 and self.duration > 0 and self.timeout > 0):
            raise LoadError("rate, duration and timeout must be positive")
        if self.concurrency < 1 or self.max_requests < 1:
            raise LoadError("concurrency and the request cap must be at least 1")
        if self.prompt_words < 1 or self.max_tokens < 1:
            raise LoadError("the prompt's words and the reply's tokens must be at least 1")

    @property
    def total(self) -> int:
        """How many requests the run sends if nothing holds it back."""
        return min(self.max_requests, max(1, math.floor(self.rate * self.duration)))


@dataclass(frozen=True)
class Outcome:
    """One request: its HTTP status (None: no answer) or connection error, and its latency."""

    status: int | None
    error: str | None
    seconds: float


@dataclass
class Tally:
    """What has come back so far (shared by the workers, read by the progress display)."""

    sent: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, outcome: Outcome) -> None:
        """Record one finished request."""
        with self.lock:
            self.outcomes.append(outcome)

    def snapshot(self) -> tuple[int, list[Outcome]]:
        """(sent, finished so far)."""
        with self.lock:
            return self.sent, list(self.outcomes)


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """The p-th percentile of ascending values by nearest rank; None when there are none."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summary(outcomes: Sequence[Outcome], sent: int, elapsed: float) -> dict[str, Any]:
    """The run's numbers: counts by status and by connection error, latency percentiles."""
    answered = sorted(o.seconds for o in outcomes if o.status is not None)
    statuses = Counter(str(o.status) for o in outcomes if o.status is not None)
    errors = Counter(o.error or "unknown" for o in outcomes if o.status is None)
    ok = sum(n for s, n in statuses.items() if s.startswith("2"))
    return {
        "sent": sent,
        "finished": len(outcomes),
        "succeeded": ok,
        "statuses": dict(sorted(statuses.items())),
        "errors": dict(sorted(errors.items())),
        "elapsedSeconds": round(elapsed, 3),
        "ratePerSecond": round(len(outcomes) / elapsed, 3) if elapsed > 0 else None,
        "latencySeconds": {
            f"p{p}": None if (v := percentile(answered, p)) is None else round(v, 4)
            for p in PERCENTILES
        },
    }


def chat_body(model: str, i: int, words: int = PROMPT_WORDS, max_tokens: int = MAX_TOKENS) -> bytes:
    """The i-th request's body: a chat completion, not streamed, whose prompt is `words`
    words ("load request <i>", then filler) and whose reply is capped at `max_tokens`.

    An engine that echoes (the local fleet's double) answers with the prompt, so
    the prompt's length sets how long such an engine works on the request.
    """
    filler = (f"w{k}" for k in range(max(0, words - 3)))
    content = " ".join(["load", "request", str(i), *filler][:words])
    message = {"role": "user", "content": content}
    return json.dumps({"model": model, "messages": [message], "max_tokens": max_tokens}).encode()


@dataclass(frozen=True)
class Target:
    """Where the requests go: an http base URL, opened with `opener`."""

    url: str
    opener: Opener

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme != "http" or not parts.hostname:
            raise LoadError(f"{self.url!r} is not an http URL")

    def _open(self, timeout: float) -> tuple[http.client.HTTPConnection, str]:
        parts = urllib.parse.urlsplit(self.url)
        conn = self.opener(parts.hostname or "", parts.port or 80, timeout)
        return conn, parts.path.rstrip("/")

    def post(self, path: str, body: bytes, timeout: float) -> int:
        """POST body (JSON) to the base URL's path + `path`; the HTTP status (raises OSError)."""
        conn, base = self._open(timeout)
        try:
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            conn.request("POST", base + path, body, {"content-type": "application/json"})
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def get_json(self, path: str, timeout: float) -> Any:
        """GET the base URL's path + `path` as JSON (raises OSError or ValueError)."""
        conn, base = self._open(timeout)
        try:
            conn.request("GET", base + path)
            response = conn.getresponse()
            raw = response.read()
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            return json.loads(raw)
        finally:
            conn.close()


def plain(host: str, port: int, timeout: float) -> http.client.HTTPConnection:
    """A connection from this machine's own network."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.connect()
    return conn


def first_model(target: Target, timeout: float = 10.0) -> str:
    """The first model `/v1/models` lists (LoadError when there is none to read)."""
    try:
        listed = target.get_json("/v1/models", timeout)
        return str(listed["data"][0]["id"])
    except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError, TypeError) as err:
        raise LoadError(f"no model listed at {target.url}/v1/models ({err}): pass --model") from err


def _one(target: Target, model: str, i: int, plan: Plan) -> Outcome:
    started = time.monotonic()
    body = chat_body(model, i, plan.prompt_words, plan.max_tokens)
    try:
        status = target.post("/v1/chat/completions", body, plan.timeout)
        return Outcome(status, None, time.monotonic() - started)
    except (OSError, http.client.HTTPException) as err:
        return Outcome(None, type(err).__name__, time.monotonic() - started)


def run(
    plan: Plan,
    target: Target,
    model: str,
    tally: Tally | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Send the plan's load to `target` and return its summary (`summary`).

    `tally` lets a caller watch progress from another thread.
    """
    tally = tally if tally is not None else Tally()
    slots = threading.BoundedSemaphore(plan.concurrency)
    start = clock()
    end = start + plan.duration

    def task(i: int) -> None:
        try:
            tally.add(_one(target, model, i, plan))
        finally:
            slots.release()

    with ThreadPoolExecutor(max_workers=plan.concurrency) as pool:
        for i in range(plan.total):
            due = start + i / plan.rate
            if due >= end:
                break
            sleep(max(0.0, due - clock()))
            # All busy: wait for a free one, but never past the end of the run.
            if not slots.acquire(timeout=max(0.0, end - clock())):
                break
            with tally.lock:
                tally.sent += 1
            pool.submit(task, i)
    sent, outcomes = tally.snapshot()
    return summary(outcomes, sent, clock() - start)
