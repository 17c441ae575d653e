"""The end-to-end harness: one real local fleet per test run, and the controllers it lacks.

Each workload cluster runs kube-apiserver, kube-scheduler (DRA allocation
included), kube-controller-manager (Deployments, ReplicaSets, ResourceClaims)
and kwok for its fake GPU nodes, so a composed Deployment becomes Available
for real. What the clusters still lack — a gateway, Helm, the LeaderWorkerSet
controller (its pod webhook labels the group's pods; webhooks need a Service
the local API servers cannot reach), a storage provisioner, and Jobs whose
pods could finish — `World.play` stands in for, the way `modelplane render`
does, with the same status tables (`local.simulate.WORKLOAD_STATUS`): an
HTTPRoute Accepted, a Job Complete, a claim Bound.
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

from modelplane.compose.clusters.inference_cluster import provider_config_name
from modelplane.dev.fleet import CONTROL_PLANE, MODELPLANE_NAMESPACE, State
from modelplane.dev.kubeapi import Api, condition
from modelplane.kube.client import KubeError
from modelplane.local.gateway_sim import gateway_address, gateway_status
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
    ("gateway.networking.k8s.io", "HTTPRoute"): "gateway.networking.k8s.io/v1",
    ("gateway.networking.k8s.io", "Gateway"): "gateway.networking.k8s.io/v1",
    ("gateway.networking.k8s.io", "GatewayClass"): "gateway.networking.k8s.io/v1",
    ("gateway.envoyproxy.io", "Backend"): "gateway.envoyproxy.io/v1alpha1",
    ("gateway.envoyproxy.io", "ClientTrafficPolicy"): "gateway.envoyproxy.io/v1alpha1",
    # No cert-manager runs: its Issuers and Certificates are reported Ready.
    ("cert-manager.io", "Issuer"): "cert-manager.io/v1",
    ("cert-manager.io", "Certificate"): "cert-manager.io/v1",
    # provider-helm does not run: a Release is reported installed, as the render does.
    ("helm.m.crossplane.io", "Release"): "helm.m.crossplane.io/v1beta1",
}


# The control plane runs no scheduler or kubelet: a Deployment there is played.
CONTROL_PLANE_ONLY: dict[tuple[str, str], str] = {("apps", "Deployment"): "apps/v1"}


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
        configs = self._provider_configs()
        for name, api in [(CONTROL_PLANE, self.cp), *self.workloads.items()]:
            played = {**PLAYED, **(CONTROL_PLANE_ONLY if api is self.cp else {})}
            for (group, kind), api_version in played.items():
                try:
                    objs = api.list(api_version, kind)
                except (KubeError, OSError):
                    continue  # a cluster a fault drill stopped
                for obj in objs:
                    changed += self._play_one(api, group, kind, obj, configs.get(name, ""))
        return changed

    def _provider_configs(self) -> dict[str, str]:
        """Each workload cluster's provider config name (that of the InferenceCluster on it)."""
        out = {}
        try:
            clusters = self.cp.list("modelplane.ai/v1alpha1", "InferenceCluster")
        except KubeError:
            return {}
        servers = {wl: self.state.kubeconfig(wl).server for wl in self.workloads}
        for ic in clusters:
            ref = ((ic.get("spec") or {}).get("existing") or {}).get("kubeconfigSecretRef") or {}
            try:
                secret = self.cp.get("v1", "Secret", ref.get("name", ""), ref.get("namespace", ""))
            except KubeError:
                continue
            text = base64.b64decode(((secret or {}).get("data") or {}).get(ref.get("key"), ""))
            for wl, server in servers.items():
                if server.encode() in text:
                    out[wl] = provider_config_name(ic["metadata"]["name"])
        return out

    def _play_one(
        self, api: Api, group: str, kind: str, obj: dict[str, Any], provider_config: str
    ) -> int:
        if kind == "Certificate":
            self._issue(api, obj)
        if _settled(kind, obj):
            return 0
        if kind == "Gateway":
            # The address the render gives the Gateway of that cluster's provider config.
            meta = obj["metadata"]
            address = gateway_address(meta.get("namespace", ""), meta["name"], provider_config)
            played = gateway_status(obj, now(), address)
        else:
            played = STATUS[(group, kind)](obj, now())
        if kind == "Deployment":
            played["observedGeneration"] = obj["metadata"].get("generation", 1)
        try:
            api.merge_status(obj, played)
        except KubeError:
            return 0  # changed under us: the next round plays it again
        return 1

    def _issue(self, api: Api, certificate: Mapping[str, Any]) -> None:
        """The Secret cert-manager would write for a Certificate (placeholder PEM text)."""
        spec = certificate.get("spec") or {}
        name = spec.get("secretName", certificate["metadata"]["name"])
        namespace = certificate["metadata"].get("namespace", "")
        if api.get("v1", "Secret", name, namespace) is not None:
            return
        placeholder = base64.b64encode(b"placeholder issued by the e2e harness").decode()
        api.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "type": "kubernetes.io/tls",
                "data": {k: placeholder for k in ("tls.crt", "tls.key", "ca.crt")},
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
