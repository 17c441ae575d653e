"""Attribute an audited fleet's API writes to who made them, on what, and why.

A fleet started with `audit` (`Fleet(audit=True)`) has each API server log the
writes it serves (`fleet.AUDIT_POLICY`): one JSON event per line, with the
client's user agent, the object written and, for Modelplane's kinds and the
Objects they compose, the body sent. `Reader` reads what the logs gained since
it last looked; `attribute` counts those events by cause:

- **who**: the writer, from its user agent (`crossplane`, `provider-kubernetes`,
  `kube-controller-manager`, `kwok`, ...): every fleet process authenticates as
  the same admin, so the agent is what tells them apart;
- **what**: the cluster (control plane or workload), the resource and
  subresource, the verb;
- **why**, for a status write of a Modelplane kind: the status fields that
  differ from that object's last status written (a condition by its type), so
  a field rewritten on every call shows as the cause it is.

Every fleet process shares one identity, so the agent is all the attribution
the API server can give; the field diff is what the benchmark adds to it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane.api import constants as c
from modelplane.dev.fleet import CONTROL_PLANE

# A condition's time stamps are not what changed it: leaving them out shows the
# field behind the write (a status, a reason, a message).
_CONDITION_TIMES = ("lastTransitionTime", "lastProbeTime", "lastHeartbeatTime")


@dataclass(frozen=True)
class Write:
    """One write an API server served, as its audit event tells it."""

    cluster: str
    agent: str
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    body: Mapping[str, Any] | None = None

    @property
    def target(self) -> str:
        """The resource written, with its subresource (`modelreplicas/status`)."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def agent_of(user_agent: str) -> str:
    """A writer's name from its user agent: `crossplane/v2.3.4 (linux/amd64) ...` →
    `crossplane`; `unknown` when it sent none."""
    return user_agent.split(" ", 1)[0].split("/", 1)[0] or "unknown"


def parse_event(cluster: str, event: Mapping[str, Any]) -> Write | None:
    """One audit event as a Write, or None for what is not a served write."""
    if event.get("stage") != "ResponseComplete":
        return None
    ref = event.get("objectRef") or {}
    body = event.get("requestObject")
    return Write(
        cluster=cluster,
        agent=agent_of(str(event.get("userAgent", ""))),
        verb=str(event.get("verb", "")),
        group=str(ref.get("apiGroup", "")),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        code=int((event.get("responseStatus") or {}).get("code", 0)),
        body=body if isinstance(body, Mapping) else None,
    )


@dataclass
class Reader:
    """Reads what each cluster's audit log gained since the last `read`."""

    logs: Mapping[str, Path]
    offsets: dict[str, int] = field(default_factory=dict)

    def mark(self) -> None:
        """Skip everything logged so far."""
        for cluster, path in self.logs.items():
            self.offsets[cluster] = path.stat().st_size if path.exists() else 0

    def read(self) -> list[Write]:
        """The writes logged since the last `mark` or `read`, in log order per cluster."""
        out: list[Write] = []
        for cluster, path in self.logs.items():
            if not path.exists():
                continue
            with path.open("rb") as f:
                f.seek(self.offsets.get(cluster, 0))
                data = f.read()
            # A line still being written is read next time.
            whole = data[: data.rfind(b"\n") + 1]
            self.offsets[cluster] = self.offsets.get(cluster, 0) + len(whole)
            out.extend(_writes(cluster, whole.decode().splitlines()))
        return out


def _writes(cluster: str, lines: Iterable[str]) -> Iterator[Write]:
    for line in lines:
        if not line.strip():
            continue
        write = parse_event(cluster, json.loads(line))
        if write is not None:
            yield write


def _comparable(status: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(status)
    conditions = out.pop("conditions", None)
    if isinstance(conditions, list):
        for cond in conditions:
            if isinstance(cond, Mapping) and "type" in cond:
                kept = {k: v for k, v in cond.items() if k not in _CONDITION_TIMES}
                out[f"conditions[{cond['type']}]"] = kept
    return out


def changed_fields(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    """The status fields `after` sets differently from `before` (a condition by its
    type, its time stamps aside); `(unchanged)` when only time stamps moved, as
    in a write that changes nothing a reader acts on."""
    old, new = _comparable(before or {}), _comparable(after)
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return keys or ["(unchanged)"]


Seen = dict[tuple[str, str, str], Any]
"""Each object's last status written, by (resource, namespace, name)."""


def attribute(writes: Iterable[Write], last: Seen | None = None) -> Counter[tuple[str, ...]]:
    """Writes counted by (cluster role, writer, target, verb, why).

    `why` is the status fields a Modelplane kind's status write changed (see
    `changed_fields`); `last` keeps each object's last status across calls, so
    an object written in two windows is compared with what it had.
    """
    seen = {} if last is None else last
    counts: Counter[tuple[str, ...]] = Counter()
    for w in writes:
        role = "control plane" if w.cluster == CONTROL_PLANE else "workload"
        why = ""
        if w.group == c.GROUP and w.subresource == "status" and w.body is not None:
            status = w.body.get("status")
            if isinstance(status, Mapping):
                key = (w.resource, w.namespace, w.name)
                why = ", ".join(changed_fields(seen.get(key), status))
                seen[key] = status
        counts[(role, w.agent, w.target, w.verb, why)] += 1
    return counts
