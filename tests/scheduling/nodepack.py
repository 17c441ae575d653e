"""A per-node model of the workload clusters, independent of the scheduler's ledger.

Given a pool's nodes and the replicas placed on it, it decides which replicas the
cluster's own scheduler would actually run, node by node (issue 17, item 4):

- **BinPack** (KAI, Volcano): exact. A replica runs when it and every replica
  admitted before it can be packed onto the nodes together, by an exhaustive
  search over the (few) nodes of the small pools the properties draw.
- **Spread** (the default kube-scheduler): the ledger's written assumption for
  least-allocated scoring, replayed as the cluster would: replicas in arrival
  order, each single-node worker onto the node with the most free devices that
  fits (ties to the lowest node), nothing ever moved afterwards.

Under both, a multi-node worker takes whole, empty nodes (the ledger's written
assumption), and one role of a replica runs entirely or not at all. Arrival
order: Ready replicas first (their pods are running and keep their nodes), then
by creation time; `oversubscribed` also asks the order by age alone (the
replicas not Ready yet already bound where they were created), where it could be
true. Devices are counted per DRA device class on a node: a request may use any
device of its class.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Vector = tuple[int, ...]
HELD = -1  # a node a multi-node worker holds whole: it fits nothing, not even zero
BIN_PACKING = frozenset({"kai-scheduler", "volcano"})


@dataclass(frozen=True)
class Role:
    """One role of one replica as a pool sees it."""

    demand: Vector  # devices one worker needs on each of its nodes, per device class
    workers: int
    nodes_per_worker: int = 1


Entry = tuple[Role, ...]  # the roles of one replica on one pool, in order


def _fits(free: Vector, demand: Vector) -> bool:
    return all(f >= d for f, d in zip(free, demand, strict=True))


def _minus(free: Vector, demand: Vector) -> Vector:
    return tuple(f - d for f, d in zip(free, demand, strict=True))


def admit(packing: str, nodes: int, cap: Vector, entries: Sequence[Entry]) -> list[bool]:
    """Which replicas (in arrival order) a pool of `nodes` nodes of `cap` runs."""
    if packing == "BinPack":
        return _admit_binpack(nodes, cap, entries)
    return _admit_spread(nodes, cap, entries)


# --- Spread -------------------------------------------------------------------------


def _admit_spread(nodes: int, cap: Vector, entries: Sequence[Entry]) -> list[bool]:
    free = [cap] * nodes
    out = []
    for entry in entries:
        trial = list(free)
        ok = all(_spread_role(trial, cap, role) for role in entry)
        if ok:
            free = trial
        out.append(ok)
    return out


def _spread_role(free: list[Vector], cap: Vector, role: Role) -> bool:
    """Place one role on `free` (in place); False when some worker finds no node."""
    if role.nodes_per_worker > 1:
        empty = [i for i, v in enumerate(free) if v == cap]
        need = role.nodes_per_worker * role.workers
        if len(empty) < need:
            return False
        for i in empty[:need]:
            free[i] = tuple(HELD for _ in cap)
        return True
    for _ in range(role.workers):
        fitting = [i for i, v in enumerate(free) if _fits(v, role.demand)]
        if not fitting:
            return False
        # Least allocated: the most free devices; the lowest node on a tie.
        best = max(fitting, key=lambda i: (sum(free[i]), -i))
        free[best] = _minus(free[best], role.demand)
    return True


# --- BinPack ------------------------------------------------------------------------


def _admit_binpack(nodes: int, cap: Vector, entries: Sequence[Entry]) -> list[bool]:
    running: list[Role] = []
    out = []
    for entry in entries:
        ok = packable(nodes, cap, [*running, *entry])
        if ok:
            running.extend(entry)
        out.append(ok)
    return out


def packable(nodes: int, cap: Vector, roles: Iterable[Role]) -> bool:
    """Whether some assignment of every worker to nodes exists (exhaustive search)."""
    roles = list(roles)
    whole = sum(r.nodes_per_worker * r.workers for r in roles if r.nodes_per_worker > 1)
    if whole > nodes:
        return False
    items = sorted(
        (r.demand for r in roles if r.nodes_per_worker <= 1 for _ in range(r.workers)),
        reverse=True,
    )
    return _pack(tuple(items), (cap,) * (nodes - whole))


def _pack(items: tuple[Vector, ...], bins: tuple[Vector, ...]) -> bool:
    @functools.cache
    def go(i: int, state: tuple[Vector, ...]) -> bool:
        if i == len(items):
            return True
        for j, v in enumerate(state):
            # Nodes in the same state are interchangeable: try one of them.
            if (j and v == state[j - 1]) or not _fits(v, items[i]):
                continue
            if go(i + 1, tuple(sorted((*state[:j], _minus(v, items[i]), *state[j + 1 :])))):
                return True
        return False

    return go(0, tuple(sorted(bins)))


# --- reading the fleet ----------------------------------------------------------------


def packing(cluster: Obj) -> str:
    """The cluster's packing, defaulting from its scheduler as SPEC's API says."""
    scheduling = cluster.get("spec", {}).get("scheduling") or {}
    if scheduling.get("packing"):
        return str(scheduling["packing"])
    return "BinPack" if scheduling.get("schedulerName") in BIN_PACKING else "Spread"


def roles_of(replica: Obj) -> list[Obj]:
    """A ModelReplica's roles (prefill and decode, or the unified spec itself)."""
    spec = replica["spec"]
    return [spec[k] for k in ("prefill", "decode") if k in spec] or [spec]


