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

import datetime
import http.client
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from modelplane.dev import player
from modelplane.dev.fleet import CONTROL_PLANE, MODELPLANE_NAMESPACE, State
from modelplane.dev.kubeapi import Api, condition
from modelplane.kube.client import KubeError

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

# What stays played, and how: `modelplane.dev.player` (the fleet runs one too;
# both create a Certificate's Secret only if it is absent, so they never race).
PLAYED = player.PLAYED


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
        """Give every played object its status (as the fleet's player does); how many changed."""
        return player.Player([self.cp, *self.workloads.values()]).play()

    def settle(
        self,
        what: str,
        probe: Callable[[], T | None],
        timeout: float = 180.0,
        describe: Callable[[], str] | None = None,
    ) -> T:
        """Play the missing controllers until probe returns a value; on a timeout, say
        what `describe` finds (the state a reader needs to see why)."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            self.play()
            try:
                got = probe()
                if got is not None:
                    return got
            except (KubeError, OSError, http.client.HTTPException) as err:
                # Not there yet: an API error, or an address that does not answer yet
                # (a gateway's listener comes up after its address is reported).
                last = err
            if time.monotonic() >= deadline:
                state = ""
                if describe is not None:
                    try:
                        state = "\n" + describe()
                    except KubeError as err:
                        state = f"\n(state unreadable: {err})"
                raise AssertionError(
                    f"timed out after {timeout:.0f} s: {what} (last error: {last}){state}"
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
            # A fleet that cannot be given the CRDs a scenario needs is a failed
            # run, not a passed one: skipping here let `make e2e` exit 0 with most
            # of its scenarios never run.
            pytest.fail(
                f"{CRDS} not found: the scenarios need its CRDs (LeaderWorkerSet, "
                "cert-manager); run `make e2e` from a checkout beside ../shared"
            )
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
