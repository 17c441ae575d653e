"""The LeaderWorkerSet controller on every workload cluster of the local fleet.

Each workload cluster runs the real controller (`sigs.k8s.io/lws`, the pinned
release) as a process with the cluster's kubeconfig, as its Helm chart would
run it in the cluster. What the chart would also set up is done here instead:

- its configuration file: no leader election, no internal certificate
  management (it would write a Secret and patch webhook configurations that
  name a Service), its webhook, metrics and health servers on loopback ports
  of their own;
- its webhook serving certificate, issued by the fleet's CA for 127.0.0.1;
- its webhook configurations, from the release's own manifests with the
  release's patches (the pod webhooks only see Pods of a LeaderWorkerSet), each
  `clientConfig.service` replaced by a URL on loopback, where the cluster's API
  server reaches the process, and the fleet CA as `caBundle`.

Its pod webhook labels a group's Pods (group index, worker index, group hash)
and gives them the leader's address; the controller then makes each group's
worker StatefulSet, whose Pods kube-controller-manager's statefulset controller
creates and kwok runs. The webhooks for the release's DisaggregatedSet kind
are left out: Modelplane composes none.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

# The namespace the controller takes as its own outside a cluster (it writes nothing there).
NAMESPACE = "lws-system"
# The resources whose webhooks the fleet serves; others in the release's manifests are dropped.
SERVED = frozenset({"leaderworkersets", "pods"})


def config(
    webhook_port: int, metrics_port: int, health_port: int, cert_dir: Path
) -> dict[str, Any]:
    """The controller's Configuration for one local cluster."""
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
    }


def webhook_configurations(
    directory: Path, webhook_port: int, ca_pem: bytes
) -> list[dict[str, Any]]:
    """The release's webhook configurations (its `config/webhook` folder, with its
    kustomization's patches applied), pointed at the controller on loopback.

    Each webhook's `service` becomes `url: https://127.0.0.1:<port><path>` with
    the fleet CA as its `caBundle`; webhooks for kinds the fleet does not serve
    are dropped.
    """
    patches = _patches(directory)
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for doc in yaml.safe_load_all((directory / "manifests.yaml").read_text()):
        if not isinstance(doc, dict) or not str(doc.get("kind", "")).endswith("Configuration"):
            continue
        doc = copy.deepcopy(doc)
        for op in patches.get((doc["kind"], doc["metadata"]["name"]), []):
            _apply(doc, op)
        doc["metadata"] = {"name": f"lws-{doc['metadata']['name']}"}
        doc["webhooks"] = [
            at_loopback(w, webhook_port, bundle)
            for w in doc.get("webhooks") or []
            if _resources(w) <= SERVED
        ]
        out.append(doc)
    return out


def _patches(directory: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The kustomization's JSON 6902 patches by target (kind, name)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text()) or {}
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for patch in kustomization.get("patches") or []:
        target = patch.get("target") or {}
        ops = yaml.safe_load((directory / patch["path"]).read_text()) or []
        out.setdefault((target.get("kind", ""), target.get("name", "")), []).extend(ops)
    return out


def _apply(doc: dict[str, Any], op: Mapping[str, Any]) -> None:
    """One `replace` or `add` JSON patch operation on a list or map path."""
    if op.get("op") not in ("replace", "add"):
        raise ValueError(f"unsupported patch operation {op.get('op')!r}")
    *parents, last = str(op["path"]).strip("/").split("/")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        if op["op"] == "add":
            node.insert(len(node) if last == "-" else int(last), copy.deepcopy(op["value"]))
        else:
            node[int(last)] = copy.deepcopy(op["value"])
    else:
        node[last] = copy.deepcopy(op["value"])


def _resources(webhook: Mapping[str, Any]) -> set[str]:
    return {r for rule in webhook.get("rules") or [] for r in rule.get("resources") or []}


def at_loopback(webhook: Mapping[str, Any], port: int, bundle: str) -> dict[str, Any]:
    """A copy of a webhook whose `clientConfig.service` is replaced by a URL on
    loopback (the service's path kept) with `bundle` (base64 PEM) as its caBundle."""
    w = copy.deepcopy(dict(webhook))
    path = ((w.get("clientConfig") or {}).get("service") or {}).get("path", "/")
    w["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
    return w
