"""`modelplane dev up|status|down`: a real control plane and workload clusters as local processes.

One etcd serves every API server under its own prefix. The control plane runs
kube-apiserver, kube-controller-manager (garbage collection and namespaces:
Crossplane v2 deletes composed resources through owner references), Crossplane
core (its Usage webhook a URL webhook on loopback, `dev.xpcore`; the External
package runtime), provider-kubernetes and
`modelplane function serve` over mutual TLS. Each workload cluster is its own
kube-apiserver with the same two controllers. Modelplane is installed through
Crossplane's package manager from the local package cache, and the active
FunctionRevision is pointed at the local function, as the External runtime
expects of whoever runs the function.

Every step checks before it acts, so `up` on a running fleet changes nothing,
`up --clusters N` on a smaller one adds clusters, and a dead process is started
again. The fleet's ports, pids and paths live in `<dir>/state.json`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev import gateway as gatewaymod
from modelplane.dev import lws as lwsmod
from modelplane.dev import netns, pki, procs, release, xpcore, xpkg
from modelplane.dev import nodes as nodesmod
from modelplane.dev import parts as partsmod
from modelplane.dev.kubeapi import Api, Kubeconfig, NotReadyError, condition, wait
from modelplane.dev.nodes import ClusterNodes
from modelplane.kube.client import KubeError

STATE_FILE = "state.json"
# Crossplane's per-XR watch circuit breaker (burst 100, refill 1/s by default)
# trips on a ModelDeployment as it comes up: each of its ModelReplicas and
# ModelEndpoints passes through a dozen status writes and controller-runtime
# charges every update twice (old and new object), about 50 events per replica.
# Once open, the XR is reconciled only every 30 s, which was most of the time
# from the last replica Ready to the deployment Ready. Sized for deployments of
# a few dozen replicas; a runaway loop (hundreds of events a second) still trips.
XR_WATCH_BURST = 1000
XR_WATCH_REFILL = 20

# What an audited API server logs: every write (reads are not the work a
# benchmark attributes), its body for Modelplane's kinds and the Objects they
# compose (to tell which status field changed), the rest by name only.
AUDIT_POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "verbs": ["get", "list", "watch"]},
        {
            "level": "Request",
            "resources": [
                {"group": "modelplane.ai"},
                {"group": "kubernetes.m.crossplane.io"},
            ],
        },
        {"level": "Metadata"},
    ],
}

CONTROL_PLANE = "control-plane"
# The common name of the function's serving certificate (its names: localhost, 127.0.0.1).
FUNCTION_SERVER_NAME = "function-modelplane"
CROSSPLANE_NAMESPACE = "crossplane-system"
# `core start`'s --service-account default: the Deployment runtime reads this
# ServiceAccount (the image pull secrets it hands on to each runtime's), which
# Crossplane's Helm chart creates.
CROSSPLANE_SERVICE_ACCOUNT = "crossplane"
# The parts a control plane alone runs (`Fleet.control_plane`).
CONTROL_PLANE_PARTS = ("etcd", "kubernetes", "kwok", "crossplane")
MODELPLANE_NAMESPACE = "modelplane-system"
# The conversion webhook this CRD names needs the provider's Service, which a
# local process has not: the cluster-scoped Object is left out.
SKIP_CRDS = frozenset({"kubernetes.crossplane.io_objects.yaml"})
SERVICE_RANGE = "10.0.0.0/24"
API_TIMEOUT = 120.0
PACKAGE_TIMEOUT = 300.0
INIT_ATTEMPTS = 5
# provider-kubernetes v1.2.1 binds its metrics and webhook servers here with no
# flag to move them: one local fleet per machine.
PROVIDER_FIXED_PORTS = (8080, 9443)
# provider-kubernetes' flags, those docs/install.md's runtime config gives it
# (tests/package/test_docs.py keeps the two equal): the Objects whose readiness
# reads a status ask to be watched. Its --poll stays the default, 10 minutes:
# polled every 10 s, the Objects' no-op status writes were the control plane's
# largest stream at 50 clusters (benchmarks/bench_fleet_real.py).
PROVIDER_KUBERNETES_FLAGS = ("--enable-watches",)
# What turns a composed Deployment into Pods and a claim template into claims,
# on every cluster: the control plane too runs Pods (its fleet gateway's Envoy
# proxies). No job or persistentvolume-binder controllers: the harness plays the
# hydration Job and its claim, whose Pods could never finish under kwok.
CONTROLLERS = ",".join(
    f"{name}-controller"
    for name in (
        "garbage-collector",
        "namespace",
        "deployment",
        "replicaset",
        # A multi-node replica's worker StatefulSets (made by LeaderWorkerSet).
        "statefulset",
        "resourceclaim",
        "pod-garbage-collector",
        # The engine Pods' addresses, Ready or not, for the gateways to route to.
        "endpointslice",
        # Fills `admin`, `edit` and `view` with the rules of the roles labelled
        # to aggregate to them (Modelplane's own among them).
        "clusterrole-aggregation",
        # The API server's StorageObjectInUseProtection admission gives every
        # claim the `kubernetes.io/pvc-protection` finalizer; without this
        # controller a deleted claim (a cache's copy) never goes.
        "persistentvolumeclaim-protection",
    )
)
KWOK_STAGES = Path(__file__).resolve().parent / "kwok" / "stages.yaml"
# The agent's defaults are a minute and five: a local fleet answers in seconds.
INVENTORY_INTERVAL = "5s"
INVENTORY_GRACE = "20s"

Say = Callable[[str], None]


def workloads(state: State) -> list[str]:
    """The fleet's workload clusters' names."""
    return [c for c in state.clusters if c != CONTROL_PLANE]


def workload_name(index: int) -> str:
    """The name of the index-th workload cluster (1-based)."""
    return f"wl-{index}"


@dataclass
class State:
    """What `up` started and where: read from and written to state.json."""

    directory: Path
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, procs.Proc] = field(default_factory=dict)
    clusters: list[str] = field(default_factory=list)
    started: float = 0.0
    # Function package reference → the process serving it: each FunctionRevision
    # is pointed at the function of its own build (`point_function`).
    functions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: Path) -> State:
        """The saved state, or an empty one for a new directory."""
        path = directory / STATE_FILE
        if not path.is_file():
            return cls(directory)
        data = json.loads(path.read_text())
        return cls(
            directory,
            {k: int(v) for k, v in data.get("ports", {}).items()},
            {k: procs.Proc.from_json(v) for k, v in data.get("procs", {}).items()},
            list(data.get("clusters", [])),
            float(data.get("started", 0.0)),
            {str(k): str(v) for k, v in data.get("functions", {}).items()},
        )

    def save(self) -> None:
        """Write state.json (atomically)."""
        data = {
            "ports": self.ports,
            "procs": {k: p.to_json() for k, p in self.procs.items()},
            "clusters": self.clusters,
            "started": self.started,
            "functions": self.functions,
        }
        tmp = self.directory / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        tmp.replace(self.directory / STATE_FILE)

    def port(self, name: str) -> int:
        """A port kept for one listener, chosen on first use."""
        if name not in self.ports:
            taken = set(self.ports.values())
            self.ports[name] = next(p for p in procs.free_ports(8) if p not in taken)
        return self.ports[name]

    def endpoints(self) -> dict[str, str]:
        """Function package reference → the address of the process serving it."""
        return {ref: f"127.0.0.1:{self.ports[name]}" for ref, name in self.functions.items()}

    def function_metrics(self) -> list[dict[str, Any]]:
        """How to read each function process's metrics: over mutual TLS on the host's
        loopback (not the fleet network's; its certificate names 127.0.0.1), with the
        client certificate Crossplane calls the function with."""
        out = []
        for ref, name in sorted(self.functions.items(), key=lambda kv: kv[1]):
            port = self.ports.get(f"{name}-metrics")
            if port is None:
                continue
            url = f"https://127.0.0.1:{port}/metrics"
            ca, client = self.pki / "function" / "ca.crt", self.pki / "crossplane"
            out.append(
                {
                    "process": name,
                    "package": ref,
                    "url": url,
                    "curl": [
                        "curl",
                        "-sS",
                        "--cacert",
                        str(ca),
                        "--cert",
                        str(client / "tls.crt"),
                        "--key",
                        str(client / "tls.key"),
                        url,
                    ],
                }
            )
        return out

    @property
    def pki(self) -> Path:
        """The certificates directory."""
        return self.directory / "pki"

    @property
    def logs(self) -> Path:
        """Where every process writes its log."""
        return self.directory / "logs"

    def kubeconfig(self, cluster: str) -> Kubeconfig:
        """The admin credentials of one cluster."""
        return Kubeconfig(
            cluster,
            f"https://127.0.0.1:{self.ports[f'{cluster}-apiserver']}",
            self.pki / "ca.crt",
            self.pki / "token",
        )

    def kubeconfig_path(self, cluster: str) -> Path:
        """The kubeconfig file of one cluster."""
        return self.directory / "kubeconfig" / f"{cluster}.yaml"

    def api(self, cluster: str) -> Api:
        """A client of one cluster's API server."""
        return Api(self.kubeconfig(cluster))


class Fleet:
    """Bring a local fleet up, report on it and take it down."""

    def __init__(
        self,
        directory: Path,
        say: Say | None = None,
        audit: bool = False,
        breaker: tuple[int, float] = (XR_WATCH_BURST, XR_WATCH_REFILL),
        provider_poll: str | None = None,
    ) -> None:
        """A fleet kept in `directory`; with `audit`, every API server it starts logs
        each write it serves (`audit_log`), which is what a benchmark attributes
        the control plane's work from. `breaker` is Crossplane's XR watch circuit
        breaker (burst, refill per second) when this call starts it;
        `provider_poll` a provider-kubernetes `--poll` other than its default,
        for a release that needs one (a previous release under test)."""
        self.directory = directory.resolve()
        self.say: Say = say or (lambda _m: None)
        self.audit = audit
        self.breaker = breaker
        self.provider_poll = provider_poll
        self.network = netns.Network(netns.fleet_id(self.directory))

    @property
    def package_cache(self) -> Path:
        """Crossplane's package cache (`--cache-dir`): where `offer_packages` puts a build."""
        return self.directory / "xpkg"

    # --- up ------------------------------------------------------------------------

    def up(
        self,
        clusters: int = 2,
        nodes: Sequence[ClusterNodes] = (),
        build: release.Build | None = None,
    ) -> dict[str, Any]:
        """Start whatever is not running yet and wait until Modelplane is installed.

        `nodes` are the fake GPU nodes each workload cluster publishes (a fleet
        file's pools); clusters it does not name get only the system node.
        `build` is what is installed: this checkout's unless told (`dev.release`).
        """
        build = build or release.current()
        self.directory.mkdir(parents=True, exist_ok=True)
        built = partsmod.build_all(progress=self.say)
        state = State.load(self.directory)
        state.started = state.started or time.time()
        self._pki(state)
        wanted = [CONTROL_PLANE] + [workload_name(i + 1) for i in range(clusters)]
        state.clusters = list(dict.fromkeys(state.clusters + wanted))
        if self.network.up():
            self.say(f"made the fleet network {self.network.name}")
        # Envoy Gateway reads its certificates at this fixed path; each
        # controller sees its own there through a bind mount of its own.
        gatewaymod.CERTS_MOUNT.mkdir(exist_ok=True)
        self._etcd(state, built)
        for cluster in state.clusters:
            self._apiserver(state, built, cluster)
        for cluster in state.clusters:
            self._controllers(state, built, cluster)
        for cluster in state.clusters:
            self._scheduler(state, built, cluster)
            self._kwok(state, built, cluster)
            self._envoy_gateway(state, built, cluster)
            self._kubelet(state, built, cluster)
        for cluster in workloads(state):
            self._inventory(state, cluster)
        self._nodes(state, nodes)
        self._workload_crds(state, built)
        for cluster in workloads(state):
            self._lws(state, built, cluster)
        self._crossplane(state, built)
        self._provider_crds(state, built)
        self._provider_kubernetes(state, built)
        self._function(state, FUNCTION_PROC, build)
        self._install(state, build)
        self._workload_secrets(state)
        self._player(state)
        state.save()
        return self.status()

    def control_plane(self, runtime: str) -> State:
        """Start the control plane alone, its Crossplane core on package runtime `runtime`:
        the processes `up` starts for it first, and its system node.

        No workload clusters, network, providers, function or packages: what shows
        how Crossplane itself runs a package (`xpcore.DEPLOYMENT`). `down` stops it.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        built = {
            name: partsmod.build(partsmod.parts()[name], progress=self.say)
            for name in CONTROL_PLANE_PARTS
        }
        state = State.load(self.directory)
        state.started = state.started or time.time()
        state.clusters = list(dict.fromkeys([*state.clusters, CONTROL_PLANE]))
        self._pki(state)
        self._etcd(state, built)
        self._apiserver(state, built, CONTROL_PLANE)
        self._controllers(state, built, CONTROL_PLANE)
        self._scheduler(state, built, CONTROL_PLANE)
        self._kwok(state, built, CONTROL_PLANE)
        nodesmod.publish(state.api(CONTROL_PLANE), ())
        self._crossplane(state, built, runtime)
        state.save()
        return state

    def _ensure(
        self,
        state: State,
        name: str,
        argv: list[str],
        env: dict[str, str] | None = None,
        exe: str | None = None,
    ) -> bool:
        """Start a process unless it already runs; True when it was started now."""
        running = state.procs.get(name)
        if running and running.alive():
            return False
        self.say(f"starting {name}")
        state.procs[name] = procs.start(name, argv, state.logs, env, cwd=self.directory, exe=exe)
        state.save()
        return True

    def _wait_alive(
        self, state: State, name: str, what: str, probe: Callable[[], bool], timeout: float
    ) -> None:
        proc = state.procs[name]

        def check() -> bool | None:
            if not proc.alive():
                raise FleetError(
                    f"{name} exited while waiting for {what}; {proc.log}:\n{proc.log_tail()}"
                )
            return True if probe() else None

        try:
            wait(what, check, timeout, interval=0.5)
        except NotReadyError as err:
            raise FleetError(f"{err}; {proc.log}:\n{proc.log_tail()}") from err

    def _pki(self, state: State) -> None:
        if (state.pki / "ca.crt").is_file():
            return
        ca = pki.CA.create()
        ca.write(state.pki)
        ca.issue(state.pki / "apiserver", "127.0.0.1", server=True, client=False)
        ca.issue(state.pki / "function", FUNCTION_SERVER_NAME, server=True, client=False)
        ca.issue(state.pki / "crossplane", "crossplane", server=False, client=True)
        ca.issue(
            state.pki / "provider-kubernetes", "provider-kubernetes", server=True, client=False
        )
        pki.write_signing_key(state.pki / "service-accounts.key")
        token = pki.new_token()
        (state.pki / "token").write_text(token + "\n")
        (state.pki / "token").chmod(0o600)
        (state.pki / "tokens.csv").write_text(f"{token},admin,admin,system:masters\n")
        (state.pki / "tokens.csv").chmod(0o600)

    def _etcd(self, state: State, built: dict[str, Path]) -> None:
        client, peer = state.port("etcd-client"), state.port("etcd-peer")
        argv = [
            str(partsmod.binary(built, "etcd", "etcd")),
            "--name=modelplane-dev",
            f"--data-dir={self.directory / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=modelplane-dev=http://127.0.0.1:{peer}",
            # A throwaway development store: durability is not worth the disk syncs.
            "--unsafe-no-fsync",
            "--quota-backend-bytes=4294967296",
        ]
        if self._ensure(state, "etcd", argv):
            self._wait_alive(state, "etcd", "etcd to listen", lambda: procs.listening(client), 60)

    def _apiserver(self, state: State, built: dict[str, Path], cluster: str) -> None:
        port = state.port(f"{cluster}-apiserver")
        tls = state.pki / "apiserver"
        argv = [
            str(partsmod.binary(built, "kubernetes", "kube-apiserver")),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={tls / 'tls.crt'}",
            f"--tls-private-key-file={tls / 'tls.key'}",
            f"--client-ca-file={state.pki / 'ca.crt'}",
            f"--token-auth-file={state.pki / 'tokens.csv'}",
            # Every fleet process authenticates as `admin` in system:masters, which
            # RBAC never denies; anyone else gets only what a role grants.
            "--authorization-mode=Node,RBAC",
            f"--etcd-servers=http://127.0.0.1:{state.ports['etcd-client']}",
            # Every cluster shares the one etcd under its own prefix.
            f"--etcd-prefix=/modelplane-dev/{cluster}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--service-account-issuer=https://127.0.0.1:{port}",
            f"--service-account-key-file={state.pki / 'service-accounts.key'}",
            f"--service-account-signing-key-file={state.pki / 'service-accounts.key'}",
            # No kubelet or kube-proxy: nothing to reconcile endpoints for, no
            # ServiceAccount token controller behind the admission plugin.
            "--endpoint-reconciler-type=none",
            # TaintNodesByCondition taints every new Node not-ready until the
            # node lifecycle controller, which is not run, sees it Ready; kwok
            # reports the fake nodes Ready from the start.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true",
            f"--cert-dir={self.directory / 'apiserver' / cluster}",
            "--profiling=false",
            *self._audit_flags(cluster),
        ]
        started = self._ensure(state, f"{cluster}-apiserver", argv)
        api = state.api(cluster)
        if started:
            self._wait_alive(
                state, f"{cluster}-apiserver", f"{cluster}'s API server", api.healthy, API_TIMEOUT
            )
        path = state.kubeconfig_path(cluster)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(state.kubeconfig(cluster).text())
        path.chmod(0o600)

    def audit_log(self, cluster: str) -> Path:
        """Where `cluster`'s API server logs the writes it serves (with `audit`)."""
        return self.directory / "audit" / f"{cluster}.log"

    def _audit_flags(self, cluster: str) -> list[str]:
        if not self.audit:
            return []
        policy = self.directory / "audit" / "policy.yaml"
        policy.parent.mkdir(parents=True, exist_ok=True)
        policy.write_text(yaml.safe_dump(AUDIT_POLICY, sort_keys=False))
        return [
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log(cluster)}",
            "--audit-log-format=json",
            "--audit-log-maxsize=0",
            # Written as served: a benchmark reads the log right after the writes.
            "--audit-log-mode=blocking",
        ]

    def _controllers(self, state: State, built: dict[str, Path], cluster: str) -> None:
        controllers = CONTROLLERS
        argv = [
            str(partsmod.binary(built, "kubernetes", "kube-controller-manager")),
            *_component_flags(state, cluster, "controllers"),
            f"--cert-dir={self.directory / 'controllers' / cluster}",
            f"--controllers={controllers}",
            "--use-service-account-credentials=false",
        ]
        self._ensure(state, f"{cluster}-controllers", argv)

    def _scheduler(self, state: State, built: dict[str, Path], cluster: str) -> None:
        argv = [
            str(partsmod.binary(built, "kubernetes", "kube-scheduler")),
            *_component_flags(state, cluster, "scheduler"),
        ]
        self._ensure(state, f"{cluster}-scheduler", argv)

    def _kwok(self, state: State, built: dict[str, Path], cluster: str) -> None:
        argv = [
            str(partsmod.binary(built, "kwok", "kwok")),
            f"--kubeconfig={state.kubeconfig_path(cluster)}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={nodesmod.KWOK_ANNOTATION}={nodesmod.KWOK_VALUE}",
            "--node-ip=127.0.0.1",
            f"--node-port={state.port(f'{cluster}-kwok-node')}",
            f"--server-address=127.0.0.1:{state.port(f'{cluster}-kwok')}",
            f"--cidr={netns.kwok_cidr(state.clusters.index(cluster))}",
            f"--config={KWOK_STAGES}",
        ]
        self._ensure(state, f"{cluster}-kwok", argv)

    def _kubelet(self, state: State, built: dict[str, Path], cluster: str) -> None:
        """The engine kubelet: a real engine process for each engine Pod of the cluster."""
        argv = [
            sys.executable,
            "-m",
            "modelplane.dev.kubelet",
            *_api_flags(state, cluster),
            f"--cluster={cluster}",
            f"--fleet={self.network.ident}",
            f"--engine={partsmod.binary(built, 'llm-d-inference-sim', 'llm-d-inference-sim')}",
            f"--envoy={partsmod.wheel_binary(partsmod.parts()['envoy'])}",
            f"--xds-address={gatewaymod.controller_address(state.clusters.index(cluster))}",
            f"--index={state.clusters.index(cluster)}",
            f"--logs={state.logs}",
            f"--volumes={self.directory / 'volumes' / cluster}",
        ]
        self._ensure(state, f"{cluster}-kubelet", argv)

    def _lws(self, state: State, built: dict[str, Path], cluster: str) -> None:
        """The LeaderWorkerSet controller of one workload cluster (`dev.lws`): its
        certificate, configuration and process, then its webhooks as URL webhooks."""
        home = self.directory / "lws" / cluster
        certs = home / "certs"
        if not (certs / "tls.crt").is_file():
            pki.CA.load(state.pki).issue(certs, "127.0.0.1", server=True, client=False)
        webhook = state.port(f"{cluster}-lws-webhook")
        health = state.port(f"{cluster}-lws-health")
        conf = lwsmod.config(webhook, state.port(f"{cluster}-lws-metrics"), health, certs)
        (home / "config.yaml").write_text(yaml.safe_dump(conf, sort_keys=False))
        api = state.api(cluster)
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": lwsmod.NAMESPACE}})
        argv = [str(partsmod.binary(built, "lws", "lws")), f"--config={home / 'config.yaml'}"]
        env = {"KUBECONFIG": str(state.kubeconfig_path(cluster))}
        self._ensure(state, f"{cluster}-lws", argv, env)
        self._wait_alive(
            state,
            f"{cluster}-lws",
            f"{cluster}'s LeaderWorkerSet controller",
            lambda: procs.listening(webhook),
            API_TIMEOUT,
        )
        for doc in lwsmod.webhook_configurations(
            built["lws"] / "webhook", webhook, (state.pki / "ca.crt").read_bytes()
        ):
            api.apply(doc)

    def _envoy_gateway(self, state: State, built: dict[str, Path], cluster: str) -> None:
        """Envoy Gateway for one cluster: its CRDs and certificates, then the controller
        in a network namespace of its own, its API server relayed there (`dev.portal`)."""
        name, portal = f"{cluster}-envoy-gateway", f"{cluster}-envoy-gateway-portal"
        running = [state.procs.get(n) for n in (name, portal)]
        if all(p is not None and p.alive() for p in running):
            return
        for proc in running:  # the two go together: restart both
            if proc is not None:
                procs.stop(proc)
        api = state.api(cluster)
        for doc in gatewaymod.crd_documents(built["envoy-gateway-crds"] / "crds"):
            api.apply(doc)
        for group in ("gateway.networking.k8s.io", "gateway.envoyproxy.io"):
            wait_established(api, group, API_TIMEOUT)
        api.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": gatewaymod.NAMESPACE}}
        )
        home = self.directory / "envoy-gateway" / cluster
        env = {"KUBECONFIG": str(state.kubeconfig_path(cluster))}
        binary = str(partsmod.binary(built, "envoy-gateway", "envoy-gateway"))
        # certgen writes the controller's and the proxies' certificates as
        # Secrets, and leaves existing ones alone.
        _run_once(
            f"{cluster}-envoy-gateway-certgen",
            [binary, "certgen", "--disable-topology-injector"],
            env,
            state.logs,
        )
        secret = api.get("v1", "Secret", gatewaymod.CONTROLLER_SECRET, gatewaymod.NAMESPACE) or {}
        (home / "certs").mkdir(parents=True, exist_ok=True)
        for file, data in gatewaymod.certificate_files(secret).items():
            (home / "certs" / file).write_bytes(data)
            (home / "certs" / file).chmod(0o600)
        (home / "config.yaml").write_text(yaml.safe_dump(gatewaymod.config(), sort_keys=False))
        index = state.clusters.index(cluster)
        ns = self.network.attach(f"{cluster}/envoy-gateway", gatewaymod.controller_address(index))
        port = state.ports[f"{cluster}-apiserver"]
        self._ensure(state, portal, [sys.executable, "-m", "modelplane.dev.portal", str(port), ns])
        wait(
            f"{cluster}'s API server inside {ns}",
            lambda: True if netns.listening(ns, port) else None,
            API_TIMEOUT,
            interval=0.1,
        )
        argv = self.network.exec_argv(
            [
                "unshare",
                "--mount",
                "--propagation",
                "private",
                sys.executable,
                "-m",
                "modelplane.dev.binds",
                f"{home / 'certs'}:{gatewaymod.CERTS_MOUNT}",
                "--",
                binary,
                "server",
                f"--config-path={home / 'config.yaml'}",
            ],
            ns,
        )
        self._ensure(state, name, argv, env, exe=binary)

    def _inventory(self, state: State, cluster: str) -> None:
        """The inventory agent against the cluster, as its Deployment would run it: scraping
        the engines (inside the fleet's network) while the cluster's InferenceCluster says
        `engineMetrics: true`."""
        argv = [
            sys.executable,
            "-m",
            "modelplane",
            "dev",
            "inventory",
            *_api_flags(state, cluster),
            f"--control-plane={state.kubeconfig(CONTROL_PLANE).server}",
            f"--cluster={cluster}",
            f"--netns={self.network.name}",
            f"--interval={INVENTORY_INTERVAL}",
            f"--grace={INVENTORY_GRACE}",
        ]
        self._ensure(state, f"{cluster}-inventory", argv)

    def _nodes(self, state: State, nodes: Sequence[ClusterNodes]) -> None:
        by_cluster = {n.cluster: n.pools for n in nodes}
        unknown = sorted(set(by_cluster) - set(workloads(state)))
        if unknown:
            raise FleetError(
                f"the fleet file names clusters {unknown} this fleet has not "
                f"(it has {workloads(state)}): run up with more --clusters"
            )
        for cluster in workloads(state):
            api = state.api(cluster)
            wait(f"{cluster}'s API server", partial(_healthy, api), API_TIMEOUT)
            # The agent writes its ConfigMap there; the serving stack would create it.
            system = {"name": MODELPLANE_NAMESPACE}
            api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": system})
            nodesmod.publish(api, by_cluster.get(cluster, ()))
        # The control plane's system node, for its fleet gateway's proxies.
        nodesmod.publish(state.api(CONTROL_PLANE), ())

    def _workload_crds(self, state: State, built: dict[str, Path]) -> None:
        """The CRDs of what the serving stack's Helm releases would install: cert-manager's
        (played) and LeaderWorkerSet's (its controller runs, `_lws`)."""
        folders = [built["cert-manager"] / "crds", built["lws"] / "crds"]
        docs = [
            d
            for folder in folders
            for path in sorted(folder.glob("*.yaml"))
            for d in yaml.safe_load_all(path.read_text())
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
        ]
        for cluster in workloads(state):
            api = state.api(cluster)
            for doc in docs:
                api.apply(doc)
            for group in ("cert-manager.io", "leaderworkerset.x-k8s.io"):
                wait_established(api, group, API_TIMEOUT)

    def _player(self, state: State) -> None:
        """The controllers the fleet still lacks, played on every cluster (`dev.player`)."""
        argv = [
            sys.executable,
            "-m",
            "modelplane.dev.player",
            *(f"--server={c}={state.kubeconfig(c).server}" for c in state.clusters),
            f"--token-file={state.pki / 'token'}",
            f"--ca-file={state.pki / 'ca.crt'}",
        ]
        # Restarted when clusters were added, so that it plays them too.
        marker = self.directory / "player.clusters"
        running = state.procs.get("player")
        if running is not None and marker.is_file() and marker.read_text() != str(state.clusters):
            procs.stop(running)
        marker.write_text(str(state.clusters))
        self._ensure(state, "player", argv)

    def _crossplane(
        self, state: State, built: dict[str, Path], runtime: str = xpcore.EXTERNAL
    ) -> None:
        api = state.api(CONTROL_PLANE)
        api.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CROSSPLANE_NAMESPACE}}
        )
        if runtime != xpcore.EXTERNAL:
            api.apply(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": CROSSPLANE_SERVICE_ACCOUNT,
                        "namespace": CROSSPLANE_NAMESPACE,
                    },
                }
            )
        xp = str(partsmod.binary(built, "crossplane", "crossplane"))
        env = {
            "KUBECONFIG": str(state.kubeconfig_path(CONTROL_PLANE)),
            "POD_NAMESPACE": CROSSPLANE_NAMESPACE,
        }
        if not (self.directory / "crossplane-init.done").is_file():
            self.say("crossplane core init")
            # By environment: kong derives odd flag names from these fields
            # (--cr-ds-path, --tlsca-secret-name); the variables are what the chart sets.
            init_env = {
                **env,
                "CRDS_PATH": str(built["crossplane"] / "crds"),
                # Off for init only: on, it would issue a certificate for a
                # Service and register webhooks naming it. `core start` serves
                # them, registered below as URL webhooks (`dev.xpcore`).
                "ENABLE_WEBHOOKS": "false",
                # init always writes these Secrets; the local fleet does not read them.
                "TLS_CA_SECRET_NAME": "crossplane-root-ca",
                "TLS_CLIENT_SECRET_NAME": "crossplane-tls-client",
                "TLS_SERVER_SECRET_NAME": "crossplane-tls-server",
            }
            # init applies the core CRDs and then objects of those kinds; its
            # client can miss a CRD that is not served yet. It is idempotent.
            for attempt in range(INIT_ATTEMPTS):
                try:
                    _run_once("crossplane-init", [xp, "core", "init"], init_env, state.logs)
                    break
                except FleetError:
                    if attempt == INIT_ATTEMPTS - 1:
                        raise
                    time.sleep(2)
            (self.directory / "crossplane-init.done").write_text("")
        certs = state.pki / "crossplane-webhook"
        if not (certs / "tls.crt").is_file():
            pki.CA.load(state.pki).issue(certs, "127.0.0.1", server=True, client=False)
        webhook = state.port("crossplane-webhook")
        start = xpcore.start_argv(
            xp,
            cache_dir=self.package_cache,
            client_certs=state.pki / "crossplane",
            server_certs=certs,
            ports={
                "metrics": state.port("crossplane-metrics"),
                "health": state.port("crossplane-health"),
                "webhook": webhook,
            },
            extra=[
                "--poll-interval=10s",
                f"--circuit-breaker-burst={self.breaker[0]}",
                f"--circuit-breaker-refill-rate={self.breaker[1]:g}",
            ],
            runtime=runtime,
        )
        self.package_cache.mkdir(exist_ok=True)
        self._ensure(state, "crossplane", start, env)
        self._crossplane_webhooks(state, webhook)

    def _crossplane_webhooks(self, state: State, port: int) -> None:
        """Wait for Crossplane's webhook server, then register the release's own
        webhook configurations as URL webhooks (`dev.xpcore`), as `core init`
        would for a Service."""
        self._wait_alive(
            state,
            "crossplane",
            "Crossplane's webhook server",
            lambda: procs.listening(port),
            API_TIMEOUT,
        )
        part = partsmod.parts()["crossplane"]
        folder = partsmod.module_dir(part.module, part.version) / xpcore.WEBHOOK_CONFIGURATIONS
        ca = (state.pki / "ca.crt").read_bytes()
        for doc in xpcore.webhook_configurations(folder, port, ca):
            state.api(CONTROL_PLANE).apply(doc)

    def _provider_crds(self, state: State, built: dict[str, Path]) -> None:
        api = state.api(CONTROL_PLANE)
        for part in ("provider-kubernetes", "provider-helm"):
            for crd_file in sorted((built[part] / "crds").glob("*.yaml")):
                if crd_file.name in SKIP_CRDS:
                    continue
                for doc in yaml.safe_load_all(crd_file.read_text()):
                    if doc:
                        api.apply(doc)
        wait_established(api, "kubernetes.m.crossplane.io", PACKAGE_TIMEOUT)

    def _provider_kubernetes(self, state: State, built: dict[str, Path]) -> None:
        provider = str(partsmod.binary(built, "provider-kubernetes", "provider"))
        argv = [
            provider,
            *PROVIDER_KUBERNETES_FLAGS,
            *([f"--poll={self.provider_poll}"] if self.provider_poll else []),
            f"--health-probe-bind-addr=127.0.0.1:{state.port('provider-kubernetes-health')}",
        ]
        env = {
            "KUBECONFIG": str(state.kubeconfig_path(CONTROL_PLANE)),
            "TLS_SERVER_CERTS_DIR": str(state.pki / "provider-kubernetes"),
            # InjectedIdentity (the InferenceGateway's objects on the control
            # plane itself) reads these and the token a pod would have.
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(state.ports[f"{CONTROL_PLANE}-apiserver"]),
        }
        if shutil.which("unshare"):
            argv = [
                "unshare",
                "--mount",
                "--map-root-user",
                "--",
                sys.executable,
                "-m",
                "modelplane.dev.injected",
                str(state.pki),
                "--",
                *argv,
            ]
        else:
            self.say("unshare not found: InjectedIdentity provider configs will not work")
        running = state.procs.get("provider-kubernetes")
        if not (running and running.alive()):
            busy = [p for p in PROVIDER_FIXED_PORTS if procs.listening(p)]
            if busy:
                raise FleetError(
                    f"provider-kubernetes binds ports {', '.join(map(str, PROVIDER_FIXED_PORTS))} "
                    f"(it has no flags to move them) and {busy} already in use: "
                    "stop what listens there (another `modelplane dev` fleet?) and run up again"
                )
        health = state.ports["provider-kubernetes-health"]
        if self._ensure(state, "provider-kubernetes", argv, env, exe=provider):
            self._wait_alive(
                state,
                "provider-kubernetes",
                "provider-kubernetes to serve its health probe",
                lambda: procs.listening(health),
                API_TIMEOUT,
            )

    def _function(self, state: State, name: str, build: release.Build) -> None:
        """Serve one build's function as process `name`, with its metrics on a port of its own
        (what shows which process Crossplane calls)."""
        port = state.port(name)
        argv = [
            sys.executable,
            "-m",
            "modelplane",
            "function",
            "serve",
            f"--address=127.0.0.1:{port}",
            f"--tls-certs-dir={state.pki / 'function'}",
            f"--metrics-port={state.port(f'{name}-metrics')}",
            "--metrics-address=127.0.0.1",
        ]
        state.functions[build.function.reference] = name
        if self._ensure(state, name, argv, build.env()):
            self._wait_alive(
                state, name, "the function to listen", lambda: procs.listening(port), 60
            )

    def offer_packages(self, api: Api, build: release.Build) -> None:
        """Put a build's packages in Crossplane's package cache and wait until its package
        kinds are served: then a Function or Configuration of `xpkg.package_objects` installs."""
        xpkg.write_cache(self.package_cache, build.packages)
        wait(
            "Crossplane's package CRDs",
            lambda: api.get(
                "apiextensions.k8s.io/v1", "CustomResourceDefinition", "functions.pkg.crossplane.io"
            ),
            API_TIMEOUT,
        )
        wait_established(api, "pkg.crossplane.io", API_TIMEOUT)

    def _install(self, state: State, build: release.Build) -> None:
        api = state.api(CONTROL_PLANE)
        function, configuration = build.packages
        self.offer_packages(api, build)
        tls = state.pki / "function"
        api.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": FUNCTION_TLS_SECRET, "namespace": CROSSPLANE_NAMESPACE},
                "type": "kubernetes.io/tls",
                "stringData": {
                    "tls.crt": (tls / "tls.crt").read_text(),
                    "tls.key": (tls / "tls.key").read_text(),
                    "ca.crt": (tls / "ca.crt").read_text(),
                },
            }
        )
        self.say("installing Modelplane through Crossplane's package manager")
        api.apply_all(xpkg.package_objects(function, configuration))
        self._wait_installed(api, state, build)

    def install(self, build: release.Build, configuration_first: bool = False) -> None:
        """Change the installed packages to `build` through Crossplane's package manager.

        The build's function is served by a process of its own (started unless it
        runs), its packages are put in the cache, and each package's
        `spec.package` is changed to the build's digest, one package after the
        other as docs/upgrade.md says: the Function first, or the Configuration
        first (a rollback), the second once the first's new revision is the
        active one and healthy. Returns once both are, every XRD Established.
        """
        self.serve(build)
        state = State.load(self.directory)
        xpkg.write_cache(self.package_cache, build.packages)
        objects = xpkg.package_objects(*build.packages)
        api = state.api(CONTROL_PLANE)
        endpoints = state.endpoints()
        for obj in reversed(objects) if configuration_first else objects:
            kind, package = str(obj["kind"]), str(obj["spec"]["package"])  # type: ignore[index]
            self.say(f"changing the {kind} to {package}")
            api.apply(obj)
            wait(
                f"the {kind}'s revision of {package} active and healthy",
                partial(_took_over, api, endpoints, kind, _digest(package)),
                PACKAGE_TIMEOUT,
                interval=1.0,
            )
            if kind == "Configuration":
                # The API server serves (and prunes to) an XRD's schema only once
                # Crossplane has written it into the CRD: until then a function
                # would be sent fields of the other release's schema.
                wait(
                    "every XRD's schema served by its CRD",
                    partial(crds_follow_xrds, api),
                    PACKAGE_TIMEOUT,
                    interval=1.0,
                )
        self._wait_installed(api, state, build)

    def serve(self, build: release.Build) -> str:
        """Serve a build's function as a process of its own (unless one runs); its name."""
        state = State.load(self.directory)
        name = state.functions.get(build.function.reference) or (
            f"{FUNCTION_PROC}-{build.function.digest.removeprefix('sha256:')[:12]}"
        )
        self._function(state, name, build)
        state.save()
        return name

    def _wait_installed(self, api: Api, state: State, build: release.Build) -> None:
        endpoints = state.endpoints()
        wait(
            "the FunctionRevision to point at the local function",
            lambda: point_function(api, endpoints),
            PACKAGE_TIMEOUT,
        )
        self._wait_healthy(api, state, build)

    def _wait_healthy(self, api: Api, state: State, build: release.Build) -> None:
        endpoints = state.endpoints()

        def installed() -> bool | None:
            point_function(api, endpoints)  # the revision reconciler may have rewritten it
            fn = api.get("pkg.crossplane.io/v1", "Function", xpkg.FUNCTION_NAME)
            conf = api.get("pkg.crossplane.io/v1", "Configuration", xpkg.CONFIGURATION_NAME)
            if condition(fn, "Healthy") != "True" or condition(conf, "Healthy") != "True":
                return None
            if active_packages(api) != {build.function.digest, build.configuration.digest}:
                return None
            xrds = api.list("apiextensions.crossplane.io/v2", "CompositeResourceDefinition")
            if not xrds or any(condition(x, "Established") != "True" for x in xrds):
                return None
            return True

        try:
            wait(
                "the Function and Configuration to be Healthy and every XRD Established",
                installed,
                PACKAGE_TIMEOUT,
                interval=2.0,
            )
        except NotReadyError as err:
            raise FleetError(f"{err}\n{package_report(api)}") from err

    def _workload_secrets(self, state: State) -> None:
        api = state.api(CONTROL_PLANE)
        api.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MODELPLANE_NAMESPACE}}
        )
        for cluster in state.clusters:
            if cluster == CONTROL_PLANE:
                continue
            api.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": f"{cluster}-kubeconfig",
                        "namespace": MODELPLANE_NAMESPACE,
                    },
                    "type": "Opaque",
                    "stringData": {"kubeconfig": state.kubeconfig(cluster).portable_text()},
                }
            )

    # --- status and down -------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Where each cluster's kubeconfig, gateways and logs are, and what runs."""
        state = State.load(self.directory)
        return {
            "directory": str(self.directory),
            "controlPlane": {
                "name": CONTROL_PLANE,
                "kubeconfig": str(state.kubeconfig_path(CONTROL_PLANE)),
                "server": state.kubeconfig(CONTROL_PLANE).server if state.ports else "",
                "gateways": _gateways(state, CONTROL_PLANE) if state.ports else [],
            },
            "clusters": [
                {
                    "name": c,
                    "kubeconfig": str(state.kubeconfig_path(c)),
                    "server": state.kubeconfig(c).server,
                    "secret": f"{MODELPLANE_NAMESPACE}/{c}-kubeconfig",
                    "gateways": _gateways(state, c),
                }
                for c in state.clusters
                if c != CONTROL_PLANE
            ],
            "network": {
                "namespace": self.network.name,
                "exists": self.network.exists(),
                "podCIDRs": {
                    c: netns.pod_cidr(i) for i, c in enumerate(state.clusters) if c != CONTROL_PLANE
                },
            },
            "functions": state.function_metrics(),
            "logs": str(state.logs),
            "processes": {
                name: {"pid": p.pid, "running": p.alive(), "log": p.log}
                for name, p in state.procs.items()
            },
        }

    def down(self) -> list[str]:
        """Stop every process (newest first) and remove the fleet's directory."""
        state = State.load(self.directory)
        stopped = []
        for name, proc in reversed(list(state.procs.items())):
            procs.stop(proc)
            stopped.append(name)
        if self.network.down():
            stopped.append(f"network {self.network.name}")
        if (self.directory / STATE_FILE).is_file() or self.directory.is_dir():
            shutil.rmtree(self.directory, ignore_errors=True)
        return stopped


