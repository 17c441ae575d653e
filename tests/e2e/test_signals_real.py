"""Live signals on the real fleet (issue 42): autoscaling on what real engines report,
up under load and across clusters, down once the load eases with no request failed
while replicas leave; and the default update under load.

docs/autoscaling.md's "Try it on the local fleet", from its own files and commands:
docs/dev's serving fleet with each cluster's inventory agent scraping its engines
(`spec.servingStack.inventory.engineMetrics: true`, the doc's `kubectl patch`; the
local fleet's agents report every 5 s) and docs/dev/autoscaling.yaml: one
ModelDeployment (min 1, max 4, a queue-depth target of 2 waiting requests per
replica) whose engine runs at most two requests at once (`--max-num-seqs=2`, which
the engine double honours as vLLM does: the rest wait, and
`vllm:num_requests_waiting` says how many), and a ModelService over it.

1. **Up**: the doc's `modelplane dev load` keeps 16 requests in flight, about 14 of
   them waiting on one replica. The deployment must grow to at least two Ready
   replicas on both clusters, each taking traffic.
2. **Down**: that load stops by itself and a light steady load (2 requests per
   second) runs on.
   The deployment must shrink back to one replica, its leaving replicas drained to
   weight 0 before they go, and **every** request of the light load must succeed.
3. **The default update**: a deployment of two replicas under steady load gets a new
   engine image with no `spec.rollout` (MakeBeforeBreak): at no sample may fewer than
   two Ready endpoints take traffic, each replaced replica leaves the routes before it
   is deleted, and the requests keep succeeding.

Nothing here plays a signal: each number the autoscaler reads was scraped from an
engine process by the agent, copied into the InferenceCluster's status and read by
the function on the real control plane.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e import manifests as m
from e2e.harness import COUNTS, NOTES, TIMINGS, World, load_docs
from e2e.test_serving_real import (
    MODEL,
    Load,
    _answers,
    _metric,
    _network,
    serving,  # noqa: F401  (the module's fleet: docs/dev's serving fleet)
)

from modelplane.dev.kubeapi import condition

pytestmark = pytest.mark.e2e

NS = "demo"  # docs/dev/autoscaling.yaml's
NAME = "scale"
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "autoscaling.md"
FILES = ROOT / "docs" / "dev" / "autoscaling.yaml"
LIGHT_RATE = 2.0  # requests per second while the deployment shrinks
UP_BOUND = 240.0  # from the load's start: two Ready replicas on two clusters
DOWN_BOUND = 240.0  # from the load's end: one replica, nothing draining


def _documented() -> tuple[list[str], list[str]]:
    """The doc's try-it block: the clusters its `kubectl patch` turns scraping on for,
    and its `modelplane dev load` command."""
    text = DOC.read_text()
    block = text[text.index("## Try it on the local fleet") :]
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    clusters = next(ln for ln in lines if ln.startswith("for c in ")).split()[3:-1]
    load = next(ln for ln in lines if ln.startswith("modelplane dev load"))
    return [c.rstrip(";") for c in clusters], shlex.split(load)


def _scraping(world: World, clusters: list[str]) -> None:
    """The doc's `kubectl patch --type merge` of each InferenceCluster: engine scraping
    on (applied as the whole spec, the fields the fleet's docs set being this
    manager's too)."""
    for name in clusters:
        ic = world.cp.get(m.API, "InferenceCluster", name)
        assert ic is not None, name
        doc = copy.deepcopy(ic)
        stack = doc["spec"].setdefault("servingStack", {})
        stack.setdefault("inventory", {})["engineMetrics"] = True
        world.cp.apply(
            {
                "apiVersion": m.API,
                "kind": "InferenceCluster",
                "metadata": {"name": name},
                "spec": doc["spec"],
            }
        )


@dataclass
class Sample:
    """The deployment and its service at one moment of the scenario."""

    at: float
    desired: int | None
    placed: int
    draining: int
    clusters: int
    routed: int  # endpoints with weight > 0 that are Ready
    reason: str
    leaving: int = 0  # replaced replicas leaving the routes (drainingSince set)


@dataclass
class Timeline:
    """The deployment sampled every second in a thread of its own."""

    world: World
    name: str = NAME
    started: float = field(default_factory=time.monotonic)
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.is_set():
            # A sample that fails is skipped, not fatal.
            with contextlib.suppress(Exception):
                self.samples.append(self.sample())
            self._stop.wait(1.0)

    def sample(self) -> Sample:
        dep = self.world.cp.get(m.API, "ModelDeployment", self.name, NS) or {}
        svc = self.world.cp.get(m.API, "ModelService", self.name, NS) or {}
        status = dep.get("status") or {}
        scaling = status.get("autoscaling") or {}
        placements = status.get("placements") or []
        live = [p for p in placements if not p.get("draining")]
        endpoints = (svc.get("status") or {}).get("endpoints") or []
        return Sample(
            at=time.monotonic() - self.started,
            desired=scaling.get("desiredReplicas"),
            placed=len(live),
            draining=len(placements) - len(live),
            clusters=len({p["cluster"] for p in live}),
            routed=sum(1 for e in endpoints if e.get("ready") and e.get("weight")),
            reason=str(scaling.get("reason") or ""),
            leaving=sum(1 for p in placements if p.get("drainingSince")),
        )

    def stop(self) -> None:
        self._stop.set()

    def changes(self) -> str:
        """Each change of (desired, placed, draining, clusters, routed), with its time."""
        out, last = [], None
        for s in self.samples:
            key = (s.desired, s.placed, s.draining, s.clusters, s.routed, s.leaving)
            if key != last:
                out.append(
                    f"+{s.at:.0f}s desired {s.desired} placed {s.placed} draining "
                    f"{s.draining} (leaving the routes {s.leaving}) on {s.clusters} clusters, "
                    f"{s.routed} routed ({s.reason})"
                )
                last = key
        return "; ".join(out)


def _percentiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    pick = [ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] for p in (50, 90, 99)]
    return f"p50 {pick[0]:.2f} s, p90 {pick[1]:.2f} s, p99 {pick[2]:.2f} s"


