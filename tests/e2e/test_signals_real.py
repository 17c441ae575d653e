"""Live signals on the real fleet (issue 42): autoscaling on what real engines report,
up under load and across clusters, down once the load eases with no request failed
while replicas leave; the default update under load; progressive rollouts judged on
what the engines answered.

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
4. **Progressive rollouts** (docs/rollouts.md's try-it, docs/dev/rollout.yaml): a new
   image passes both waves on the engines' real error rate and TTFT; then an image
   whose engines fail 10% of their requests fails its first wave and rolls back, the
   old revision's engines answering no error.

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
from collections.abc import Iterator
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
    engine_page,
    serving,  # noqa: F401  (the module's fleet: docs/dev's serving fleet)
)

from modelplane.api import constants as c
from modelplane.api.objects import replica_base
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
    NOTES["autoscaling: scale-down events"] = _scale_down_events(serving)
    COUNTS["autoscaling: peak replicas"] = peak
    COUNTS["autoscaling: requests while shrinking, failed"] = len(light.results) - light_ok
    assert grown.placed >= 2
    # The replicas routed on a second cluster took requests: its engines answered some
    # (the first cluster's answered every request before the scale-up).
    assert len([n for n in answered.values() if n > 0]) >= 2, answered
    desired = [s.desired for s in timeline.samples if s.desired is not None]
    assert max(desired) >= 2 and desired[-1] == 1, timeline.changes()
    assert any(s.draining for s in timeline.samples), timeline.changes()
    assert light.results and light_ok == len(light.results), "\n".join(
        NOTES[k]
        for k in (
            "autoscaling: while shrinking",
            "autoscaling: replicas over time",
            "autoscaling: scale-down events",
        )
    )
    assert report["succeeded"] >= 0.99 * report["finished"], report


def _scale_down_events(world: World) -> str:
    """The deployment's ScaleDown* events, oldest first: which replicas drained, which
    went at once and why."""
    events = [
        e
        for e in world.cp.list("v1", "Event", NS)
        if str(e.get("reason", "")).startswith("ScaleDown")
        and (e.get("involvedObject") or {}).get("name") == NAME
    ]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return "; ".join(
        f"{e.get('lastTimestamp') or e.get('eventTime')} {e.get('reason')}: {e.get('message')}"
        for e in events
    )


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
    NOTES["default update: replicas over time"] = timeline.changes()
    NOTES["default update: requests"] = _requests_text(load)
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


# --- progressive rollouts judged on real signals ---------------------------------------

ROLL = "roll"  # docs/dev/rollout.yaml's
ROLL_FILES = ROOT / "docs" / "dev" / "rollout.yaml"
ROLL_DOC = ROOT / "docs" / "rollouts.md"
ROLL_RATE = 10.0  # requests per second through each rollout
ROLL_BOUND = 900.0  # from the template change: the rollout decided and settled


def _documented_patches() -> list[dict[str, Any]]:
    """docs/rollouts.md's try-it patches of the deployment, in order: the new image,
    then the failing one."""
    text = ROLL_DOC.read_text()
    block = text[text.index("## Try it on the local fleet") :]
    out = []
    for line in block.splitlines():
        if line.startswith(f"kubectl patch -n {NS} modeldeployment {ROLL}"):
            words = shlex.split(line)
            out.append(json.loads(words[words.index("-p") + 1]))
    return out


def _patch(world: World, patch: dict[str, Any]) -> None:
    """`kubectl patch --type merge` of the deployment."""
    path = world.cp.path(m.API, "ModelDeployment", ROLL, NS)
    world.cp.request("PATCH", path, patch, "application/merge-patch+json")


def _rollout(world: World) -> dict[str, Any]:
    dep = world.cp.get(m.API, "ModelDeployment", ROLL, NS) or {}
    return dict((dep.get("status") or {}).get("rollout") or {})


def _settled_on(world: World, revision: str, rolled_out: str) -> dict[str, Any] | None:
    """Every replica on `revision`, none draining, both routed; RolledOut `rolled_out`."""
    dep = world.cp.get(m.API, "ModelDeployment", ROLL, NS) or {}
    placed = (dep.get("status") or {}).get("placements") or []
    on = [p for p in placed if p.get("revision") == revision and not p.get("draining")]
    if len(placed) != 2 or len(on) != 2 or _service(world, ROLL, routed=2) is None:
        return None
    return dep if condition(dep, "RolledOut") == rolled_out else None


def _waves(world: World) -> str:
    """Each wave's phase and what it read, as the status says."""
    return "; ".join(
        f"wave {w.get('wave')} {w.get('phase')}: {w.get('message')}"
        for w in _rollout(world).get("waves") or []
    )


def _server_errors(world: World) -> dict[str, float]:
    """HTTP 5xx each engine of the deployment answered, from its own /metrics (vLLM's
    `http_requests_total`), by Pod."""
    network = _network(world)
    dep = world.cp.get(m.API, "ModelDeployment", ROLL, NS) or {}
    out = {}
    for placement in (dep.get("status") or {}).get("placements") or []:
        ic = world.cp.get(m.API, "InferenceCluster", placement["cluster"]) or {}
        api = world.workloads[world.workload_of(ic)]
        label = f"{c.LABEL_REPLICA}={replica_base(placement['replicaName'])}"
        for pod in api.list("v1", "Pod", NS, selector=label):
            address = (pod.get("status") or {}).get("podIP")
            if not address:
                continue
            page = engine_page(network, address)
            out[pod["metadata"]["name"]] = sum(
                float(ln.rsplit(" ", 1)[1])
                for ln in page.splitlines()
                if ln.startswith("http_requests_total{") and 'status="5xx"' in ln
            )
    return out


