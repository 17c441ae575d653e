"""Crossplane core on the local fleet's control plane, its webhooks on.

`crossplane core start` runs as a local process with the control plane's
kubeconfig. With webhooks on it also runs the Usage controllers (they label a
used resource `crossplane.io/in-use` and hold a Usage until its user is gone)
and serves `/validate-no-usages`, the webhook that denies the DELETE of a
resource a Usage names. What its Helm chart and `core init` would set up for
that is done here instead:

- its serving certificate, issued by the fleet's CA for 127.0.0.1, read from
  `--tls-server-certs-dir` (tls.crt, tls.key);
- its webhook configurations, from the release's own folder
  (`cluster/webhookconfigurations`), each `clientConfig.service` replaced by a
  URL on loopback, where the API server reaches the process, and the fleet CA
  as `caBundle`.

`core init` keeps running with webhooks off: on, it would issue a certificate
for a Service and register the configurations naming it. Nothing else of its
webhook step is needed: no core CRD of the pinned release converts through a
webhook (`tests/dev/test_xpcore.py` checks the release's CRDs), so none needs
a `conversion.webhook.clientConfig`.
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev.lws import at_loopback

# Where the release keeps its webhook configurations, inside its Go module.
WEBHOOK_CONFIGURATIONS = "cluster/webhookconfigurations"
# Where it keeps the core CRDs `core init` applies.
CORE_CRDS = "cluster/crds"
# `core start --package-runtime`: the local fleet runs the function itself
# (External); the Deployment runtime, Crossplane's default, makes a Deployment,
# Service and Secrets for each active Function revision, as on a real cluster.
EXTERNAL = "External"
DEPLOYMENT = "Deployment"


def webhook_configurations(
    directory: Path, webhook_port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    """The release's webhook configurations (every YAML file of `directory`), each
    webhook pointed at `https://127.0.0.1:<webhook_port><path>` with the fleet CA."""
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or not str(doc.get("kind", "")).endswith(
                "WebhookConfiguration"
            ):
                continue
            doc = copy.deepcopy(doc)
            doc["webhooks"] = [
                at_loopback(w, webhook_port, bundle) for w in doc.get("webhooks") or []
            ]
            out.append(doc)
    return out


def webhook_converted_crds(directory: Path) -> list[str]:
    """The names of the CRDs in `directory` whose versions convert through a webhook."""
    out = []
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            conversion = (doc.get("spec") or {}).get("conversion") or {}
            if conversion.get("strategy") == "Webhook":
                out.append(str(doc["metadata"]["name"]))
    return out


def start_argv(
    binary: str,
    *,
    cache_dir: Path,
    client_certs: Path,
    server_certs: Path,
    ports: dict[str, int],
    extra: list[str],
    runtime: str = EXTERNAL,
) -> list[str]:
    """`crossplane core start` for the local fleet: the package runtime (External unless
    told), the local package cache, its client and webhook certificates, and its
    metrics, health and webhook servers on the ports `ports` names."""
    if runtime not in (EXTERNAL, DEPLOYMENT):
        raise ValueError(f"unknown package runtime {runtime!r}: {EXTERNAL} or {DEPLOYMENT}")
    return [
        binary,
        "core",
        "start",
        f"--package-runtime={runtime}",
        # Webhooks on (the default, said out loud): without them Crossplane
        # neither runs the Usage controllers nor serves the webhook that
        # enforces Usages, and nothing orders a deletion.
        "--enable-webhooks=true",
        f"--cache-dir={cache_dir}",
        f"--tls-client-certs-dir={client_certs}",
        f"--tls-server-certs-dir={server_certs}",
        f"--metrics-port={ports['metrics']}",
        f"--health-probe-port={ports['health']}",
        f"--webhook-port={ports['webhook']}",
        *extra,
    ]
