"""The engine kubelet: every engine Pod of a workload cluster runs a real engine process.

kwok plays the kubelet of the local fleet's fake GPU nodes, but a Pod under
kwok runs nothing. For Modelplane's engine Pods (label `modelplane.ai/role`)
kwok only reports them Running with an address, not Ready; this process plays
the rest of a kubelet for them, one workload cluster each
(`python -m modelplane.dev.kubelet`, started by `modelplane dev up`):

- a Running engine Pod gets a network namespace holding its address
  (`netns.Network.attach`) and, inside it, the engine double
  (llm-d-inference-sim) serving the model and names the Pod's engine container
  asks for, behind a front on the port it declares that adds vLLM's HTTP
  request counter (`engine_front`); the double's failure injection
  (`--failure-injection-rate`, `--failure-types`) passes through from the
  container's arguments, so a template can play an engine that fails;
- the Pod is Ready while the engine answers the container's readiness probe,
  and not Ready as soon as it does not;
- an engine that exits is started again after a back-off (10 s, doubling to
  five minutes, as a kubelet does) and the Pod's restart count goes up;
- a Pod deleted, or no longer Running, loses its process and its namespace.

The double always runs with `--force-dummy-tokenizer`, so it never asks a model
hub whether the model exists. An engine Pod whose engine container is missing,
or a LeaderWorkerSet group's worker (made by the group's StatefulSet, its
worker index above 0: it joins its leader's engine), runs nothing and is
reported Ready at once, as a kubelet reports a container without a probe.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane.api import constants as c
from modelplane.dev import gateway as gatewaymod
from modelplane.dev import loadbalancer as lb
from modelplane.dev import netns
from modelplane.dev.engine_front import die_with_parent
from modelplane.dev.kubeapi import Api, Kubeconfig
from modelplane.kube.client import KubeError

SYNC_SECONDS = 1.0
BACKOFF_FIRST = 10.0
BACKOFF_MAX = 300.0
PROBE_TIMEOUT = 1.0
DEFAULT_PROBE_PATH = "/health"
# The label LeaderWorkerSet's pod webhook gives each Pod of a group: 0 for the leader.
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
# How fast the double answers: one short profile for every class for now.
LATENCY_FLAGS = ("--time-to-first-token=20ms", "--inter-token-latency=2ms")
# The largest --max-num-seqs passed on to the double (vLLM's own default is 256 or more).
MAX_NUM_SEQS = 4096
# The failures the double can inject (its --failure-types).
FAILURE_TYPES = frozenset(
    {"rate_limit", "invalid_api_key", "context_length", "server_error", "invalid_request"}
    | {"model_not_found"}
)
# Ports the double may listen on behind the front (the first the Pod does not use).
FRONT_UPSTREAM_PORTS = (18123, 18124, 18125)


@dataclass(frozen=True)
class Engine:
    """What a Pod's engine container asks for: the model, its served names, where it listens."""

    model: str
    served: tuple[str, ...]
    port: int
    probe_path: str
    probe_port: int
    # vLLM's --max-num-seqs: requests run at once, the rest wait (the double's flag too).
    max_num_seqs: int | None = None
    # The double's failure injection, from the container's arguments: the percentage of
    # requests answered with an error, and which errors (the double's own flags).
    failure_rate: int | None = None
    failure_types: tuple[str, ...] = ()


def _flag(args: Sequence[str], *names: str) -> list[str]:
    """Every value given to one of the flags (`--x=v` or `--x v v2`, the latter
    until the next flag)."""
    found: list[str] = []
    taking = False
    for arg in args:
        name, eq, value = arg.partition("=")
        if arg.startswith("-"):
            taking = not eq and name in names
            if eq and name in names:
                found.append(value)
        elif taking:
            found.append(arg)
    return found


def _positional_model(args: Sequence[str]) -> str:
    for i, arg in enumerate(args[:-1]):
        if arg == "serve" and not args[i + 1].startswith("-"):
            return args[i + 1]
    return ""


