"""Opaque, stable ModelReplica names."""

from __future__ import annotations

import hashlib
import json

_HASH_LEN = 10
_MAX_NAME = 63


def replica_name(namespace: str, deployment: str, cluster: str, index: int) -> str:
    """Return the ModelReplica name of identity (namespace, deployment, cluster, index).

    The deployment name plus a short hash of the whole identity: placement lives in
    labels, never in the name, and the result is a valid DNS label of ≤ 63 characters.
    """
    # JSON keeps the parts unambiguous ("a-b", "c" and "a", "b-c" hash differently).
    digest = hashlib.sha256(
        json.dumps([namespace, deployment, cluster, index]).encode()
    ).hexdigest()[:_HASH_LEN]
    prefix = deployment[: _MAX_NAME - _HASH_LEN - 1].rstrip("-.")
    return f"{prefix}-{digest}" if prefix else digest
