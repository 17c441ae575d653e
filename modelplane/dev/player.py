"""The controllers the local fleet still lacks, played (`python -m modelplane.dev.player`).

Every cluster of the fleet runs its API server, controller manager, scheduler,
kwok, Envoy Gateway and the kubelet for the Pods that serve; every workload
cluster also runs the LeaderWorkerSet controller (`dev.lws`). What remains is
played here, with the status tables `modelplane render` uses
(`local.simulate.WORKLOAD_STATUS`), so a render and the fleet agree:

- Helm Releases (provider-helm): no chart repository is reachable; reported
  installed.
- cert-manager Issuers and Certificates: its controller modules are not
  served; reported Ready, and each Certificate's Secret holds a real key and
  certificate signed by its Issuer (self-signed, or the CA of a CA Issuer).
- Jobs: a Pod under kwok never finishes; reported Complete.
- PersistentVolumeClaims: no storage provisioner; reported Bound.

A Secret is issued again only when its Certificate's spec or its issuer's CA
changed (an annotation records what it was issued for), as cert-manager does;
a write conditional on the version read keeps two players (the fleet's and a
test harness's) from handing out two keys for one Certificate.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplane.dev import pki
from modelplane.dev.kubeapi import Api, Kubeconfig
from modelplane.kube.client import KubeError
from modelplane.local.simulate import WORKLOAD_STATUS

# apiVersion of each (group, kind) played.
PLAYED: dict[tuple[str, str], str] = {
    ("", "PersistentVolumeClaim"): "v1",
    ("batch", "Job"): "batch/v1",
    ("cert-manager.io", "Issuer"): "cert-manager.io/v1",
    ("cert-manager.io", "Certificate"): "cert-manager.io/v1",
    ("helm.m.crossplane.io", "Release"): "helm.m.crossplane.io/v1beta1",
}
SYNC_SECONDS = 1.0


def release_status(obj: Mapping[str, Any], at: str) -> dict[str, Any]:
    """A Helm Release as provider-helm reports it once installed."""
    chart = ((obj.get("spec") or {}).get("forProvider") or {}).get("chart") or {}
    provider = {"state": "deployed", "revision": 1, "releaseDescription": "Install complete"}
    if chart.get("version"):
        provider["version"] = str(chart["version"])
    ready = {"status": "True", "lastTransitionTime": at}
    return {
        "atProvider": provider,
        "synced": True,
        "conditions": [
            {"type": "Synced", "reason": "ReconcileSuccess", **ready},
            {"type": "Ready", "reason": "Available", **ready},
        ],
    }


STATUS = {**WORKLOAD_STATUS, ("helm.m.crossplane.io", "Release"): release_status}


def settled(kind: str, obj: Mapping[str, Any]) -> bool:
    """Whether an object already carries the status its missing controller would write."""
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if kind == "PersistentVolumeClaim":
        return status.get("phase") == "Bound"
    if kind == "Job":
        return conditions.get("Complete") == "True"
    if kind == "Release":
        return conditions.get("Ready") == "True" and status.get("synced") is True
    return conditions.get("Ready") == "True"


def now() -> str:
    """An RFC 3339 timestamp, as controllers write them."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# What a player's Secret was issued for: the Certificate's spec and its signer.
ISSUED_FOR = "dev.modelplane.ai/issued-for"


