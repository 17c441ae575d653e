"""Small, pure helpers over raw Kubernetes objects that every layer shares.

Reading a condition or shortening a name into a label value is the same fact
wherever it happens; this module is its one home.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from modelplane.api.frozen import FrozenDict

MAX_LABEL_VALUE = 63
LABEL_VALUE_PATTERN = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def short_hash(*parts: str, length: int = 10) -> str:
    """A stable hex digest of `parts`, for names that must be shortened."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:length]


def label_value(value: str) -> str:
    """`value` if it is a valid label value, else a stable shortened form that is.

    Object names may be 253 characters but label values only 63, so a long
    deployment or cluster name is cut and suffixed with a hash of the whole:
    two different names never share a label value.
    """
    if len(value) <= MAX_LABEL_VALUE and LABEL_VALUE_PATTERN.match(value):
        return value
    clean = re.sub(r"[^A-Za-z0-9_.-]", "-", value)
    digest = short_hash(value)
    keep = MAX_LABEL_VALUE - len(digest) - 1
    head = clean[:keep].strip("-_.")
    return f"{head}-{digest}" if head else digest


# Name hashes stay 8 characters: every composed name so far was built with
# them, and a changed name would recreate the object on the cluster.
NAME_HASH = 8
MAX_DNS_LABEL = 63
# A ModelReplica's workload names derive from this base: room for "-prefill",
# LeaderWorkerSet group/worker suffixes and StatefulSet revision labels within
# the 63-character limits.
REPLICA_BASE_MAX = 40


def dns_label(name: str, max_len: int = MAX_DNS_LABEL) -> str:
    """Turn `name` into an RFC 1035 label of at most `max_len` characters.

    Characters outside `[a-z0-9-]` become `-`, a leading digit gets an `m-`
    prefix (Service and LeaderWorkerSet names must start with a letter), and a
    name that is altered or too long keeps its uniqueness through a short hash
    of the original.
    """
    clean = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-")
    if clean == name and clean[:1].isalpha() and len(clean) <= max_len:
        return clean
    if not clean[:1].isalpha():
        clean = f"m-{clean}"
    digest = short_hash(name, length=NAME_HASH)
    keep = max_len - len(digest) - 1
    return f"{clean[:keep].rstrip('-')}-{digest}"


def replica_base(replica: str) -> str:
    """The base name of a ModelReplica's workload on its cluster, from the replica's name.

    Every wrapped object of the replica is named from it, and its workload pods
    carry it in label `modelplane.ai/replica`: the name an InferenceCluster's
    inventory agent reports an unschedulable replica by. This is the one place
    that maps a ModelReplica name to it.
    """
    return dns_label(replica, REPLICA_BASE_MAX)


def conditions(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """Every well-formed entry of an object's `status.conditions`, in order."""
    status = (obj or {}).get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [x for x in found if isinstance(x, Mapping)] if isinstance(found, list) else []


def condition(obj: Mapping[str, Any] | None, type_: str) -> Mapping[str, Any] | None:
    """The condition of `type_` in an object's `status.conditions`, or None."""
    status = (obj or {}).get("status")
    if not _is_map(status):
        return None
    found = status.get("conditions")
    for cond in found if isinstance(found, list) else ():
        if _is_map(cond) and cond.get("type") == type_:
            return cond
    return None


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether `value` is a mapping: the exact types first, as a fleet's render reads
    conditions a hundred thousand times and a check against the Mapping ABC costs more."""
    kind = type(value)
    return kind is FrozenDict or kind is dict or isinstance(value, Mapping)


def condition_status(obj: Mapping[str, Any] | None, type_: str) -> str | None:
    """The status ("True", "False", "Unknown") of a condition, or None if absent."""
    cond = condition(obj, type_)
    value = cond.get("status") if cond is not None else None
    return value if isinstance(value, str) else None


def is_condition_true(obj: Mapping[str, Any] | None, type_: str) -> bool:
    """Whether an object's condition of `type_` is True."""
    return condition_status(obj, type_) == "True"
