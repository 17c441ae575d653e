"""Render parity for the quickstart fleet: examples/quickstart as is, on the real fleet.

Its two InferenceClusters are pointed at the fleet's workload clusters by
giving their kubeconfig Secrets the real kubeconfigs; everything else is the
example's own files, and each workload cluster publishes exactly the fake
nodes its InferenceCluster declares, so the inventory agent (a process of the
fleet) reports what the render simulates. The serving stack is on, so the
harness also plays provider-helm (the Releases); the agent's own Deployment
runs on the cluster's system node under kwok.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from e2e import manifests as m
from e2e import parity
from e2e.harness import COUNTS, World, load_docs

from modelplane.api import constants as c

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
CLUSTERS = {"us-east-l4": "wl-1", "eu-west-h100": "wl-2"}


def _docs() -> list[dict[str, Any]]:
    return [d for path in sorted(QUICKSTART.glob("*.yaml")) for d in load_docs(path)]


API = "modelplane.ai/v1alpha1"


def _remove_platform_gateways(world: World) -> None:
    """The platform Gateway the e2e fleet's clusters (serving stack off) were given: a
    serving stack composes its own Gateway of that name."""
    for api in world.workloads.values():
        for doc in reversed(m.platform_gateway()):
            if doc["kind"] != "Namespace":
                meta = doc["metadata"]
                api.delete(doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace", ""))


def _nothing_left(world: World) -> bool | None:
    kinds = ("ModelReplica", "ModelEndpoint", "InferenceCluster", "ModelDeployment")
    if any(world.cp.list(API, k) for k in kinds):
        return None
    # ServingStacks are infrastructure (their own group): listed under API they
    # would read as "not served", hence none, and never be waited for.
    if world.cp.list(c.INFRA_API_VERSION, "ServingStack"):
        return None
    # A serving stack still being deleted removes its hop Gateway from the
    # workload cluster: the next scenario's stack composes one of that name,
    # which must not go with it.
    for api in world.workloads.values():
        if api.get(
            "gateway.networking.k8s.io/v1", "Gateway", "modelplane-inference", "modelplane-system"
        ):
            return None
    return True


def _clear_other_scenarios(world: World) -> None:
    """Delete what other scenarios left, so the control plane holds what the render is given."""
    for kind in ("ModelService", "ModelDeployment", "ModelCache"):
        for obj in world.cp.list(API, kind):
            world.cp.delete(API, kind, obj["metadata"]["name"], obj["metadata"]["namespace"])
    for kind in ("InferenceCluster", "InferenceGateway", "InferenceClass"):
        for obj in world.cp.list(API, kind):
            world.cp.delete(API, kind, obj["metadata"]["name"])
    _remove_platform_gateways(world)
    world.settle("the other scenarios' objects gone", lambda: _nothing_left(world), 300)


def publish_quickstart_nodes(world: World, docs: list[dict[str, Any]]) -> None:
    """Each workload cluster gets the nodes its quickstart InferenceCluster declares, only those."""
    from modelplane.dev.nodes import declared_pools, publish

    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "InferenceClass"}
    for doc in docs:
        if doc["kind"] == "InferenceCluster" and doc["metadata"]["name"] in CLUSTERS:
            api = world.workloads[CLUSTERS[doc["metadata"]["name"]]]
            publish(api, declared_pools(doc, classes), exclusive=True)


def test_quickstart_render_parity(world: World, tmp_path: Path) -> None:
    _clear_other_scenarios(world)
    for api in world.workloads.values():
        # Gateway API and Envoy Gateway's CRDs come with each cluster's controller.
        world.install_crds(api, "lws", "cert-manager")
    real_kubeconfigs = {
        name: world.cp.get("v1", "Secret", f"{wl}-kubeconfig", "modelplane-system")
        for name, wl in CLUSTERS.items()
    }
    docs = []
    for doc in _docs():
        if (
            doc["kind"] == "Secret"
            and doc["metadata"]["name"].removesuffix("-kubeconfig") in CLUSTERS
        ):
            cluster = doc["metadata"]["name"].removesuffix("-kubeconfig")
            secret = real_kubeconfigs[cluster]
            assert secret is not None
            doc = {**doc, "data": {"kubeconfig": secret["data"]["kubeconfig"]}}
        docs.append(doc)
    publish_quickstart_nodes(world, docs)
    world.apply(docs)
    for name in ("qwen-small", "llama-70b"):
        world.settle(
            f"ModelDeployment {name} Ready",
            lambda n=name: world.ready("modelplane.ai/v1alpha1", "ModelDeployment", n, "ml-team"),
            300,
        )
    out = tmp_path / "out"
    parity.render(QUICKSTART, out)
    world.settle("a quiet round", lambda: True if world.play() == 0 else None, 60)

    def compare() -> tuple[dict[str, int], list[parity.Difference]]:
        counts, diffs = {}, []
        n, found = parity.differences(out, "control-plane", world.cp)
        counts["control-plane"] = n
        diffs += found
        for name, wl in CLUSTERS.items():
            n, found = parity.differences(out, f"clusters/{name}", world.workloads[wl])
            counts[name] = n
            diffs += found
        return counts, diffs

    # The composites converge in their own time (a ServingStack's readiness
    # reaches its InferenceCluster a reconcile later): compare until the real
    # fleet holds what the render predicts, or report what it still does not.
    last: list[tuple[dict[str, int], list[parity.Difference]]] = []

    def converged() -> bool | None:
        last.append(compare())
        return True if not last[-1][1] else None

    with contextlib.suppress(AssertionError):
        world.settle("the real fleet to hold what the render predicts", converged, 120)
    counts, diffs = last[-1]
    COUNTS["quickstart parity: objects compared"] = sum(counts.values())
    assert counts["control-plane"] >= 40 and min(counts[n] for n in CLUSTERS) >= 10
    assert not diffs, "\n".join(str(d) for d in diffs)
