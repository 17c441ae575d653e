"""The worker pool's fairness rule, as a table of events and as a simulated timeline.

No clocks: calls arrive and finish at logical times, and the rule decides
which call each free worker takes.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

import pytest

from modelplane.crossplane.fairness import FairQueue, Ticket

# ---------------------------------------------------------------------------
# Tables: a sequence of events, and which calls are running after each.
# An event is "+name" (arrives; a name starting with B is big, its tenant is
# the letter after the dash) or "-name" (finishes). After every event, free
# workers take calls until the rule lets none start.


def replay(workers: int, events: list[str]) -> list[list[str]]:
    queue = FairQueue(workers)
    tickets: dict[str, Ticket] = {}
    names: dict[int, str] = {}
    after: list[list[str]] = []
    for event in events:
        name = event[1:]
        if event[0] == "+":
            ticket = queue.arrive(name.split("-")[1], big=name.startswith("B"))
            tickets[name], names[id(ticket)] = ticket, name
        else:
            queue.finish(tickets[name])
        while len(queue.running) < workers and queue.take() is not None:
            pass
        after.append(sorted(names[id(t)] for t in queue.running))
    return after


TABLE = [
    pytest.param(
        2,
        ["+B1-a", "+B2-a", "+s1-c"],
        [["B1-a"], ["B1-a"], ["B1-a", "s1-c"]],
        id="two big calls of one tenant leave a worker to a small tenant",
    ),
    pytest.param(
        2,
        ["+B1-a", "+B2-b", "+s1-c", "-s1-c", "-B1-a"],
        [["B1-a"], ["B1-a"], ["B1-a", "s1-c"], ["B1-a"], ["B2-b"]],
        id="big calls of two tenants never hold both workers either",
    ),
    pytest.param(
        1,
        [
            *("+B1-a", "+B2-b", "+s1-c", "+s2-d", "-B1-a", "-s1-c"),
            *("+s3-e", "-s2-d", "-B2-b", "-s3-e"),
        ],
        [
            ["B1-a"],
            ["B1-a"],
            ["B1-a"],
            ["B1-a"],
            ["s1-c"],  # small calls that waited behind B1 go before B2, though B2 came first
            ["s2-d"],
            ["s2-d"],
            ["B2-b"],  # s3 arrived behind no big call: B2, older, goes first
            ["s3-e"],
            [],
        ],
        id="one worker: a small call waits behind at most one big call",
    ),
    pytest.param(
        1,
        ["+s1-a", "+B1-b", "+s2-c", "-s1-a", "-B1-b"],
        [["s1-a"], ["s1-a"], ["s1-a"], ["B1-b"], ["s2-c"]],
        id="one worker: a big call is not starved by small calls that arrive after it",
    ),
    pytest.param(
        4,
        ["+B1-a", "+B2-a", "+B3-a", "+B4-b", "+B5-c"],
        [
            ["B1-a"],
            ["B1-a", "B2-a"],
            ["B1-a", "B2-a"],
            ["B1-a", "B2-a", "B4-b"],
            ["B1-a", "B2-a", "B4-b"],
        ],
        id="four workers: one tenant's big calls hold at most two, all big calls three",
    ),
    pytest.param(
        2,
        ["+s1-a", "+s2-a", "+s3-a", "+s4-b", "-s1-a"],
        [["s1-a"], ["s1-a", "s2-a"], ["s1-a", "s2-a"], ["s1-a", "s2-a"], ["s2-a", "s4-b"]],
        id="tenants take turns: the tenant holding fewer workers goes first",
    ),
    pytest.param(
        3,
        ["+B1-a", "+B2-a", "+B3-b", "+s1-c", "-B1-a"],
        [["B1-a"], ["B1-a"], ["B1-a", "B3-b"], ["B1-a", "B3-b", "s1-c"], ["B2-a", "B3-b", "s1-c"]],
        id="a tenant's queued big call waits for its own, not for another tenant's",
    ),
]


@pytest.mark.parametrize(("workers", "events", "expected"), TABLE)
def test_the_rule_as_a_table(workers: int, events: list[str], expected: list[list[str]]) -> None:
    assert replay(workers, events) == expected


def test_a_call_that_gives_up_waiting_leaves_the_queue() -> None:
    queue = FairQueue(1)
    running = queue.arrive("a", big=True)
    assert queue.take() is running
    gone, stays = queue.arrive("b", big=False), queue.arrive("c", big=True)
    queue.cancel(gone)
    queue.finish(running)
    assert queue.take() is stays and queue.waiting == []


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        FairQueue(0)


# ---------------------------------------------------------------------------
# A simulated timeline: logical durations, seeded arrivals, every promise checked.

BIG, SMALL = 100, 1


@dataclass
class Call:
    name: str
    tenant: str
    big: bool
    arrives: int
    started: int = -1
    ends: int = -1


class Fifo:
    """What the pool did before the rule: the first call in line takes a free worker."""

    def __init__(self, workers: int) -> None:
        self.waiting: list[Ticket] = []
        self.running: list[Ticket] = []
        self._seq = 0

    def arrive(self, tenant: str, big: bool) -> Ticket:
        self._seq += 1
        self.waiting.append(Ticket(tenant, big, self._seq))
        return self.waiting[-1]

    def take(self) -> Ticket | None:
        if not self.waiting:
            return None
        self.running.append(self.waiting.pop(0))
        return self.running[-1]

    def finish(self, ticket: Ticket) -> None:
        self.running.remove(ticket)


def simulate(workers: int, calls: list[Call], queue: FairQueue | Fifo) -> list[Call]:
    """Run `calls` on `workers`, each taking BIG or SMALL time units; fill in start and end."""
    arrivals = sorted(calls, key=lambda c: c.arrives)
    by_ticket: dict[int, Call] = {}
    ending: list[tuple[int, int, Ticket]] = []
    now, i = 0, 0
    while i < len(arrivals) or ending:
        next_arrival = arrivals[i].arrives if i < len(arrivals) else None
        if ending and (next_arrival is None or ending[0][0] <= next_arrival):
            now, _, ticket = heapq.heappop(ending)
            queue.finish(ticket)
        else:
            call = arrivals[i]
            now, i = call.arrives, i + 1
            by_ticket[id(queue.arrive(call.tenant, call.big))] = call
        while len(queue.running) < workers:
            ticket = queue.take()
            if ticket is None:
                break
            call = by_ticket[id(ticket)]
            call.started, call.ends = now, now + (BIG if call.big else SMALL)
            heapq.heappush(ending, (call.ends, ticket.seq, ticket))
        assert len(queue.running) <= workers
    return calls


def stream(seed: int) -> list[Call]:
    """Two tenants sending big calls in bursts, six sending small calls all along."""
    rng = random.Random(seed)
    calls = [
        Call(f"B{tenant}{k}", tenant, True, rng.randrange(0, 400))
        for tenant in ("a", "b")
        for k in range(rng.randrange(2, 6))
    ]
    calls += [Call(f"s{k}", rng.choice("cdefgh"), False, rng.randrange(0, 600)) for k in range(120)]
    return calls


def violations(workers: int, calls: list[Call]) -> list[str]:
    """Every promise of the rule that the simulated timeline breaks."""
    found = []
    for call in (c for c in calls if not c.big):
        # What a small call may wait for: the small calls that start while it
        # waits (and one running when it came) and, with one worker, one big call.
        ahead = sum(1 for c in calls if not c.big and call.arrives <= c.started < call.started)
        bound = (BIG if workers == 1 else 0) + SMALL * (ahead + 1)
        if call.started - call.arrives > bound:
            found.append(f"{call.name} waited {call.started - call.arrives} (bound {bound})")
    for t in range(max(c.ends for c in calls)):
        bigs = [c for c in calls if c.big and c.started <= t < c.ends]
        if workers > 1 and len(bigs) > workers - 1:
            found.append(f"big calls held every worker at {t}")
        for tenant in {c.tenant for c in bigs}:
            if sum(c.tenant == tenant for c in bigs) > max(1, workers // 2):
                found.append(f"tenant {tenant} held more than half the workers at {t}")
    return found


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_simulated_stream_keeps_every_promise(workers: int, seed: int) -> None:
    calls = simulate(workers, stream(seed), FairQueue(workers))
    assert all(c.ends >= 0 for c in calls), "every call, big or small, is served"
    assert violations(workers, calls) == []
    # Big calls are not starved: the last one ends within the time the big
    # calls alone need on the workers they may hold, plus every small call.
    bigs = [c for c in calls if c.big]
    lanes = max(1, workers - 1)
    assert max(c.ends for c in bigs) <= 400 + BIG * -(-len(bigs) // lanes) + SMALL * len(calls)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_check_catches_what_first_come_first_served_did(workers: int) -> None:
    # The same stream served in arrival order: big calls hold every worker and
    # small calls queue behind several of them (the small tenant).
    calls = simulate(workers, stream(1), Fifo(workers))
    assert any("waited" in v for v in violations(workers, calls))
