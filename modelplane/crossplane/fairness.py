"""Which waiting call a free worker of the pool takes next: the per-tenant fairness rule.

A call is big when its request is large (a ModelDeployment over thousands of
clusters: seconds of CPU), small otherwise (milliseconds). Without a rule,
one tenant's big calls can hold every worker and every other tenant's small
calls wait for them. The rule, with N workers:

1. Big calls together hold at most N - 1 workers (when N > 1): at least one
   worker always runs small calls, so a small call never waits for a big one.
2. One tenant's big calls hold at most max(1, N // 2) workers: another
   tenant's big call is not stuck behind a queue of them.
3. With one worker, a small call that has waited while only big calls ran is
   served before the next big call starts: it waits behind at most one.
4. Otherwise the free worker takes the call whose tenant holds the fewest
   workers, the earliest arrival among equals: tenants take turns, and within
   a tenant calls keep their order.

A tenant is the composite's namespace, or its name for a cluster-scoped kind.
This module is the rule alone (no clock, no I/O): the pool calls `arrive`,
`take` when a worker is free, and `finish`, and a table of events tests it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(eq=False)
class Ticket:
    """One call, from its arrival until it finishes (or gives up waiting)."""

    tenant: str
    big: bool
    seq: int
    waited_behind_big: bool = field(default=False)
    """A small call that has waited while only big calls held the workers (rule 3)."""


class FairQueue:
    """The calls waiting for a worker and the ones running, and the rule between them."""

    def __init__(self, workers: int) -> None:
        """Apply the rule for a pool of `workers` processes."""
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.workers = workers
        self.big_limit = max(1, workers - 1)
        self.tenant_big_limit = max(1, workers // 2)
        self.waiting: list[Ticket] = []
        self.running: list[Ticket] = []
        self._seq = 0

    def arrive(self, tenant: str, big: bool) -> Ticket:
        """Queue a call of `tenant`; `take` hands it to a worker when the rule allows."""
        self._seq += 1
        ticket = Ticket(tenant, big, self._seq)
        self.waiting.append(ticket)
        self._note()
        return ticket

    def take(self) -> Ticket | None:
        """The call a free worker runs now (marked running), or None when none may start."""
        held = Counter(t.tenant for t in self.running)
        best: Ticket | None = None
        for ticket in self.waiting:
            if self._may_start(ticket) and (
                best is None or (held[ticket.tenant], ticket.seq) < (held[best.tenant], best.seq)
            ):
                best = ticket
        if best is not None:
            self.waiting.remove(best)
            self.running.append(best)
            self._note()
        return best

    def finish(self, ticket: Ticket) -> None:
        """A running call is done (answered, failed or stopped): its worker is free."""
        self.running.remove(ticket)
        self._note()

    def cancel(self, ticket: Ticket) -> None:
        """A waiting call's caller gave up before it started."""
        self.waiting.remove(ticket)

    def _may_start(self, ticket: Ticket) -> bool:
        if not ticket.big:
            return True
        bigs = [t for t in self.running if t.big]
        return (
            len(bigs) < self.big_limit
            and sum(1 for t in bigs if t.tenant == ticket.tenant) < self.tenant_big_limit
            and not any(t.waited_behind_big for t in self.waiting)
        )

    def _note(self) -> None:
        # Rule 3's memory: small calls waiting while every running call is big.
        if self.running and all(t.big for t in self.running):
            for ticket in self.waiting:
                if not ticket.big:
                    ticket.waited_behind_big = True