def _service(world: World, name: str = NAME, routed: int = 1) -> dict[str, Any] | None:
    """The ModelService Ready with at least `routed` Ready endpoints of weight > 0."""
    svc = world.cp.get(m.API, "ModelService", name, NS) or {}
    status = svc.get("status") or {}
    found = [e for e in status.get("endpoints") or [] if e.get("ready") and e.get("weight")]
    if condition(svc, "Ready") != "True" or len(found) < routed or not status.get("address"):
        return None
    return svc


def _endpoint_cluster(world: World, endpoint: str) -> str:
    """The InferenceCluster a ModelEndpoint of the namespace names."""
    me = world.cp.get(m.API, "ModelEndpoint", endpoint, NS) or {}
    return str((me.get("spec") or {}).get("cluster") or "")


def _grown(world: World, timeline: Timeline) -> Sample | None:
    """At least two replicas, on two clusters, each Ready and routed."""
    s = timeline.sample()
    if s.placed < 2 or s.clusters < 2 or s.routed < 2:
        return None
    svc = world.cp.get(m.API, "ModelService", NAME, NS) or {}
    routed = [
        e["name"]
        for e in (svc.get("status") or {}).get("endpoints") or []
        if e.get("ready") and e.get("weight")
    ]
    return s if len({_endpoint_cluster(world, e) for e in routed}) >= 2 else None


def _answered_by_cluster(world: World) -> dict[str, float]:
    """Requests the namespace's engines answered, by workload cluster, from their own
    /metrics: what the data path really did, whatever the statuses say."""
    network = _network(world)
    out = {}
    for cluster, api in world.workloads.items():
        out[cluster] = sum(
            _metric(network, pod["status"]["podIP"], "vllm:request_success_total")
            for pod in api.list("v1", "Pod", NS)
            if (pod.get("status") or {}).get("podIP")
        )
    return out


def _shrunk(timeline: Timeline) -> Sample | None:
    s = timeline.sample()
    return s if s.desired == 1 and s.placed == 1 and s.draining == 0 else None


