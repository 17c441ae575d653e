"""Opaque, stable ModelReplica names."""

from __future__ import annotations

import json

from modelplane.api.objects import short_hash

_HASH_LEN = 10
_MAX_NAME = 63


def replica_name(namespace: str, deployment: str, cluster: str, index: int) -> str:
    """Return the ModelReplica name of identity (namespace, deployment, cluster, index).

    The deployment name plus a short hash of the whole identity: placement lives in
    labels, never in the name, and the result is a valid DNS label of ≤ 63 characters.
    """
    # One JSON part keeps the identity unambiguous ("a-b", "c" and "a", "b-c" hash
    # differently) and the digest equal to the one names were first minted with.
    digest = short_hash(json.dumps([namespace, deployment, cluster, index]), length=_HASH_LEN)
    prefix = deployment[: _MAX_NAME - _HASH_LEN - 1].rstrip("-.")
    return f"{prefix}-{digest}" if prefix else digest
