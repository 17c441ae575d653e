"""Report a hydration result into the ConfigMap the control plane observes.

The Job's ServiceAccount may only get and patch that one ConfigMap
(its Role names it), so the write is a JSON merge patch of its `data` through
the in-cluster Kubernetes API (`modelplane.kube.client`). Tests point the
client at a loopback server.
"""

from __future__ import annotations

from modelplane.api.model_cache import HydrationResult
from modelplane.kube.client import KubeClient, configmap_path


def write_result(client: KubeClient, namespace: str, name: str, result: HydrationResult) -> None:
    """Merge `result` into the ConfigMap's `data` (other keys are left alone).

    Raises `KubeError` naming the ConfigMap's path and the cause when the write fails.
    """
    client.merge_patch(configmap_path(namespace, name), {"data": result.to_data()})