def _port_of(container: Mapping[str, Any], args: Sequence[str]) -> int:
    ports = [p for p in container.get("ports") or [] if isinstance(p, dict)]
    named = [p for p in ports if p.get("name") == c.ENGINE_PORT_NAME] or ports
    declared = named[0].get("containerPort") if named else None
    given = _flag(args, "--port")
    for candidate in (given[-1] if given else None, declared):
        if isinstance(candidate, bool):  # YAML's `true` is not port 1
            continue
        with contextlib.suppress(TypeError, ValueError):
            if candidate is not None and 0 < int(candidate) < 65536:
                return int(candidate)
    return c.ENGINE_PORT


def engine_of(pod: Mapping[str, Any]) -> Engine | None:
    """The engine a Pod's `engine` container asks for; None when it has none, or for a
    multi-node group's worker (LeaderWorkerSet's worker index above 0)."""
    spec = pod.get("spec") or {}
    container = next(
        (x for x in spec.get("containers") or [] if x.get("name") == c.ENGINE_CONTAINER), None
    )
    if container is None:
        return None
    if _group_worker(pod):
        # A multi-node group's worker: it joins its leader's engine and serves
        # nothing itself, so a kubelet reports it Ready once it runs (no probe).
        return None
    args = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    model = (_flag(args, "--model", "--model-path") or [_positional_model(args)])[-1]
    model = model or str(((pod.get("metadata") or {}).get("labels") or {}).get("app", "model"))
    served = tuple(_flag(args, "--served-model-name")) or (model,)
    port = _port_of(container, args)
    probe = (container.get("readinessProbe") or {}).get("httpGet") or {}
    given = probe.get("port")
    probe_port = given if isinstance(given, int) and not isinstance(given, bool) else port
    path = str(probe.get("path") or DEFAULT_PROBE_PATH)
    rate, kinds = _failures(args)
    return Engine(model, served, port, path, probe_port, _max_num_seqs(args), rate, kinds)


def _failures(args: Sequence[str]) -> tuple[int | None, tuple[str, ...]]:
    """The double's failure injection the arguments ask for: a rate from 1 to 100 and the
    kinds it knows; anything else is left out (the double then injects nothing)."""
    given = _flag(args, "--failure-injection-rate")
    if not given or not given[-1].isdigit() or not 0 < int(given[-1]) <= 100:
        return None, ()
    kinds = [k for v in _flag(args, "--failure-types") for k in v.split(",")]
    return int(given[-1]), tuple(k for k in kinds if k in FAILURE_TYPES)


def _max_num_seqs(args: Sequence[str]) -> int | None:
    """The last `--max-num-seqs` given, when it is a count the double takes (else its default)."""
    given = _flag(args, "--max-num-seqs")
    if not given or not given[-1].isdigit():
        return None
    value = int(given[-1])
    return value if 0 < value <= MAX_NUM_SEQS else None


def _group_worker(pod: Mapping[str, Any]) -> bool:
    """A LeaderWorkerSet group's worker: labelled so by its webhook (index above 0) and
    made by the group's StatefulSet. A label alone proves nothing: any template may
    carry it, and a kubelet would run that Pod's container like any other."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    owners = meta.get("ownerReferences") or []
    by_set = any(isinstance(o, dict) and o.get("kind") == "StatefulSet" for o in owners)
    return by_set and str(labels.get(LWS_WORKER_INDEX, "0")) != "0"


def double_argv(binary: Path | str, engine: Engine, port: int) -> list[str]:
    """The engine double's command line for one engine, listening on `port`."""
    failures = []
    if engine.failure_rate:
        failures = [f"--failure-injection-rate={engine.failure_rate}"]
        failures += ["--failure-types", *engine.failure_types] if engine.failure_types else []
    return [
        str(binary),
        f"--port={port}",
        f"--model={engine.model}",
        "--served-model-name",
        *engine.served,
        "--force-dummy-tokenizer",
        "--mode=echo",
        *LATENCY_FLAGS,
        *([f"--max-num-seqs={engine.max_num_seqs}"] if engine.max_num_seqs else []),
        *failures,
    ]


def inner_port(engine: Engine) -> int:
    """Where the double listens inside the Pod: a port the container does not declare."""
    return next(p for p in FRONT_UPSTREAM_PORTS if p not in (engine.port, engine.probe_port))


