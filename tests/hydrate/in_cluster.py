"""Run `modelplane` as a hydration Job's pod does, with the in-cluster API server on loopback.

Usage: python in_cluster.py <api-url> <modelplane arguments...>

In a pod the client finds the API server through KUBERNETES_SERVICE_HOST and
the ServiceAccount's files; here the loopback fake API server stands in for
it, and everything else runs unchanged.
"""

from __future__ import annotations

import sys
from typing import Any

from modelplane.cli.main import main
from modelplane.kube.client import KubeClient


def _loopback(url: str) -> Any:
    def in_cluster(cls: type[KubeClient], *args: Any, **kwargs: Any) -> KubeClient:
        return cls(url)

    return classmethod(in_cluster)


if __name__ == "__main__":
    KubeClient.in_cluster = _loopback(sys.argv[1])  # type: ignore[method-assign]
    sys.argv = ["modelplane", *sys.argv[2:]]
    main()
