"""Benchmark: from applying a ModelDeployment to Ready, on the real local fleet.

A `modelplane dev` fleet of four workload clusters, each with eight one-L4
fake nodes (kube-scheduler allocates, kwok runs the Pods). For 1, 2 and 4
clusters and 1, 2, 4 and 8 replicas, one ModelDeployment restricted to the
first N clusters is applied and timed until its Ready condition is True, then
deleted and waited for. Around each, the work it cost is read from the fleet's
own metrics: function calls (Crossplane's `function_run_function_request_total`),
Crossplane reconciles (`controller_runtime_reconcile_total` of the controllers
of Modelplane's kinds) and API writes (`apiserver_request_total` of every API server,
verbs that write), each per Ready replica, and the watch events Crossplane's XR
circuit breaker dropped (`circuit_breaker_events_total{result="Dropped"}`). Each
workload cluster runs the real Envoy Gateway; the bench applies the platform
Gateway its replicas' routes attach to, as the e2e suite does.

    .venv/bin/python benchmarks/bench_time_to_ready.py [--dir D] [--keep] [--replicas 1,2,4,8]
        [--clusters 1,2,4] [--provider-poll 10s]

Needs Go (the parts) and takes several minutes; not part of `make test`.
"""

from __future__ import annotations

import argparse
import ssl
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from e2e import manifests as m  # noqa: E402
from e2e.harness import World  # noqa: E402

from modelplane.api import constants as c  # noqa: E402
from modelplane.api.objects import condition  # noqa: E402
from modelplane.dev import audit  # noqa: E402
from modelplane.dev.fleet import XR_WATCH_BURST, XR_WATCH_REFILL, Fleet, State  # noqa: E402
from modelplane.dev.nodes import ClusterNodes, PoolNodes, class_devices  # noqa: E402

CLASS = "bench-l4"
NODES = 8
WORKLOADS = 4
WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"}
NS = "bench"


def _scrape(url: str, token: str | None, ca: str | None, client: Path | None = None) -> str:
    """A metrics page; `client` is a directory holding the certificate to present."""
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    ctx = ssl.create_default_context(cafile=ca) if url.startswith("https") else None
    if ctx is not None and client is not None:
        ctx.load_cert_chain(str(client / "tls.crt"), str(client / "tls.key"))
    with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
        return resp.read().decode()


def _samples(text: str, family: str) -> Iterator[Sample]:
    """The samples of one metric family in a metrics page."""
    for fam in text_string_to_metric_families(text):
        yield from (sample for sample in fam.samples if sample.name == family)


def _sum(text: str, family: str, keep: Any) -> float:
    return sum((s.value for s in _samples(text, family) if keep(s.labels)), 0.0)


def function_page(state: State) -> str:
    """The function's metrics page (it asks for a client certificate of the fleet's
    CA: Crossplane's)."""
    url = f"https://127.0.0.1:{state.ports['function-metrics']}/metrics"
    return _scrape(url, None, str(state.pki / "ca.crt"), state.pki / "crossplane")


def crossplane_page(state: State) -> str:
    """Crossplane's metrics page."""
    return _scrape(f"http://127.0.0.1:{state.ports['crossplane-metrics']}/metrics", None, None)


def _function_calls(state: State) -> dict[str, float]:
    """The function's own calls by composite kind."""
    return {
        f"calls: {s.labels['kind']}": s.value
        for s in _samples(function_page(state), "modelplane_function_calls_total")
    }


