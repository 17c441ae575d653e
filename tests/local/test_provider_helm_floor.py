"""The package's provider-helm floor (v1.3.0) serves everything the composers set.

provider-helm v1.4.0's namespaced CRDs differ from v1.3.0's (the release the
local fleet applies) by a Release's `spec.forProvider.ssaForceConflicts`, its
`status.atProvider.lastHandledReconcileAt` and the provider configs' identity
type `NebiusServiceAccountCredentials` (measured by diffing the two releases'
`package/crds`). The composers must set none of them, or the package's
`>=v1.3.0` requirement would admit a provider that rejects what they compose.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
# A fleet of provisioned clusters with their serving stacks' Releases, and an
# InferenceGateway with its Envoy Gateway Release and provider configs.
EXAMPLES = ("clusters", "routing")
ADDED_IN_V1_4 = {"ssaForceConflicts", "lastHandledReconcileAt"}
IDENTITY_ADDED_IN_V1_4 = "NebiusServiceAccountCredentials"


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("example", EXAMPLES)
def test_composed_helm_objects_use_nothing_v1_3_lacks(example: str) -> None:
    rendered = ControlPlane(load_paths([ROOT / "examples" / example])).run(50)
    helm = [
        o for o in rendered.store.objects() if o.get("apiVersion") == c.PROVIDER_HELM_API_VERSION
    ]
    assert {o["kind"] for o in helm} >= {"Release", "ClusterProviderConfig"}
    for obj in helm:
        pairs = list(_walk(obj.get("spec") or {}))
        assert not ADDED_IN_V1_4 & {k for k, _ in pairs}, obj["metadata"]["name"]
        assert IDENTITY_ADDED_IN_V1_4 not in {v for _, v in pairs if isinstance(v, str)}
