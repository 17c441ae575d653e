"""A pool of worker processes that run composers off the gRPC event loop.

Why processes and not threads: composers are CPU-bound pure Python. Under the
GIL a thread pool only interleaves them, and a C call that never releases the
GIL (a backtracking `re` match, a huge integer parse) stalls every thread and
the event loop with it, so a slow call would still hold up a normal one. A
thread also cannot be stopped: a call past its deadline would keep burning
CPU for as long as it runs. A worker process runs one call at a time, in
parallel with the others, and is killed and replaced when its call overruns.

Each call is a byte string in and a byte string out (serialized protobuf), so
the worker does the decoding, composing and encoding and the event loop only
moves bytes. The round trip of one call runs in a thread that blocks on the
worker's pipe; that thread holds no GIL while it waits.

Which waiting call a free worker takes is `fairness.FairQueue`'s rule: big
calls (requests of `big_call_bytes` or more) never hold every worker, one
tenant's never hold more than half, and a small call never waits behind more
than one big one.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from crossplane.function import logging as fnlogging

from modelplane.api.memo import memos_from_environment
from modelplane.crossplane.fairness import FairQueue, Ticket

log = fnlogging.get_logger()

Handler = Callable[[bytes], bytes]
"""What a worker runs per call; a module-level function, so it pickles by name."""


class PoolError(Exception):
    """A call the pool could not complete; the message says why."""


class DeadlineExceededError(PoolError):
    """The call did not finish within the pool's deadline (its worker was killed)."""


class WorkerLostError(PoolError):
    """The worker process died during the call (crash, out of memory, killed)."""


def _context() -> Any:
    # Forking a process that already runs gRPC threads is unsafe, and the fork
    # server needs a writable temporary directory (a function's pod may have a
    # read-only root filesystem): spawn a fresh interpreter per worker. It pays
    # the imports once per worker, at start and after a kill, never per call.
    return multiprocessing.get_context("spawn")


_READY = b"ready"


def _worker_main(
    conn: multiprocessing.connection.Connection,
    handler: Handler,
    debug: bool,
    warmup: Callable[[], None] | None = None,
) -> None:
    """Say ready once imported and warmed up, then serve calls from `conn` until it closes."""
    # Ctrl-C reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    memos_from_environment(os.environ)  # a spawned interpreter reads the switch anew
    fnlogging.configure(fnlogging.Level.DEBUG if debug else fnlogging.Level.INFO)
    if warmup is not None:
        try:
            warmup()
        except Exception:  # a worker that cannot warm up still serves, only slower at first
            log.exception("the worker's warm-up failed; its first calls pay for it")
    conn.send_bytes(_READY)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        conn.send_bytes(handler(data))


@dataclass
class _Worker:
    process: Any  # multiprocessing.Process of the pool's context
    conn: multiprocessing.connection.Connection

    def wait_ready(self) -> None:
        """Block until the process has imported everything and can take a call."""
        if self.conn.recv_bytes() != _READY:
            raise EOFError("the worker process did not start")

    def roundtrip(self, data: bytes) -> bytes:
        """Send one call and wait for its answer (runs in a thread)."""
        self.conn.send_bytes(data)
        return self.conn.recv_bytes()

    def kill(self) -> None:
        """Stop the process now and release its pipe and process handle."""
        self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()

    def stop(self, timeout: float) -> None:
        """Ask the process to exit (EOF on its pipe), killing it if it does not."""
        self.conn.close()
        self.process.join(timeout=timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=10)


BIG_CALL_BYTES = 4 * 1024 * 1024
"""A request this large or larger is a big call for the fairness rule.

4 MiB is the SDK's default message limit: a ModelDeployment over about 850
InferenceClusters of 8 pools (`benchmarks/bench_request.py`), a call of a
few hundred milliseconds cold; the fleet-wide calls the rule is about are
tens of MiB and seconds long, the everyday calls a few KiB."""