def _api_flags(state: State, cluster: str) -> list[str]:
    """How a fleet process that is not a Kubernetes component reaches a cluster's API server."""
    return [
        f"--server={state.kubeconfig(cluster).server}",
        f"--token-file={state.pki / 'token'}",
        f"--ca-file={state.pki / 'ca.crt'}",
    ]


def _gateways(state: State, cluster: str) -> list[dict[str, Any]]:
    """Each Gateway of a cluster with the addresses its controller reports (inside the
    fleet network); [] when the cluster does not answer."""
    try:
        found = state.api(cluster).list("gateway.networking.k8s.io/v1", "Gateway")
    except (KubeError, OSError):
        return []
    out = []
    for gw in found:
        status = gw.get("status") or {}
        out.append(
            {
                "name": f"{gw['metadata'].get('namespace')}/{gw['metadata']['name']}",
                "addresses": [a.get("value") for a in status.get("addresses") or []],
                "programmed": condition(gw, "Programmed") == "True",
            }
        )
    return out


def _component_flags(state: State, cluster: str, component: str) -> list[str]:
    """What kube-controller-manager and kube-scheduler both need: the cluster's
    admin kubeconfig for every client, a loopback port of their own, no leader election."""
    kubeconfig = state.kubeconfig_path(cluster)
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={state.port(f'{cluster}-{component}')}",
        "--leader-elect=false",
    ]