def test_a_saturated_deployment_grows_across_clusters_and_shrinks_back_losing_nothing(
    serving: World,  # noqa: F811
) -> None:
    clusters, command = _documented()
    _scraping(serving, clusters)
    serving.apply(load_docs(FILES))
    svc = serving.settle(
        f"ModelService {NAME} Ready with one routed endpoint",
        lambda: _service(serving),
        300,
        describe=lambda: serving.describe(m.API, "ModelDeployment", NAME, NS),
    )
    url = svc["status"]["address"]
    _answers(serving, url, f"ModelService {NAME}")
    network = _network(serving)
    timeline = Timeline(serving)
    sampler = threading.Thread(target=timeline.run, daemon=True)
    sampler.start()
    light = Load(
        network,
        url,
        rate=LIGHT_RATE,
        body={"model": MODEL, "messages": [{"role": "user", "content": "light"}]},
        timeout=30.0,
    )
    light_runner = threading.Thread(target=light.run, daemon=True)
    argv = [
        sys.executable,
        "-m",
        *command[:3],
        f"--dir={serving.state.directory}",
        "--json",
        *command[3:],
    ]
    # Its progress goes to a file: a pipe nobody reads while it runs could fill.
    progress = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
    heavy = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=progress)
    try:
        up_started = time.monotonic()
        grown = serving.settle(
            f"{NAME} grown to two Ready, routed replicas on two clusters",
            lambda: _grown(serving, timeline),
            UP_BOUND,
            describe=lambda: (
                timeline.changes() + "\n" + serving.describe(m.API, "ModelDeployment", NAME, NS)
            ),
        )
        TIMINGS["autoscaling: load on → two Ready replicas routed on two clusters"] = (
            time.monotonic() - up_started
        )
        # The light load first, then the documented load ends by itself: the light
        # load spans the whole shrink.
        light.started = time.monotonic()
        light_runner.start()
        out, _ = heavy.communicate(timeout=300)
        progress.seek(0)
        assert heavy.returncode == 0, progress.read().decode()[-2000:]
        # Before the shrink deletes engines (and their counters) with them.
        answered = _answered_by_cluster(serving)
        down_started = time.monotonic()
        serving.settle(
            f"{NAME} back to one replica, nothing draining",
            lambda: _shrunk(timeline),
            DOWN_BOUND,
            describe=lambda: (
                timeline.changes() + "\n" + serving.describe(m.API, "ModelDeployment", NAME, NS)
            ),
        )
        TIMINGS["autoscaling: load off → one replica, the others drained and deleted"] = (
            time.monotonic() - down_started
        )
        time.sleep(5)  # requests sent as the last replica left answer
    finally:
        if heavy.poll() is None:
            heavy.kill()
        progress.close()
        light.stop()
        timeline.stop()
        sampler.join(10)
        if light_runner.is_alive():
            light_runner.join(40)
    report = json.loads(out)
    peak = max(s.placed for s in timeline.samples)
    light_ok = sum(1 for _, st in light.results if st == 200)
    NOTES["autoscaling: replicas over time"] = timeline.changes()
    NOTES["autoscaling: `modelplane dev load` under saturation"] = json.dumps(report)
    NOTES["autoscaling: while shrinking"] = (
        f"{light_ok}/{len(light.results)} succeeded; latency {_percentiles(light.latencies)}; "
        f"statuses {sorted({st for _, st in light.results})}"
    )
    NOTES["autoscaling: requests the engines answered, by cluster"] = json.dumps(answered)
    COUNTS["autoscaling: peak replicas"] = peak
    COUNTS["autoscaling: requests while shrinking, failed"] = len(light.results) - light_ok
    assert grown.placed >= 2
    # The replicas routed on a second cluster took requests: its engines answered some
    # (the first cluster's answered every request before the scale-up).
    assert len([n for n in answered.values() if n > 0]) >= 2, answered
    desired = [s.desired for s in timeline.samples if s.desired is not None]
    assert max(desired) >= 2 and desired[-1] == 1, timeline.changes()
    assert any(s.draining for s in timeline.samples), timeline.changes()
    assert light.results and light_ok == len(light.results), NOTES["autoscaling: while shrinking"]
    assert report["succeeded"] >= 0.99 * report["finished"], report