class WorkerPool:
    """Run a handler in `workers` processes, each call bounded by `deadline` seconds."""

    def __init__(
        self,
        handler: Handler,
        *,
        workers: int = 2,
        deadline: float = 8.0,
        debug: bool = False,
        big_call_bytes: int = BIG_CALL_BYTES,
        warmup: Callable[[], None] | None = None,
    ) -> None:
        """Start the worker processes and wait until each is ready to take calls.

        Each worker runs `warmup` (a module-level function) once before it is
        ready, so that no call pays for what a fresh interpreter does once.
        """
        if deadline <= 0:
            raise ValueError("the deadline must be positive")
        self._fair = FairQueue(workers)
        self.handler = handler
        self.workers = workers
        self.deadline = deadline
        self.debug = debug
        self.big_call_bytes = big_call_bytes
        self.warmup = warmup
        self._ctx = _context()
        # Threads wait on pipes: one per busy worker, one per starting worker,
        # and briefly one per killed worker while it unwinds.
        self._threads = ThreadPoolExecutor(max_workers=3 * workers, thread_name_prefix="mp-pool")
        self._idle: list[_Worker] = []
        self._waiting: dict[Ticket, asyncio.Future[_Worker]] = {}
        self._all: list[_Worker] = []
        started = [self._start() for _ in range(workers)]
        for worker in started:
            worker.wait_ready()
            self._idle.append(worker)

    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=_worker_main,
            args=(child, self.handler, self.debug, self.warmup),
            name="modelplane-composer",
            daemon=True,
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self._all.append(worker)
        return worker

    def _replace(self, worker: _Worker) -> None:
        """Kill `worker` and start another, idle once it is ready.

        The deadline of a call never includes a worker's start-up: a new
        worker takes calls only after it has said it is ready.
        """
        self._all.remove(worker)
        # Killing is a signal; joining and closing wait, so they go to a thread.
        self._threads.submit(worker.kill)
        loop = asyncio.get_running_loop()
        new = self._start()
        ready = loop.run_in_executor(self._threads, new.wait_ready)
        ready.add_done_callback(lambda f: self._started(loop, new, f))

    def _started(
        self, loop: asyncio.AbstractEventLoop, worker: _Worker, ready: asyncio.Future[None]
    ) -> None:
        if not ready.cancelled() and ready.exception() is None:
            self._idle.append(worker)
            self._dispatch()
            return
        log.error("a replacement worker process did not start; trying again in 1s")
        loop.call_later(1.0, self._replace, worker)

    def _dispatch(self) -> None:
        """Hand free workers to the waiting calls the fairness rule lets start."""
        while self._idle:
            ticket = self._fair.take()
            if ticket is None:
                return
            future = self._waiting.pop(ticket)
            if future.cancelled():  # its caller gave up and has not yet left the queue
                self._fair.finish(ticket)
                continue
            # The worker freed last goes first: under light load one worker
            # keeps serving, and its decode cache stays warm.
            future.set_result(self._idle.pop())

    async def _acquire(self, ticket: Ticket) -> _Worker:
        """Wait until the rule gives `ticket` a worker."""
        future: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = future
        self._dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            if ticket in self._waiting:  # still queued: leave the queue
                del self._waiting[ticket]
                self._fair.cancel(ticket)
            elif future.done() and not future.cancelled():
                # Given a worker in the same instant the caller gave up.
                self._release(ticket, future.result())
            raise

    def _release(self, ticket: Ticket, worker: _Worker | None) -> None:
        """A call is over: its worker (None when replaced) is free for the next one."""
        self._fair.finish(ticket)
        if worker is not None:
            self._idle.append(worker)
        self._dispatch()

    async def call(self, data: bytes, tenant: str = "") -> bytes:
        """Run the handler on `data` for `tenant` in a free worker and return its answer.

        Waits for the fairness rule to give it a worker first (busy workers
        free up at the latest at their own deadline). Raises
        `DeadlineExceededError` when the call itself overruns and
        `WorkerLostError` when the worker dies.
        """
        ticket = self._fair.arrive(tenant, big=len(data) >= self.big_call_bytes)
        worker = await self._acquire(ticket)
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            future = loop.run_in_executor(self._threads, worker.roundtrip, data)
            answer = await asyncio.wait_for(future, self.deadline)
        except TimeoutError:
            self._replace(worker)
            self._release(ticket, None)
            raise DeadlineExceededError(
                f"did not finish within {self.deadline:g}s (--deadline-seconds); "
                "the call was stopped"
            ) from None
        except (EOFError, OSError) as exc:
            self._replace(worker)
            self._release(ticket, None)
            elapsed = time.monotonic() - started
            raise WorkerLostError(
                f"the worker process died after {elapsed:.1f}s ({type(exc).__name__})"
            ) from None
        except asyncio.CancelledError:
            # The caller gave up (Crossplane's own timeout): the worker is
            # still busy with an answer nobody wants, so it cannot be reused.
            self._replace(worker)
            self._release(ticket, None)
            raise
        self._release(ticket, worker)
        return answer

    def close(self, timeout: float = 5.0) -> None:
        """Stop every worker and the pool's threads."""
        for worker in list(self._all):
            worker.stop(timeout)
        self._all.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)
