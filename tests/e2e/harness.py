"""The end-to-end harness: one real local fleet per test run, and the controllers it lacks.

Every cluster, the control plane included, runs kube-apiserver, kube-scheduler
(DRA allocation included), kube-controller-manager (Deployments, ReplicaSets,
ResourceClaims, EndpointSlices), kwok for its fake nodes, Envoy Gateway and the
fleet's kubelet for the Pods that serve (engines and Envoy proxies), so a
composed Deployment becomes Available for real, a Gateway is Programmed by its
controller and requests cross it. What the clusters still lack — Helm, cert-
manager, the LeaderWorkerSet controller, a storage provisioner, and Jobs whose
pods could finish — `World.play` stands in for, the way `modelplane render`
does, with the same status tables (`local.simulate.WORKLOAD_STATUS`): a
Release installed, a Job Complete, a claim Bound; a Certificate's Secret gets a
real key and certificate from its Issuer (`pki.issue_certificate`).
"""

from __future__ import annotations

import base64
import datetime
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from modelplane.dev import pki
from modelplane.dev.fleet import CONTROL_PLANE, MODELPLANE_NAMESPACE, State
from modelplane.dev.kubeapi import Api, condition
from modelplane.kube.client import KubeError
from modelplane.local.simulate import WORKLOAD_STATUS

T = TypeVar("T")
CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"
CRDS = CONFORMANCE / "crds"

# apiVersion of each (group, kind) the harness plays a controller for.
# What the run is judged by, printed at its end (conftest's terminal summary):
# durations in seconds, counts as they are. Kept here, not in conftest, so the
# test modules and the conftest share one dict.
TIMINGS: dict[str, float] = {}
COUNTS: dict[str, int] = {}
NOTES: dict[str, str] = {}

PLAYED: dict[tuple[str, str], str] = {
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io/v1",
    ("", "PersistentVolumeClaim"): "v1",
    ("batch", "Job"): "batch/v1",
    # No cert-manager runs: its Issuers and Certificates are reported Ready, and
    # each Certificate's Secret holds a real key and certificate (`_issue`).
    ("cert-manager.io", "Issuer"): "cert-manager.io/v1",
    ("cert-manager.io", "Certificate"): "cert-manager.io/v1",
    # provider-helm does not run: a Release is reported installed, as the render does.
    ("helm.m.crossplane.io", "Release"): "helm.m.crossplane.io/v1beta1",
}
# Not played: every cluster runs Envoy Gateway, which writes the status of
# GatewayClasses, Gateways, HTTPRoutes, Backends and ClientTrafficPolicies, and
# a real Deployment controller on every cluster, the control plane included.


def _release(obj: Mapping[str, Any], at: str) -> dict[str, Any]:
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


STATUS = {**WORKLOAD_STATUS, ("helm.m.crossplane.io", "Release"): _release}