@contextlib.contextmanager
def _loaded(world: World, url: str, label: str) -> Iterator[Load]:
    """A steady load and the deployment sampled while the block runs; what they saw is
    noted under `label`."""
    timeline = Timeline(world, ROLL)
    load = Load(
        _network(world),
        url,
        rate=ROLL_RATE,
        body={"model": MODEL, "messages": [{"role": "user", "content": label}]},
        timeout=30.0,
    )
    threads = [threading.Thread(target=x.run, daemon=True) for x in (timeline, load)]
    for t in threads:
        t.start()
    try:
        time.sleep(5)  # steady first
        yield load
        time.sleep(5)
    finally:
        load.stop()
        timeline.stop()
        for t in threads:
            t.join(40)
    ok = sum(1 for _, st in load.results if st == 200)
    NOTES[f"{label}: replicas over time"] = timeline.changes()
    NOTES[f"{label}: waves"] = _waves(world)
    NOTES[f"{label}: requests"] = _requests_text(load)
    COUNTS[f"{label}: requests failed"] = len(load.results) - ok


def _requests_text(load: Load) -> str:
    """What the load's client saw: successes, latency, statuses, and when the first
    failures came and what answered them."""
    ok = sum(1 for _, st in load.results if st == 200)
    text = (
        f"{ok}/{len(load.results)} succeeded; latency {_percentiles(load.latencies)}; "
        f"statuses {sorted({st for _, st in load.results})}"
    )
    if load.failures:
        first = ", ".join(f"+{at:.1f}s {st} {said!r}" for at, st, said in load.failures[:3])
        last = load.failures[-1][0]
        text += f"; {len(load.failures)} failed, the first {first}, the last at +{last:.1f}s"
    return text


def _succeeded(load: Load) -> float:
    return sum(1 for _, st in load.results if st == 200) / max(1, len(load.results))


def test_the_documented_rollouts_pass_on_real_signals_then_roll_back_on_errors(
    serving: World,  # noqa: F811
) -> None:
    """Issue 42, docs/rollouts.md's try-it: under a steady load, (1) a new image passes
    both waves on the error rate and TTFT its engines report and completes, with at
    least 99.5% of the requests answered; (2) an image whose engines fail 10% of their
    requests (the double's failure injection) fails its first wave on the error rate,
    rolls back on its own, and the old revision serves again: no engine of it ever
    answers with an error."""
    clusters, _ = _documented()
    _scraping(serving, clusters)
    serving.apply(load_docs(ROLL_FILES))
    serving.settle(
        f"ModelDeployment {ROLL} rolled out, two endpoints routed",
        lambda: _settled_on(serving, str(_rollout(serving).get("stableRevision")), "True"),
        300,
        describe=lambda: serving.describe(m.API, "ModelDeployment", ROLL, NS),
    )
    svc = _service(serving, ROLL, routed=2)
    assert svc is not None
    url = svc["status"]["address"]
    _answers(serving, url, f"ModelService {ROLL}")
    new_image, failing = _documented_patches()
    first = str(_rollout(serving)["stableRevision"])

    # 1. The new image: both waves pass, the rollout completes.
    with _loaded(serving, url, "rollout pass") as load:
        _patch(serving, new_image)
        started = time.monotonic()
        done = serving.settle(
            "the new image rolled out: Complete, both replicas on it and routed",
            lambda: (
                d
                if (r := _rollout(serving)).get("revision") not in (None, first)
                and r.get("decision") == "Complete"
                and (d := _settled_on(serving, str(r["revision"]), "True"))
                else None
            ),
            ROLL_BOUND,
            describe=lambda: _waves(serving),
        )
        TIMINGS["rollout pass: template changed → Complete, both replicas routed"] = (
            time.monotonic() - started
        )
    waves = done["status"]["rollout"]["waves"]
    assert [w["phase"] for w in waves] == ["Passed", "Passed"], _waves(serving)
    # Judged on what the engines counted: requests seen, none failed, a real TTFT.
    assert all(w.get("requests") and w.get("errors") == 0 for w in waves), waves
    assert all(w.get("ttftP90Seconds") is not None for w in waves), waves
    assert _succeeded(load) >= 0.995, NOTES["rollout pass: requests"]
    stable = str(done["status"]["rollout"]["revision"])
    clean = _server_errors(serving)

    # 2. The failing image: the first wave fails on its error rate and rolls back.
    with _loaded(serving, url, "rollout fail") as load:
        _patch(serving, failing)
        started = time.monotonic()
        back = serving.settle(
            f"rolled back: both replicas on {stable} and routed",
            lambda: (
                d
                if _rollout(serving).get("decision") == "RolledBack"
                and (d := _settled_on(serving, stable, "False"))
                else None
            ),
            ROLL_BOUND,
            describe=lambda: _waves(serving),
        )
        TIMINGS["rollout fail: template changed → rolled back, both replicas routed"] = (
            time.monotonic() - started
        )
    rollout = back["status"]["rollout"]
    failed = rollout["waves"][0]
    assert failed["phase"] == "Failed", _waves(serving)
    assert failed["errors"] and failed["errorRate"] > 0.02, failed
    assert rollout["failedRevision"] not in (None, stable), rollout
    # The engines left all run the stable revision; the one that served throughout
    # answered no error, before or during the failed rollout.
    errors = _server_errors(serving)
    NOTES["rollout: 5xx per engine of the stable revision"] = f"before {clean}, after {errors}"
    assert errors and not any(errors.values()), errors
    assert set(clean) & set(errors), "an engine of the stable revision served throughout"
    # Only the failing engines' share of the traffic, while they served, may fail.
    assert _succeeded(load) >= 0.9, NOTES["rollout fail: requests"]
