"""The fleet's ModelReplica listing as the ModelDeployment composer reads it.

It owns two readings of the replicas Crossplane lists across the fleet: an
index of the listing as a whole (`listing`: by identity, the ones whose
metadata does not name them, whether any preempts), remembered while the very
same objects arrive; and the fleet the scheduler charges (`fleet_replicas`),
where this deployment's observed replicas take precedence over a listing that
may lag behind them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from modelplane.api.frozen import ReadOnlyDict, memoized
from modelplane.compose.common import meta
from modelplane.compose.deployments.revisions import own_replicas
from modelplane.compose.types import Resource
from modelplane.scheduling.framework import LastRead


def fleet_replicas(
    listed: Sequence[Resource], observed: Mapping[str, Resource], namespace: str
) -> list[Resource]:
    """Every ModelReplica of the fleet, this deployment's observed ones taking precedence.

    The composed resources are the freshest view of this deployment's own
    replicas; merging them in means a lagging fleet listing can never make
    the scheduler forget (and so replace) a replica that exists. A replica
    whose metadata does not read (a name or namespace that is not a string) is
    unknown, never absent and never a second replica: it is matched to its
    other copy by its spec's slot (deployment, cluster, index) and that copy's
    name is used; with no other copy it is kept under its slot.
    """
    owned = own_replicas(observed)
    index = listing(listed)
    by_id = dict(index.by_id)
    owned_slots = set()
    for obj in owned:
        owned_slots.add(_slot(obj))
        key = _replica_id(obj)
        if key is not None and isinstance(meta(obj).get("namespace"), str):
            # Named in full: listed as it is, so a read-only object keeps its one
            # reading and an unchanged fleet lists the very same objects call after call.
            by_id[key] = obj
            continue
        om = dict(meta(obj))
        if not _readable_name(obj):
            twin = _named_twin(listed, _slot(obj))
            om = dict(meta(twin)) if twin is not None else {"name": _slot_name(obj)}
        om.setdefault("namespace", namespace)
        by_id[(str(om["namespace"]), str(om.get("name", "")))] = {**obj, "metadata": om}
    for obj in index.unnamed:
        if _slot(obj) not in owned_slots:
            om = {**meta(obj), "name": _slot_name(obj)}
            om["namespace"] = om.get("namespace") if isinstance(om.get("namespace"), str) else ""
            by_id[(om["namespace"], om["name"])] = {**obj, "metadata": om}
    return [by_id[k] for k in sorted(by_id)]


@dataclasses.dataclass(frozen=True)
class Listing:
    """What the composer reads of the fleet's replica listing as a whole."""

    by_id: Mapping[tuple[str, str], Resource]  # the named ones by (namespace, name), last wins
    unnamed: tuple[Resource, ...]  # those whose metadata does not name them
    preempts: bool  # whether any names victims (`spec.preempts`)


# Every deployment's call lists the same replica objects while the fleet is unchanged.
_LISTINGS = LastRead()


def listing(listed: Sequence[Resource]) -> Listing:
    """The listing's index (`Listing`), reused while the very same objects arrive."""
    return _LISTINGS.get(listed, None, lambda: _index(listed))


def _index(listed: Sequence[Resource]) -> Listing:
    by_id: dict[tuple[str, str], Resource] = {}
    unnamed = []
    for obj in listed:
        # Once per object version: a changed fleet lists mostly the objects it listed.
        key = memoized(obj, "model_deployment.replica_id", _replica_id)
        if key is None:
            unnamed.append(obj)
        else:
            by_id[key] = obj
    preempts = any(memoized(r, "model_deployment.preempts", _preempts) for r in listed)
    return Listing(ReadOnlyDict(by_id), tuple(unnamed), preempts)  # shared: `_LISTINGS`


def _preempts(replica: Resource) -> bool:
    """Whether a fleet replica names victims (`spec.preempts`), however it reads."""
    spec = replica.get("spec")
    return isinstance(spec, dict) and bool(spec.get("preempts"))


def _replica_id(obj: Resource) -> tuple[str, str] | None:
    """A listed replica's (namespace, name); None when its metadata does not name it."""
    if not _readable_name(obj):
        return None
    om = meta(obj)
    return str(om.get("namespace", "")), str(om["name"])


def _named_twin(listed: Sequence[Resource], slot: tuple[str, str, str]) -> Resource | None:
    """The last listed replica whose metadata names it, in `slot` (by its spec)."""
    return next((o for o in reversed(listed) if _readable_name(o) and _slot(o) == slot), None)


def _readable_name(obj: Resource) -> bool:
    """Whether a replica's metadata names it: a name, and a namespace string when set."""
    om = obj.get("metadata")
    if not isinstance(om, dict) or not isinstance(om.get("name"), str) or not om["name"]:
        return False
    return isinstance(om.get("namespace", ""), str)


def _slot(obj: Resource) -> tuple[str, str, str]:
    """A replica's place by its spec: (deployment, cluster, index), as text."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    return str(spec.get("deploymentName")), str(spec.get("clusterName")), str(spec.get("index"))


def _slot_name(obj: Resource) -> str:
    """A stand-in name for a replica whose metadata does not name it."""
    return "unreadable-" + "-".join(_slot(obj))