def _settled(kind: str, obj: Mapping[str, Any]) -> bool:
    """Whether an object already carries the status its missing controller would write."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    if kind == "Deployment":
        return status.get("observedGeneration") == obj["metadata"].get("generation") and status.get(
            "availableReplicas"
        ) == spec.get("replicas", 1)
    if kind == "LeaderWorkerSet":
        return status.get("readyReplicas") == spec.get("replicas", 1)
    if kind == "PersistentVolumeClaim":
        return status.get("phase") == "Bound"
    if kind == "Job":
        return conditions.get("Complete") == "True"
    if kind == "HTTPRoute":
        return bool(status.get("parents"))
    if kind == "Release":
        return conditions.get("Ready") == "True" and status.get("synced") is True
    if kind in ("Issuer", "Certificate"):
        return conditions.get("Ready") == "True"
    if kind == "ClientTrafficPolicy":
        return bool(status.get("ancestors"))
    # Gateway API CRDs default a status of Accepted=Unknown ("Pending").
    return conditions.get("Accepted") == "True"


def now() -> str:
    """An RFC 3339 timestamp, as controllers write them."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_docs(path: Path) -> list[dict[str, Any]]:
    """Every YAML document of a file."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@dataclass
class World:
    """The running fleet as the tests see it: the control plane and each workload cluster."""

    state: State
    started: float
    cp: Api = field(init=False)
    workloads: dict[str, Api] = field(init=False)

    def __post_init__(self) -> None:
        self.cp = self.state.api(CONTROL_PLANE)
        self.workloads = {c: self.state.api(c) for c in self.state.clusters if c != CONTROL_PLANE}

    def workload_of(self, inference_cluster: Mapping[str, Any]) -> str:
        """The workload cluster (wl-N) an InferenceCluster manifest's kubeconfig Secret names."""
        ref = inference_cluster["spec"]["existing"]["kubeconfigSecretRef"]
        return str(ref["name"]).removesuffix("-kubeconfig")

    def secret_ref(self, cluster: str) -> dict[str, str]:
        """The kubeconfigSecretRef of a workload cluster's Secret on the control plane."""
        return {
            "namespace": MODELPLANE_NAMESPACE,
            "name": f"{cluster}-kubeconfig",
            "key": "kubeconfig",
        }

    # --- the controllers the bare clusters lack --------------------------------------

    def play(self) -> int:
        """Give every played object its simulated status; how many changed."""
        changed = 0
        for api in [self.cp, *self.workloads.values()]:
            for (group, kind), api_version in PLAYED.items():
                try:
                    objs = api.list(api_version, kind)
                except (KubeError, OSError):
                    continue  # a cluster a fault drill stopped
                for obj in objs:
                    changed += self._play_one(api, group, kind, obj)
        return changed

    def _play_one(self, api: Api, group: str, kind: str, obj: dict[str, Any]) -> int:
        if kind == "Certificate":
            self._issue(api, obj)
        if _settled(kind, obj):
            return 0
        played = STATUS[(group, kind)](obj, now())
        if kind == "Deployment":
            played["observedGeneration"] = obj["metadata"].get("generation", 1)
        try:
            api.merge_status(obj, played)
        except KubeError:
            return 0  # changed under us: the next round plays it again
        return 1

    def _issue(self, api: Api, certificate: Mapping[str, Any]) -> None:
        """The Secret cert-manager would write for a Certificate: a real key and certificate,
        self-signed or signed by its CA Issuer's key (once that Secret exists)."""
        spec = certificate.get("spec") or {}
        name = spec.get("secretName", certificate["metadata"]["name"])
        namespace = certificate["metadata"].get("namespace", "")
        if api.get("v1", "Secret", name, namespace) is not None:
            return
        ref = spec.get("issuerRef") or {}
        kind = ref.get("kind", "Issuer")
        issuer = api.get(
            "cert-manager.io/v1",
            kind,
            ref.get("name", ""),
            "" if kind == "ClusterIssuer" else namespace,
        )
        issuer_spec = (issuer or {}).get("spec") or {}
        signer = None
        if "ca" in issuer_spec:
            ca_secret = api.get("v1", "Secret", issuer_spec["ca"].get("secretName", ""), namespace)
            if ca_secret is None:
                return  # the CA is not issued yet: next round
            data = {k: base64.b64decode(v) for k, v in (ca_secret.get("data") or {}).items()}
            signer = pki.ca_from_secret(data)
        elif "selfSigned" not in issuer_spec:
            return  # no Issuer yet, or a kind cert-manager would need more for
        files = pki.issue_certificate(spec, signer, certificate["metadata"]["name"])
        api.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "type": "kubernetes.io/tls",
                "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
            }
        )

    def settle(self, what: str, probe: Callable[[], T | None], timeout: float = 180.0) -> T:
        """Play the missing controllers until probe returns a value."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            self.play()
            try:
                got = probe()
                if got is not None:
                    return got
            except KubeError as err:
                last = err
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"timed out after {timeout:.0f} s: {what} (last error: {last})"
                )
            time.sleep(1.0)

    # --- helpers ---------------------------------------------------------------------

    def apply(self, docs: Iterable[Mapping[str, Any]], api: Api | None = None) -> None:
        """Apply documents to the control plane (or another cluster) in order."""
        target = api or self.cp
        for doc in docs:
            target.apply(doc)

    def install_crds(self, api: Api, *folders: str) -> None:
        """Apply the CRDs of the named folders of ../shared/conformance/crds and wait for them."""
        if not CRDS.is_dir():
            pytest.skip(f"{CRDS} not found: the scenarios need its CRDs (LWS, Gateway API)")
        names = []
        for folder in folders:
            for path in sorted((CRDS / folder).glob("*.yaml")):
                for doc in load_docs(path):
                    if doc.get("kind") == "CustomResourceDefinition":
                        # Conversion webhooks need a Service the bare cluster cannot reach.
                        doc["spec"].pop("conversion", None)
                        api.apply(doc)
                        names.append(doc["metadata"]["name"])
        for name in names:
            self.settle(
                f"CRD {name} Established",
                lambda n=name: (
                    True
                    if condition(
                        api.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", n),
                        "Established",
                    )
                    == "True"
                    else None
                ),
                60,
            )

    def ready(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        """The object when its Ready condition is True, else None."""
        obj = self.cp.get(api_version, kind, name, namespace)
        return obj if condition(obj, "Ready") == "True" else None

    def describe(self, api_version: str, kind: str, name: str, namespace: str = "") -> str:
        """An object's conditions, for an assertion message."""
        obj = self.cp.get(api_version, kind, name, namespace) or {}
        return "; ".join(
            f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}"
            for c in (obj.get("status") or {}).get("conditions") or []
        )