def engine_argv(binary: Path | str, engine: Engine, inner: int | None = None) -> list[str]:
    """One engine's command line: the front on the engine's port, the double behind it
    on `inner` (default `inner_port`; `engine_front`: arguments after `--` go to the
    double)."""
    inner = inner or inner_port(engine)
    return [
        sys.executable,
        "-m",
        "modelplane.dev.engine_front",
        f"--port={engine.port}",
        f"--upstream-port={inner}",
        "--",
        *double_argv(binary, engine, inner),
    ]


@dataclass(frozen=True)
class Launch:
    """What the kubelet runs for a Pod: one container's command line, its probe, its files."""

    container: str
    argv: tuple[str, ...]
    probe_port: int
    probe_path: str
    # Volume contents written before the process starts: path → bytes.
    files: tuple[tuple[str, bytes], ...] = ()


def engine_launch(binary: Path | str, engine: Engine) -> Launch:
    """The engine double for an engine Pod."""
    return Launch(
        c.ENGINE_CONTAINER,
        tuple(engine_argv(binary, engine)),
        engine.probe_port,
        engine.probe_path,
    )


def backoff(restarts: int) -> float:
    """Seconds before the n-th restart of an engine that exited (n >= 1)."""
    return float(min(BACKOFF_FIRST * 2 ** max(restarts - 1, 0), BACKOFF_MAX))


def now() -> str:
    """An RFC 3339 timestamp, as a kubelet writes them."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ready_condition(
    kind: str, ready: bool, at: str, old: Mapping[str, Any], container: str
) -> dict[str, Any]:
    status = "True" if ready else "False"
    same = old.get("status") == status
    cond = {
        "type": kind,
        "status": status,
        "lastTransitionTime": old.get("lastTransitionTime") if same else at,
    }
    if not ready:
        cond["reason"] = "ContainersNotReady"
        cond["message"] = f"containers with unready status: [{container}]"
    return cond


def pod_status(
    pod: Mapping[str, Any], ready: bool, restarts: int, at: str, container: str = c.ENGINE_CONTAINER
) -> dict[str, Any]:
    """The status patch for a Pod the kubelet runs: its Ready conditions, the container's state."""
    status = pod.get("status") or {}
    old = {x.get("type"): x for x in status.get("conditions") or [] if isinstance(x, dict)}
    conditions = [x for k, x in old.items() if k not in ("Ready", "ContainersReady")] + [
        _ready_condition(k, ready, at, old.get(k) or {}, container)
        for k in ("ContainersReady", "Ready")
    ]
    containers = []
    for cs in status.get("containerStatuses") or []:
        if isinstance(cs, dict) and cs.get("name") == container:
            cs = {**cs, "ready": ready, "restartCount": restarts}
        containers.append(cs)
    return {"conditions": conditions, "containerStatuses": containers}


def reported(pod: Mapping[str, Any], container: str = c.ENGINE_CONTAINER) -> tuple[bool, int]:
    """What a Pod's status says now: (Ready, the container's restart count)."""
    status = pod.get("status") or {}
    ready = any(
        x.get("type") == "Ready" and x.get("status") == "True"
        for x in status.get("conditions") or []
        if isinstance(x, dict)
    )
    restarts = next(
        (
            int(x.get("restartCount") or 0)
            for x in status.get("containerStatuses") or []
            if isinstance(x, dict) and x.get("name") == container
        ),
        0,
    )
    return ready, restarts


# Envoy Gateway's proxies: the Pods of the Deployment it makes for each Gateway.
PROXY_SELECTOR = "app.kubernetes.io/component=proxy,app.kubernetes.io/managed-by=envoy-gateway"
PROXY_CONTAINER = "envoy"


def _field(pod: Mapping[str, Any], path: str) -> str:
    """The value of a downward-API fieldRef of the Pod ("" when unset)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if path in ("metadata.name", "metadata.namespace", "metadata.uid"):
        return str(meta.get(path.split(".", 1)[1]) or "")
    if path == "status.podIP":
        return str(status.get("podIP") or "")
    for prefix, source in (("metadata.annotations", "annotations"), ("metadata.labels", "labels")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str((meta.get(source) or {}).get(path[len(prefix) + 2 : -2]) or "")
    return ""


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment: literal values and downward-API fields."""
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not item.get("name"):
            continue
        ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        env[str(item["name"])] = _field(pod, str(ref)) if ref else str(item.get("value") or "")
    return env