# --- the default update under load ---------------------------------------------------

UPDATE = "upd"
UPDATE_RATE = 10.0  # requests per second through the update
UPDATE_BOUND = 300.0  # from the template change: every replica on the new revision
NEW_IMAGE = "vllm/vllm-openai:v0.11.1"


def _updated(timeline: Timeline, old: str) -> Sample | None:
    """Two replicas, none on revision `old` and none draining, both Ready and routed."""
    s = timeline.sample()
    revisions = _revisions(timeline.world)
    done = len(revisions) == 2 and old not in revisions and s.draining == 0 and s.routed == 2
    return s if done else None


def _revisions(world: World) -> list[str]:
    """The revision of each replica placed (`status.placements[].revision`)."""
    dep = world.cp.get(m.API, "ModelDeployment", UPDATE, NS) or {}
    return [str(p.get("revision")) for p in (dep.get("status") or {}).get("placements") or []]


def test_a_template_change_under_the_default_strategy_keeps_serving(
    serving: World,  # noqa: F811
) -> None:
    """Issue 42's default update: two replicas under steady load; the engine image
    changes with no `spec.rollout` (MakeBeforeBreak). At no sample may fewer than two
    Ready endpoints take traffic, and the requests keep succeeding."""
    doc = m.deployment(UPDATE, NS, replicas=2, gpus=1, labels={"model": UPDATE})
    serving.apply([doc, m.model_service(UPDATE, NS, UPDATE)])
    svc = serving.settle(
        f"ModelService {UPDATE} Ready with two routed endpoints",
        lambda: _service(serving, UPDATE, routed=2),
        300,
        describe=lambda: serving.describe(m.API, "ModelDeployment", UPDATE, NS),
    )
    url = svc["status"]["address"]
    _answers(serving, url, f"ModelService {UPDATE}")
    (old,) = set(_revisions(serving))
    network = _network(serving)
    timeline = Timeline(serving, UPDATE)
    sampler = threading.Thread(target=timeline.run, daemon=True)
    load = Load(
        network,
        url,
        rate=UPDATE_RATE,
        body={"model": MODEL, "messages": [{"role": "user", "content": "update"}]},
        timeout=30.0,
    )
    runner = threading.Thread(target=load.run, daemon=True)
    sampler.start()
    runner.start()
    try:
        time.sleep(5)  # steady first
        changed = copy.deepcopy(doc)
        changed["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = NEW_IMAGE
        serving.apply([changed])
        started = time.monotonic()
        serving.settle(
            f"{UPDATE}: both replicas on a revision other than {old}, Ready and routed",
            lambda: _updated(timeline, old),
            UPDATE_BOUND,
            describe=lambda: (
                timeline.changes() + "\n" + serving.describe(m.API, "ModelDeployment", UPDATE, NS)
            ),
        )
        TIMINGS["default update: template changed → every replica on the new one, routed"] = (
            time.monotonic() - started
        )
        time.sleep(5)
    finally:
        load.stop()
        timeline.stop()
        sampler.join(10)
        runner.join(40)
    ok = sum(1 for _, st in load.results if st == 200)
    statuses = sorted({st for _, st in load.results})
    NOTES["default update: replicas over time"] = timeline.changes()
    NOTES["default update: requests"] = (
        f"{ok}/{len(load.results)} succeeded; latency {_percentiles(load.latencies)}; "
        f"statuses {statuses}"
    )
    fewest = min(s.routed for s in timeline.samples)
    COUNTS["default update: fewest Ready endpoints routed at any sample (of 2)"] = fewest
    COUNTS["default update: requests failed"] = len(load.results) - ok
    COUNTS["default update: samples with a replaced replica leaving the routes"] = sum(
        1 for s in timeline.samples if s.leaving
    )
    assert fewest >= 2, timeline.changes()
    # Each replaced replica left the routes (weight 0, drainingSince) before it went.
    assert any(s.leaving for s in timeline.samples), timeline.changes()
    assert ok >= 0.995 * len(load.results), NOTES["default update: requests"]
