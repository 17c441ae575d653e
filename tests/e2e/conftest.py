"""One real local fleet (`modelplane dev up`) per end-to-end run; see harness.py.

Run with `make e2e` (or `pytest -m e2e tests/e2e`); the unit suite deselects
these tests. Set MODELPLANE_E2E_DIR to keep the fleet in a known folder and
MODELPLANE_E2E_KEEP=1 to leave it running afterwards (`modelplane dev status`).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e import manifests as m
from e2e.harness import COUNTS, NOTES, TIMINGS, World


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The running fleet: a control plane and three workload clusters."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the real parts cannot be built")
    from modelplane.dev.fleet import Fleet, State

    directory = Path(os.environ.get("MODELPLANE_E2E_DIR") or tmp_path_factory.mktemp("fleet"))
    fleet = Fleet(directory, lambda m: print(f"[dev up] {m}", file=sys.stderr, flush=True))
    from modelplane.dev import parts

    parts.build_all(progress=lambda m: print(f"[parts] {m}", file=sys.stderr, flush=True))
    started = time.monotonic()
    fleet.up(clusters=3)
    TIMINGS["dev up"] = time.monotonic() - started
    world = World(State.load(fleet.directory), started)
    yield world
    if os.environ.get("MODELPLANE_E2E_KEEP") != "1":
        fleet.down()


CLASS = "e2e-l4"
CLASS8 = "e2e-l4x8"
# InferenceCluster → the workload cluster it points at. wl-3 is left to the
# placement-vs-allocation property, which gives it random pools.
CLUSTERS = {"e2e-a": "wl-1", "e2e-b": "wl-2"}


def e2e_pools() -> list[dict[str, Any]]:
    """The pools of e2e-a and e2e-b: four one-L4 nodes and one eight-L4 node."""
    return [
        {"name": "l4", "className": CLASS, "nodeCount": 4},
        {"name": "l4x8", "className": CLASS8, "nodeCount": 1},
    ]


def publish_declared(world: World, cluster: dict[str, Any], classes: list[dict[str, Any]]) -> None:
    """Give an InferenceCluster's workload cluster exactly the fake nodes it declares."""
    from modelplane.dev.nodes import declared_pools, publish

    by_name = {c["metadata"]["name"]: c for c in classes}
    wl = world.workload_of(cluster)
    publish(world.workloads[wl], declared_pools(cluster, by_name), exclusive=True)


@pytest.fixture(scope="session")
def fleet(world: World) -> World:
    """Prerequisites in every workload cluster, two classes and two InferenceClusters."""
    # Gateway API and Envoy Gateway's CRDs come with each cluster's controller
    # (`modelplane dev up` applies its release's CRD chart).
    for api in world.workloads.values():
        world.install_crds(api, "lws")
        # The serving stack is off on these clusters: the platform runs the
        # Gateway their replicas' routes attach to, as it would on a real one.
        world.apply(m.platform_gateway(), api)
    classes = [m.inference_class(CLASS), m.inference_class(CLASS8, gpus=8)]
    clusters = [
        m.inference_cluster(name, world.secret_ref(wl), CLASS, pools=e2e_pools())
        for name, wl in CLUSTERS.items()
    ]
    for cluster in clusters:
        publish_declared(world, cluster, classes)
    world.apply(classes)
    world.apply(clusters)
    return world


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module with a fleet of its own (`OWN_FLEET = True`) runs first: it takes its
    fleet down at its end, before the shared fleet (`world`) comes up, since only one
    fleet fits on a machine (provider-kubernetes binds fixed ports)."""
    items.sort(key=lambda item: not getattr(getattr(item, "module", None), "OWN_FLEET", False))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The numbers the e2e run is judged by: scenarios passed, and how long the fleet took."""
    if not TIMINGS:
        return
    passed = len(terminalreporter.stats.get("passed", []))
    failed = len(terminalreporter.stats.get("failed", []))
    terminalreporter.write_line(f"e2e: {passed} scenarios passed, {failed} failed")
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"e2e: {name}: {seconds:.1f} s")
    for name, count in COUNTS.items():
        terminalreporter.write_line(f"e2e: {name}: {count}")
    for name, text in NOTES.items():
        terminalreporter.write_line(f"e2e: {name}: {text}")