def _issued_for(spec: Mapping[str, Any], signer: pki.CA | None) -> str:
    ca = signer.pem.decode() if signer is not None else ""
    text = json.dumps({"spec": spec, "ca": ca}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _decoded(secret: Mapping[str, Any]) -> dict[str, bytes]:
    return {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}


@dataclass
class Player:
    """Plays the missing controllers on a set of clusters."""

    apis: Sequence[Api]

    def play(self) -> int:
        """Give every played object its status and every Certificate its Secret; the count."""
        changed = 0
        for api in self.apis:
            for (group, kind), api_version in PLAYED.items():
                try:
                    objs = api.list(api_version, kind)
                except (KubeError, OSError):
                    continue  # a cluster that does not answer now
                for obj in objs:
                    changed += self._play_one(api, group, kind, obj)
        return changed

    def _play_one(self, api: Api, group: str, kind: str, obj: dict[str, Any]) -> int:
        if kind == "Certificate":
            self.issue(api, obj)
        if settled(kind, obj):
            return 0
        try:
            api.merge_status(obj, STATUS[(group, kind)](obj, now()))
        except KubeError:
            return 0  # changed under us: the next round plays it again
        return 1

    def issue(self, api: Api, certificate: Mapping[str, Any]) -> bool:
        """Create the Secret cert-manager would write for a Certificate, once its Issuer can
        sign (a self-signed Issuer, or a CA Issuer whose Secret exists); True when created."""
        spec = certificate.get("spec") or {}
        meta = certificate.get("metadata") or {}
        name, namespace = (
            str(spec.get("secretName") or meta.get("name")),
            str(meta.get("namespace") or ""),
        )
        try:
            existing = api.get("v1", "Secret", name, namespace)
            can_sign, signer = self._signer(api, spec, namespace)
        except (KubeError, ValueError, KeyError):
            return False
        if not can_sign:
            return False
        # As cert-manager re-issues a Certificate whose spec or issuer changed
        # (another cluster's name in its dnsNames, a new CA), so does the player.
        digest = _issued_for(spec, signer)
        annotations = ((existing or {}).get("metadata") or {}).get("annotations") or {}
        if existing is not None and annotations.get(ISSUED_FOR) == digest:
            return False
        files = pki.issue_certificate(spec, signer, str(meta.get("name")))
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "annotations": {ISSUED_FOR: digest},
        }
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": "kubernetes.io/tls",
            "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
        }
        try:
            if existing is None:
                api.request("POST", api.path("v1", "Secret", namespace=namespace), secret)
            else:
                metadata["resourceVersion"] = existing["metadata"].get("resourceVersion")
                api.request("PUT", api.path("v1", "Secret", name, namespace), secret)
        except KubeError:
            return False  # written meanwhile by another player: theirs stands
        return True

    def _signer(
        self, api: Api, spec: Mapping[str, Any], namespace: str
    ) -> tuple[bool, pki.CA | None]:
        """Whether the Issuer can sign now, and its CA (None: self-signed)."""
        ref = spec.get("issuerRef") or {}
        kind = ref.get("kind") or "Issuer"
        where = "" if kind == "ClusterIssuer" else namespace
        issuer = api.get("cert-manager.io/v1", kind, str(ref.get("name") or ""), where) or {}
        issuer_spec = issuer.get("spec") or {}
        if "selfSigned" in issuer_spec:
            return True, None
        ca = issuer_spec.get("ca") or {}
        secret = api.get("v1", "Secret", str(ca.get("secretName") or ""), where) if ca else None
        return (True, pki.ca_from_secret(_decoded(secret))) if secret else (False, None)


def main(argv: Sequence[str] | None = None) -> None:
    """Play the missing controllers on every cluster named, until killed."""
    parser = argparse.ArgumentParser(prog="python -m modelplane.dev.player")
    parser.add_argument("--server", action="append", required=True, help="NAME=URL, per cluster")
    parser.add_argument("--token-file", required=True, type=Path)
    parser.add_argument("--ca-file", required=True, type=Path)
    opts = parser.parse_args(argv)
    apis = []
    for item in opts.server:
        name, _, url = item.partition("=")
        apis.append(Api(Kubeconfig(name, url, opts.ca_file, opts.token_file)))
    player = Player(apis)
    while True:
        try:
            player.play()
        except (KubeError, OSError) as err:
            print(f"play: {err}", file=sys.stderr, flush=True)
        time.sleep(SYNC_SECONDS)


if __name__ == "__main__":
    main()