def _nodes_per_worker(role: Obj) -> int:
    topo = role["workers"].get("topology", {})
    return int(topo.get("pipeline", 1) * topo.get("data", 1) // topo.get("dataLocal", 1))


def _class_caps(pool: Obj) -> dict[str, int]:
    caps: dict[str, int] = defaultdict(int)
    for d in pool["devices"]:
        if d.get("claim", "DRA") == "DRA":
            caps[d.get("deviceClassName") or d["driver"]] += d.get("count", 1)
    return caps


def _role(role: Obj, classes: list[str]) -> Role:
    per_node: dict[str, int] = defaultdict(int)
    for d in role["deviceRequests"]:
        per_node[d["deviceClassName"]] += d["count"]
    return Role(
        tuple(per_node.get(k, 0) for k in classes),
        role["workers"].get("count", 1),
        _nodes_per_worker(role),
    )


def _arrival(replica: Obj) -> tuple[bool, str, str, str]:
    conditions = replica.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    meta = replica["metadata"]
    return (not ready, meta.get("creationTimestamp", ""), meta["namespace"], meta["name"])


def _age(replica: Obj) -> tuple[bool, str, str, str]:
    """The arrival order once every replica runs (or had its node when it was created)."""
    return (False, *_arrival(replica)[1:])


Pool = tuple[str, str]


def _pool_entries(
    clusters: list[Obj], replicas: list[Obj], aged: bool = False
) -> dict[Pool, tuple[Obj, list[str], list[tuple[str, Entry]]]]:
    """Per known pool: the pool, its device classes, and (replica, roles there) in arrival order."""
    pools = {
        (c["metadata"]["name"], p["name"]): p for c in clusters for p in c["status"]["gpuPools"]
    }
    demanded = {
        d["deviceClassName"] for r in replicas for x in roles_of(r) for d in x["deviceRequests"]
    }
    out: dict[Pool, tuple[Obj, list[str], list[tuple[str, Entry]]]] = {
        key: (pool, sorted(set(_class_caps(pool)) | demanded), []) for key, pool in pools.items()
    }
    for r in sorted(replicas, key=_age if aged else _arrival):
        here: dict[Pool, list[Role]] = defaultdict(list)
        for x in roles_of(r):
            key = (r["spec"]["clusterName"], x["nodePoolName"])
            if key in out:
                here[key].append(_role(x, out[key][1]))
        for key, entry in here.items():
            out[key][2].append((r["metadata"]["name"], tuple(entry)))
    return out


def pending(clusters: list[Obj], replicas: list[Obj], aged: bool = False) -> dict[Pool, set[str]]:
    """Per pool, the replicas with a role the pool's cluster cannot run (`aged`: when the
    replicas not Ready yet hold the nodes they were given at creation, in age order)."""
    packings = {c["metadata"]["name"]: packing(c) for c in clusters}
    out: dict[Pool, set[str]] = {}
    for key, (pool, classes, entries) in _pool_entries(clusters, replicas, aged).items():
        caps = _class_caps(pool)
        cap = tuple(caps.get(k, 0) for k in classes)
        ran = admit(packings[key[0]], pool["nodes"], cap, [e for _, e in entries])
        out[key] = {name for (name, _), ok in zip(entries, ran, strict=True) if not ok}
    return out


def admitted(clusters: list[Obj], replicas: list[Obj]) -> set[str]:
    """Names of the replicas whose every role runs (replicas in unknown pools included)."""
    stuck = set().union(*pending(clusters, replicas).values())
    return {r["metadata"]["name"] for r in replicas} - stuck


def oversubscribed(clusters: list[Obj], replicas: list[Obj]) -> set[Pool]:
    """Pools holding some replica their cluster cannot run beside the others, in either
    order the cluster may be in: its replicas not Ready yet still pending (Ready ones
    first), or already on the nodes they were given when created (by age: kube-scheduler
    binds a Pod when it is created, well before it is Ready). The second order counts
    only where it could be true: where every Ready replica runs in it too (a Ready
    replica that would have no node in it shows the older ones were pending). A replica
    may turn Ready only on a pool that is not oversubscribed in either."""
    ready = {r["metadata"]["name"] for r in replicas if not _arrival(r)[0]}
    now, aged = pending(clusters, replicas), pending(clusters, replicas, aged=True)
    possible = {key: names for key, names in aged.items() if not names & ready}
    return {key for found in (now, possible) for key, names in found.items() if names}