def _healthy(api: Api) -> bool | None:
    return True if api.healthy() else None


class FleetError(RuntimeError):
    """The fleet could not be brought up; the message says which part and shows its log."""


def _run_once(name: str, argv: list[str], env: dict[str, str], logs: Path) -> None:
    """Run a command to completion, its output in logs/<name>.log."""
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with log.open("ab") as out:
        try:
            done = subprocess.run(
                argv,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=API_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise FleetError(f"{name} did not finish in {API_TIMEOUT:.0f} s; see {log}") from err
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        raise FleetError(f"{name} failed ({done.returncode}); {log}:\n{tail}")


def wait_established(api: Api, group: str, timeout: float) -> None:
    """Wait until every CRD of an API group is Established."""

    def established() -> bool | None:
        crds = [
            c
            for c in api.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
            if c["spec"]["group"] == group
        ]
        return True if crds and all(condition(c, "Established") == "True" for c in crds) else None

    wait(f"the {group} CRDs to be Established", established, timeout)


FUNCTION_TLS_SECRET = "function-modelplane-tls-server"
# The process serving the build `up` installs; `install` names the others after their digest.
FUNCTION_PROC = "function"


def _package_of(rev: Mapping[str, Any]) -> str:
    """A package revision's package reference (`spec.image` names it in Crossplane v2)."""
    spec = rev.get("spec") or {}
    return str(spec.get("image") or spec.get("package") or "")


def _digest(reference: str) -> str:
    """The digest of a package reference (the whole reference when it names none)."""
    return reference.rsplit("@", 1)[-1]


def _took_over(api: Api, endpoints: Mapping[str, str], kind: str, digest: str) -> bool | None:
    """True once a package's only active revision is the one of `digest`, healthy (a
    FunctionRevision pointed at its build's function first)."""
    if kind == "Function":
        point_function(api, endpoints)
    active = [
        rev
        for rev in api.list("pkg.crossplane.io/v1", f"{kind}Revision")
        if (rev.get("spec") or {}).get("desiredState") == "Active"
    ]
    if [_digest(_package_of(rev)) for rev in active] != [digest]:
        return None
    return True if condition(active[0], "RevisionHealthy") == "True" else None


def crds_follow_xrds(api: Api) -> bool | None:
    """True once every XRD's CRD serves the XRD's schema: for each version, the same
    fields under `spec` and `status`, at every depth (Crossplane's own `spec.crossplane`
    and the conditions it adds to `status` aside)."""
    crds = {
        str(crd["metadata"]["name"]): crd
        for crd in api.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    }
    for xrd in api.list("apiextensions.crossplane.io/v2", "CompositeResourceDefinition"):
        spec = xrd.get("spec") or {}
        crd = crds.get(f"{(spec.get('names') or {}).get('plural')}.{spec.get('group')}")
        if crd is None:
            return None
        served = {v.get("name"): v for v in (crd.get("spec") or {}).get("versions") or []}
        for version in spec.get("versions") or []:
            theirs = served.get(version.get("name"))
            if theirs is None or not _same_fields(version, theirs):
                return None
    return True


def _same_fields(xrd_version: Mapping[str, Any], crd_version: Mapping[str, Any]) -> bool:
    mine = _properties(xrd_version)
    served = _properties(crd_version)
    for part in ("spec", "status"):
        crd_fields = _fields(served.get(part) or {})
        # Crossplane's own fields: `spec.crossplane` and the conditions it adds to `status`.
        crd_fields -= {f for f in crd_fields if f.startswith(("crossplane", "conditions"))}
        if _fields(mine.get(part) or {}) != crd_fields:
            return False
    return True


def _properties(version: Mapping[str, Any]) -> Mapping[str, Any]:
    """The top-level properties of a version's schema (`spec`, `status`, ...)."""
    return ((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}


def _fields(schema: Mapping[str, Any], prefix: str = "") -> set[str]:
    """Every field path a schema declares (`a.b`, list items as `a[].b`)."""
    out: set[str] = set()
    for name, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}{name}"
        out.add(path)
        if isinstance(sub, Mapping):
            out |= _fields(sub, path + ".")
            items = sub.get("items")
            if isinstance(items, Mapping):
                out |= _fields(items, path + "[].")
    return out


def active_packages(api: Api) -> set[str]:
    """The digests of the Active Function and Configuration revisions' packages."""
    return {
        _digest(_package_of(rev))
        for kind in ("FunctionRevision", "ConfigurationRevision")
        for rev in api.list("pkg.crossplane.io/v1", kind)
        if (rev.get("spec") or {}).get("desiredState") == "Active"
    }


def revision_endpoint(rev: Mapping[str, Any], endpoints: Mapping[str, str]) -> str | None:
    """The address serving a FunctionRevision: its package's process (None: not served here)."""
    by_digest = {_digest(ref): address for ref, address in endpoints.items()}
    return by_digest.get(_digest(_package_of(rev)))


def point_function(api: Api, endpoints: Mapping[str, str]) -> bool | None:
    """Hand each active FunctionRevision the local function of its own build (`endpoints`:
    package reference → address); True once it reads back, None while one is not served.

    With the External runtime nothing else writes what the Deployment runtime
    would: `status.endpoint` (where Crossplane dials the function) and
    `status.tlsServerSecretName` (the revision reconciler waits for it before
    it takes control of the package's objects).
    """
    revisions = api.list(
        "pkg.crossplane.io/v1",
        "FunctionRevision",
        selector=f"pkg.crossplane.io/package={xpkg.FUNCTION_NAME}",
    )
    active = [r for r in revisions if (r.get("spec") or {}).get("desiredState") == "Active"]
    wanted = [(r, revision_endpoint(r, endpoints)) for r in active]
    if not wanted or any(endpoint is None for _, endpoint in wanted):
        return None

    def handed(rev: dict[str, Any] | None, endpoint: str) -> bool:
        status = (rev or {}).get("status") or {}
        want = {"endpoint": endpoint, "tlsServerSecretName": FUNCTION_TLS_SECRET}
        return all(status.get(k) == v for k, v in want.items()) and (
            condition(rev, "RuntimeHealthy") == "True"
        )

    for rev, endpoint in wanted:
        assert endpoint is not None
        if not handed(rev, endpoint):
            patch = {"endpoint": endpoint, "tlsServerSecretName": FUNCTION_TLS_SECRET}
            try:
                api.merge_status(rev, {**patch, "conditions": _runtime_healthy(rev, endpoint)})
            except KubeError:
                return None  # a conflict with the revision reconciler: try again
    name = "pkg.crossplane.io/v1", "FunctionRevision"
    return (
        True
        if all(handed(api.get(*name, r["metadata"]["name"]), e or "") for r, e in wanted)
        else None
    )


def _runtime_healthy(rev: dict[str, Any], endpoint: str) -> list[dict[str, Any]]:
    """The revision's conditions with RuntimeHealthy=True, which the runtime's owner reports."""
    kept = [
        c
        for c in (rev.get("status") or {}).get("conditions") or []
        if c.get("type") != "RuntimeHealthy"
    ]
    healthy = {
        "type": "RuntimeHealthy",
        "status": "True",
        "reason": "HealthyPackageRevision",
        "message": f"modelplane dev serves the function at {endpoint}",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return [*kept, healthy]


def package_report(api: Api) -> str:
    """The conditions of the packages, their revisions and the XRDs, for an error message."""
    lines = []
    for kind in ("Function", "FunctionRevision", "Configuration", "ConfigurationRevision"):
        for obj in api.list("pkg.crossplane.io/v1", kind):
            for c in (obj.get("status") or {}).get("conditions") or []:
                lines.append(
                    f"{kind} {obj['metadata']['name']}: {c.get('type')}={c.get('status')} "
                    f"{c.get('reason', '')} {c.get('message', '')}".rstrip()
                )
    for xrd in api.list("apiextensions.crossplane.io/v2", "CompositeResourceDefinition"):
        lines.append(
            f"XRD {xrd['metadata']['name']}: Established={condition(xrd, 'Established') or '?'}"
        )
    return "\n".join(lines)