def expand(arg: str, env: Mapping[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of one argument ($$ escapes; unknown names stay)."""
    out, i = [], 0
    while i < len(arg):
        if arg.startswith("$$", i):
            out.append("$")
            i += 2
        elif arg.startswith("$(", i) and ")" in arg[i:]:
            close = arg.index(")", i)
            name = arg[i + 2 : close]
            out.append(env.get(name, arg[i : close + 1]))
            i = close + 1
        else:
            out.append(arg[i])
            i += 1
    return "".join(out)


def proxy_launch(
    pod: Mapping[str, Any],
    envoy: Path | str,
    xds_address: str,
    mounts: Mapping[str, Path],
    volumes: Mapping[str, Mapping[str, bytes]],
) -> Launch | None:
    """Envoy for one of Envoy Gateway's proxy Pods, as its container asks.

    The kubelet mounts no file systems: each volume's files are written to a
    directory of the Pod's own (`mounts`: mount path → directory) and every
    mention of a mount path in the arguments and in those files is pointed
    there. The bootstrap's controller address (a Service name the fleet has no
    DNS for) becomes the controller's address on the fleet bridge. Hot
    restart is off: each Envoy has a network namespace, not an IPC one.
    """
    spec = pod.get("spec") or {}
    container = next(
        (x for x in spec.get("containers") or [] if x.get("name") == PROXY_CONTAINER), None
    )
    if container is None:
        return None
    env = container_env(pod, container)

    def relocate(text: str) -> str:
        for path, directory in mounts.items():
            text = text.replace(path.rstrip("/") + "/", f"{directory}/")
        return text.replace(f"{gatewaymod.CONTROLLER_HOST}.", xds_address).replace(
            gatewaymod.CONTROLLER_HOST, xds_address
        )

    args = [relocate(expand(str(a), env)) for a in container.get("args") or []]
    files = tuple(
        (str(mounts[path] / name), relocate(data.decode()).encode())
        for path, by_name in volumes.items()
        for name, data in sorted(by_name.items())
    )
    probe = (container.get("readinessProbe") or {}).get("httpGet") or {}
    given = probe.get("port")
    port = given if isinstance(given, int) and not isinstance(given, bool) else 19003
    return Launch(
        PROXY_CONTAINER,
        (str(envoy), *args, "--disable-hot-restart"),
        port,
        str(probe.get("path") or "/ready"),
        files,
    )


@dataclass
class Running:
    """One Pod the kubelet runs: its namespace, process and history."""

    key: str
    namespace: str
    address: str
    launch: Launch
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0


@dataclass
class Kubelet:
    """Keeps one cluster's engine and proxy Pods, their processes and its load balancers in step."""

    api: Api
    network: netns.Network
    cluster: str
    index: int
    binary: Path
    envoy: Path
    xds_address: str
    logs: Path
    volumes: Path
    pods: dict[str, Running] = field(default_factory=dict)
    balancers: dict[str, str] = field(default_factory=dict)  # address → namespace
    # The cluster's DNS, as far as the fleet plays it: each LoadBalancer
    # Service's name (<name>.<namespace>.svc.cluster.local) → its address.
    names: dict[str, str] = field(default_factory=dict)
    relays: lb.Relays | None = None

    def key(self, pod: Mapping[str, Any]) -> str:
        """A Pod's identity across restarts of the kubelet: cluster/namespace/name/uid."""
        meta = pod.get("metadata") or {}
        return f"{self.cluster}/{meta.get('namespace')}/{meta.get('name')}/{meta.get('uid')}"

    def sync(self) -> None:
        """One pass: start, restart, probe, report and stop as the Pods ask; then the balancers."""
        seen: set[str] = set()
        pods = self.api.list("v1", "Pod", selector=c.LABEL_ROLE)
        pods += self.api.list("v1", "Pod", selector=PROXY_SELECTOR)
        for pod in pods:
            if not _runs_here(pod):
                continue
            key = self.key(pod)
            seen.add(key)
            try:
                self._keep(key, pod)
            except (netns.NetworkError, KubeError, OSError) as err:  # tried again next pass
                print(f"{key}: {err}", file=sys.stderr, flush=True)
        for key in set(self.pods) - seen:
            self._stop(self.pods.pop(key))
        self._balance()

    def _launch(self, key: str, pod: Mapping[str, Any]) -> Launch | None:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if c.LABEL_ROLE in labels:
            engine = engine_of(pod)
            return None if engine is None else engine_launch(self.binary, engine)
        home = self.volumes / self.network.pod_namespace(key)
        mounts, volumes = self._volumes(pod, home)
        return proxy_launch(pod, self.envoy, self.xds_address, mounts, volumes)

    def _volumes(
        self, pod: Mapping[str, Any], home: Path
    ) -> tuple[dict[str, Path], dict[str, dict[str, bytes]]]:
        """The proxy container's Secret and ConfigMap volumes: mount path → directory, files."""
        spec = pod.get("spec") or {}
        ns = (pod.get("metadata") or {}).get("namespace") or ""
        by_name = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
        container: Mapping[str, Any] = next(
            (x for x in spec.get("containers") or [] if x.get("name") == PROXY_CONTAINER), {}
        )
        mounts: dict[str, Path] = {}
        files: dict[str, dict[str, bytes]] = {}
        for mount in container.get("volumeMounts") or []:
            volume = by_name.get(mount.get("name")) or {}
            data = self._volume_data(volume, ns)
            if data is None:
                continue
            mounts[str(mount["mountPath"])] = home / str(mount["name"])
            files[str(mount["mountPath"])] = data
        return mounts, files

    def _volume_data(self, volume: Mapping[str, Any], ns: str) -> dict[str, bytes] | None:
        if "secret" in volume:
            obj = self.api.get("v1", "Secret", volume["secret"]["secretName"], ns) or {}
            return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        if "configMap" in volume:
            obj = self.api.get("v1", "ConfigMap", volume["configMap"]["name"], ns) or {}
            return {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
        return None

    def _keep(self, key: str, pod: Mapping[str, Any]) -> None:
        entry = self.pods.get(key)
        if entry is None:
            launch = self._launch(key, pod)
            if launch is None:
                self._report(pod, True, 0, c.ENGINE_CONTAINER)
                return
            address = str((pod.get("status") or {}).get("podIP"))
            namespace = self.network.attach(key, address)
            entry = self.pods[key] = Running(key, namespace, address, launch)
        self._supervise(entry)
        ready = self._probe(entry)
        self._report(pod, ready, entry.restarts, entry.launch.container)

    def _supervise(self, entry: Running) -> None:
        if entry.proc is not None and entry.proc.poll() is not None:
            entry.proc = None
            entry.restarts += 1
            entry.next_start = time.monotonic() + backoff(entry.restarts)
        if entry.proc is None and time.monotonic() >= entry.next_start:
            entry.proc = self._start(entry)

    def _start(self, entry: Running) -> subprocess.Popen[bytes]:
        for path, data in entry.launch.files:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
        proxy = entry.launch.container == PROXY_CONTAINER
        if proxy:
            self.network.write_hosts(entry.namespace, self.names)
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{entry.launch.container}-{entry.namespace}.log"
        argv = self.network.exec_argv(entry.launch.argv, entry.namespace, hosts=proxy)
        with log.open("ab") as out:
            return subprocess.Popen(  # argv is a list: never a shell
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )

    def _probe(self, entry: Running) -> bool:
        if entry.proc is None or entry.proc.poll() is not None:
            return False
        launch = entry.launch
        code = netns.get(
            self.network, entry.address, launch.probe_port, launch.probe_path, PROBE_TIMEOUT
        )
        return 200 <= code < 400

    def _report(self, pod: Mapping[str, Any], ready: bool, restarts: int, container: str) -> None:
        if reported(pod, container) == (ready, restarts):
            return
        with contextlib.suppress(KubeError):  # moved meanwhile: the next pass reads it again
            self.api.merge_status(pod, pod_status(pod, ready, restarts, now(), container))

    def _stop(self, entry: Running) -> None:
        if entry.proc is not None and entry.proc.poll() is None:
            entry.proc.terminate()
            try:
                entry.proc.wait(5)
            except subprocess.TimeoutExpired:
                entry.proc.kill()
                entry.proc.wait()
        with contextlib.suppress(netns.NetworkError):
            self.network.detach(entry.key)

    # --- load balancers ---------------------------------------------------------------

    def _balance(self) -> None:
        services = [s for s in self.api.list("v1", "Service") if lb.is_balanced(s)]
        taken = {a for s in services if (a := lb.current_address(s))}
        wanted: list[lb.Balancer] = []
        for service in sorted(services, key=lambda s: _name(s)):
            current = lb.current_address(service)
            address = current or lb.address(self.index, taken)
            taken.add(address)
            if current != address:
                with contextlib.suppress(KubeError):
                    self.api.merge_status(service, {"loadBalancer": {"ingress": [{"ip": address}]}})
            ns, name = _name(service).split("/", 1)
            slices = self.api.list(
                "discovery.k8s.io/v1", "EndpointSlice", ns, f"kubernetes.io/service-name={name}"
            )
            wanted.append(lb.Balancer(_name(service), address, lb.ready_endpoints(service, slices)))
        self._hold(wanted)
        names = {
            f"{b.key.split('/')[1]}.{b.key.split('/')[0]}.svc.cluster.local": b.address
            for b in wanted
        }
        if names != self.names:
            self.names = names
            for entry in self.pods.values():
                if entry.launch.container == PROXY_CONTAINER:
                    self.network.write_hosts(entry.namespace, names)

    def _hold(self, wanted: list[lb.Balancer]) -> None:
        addresses = {b.address for b in wanted}
        for address in set(self.balancers) - addresses:
            self.balancers.pop(address)
            with contextlib.suppress(netns.NetworkError):
                self.network.detach(f"{self.cluster}/lb/{address}")
        for address in addresses - set(self.balancers):
            self.balancers[address] = self.network.attach(f"{self.cluster}/lb/{address}", address)
        if wanted or self.relays is not None:
            self.relays = self.relays or lb.Relays(self.network)
            self.relays.apply(wanted, self.balancers)

    def stop_all(self) -> None:
        """Stop every process, relay and namespace."""
        for key in list(self.pods):
            self._stop(self.pods.pop(key))
        if self.relays is not None:
            self.relays.close()
        self._hold([])


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _runs_here(pod: Mapping[str, Any]) -> bool:
    """A Pod this kubelet runs: bound, Running, with an address, not being deleted."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    return (
        not meta.get("deletionTimestamp")
        and status.get("phase") == "Running"
        and bool(status.get("podIP"))
        and bool((pod.get("spec") or {}).get("nodeName"))
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Run the kubelet until SIGTERM; its engines go with it."""
    parser = argparse.ArgumentParser(prog="python -m modelplane.dev.kubelet")
    parser.add_argument("--server", required=True, help="the cluster's API server URL")
    parser.add_argument("--token-file", required=True, type=Path)
    parser.add_argument("--ca-file", required=True, type=Path)
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--fleet", required=True, help="the fleet's id (netns.fleet_id)")
    parser.add_argument("--engine", required=True, type=Path, help="the engine double's binary")
    parser.add_argument("--envoy", required=True, type=Path, help="Envoy's binary")
    parser.add_argument("--xds-address", required=True, help="the cluster's Envoy Gateway")
    parser.add_argument("--index", required=True, type=int, help="the cluster's index")
    parser.add_argument("--logs", required=True, type=Path)
    parser.add_argument("--volumes", required=True, type=Path, help="where Pods' volumes go")
    opts = parser.parse_args(argv)
    kubelet = Kubelet(
        Api(Kubeconfig(opts.cluster, opts.server, opts.ca_file, opts.token_file)),
        netns.Network(opts.fleet),
        opts.cluster,
        opts.index,
        opts.engine,
        opts.envoy,
        opts.xds_address,
        opts.logs,
        opts.volumes,
    )

    def leave(*_: object) -> None:
        kubelet.stop_all()
        sys.exit(0)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGINT, leave)
    while True:
        try:
            kubelet.sync()
        except (KubeError, OSError) as err:  # the API server restarting: try again
            print(f"sync: {err}", file=sys.stderr, flush=True)
        time.sleep(SYNC_SECONDS)


if __name__ == "__main__":
    main()
