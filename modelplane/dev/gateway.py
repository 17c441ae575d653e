"""Envoy Gateway on every cluster of the local fleet: what it needs besides its binary.

Each cluster's Envoy Gateway controller runs as a process with the cluster's
kubeconfig, in a network namespace of its own on the fleet bridge (it binds
fixed ports: xDS on 18000, health on 8081, metrics on 19001), at
`controller_address(index)`; the Envoy proxies it programs reach its xDS server
there. Its certificates are the ones `envoy-gateway certgen` writes as Secrets
(as the chart's certgen Job does), copied to a directory the process sees at
the fixed path /certs. The Gateway API and Envoy Gateway CRDs come from the
release's own CRD chart, so the controller and its CRDs always agree.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

NAMESPACE = "envoy-gateway-system"
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
XDS_PORT = 18000
CERTS_MOUNT = Path("/certs")
# The Secret certgen writes for the controller (its xDS server certificate).
CONTROLLER_SECRET = "envoy-gateway"
# The Secret every Envoy proxy mounts at /certs (its xDS client certificate).
PROXY_SECRET = "envoy"
# The Service name the proxies' bootstrap gives the controller's xDS server.
CONTROLLER_HOST = f"envoy-gateway.{NAMESPACE}.svc.cluster.local"


def controller_address(index: int) -> str:
    """The address of the index-th cluster's controller on the fleet bridge (0: control plane)."""
    if not 0 <= index <= 250:
        raise ValueError(f"cluster index {index} is outside 0..250")
    return f"10.99.1.{index + 1}"


def crd_documents(directory: Path) -> list[dict[str, Any]]:
    """The CRDs of the release's CRD chart: Gateway API (experimental channel) and Envoy Gateway's.

    The chart wraps each file in one `{{- if … }}` … `{{- end }}`; those lines
    are the only template in it.
    """
    files = [directory / "experimental-gatewayapi-crds.yaml"]
    files += sorted((directory / "generated").glob("*.yaml"))
    docs: list[dict[str, Any]] = []
    for path in files:
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("{{")
        )
        docs += [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") == "CustomResourceDefinition"]


def config() -> dict[str, Any]:
    """The controller's EnvoyGateway configuration for a local cluster."""
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyGateway",
        "gateway": {"controllerName": CONTROLLER_NAME},
        "provider": {
            "type": "Kubernetes",
            "kubernetes": {
                # One controller per cluster: nothing to elect.
                "leaderElection": {"disable": True},
                # Its webhook would need a Service the API server cannot reach,
                # and the port (9443) provider-kubernetes already binds.
                "proxyTopologyInjector": {"disabled": True},
            },
        },
        "logging": {"level": {"default": "info"}},
        # The ModelService composer routes to Envoy Gateway Backends.
        "extensionApis": {"enableBackend": True},
    }


def certificate_files(secret: dict[str, Any]) -> dict[str, bytes]:
    """The files of a certgen Secret (tls.crt, tls.key, ca.crt), decoded."""
    data = secret.get("data") or {}
    wanted = ("tls.crt", "tls.key", "ca.crt")
    missing = [k for k in wanted if k not in data]
    if missing:
        raise ValueError(f"Secret {secret['metadata']['name']} lacks {', '.join(missing)}")
    return {k: base64.b64decode(data[k]) for k in wanted}
