"""Engines that answer: every engine Pod of a placed replica runs a real engine process.

On the same fleet as the other scenarios (e2e-a is wl-1, e2e-b is wl-2). The
fleet's engine kubelet gives each engine Pod a network namespace holding the
Pod's address and runs the engine double there; the Pod is Ready only while the
engine answers its readiness probe, so the ModelDeployment's Ready, the
Deployment's availability and the EndpointSlices gateways route by all come
from a process that serves. Requests are sent from inside the fleet network,
as `modelplane dev exec -- curl` does.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import time
from typing import Any

import pytest
from e2e import manifests as m
from e2e.harness import COUNTS, TIMINGS, World

from modelplane.api import constants as c
from modelplane.api.objects import replica_base
from modelplane.dev import netns
from modelplane.dev.kubeapi import Api, condition

pytestmark = pytest.mark.e2e

NS = "e2e-serve"
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
TIMEOUT = 300.0


def _network(world: World) -> netns.Network:
    return netns.Network(netns.fleet_id(world.state.directory))


def _engine_pods(world: World, name: str) -> list[tuple[str, Api, dict[str, Any]]]:
    """(workload cluster, its API, Pod) for every engine Pod of the deployment's placements."""
    md = world.cp.get(m.API, "ModelDeployment", name, NS) or {}
    out = []
    for placement in (md.get("status") or {}).get("placements") or []:
        ic = world.cp.get(m.API, "InferenceCluster", placement["cluster"]) or {}
        wl = world.workload_of(ic)
        api = world.workloads[wl]
        label = f"{c.LABEL_REPLICA}={replica_base(placement['replicaName'])}"
        out += [(wl, api, pod) for pod in api.list("v1", "Pod", NS, selector=label)]
    return out


def _post(network: netns.Network, address: str, body: dict[str, Any]) -> tuple[int, Any]:
    conn = network.http(address, c.ENGINE_PORT, timeout=10)
    try:
        conn.request(
            "POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"}
        )
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def _metric(network: netns.Network, address: str, name: str) -> float:
    """The sum of one metric's samples on an engine's own /metrics page."""
    conn = network.http(address, c.ENGINE_PORT, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name + "{") or line.startswith(name + " ")
    )


def _endpoint_ready(api: Api, address: str) -> bool | None:
    """Whether the EndpointSlices of namespace NS list the address as ready (None: absent)."""
    for eps in api.list("discovery.k8s.io/v1", "EndpointSlice", NS):
        for endpoint in eps.get("endpoints") or []:
            if address in (endpoint.get("addresses") or []):
                return bool((endpoint.get("conditions") or {}).get("ready"))
    return None


def test_every_engine_pod_answers_a_chat_completion_at_its_own_address(fleet: World) -> None:
    fleet.apply([m.namespace(NS), m.deployment("chat", NS, replicas=2, gpus=1)])
    started = time.monotonic()
    fleet.settle(
        "ModelDeployment chat Ready",
        lambda: fleet.ready(m.API, "ModelDeployment", "chat", NS),
        TIMEOUT,
    )
    TIMINGS["apply → a served deployment Ready (engines answering their probes)"] = (
        time.monotonic() - started
    )
    network = _network(fleet)
    pods = _engine_pods(fleet, "chat")
    assert len(pods) == 2
    answered = 0
    for wl, api, pod in pods:
        address = pod["status"]["podIP"]
        index = fleet.state.clusters.index(wl)
        assert ipaddress.ip_address(address) in ipaddress.ip_network(netns.pod_cidr(index))
        assert condition(pod, "Ready") == "True"
        assert _endpoint_ready(api, address) is True
        before = _metric(network, address, "vllm:request_success_total")
        prompt = f"hello from {pod['metadata']['name']}"
        status, body = _post(
            network, address, {"model": MODEL, "messages": [{"role": "user", "content": prompt}]}
        )
        assert status == 200, body
        assert body["object"] == "chat.completion"
        assert body["choices"][0]["message"]["content"] == prompt  # the double echoes
        assert _metric(network, address, "vllm:request_success_total") == before + 1
        # A model the engine does not serve is refused by the engine itself.
        status, _ = _post(
            network, address, {"model": "other", "messages": [{"role": "user", "content": "x"}]}
        )
        assert status == 404
        answered += 1
    COUNTS["engine Pods answering a chat completion at their own address"] = answered


def _engine_pids(namespace: str) -> list[int]:
    done = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True
    )
    return [int(p) for p in done.stdout.split()]


def test_an_engine_killed_makes_its_pod_not_ready_and_its_endpoint_leave(fleet: World) -> None:
    network = _network(fleet)
    wl, api, pod = _engine_pods(fleet, "chat")[0]
    name, address = pod["metadata"]["name"], pod["status"]["podIP"]
    key = f"{wl}/{NS}/{name}/{pod['metadata']['uid']}"
    pids = _engine_pids(network.pod_namespace(key))
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)
    killed = time.monotonic()

    def not_ready() -> bool | None:
        now = api.get("v1", "Pod", name, NS)
        return (
            True
            if condition(now, "Ready") == "False" and not _endpoint_ready(api, address)
            else None
        )

    fleet.settle(f"Pod {name} not Ready and its endpoint not ready", not_ready, 30)
    TIMINGS["engine killed → Pod not Ready and endpoint not ready"] = time.monotonic() - killed
    assert netns.get(network, address, c.ENGINE_PORT, "/health", timeout=1) == 0

    def back() -> dict[str, Any] | None:
        now = api.get("v1", "Pod", name, NS)
        return now if condition(now, "Ready") == "True" and _endpoint_ready(api, address) else None

    again = fleet.settle(f"Pod {name} Ready again after its engine restarted", back, 60)
    TIMINGS["engine killed → restarted and Ready again (10 s back-off)"] = time.monotonic() - killed
    (engine,) = [s for s in again["status"]["containerStatuses"] if s["name"] == "engine"]
    assert engine["restartCount"] == 1
    fleet.settle(
        "ModelDeployment chat Ready again",
        lambda: fleet.ready(m.API, "ModelDeployment", "chat", NS),
        TIMEOUT,
    )


def test_a_deleted_deployment_leaves_no_engine_and_no_namespace(fleet: World) -> None:
    network = _network(fleet)
    keys = [
        f"{wl}/{NS}/{pod['metadata']['name']}/{pod['metadata']['uid']}"
        for wl, _api, pod in _engine_pods(fleet, "chat")
    ]
    assert fleet.cp.delete(m.API, "ModelDeployment", "chat", NS)

    def gone() -> bool | None:
        left = [k for k in keys if network.pod_namespace(k) in netns.namespaces()]
        return True if not left else None

    fleet.settle("the deleted deployment's engine namespaces gone", gone, TIMEOUT)