def _reconciles(xp: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in _samples(xp, "controller_runtime_reconcile_total"):
        controller = str(s.labels.get("controller", ""))
        if "modelplane.ai" in controller:
            kind = controller.split("/")[-1].split(".")[0]
            key = f"reconciles: {kind} {s.labels.get('result', '')}"
            out[key] = out.get(key, 0.0) + s.value
    return out


def counters(state: State) -> dict[str, float]:
    """Function calls, Crossplane composite reconciles and API writes so far, in total
    and (keys with a colon) by kind."""
    xp = crossplane_page(state)
    token = (state.pki / "token").read_text().strip()
    writes = 0.0
    for cluster in state.clusters:
        text = _scrape(
            f"{state.kubeconfig(cluster).server}/metrics", token, str(state.pki / "ca.crt")
        )
        writes += _sum(text, "apiserver_request_total", lambda lb: lb.get("verb") in WRITE_VERBS)
    return (
        _function_calls(state)
        | _reconciles(xp)
        | {
            "function calls": _sum(xp, "function_run_function_request_total", lambda _lb: True),
            "reconciles": _sum(
                xp,
                "controller_runtime_reconcile_total",
                lambda lb: "modelplane.ai" in str(lb.get("controller", "")),
            ),
            "API writes": writes,
            # Watch events Crossplane's XR circuit breaker threw away: each one is a
            # change a composite did not react to until its next 30 s probe.
            "breaker drops": _sum(
                xp, "circuit_breaker_events_total", lambda lb: lb.get("result") == "Dropped"
            ),
        }
    )


def _clusters(world: World) -> None:
    world.apply([m.inference_class(CLASS)])
    for i in range(1, WORKLOADS + 1):
        doc = m.inference_cluster(f"bench-{i}", world.secret_ref(f"wl-{i}"), CLASS, nodes=NODES)
        doc["metadata"]["labels"] = {"bench.modelplane.ai/index": str(i)}
        world.apply([doc])
    for i in range(1, WORKLOADS + 1):
        world.settle(
            f"bench-{i} Ready",
            lambda n=i: world.ready(m.API, "InferenceCluster", f"bench-{n}"),
            300,
        )


def _deployment(replicas: int, clusters: int) -> dict[str, Any]:
    doc = m.deployment("ttr", NS, replicas=replicas)
    doc["spec"]["clusterSelector"] = {
        "matchExpressions": [
            {
                "key": "bench.modelplane.ai/index",
                "operator": "In",
                "values": [str(i) for i in range(1, clusters + 1)],
            }
        ]
    }
    return doc


@dataclass
class Detail:
    """Where one size's work went, by kind and (with `--audit`) by writer and cause."""

    reader: audit.Reader | None
    last: audit.Seen = field(default_factory=dict)
    windows: list[tuple[str, dict[str, float], Counter[tuple[str, ...]]]] = field(
        default_factory=list
    )

    def window(self, name: str, before: dict[str, float], after: dict[str, float]) -> None:
        """Record one phase: counter deltas, and the audited writes since the last."""
        by_kind = {k: after.get(k, 0.0) - v for k, v in before.items() if ":" in k}
        by_kind |= {k: v for k, v in after.items() if ":" in k and k not in before}
        writes = audit.attribute(self.reader.read(), self.last) if self.reader else Counter()
        self.windows.append((name, {k: v for k, v in by_kind.items() if v}, writes))


def measure(world: World, replicas: int, clusters: int, detail: Detail) -> dict[str, float]:
    """Time to Ready and the work per Ready replica of one deployment."""
    if detail.reader:
        detail.reader.mark()
    before = counters(world.state)
    started = time.monotonic()
    world.apply([_deployment(replicas, clusters)])
    world.settle("ttr Ready", lambda: world.ready(m.API, "ModelDeployment", "ttr", NS), 600)
    elapsed = time.monotonic() - started
    after = counters(world.state)
    detail.window("apply → Ready", before, after)
    world.cp.delete(m.API, "ModelDeployment", "ttr", NS)
    # Gone means the deployment too: applying the next size while the last one
    # still finalizes would update the old, Ready object and time nothing. And
    # the replicas' Objects: the next size's replicas have the same names, and
    # composing onto an Object still being deleted waits for it to go.
    world.settle("ttr gone", lambda: _gone(world, "ttr") and _objects_gone(world), 300)
    detail.window("delete → gone", after, counters(world.state))
    out = {"seconds": elapsed}
    out.update({k: (after[k] - before[k]) / replicas for k in before if ":" not in k})
    return out


def _scheduled(world: World, name: str) -> str:
    cond = condition(world.cp.get(m.API, "ModelDeployment", name, NS), "Scheduled")
    return f"{cond.get('status')}/{cond.get('reason')}" if cond is not None else ""


def _gone(world: World, name: str) -> bool | None:
    """True once a deployment and its replicas are gone from the control plane."""
    replicas = [
        r
        for r in world.cp.list(m.API, "ModelReplica", NS)
        if (r.get("spec") or {}).get("deploymentName") == name
    ]
    return None if replicas or world.cp.get(m.API, "ModelDeployment", name, NS) else True


def _objects_gone(world: World) -> bool | None:
    """True once no Object of the bench's namespace is left, deleting or not."""
    return None if world.cp.list(c.PROVIDER_KUBERNETES_API_VERSION, "Object", NS) else True


def pending_once(world: World) -> tuple[float, float]:
    """Fill cluster 1, have a second deployment wait there, free the capacity: seconds
    from the filling deployment's replicas gone (the capacity free as the scheduler
    counts it) to the waiting one placed, and from the delete to placed."""
    blocker = _deployment(NODES, 1)
    blocker["metadata"]["name"] = "blocker"
    world.apply([blocker])
    world.settle("blocker Ready", lambda: world.ready(m.API, "ModelDeployment", "blocker", NS), 600)
    waiter = _deployment(1, 1)
    waiter["metadata"]["name"] = "waiter"
    world.apply([waiter])
    world.settle(
        "waiter waits",
        lambda: True if _scheduled(world, "waiter").startswith("False/") else None,
        120,
    )
    deleted = time.monotonic()
    world.cp.delete(m.API, "ModelDeployment", "blocker", NS)
    gone = placed = 0.0
    while not placed:
        now = time.monotonic()
        if not gone and _gone(world, "blocker"):
            gone = now
        if _scheduled(world, "waiter").startswith("True/"):
            placed = now
            gone = gone or now
        if now - deleted > 300:
            raise TimeoutError(
                f"waiter not placed 300 s after the delete: {_scheduled(world, 'waiter')}"
            )
        time.sleep(0.2)
    world.cp.delete(m.API, "ModelDeployment", "waiter", NS)
    world.settle("waiter gone", lambda: _gone(world, "waiter"), 300)
    world.settle("Objects gone", lambda: _objects_gone(world), 300)
    return placed - gone, placed - deleted


def print_detail(out: TextIO, size: str, replicas: int, detail: Detail) -> None:
    """One size's work per replica by kind, then its writes by writer and cause."""
    for name, by_kind, writes in detail.windows:
        print(f"\n### {size}: {name} (per replica)\n", file=out)
        for key, value in sorted(by_kind.items()):
            print(f"- {key}: {value / replicas:.1f}", file=out)
        if writes:
            print(
                "\n| cluster | writer | resource | verb | status fields changed | per replica |",
                file=out,
            )
            print("|---|---|---|---|---|---:|", file=out)
            for (role, who, target, verb, why), n in writes.most_common():
                print(
                    f"| {role} | {who} | {target} | {verb} | {why} | {n / replicas:.1f} |", file=out
                )
    out.flush()


def main() -> None:
    """Bring up (or reuse) the fleet, measure every size, print a table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path(".modelplane-bench"))
    ap.add_argument("--keep", action="store_true", help="Leave the fleet running.")
    ap.add_argument("--replicas", default="1,2,4,8")
    ap.add_argument("--clusters", default="1,2,4")
    ap.add_argument(
        "--detail",
        type=Path,
        help="Write each size's work by kind, and with --audit its writes by writer and "
        "cause, to this Markdown file.",
    )
    ap.add_argument(
        "--audit",
        action="store_true",
        help="Start the fleet's API servers with audit logs (a fleet already running "
        "without them is not restarted: take it down first).",
    )
    ap.add_argument(
        "--breaker",
        default="",
        help="Crossplane's XR watch circuit breaker as BURST/REFILL (e.g. 100/1, its "
        "defaults); the dev fleet's own when not given.",
    )
    ap.add_argument(
        "--pending",
        type=int,
        default=0,
        help="Instead of the sizes, measure N times how soon a replica waiting for "
        "capacity is placed once a deployment filling its cluster is deleted.",
    )
    ap.add_argument(
        "--provider-poll",
        default=None,
        help="provider-kubernetes' --poll (e.g. 10s, the dev fleet's before it ran the "
        "default); its default, 10 minutes, as users run it, when not given.",
    )
    args = ap.parse_args()
    devices = class_devices(m.inference_class(CLASS))
    nodes = [
        ClusterNodes(f"wl-{i}", (PoolNodes("l4", NODES, devices),)) for i in range(1, WORKLOADS + 1)
    ]
    say = lambda msg: print(f"[dev up] {msg}", file=sys.stderr)  # noqa: E731
    breaker = XR_WATCH_BURST, XR_WATCH_REFILL
    if args.breaker:
        burst, refill = args.breaker.split("/")
        breaker = int(burst), float(refill)
    fleet = Fleet(args.dir, say, args.audit, breaker, args.provider_poll)
    started = time.monotonic()
    fleet.up(clusters=WORKLOADS, nodes=nodes)
    print(f"dev up: {time.monotonic() - started:.1f} s", file=sys.stderr)
    world = World(State.load(fleet.directory), started)
    # Gateway API and Envoy Gateway come with each cluster (`Fleet.up`); the
    # platform's Gateway the replicas' routes attach to is the bench's to run,
    # as the e2e suite's is (its serving stack is off).
    for api in world.workloads.values():
        world.apply(m.platform_gateway(), api)
    _clusters(world)
    world.apply([m.namespace(NS)])
    if args.pending:
        print("| run | s from capacity freed to placed | s from delete to placed |")
        print("|---:|---:|---:|")
        for run in range(1, args.pending + 1):
            freed, deleted = pending_once(world)
            print(f"| {run} | {freed:.1f} | {deleted:.1f} |", flush=True)
        if not args.keep:
            fleet.down()
        return
    print(
        "| clusters | replicas | s to Ready | function calls / replica | reconciles / replica "
        "| API writes / replica | breaker drops / replica |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    logs = {c: fleet.audit_log(c) for c in world.state.clusters}
    out = args.detail.open("w") if args.detail else None
    for clusters in (int(x) for x in args.clusters.split(",")):
        for replicas in (int(x) for x in args.replicas.split(",")):
            detail = Detail(audit.Reader(logs) if args.audit else None)
            got = measure(world, replicas, clusters, detail)
            if out:
                print_detail(out, f"{clusters} × {replicas}", replicas, detail)
            print(
                f"| {clusters} | {replicas} | {got['seconds']:.1f} | {got['function calls']:.1f} "
                f"| {got['reconciles']:.1f} | {got['API writes']:.1f} "
                f"| {got['breaker drops']:.1f} |",
                flush=True,
            )
    if not args.keep:
        fleet.down()


if __name__ == "__main__":
    main()
