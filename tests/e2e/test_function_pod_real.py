"""docs/autoscaling.md's scrape of the function's metrics matches the function Pod, Service
and certificate a real Crossplane makes.

The dev fleet runs the function itself (Crossplane's External package runtime),
so no function Pod exists there, and `docs/test_function_metrics_doc.py` can
only check the doc against labels written by hand from Crossplane's source.
Here a control plane of its own (`Fleet.control_plane`: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok, built from the same pinned
modules as the dev fleet) runs Crossplane core with its Deployment runtime, the
one a real cluster runs. This checkout's Function package is installed through
Crossplane's package manager as `modelplane dev up` installs it (from the local
package cache, by digest, `packagePullPolicy: Never`), and everything checked
is made by the real parts: Crossplane makes the function's Deployment, Service,
server certificate and ServiceAccount; kube-controller-manager the ReplicaSet
and Pod; kube-scheduler binds the Pod to the fake node, where kwok reports it
Running with an address (no container runs: the image is never pulled).

Against those objects, found through their owner references (not their labels,
which are what is under test), and with the rules read from the doc:

1. the doc's relabel rules, applied to the Pod's real labels as Prometheus'
   pod discovery names them, keep the Pod and point `__address__` at its
   address and the port they name; the same rules drop it once its function
   label names another Function;
2. the doc's `server_name` is the Service Crossplane made
   (`<name>.crossplane-system.svc`), which selects the Pod, and a DNS name of
   the server certificate Crossplane issued from `crossplane-root-ca`, mounted
   where `TLS_SERVER_CERTS_DIR` says;
3. the Pod's runtime container declares that port, named `metrics`;
4. the doc's METRICS_PORT, added to install.md's DeploymentRuntimeConfig as the
   doc says, reaches the runtime container of the Pod Crossplane rolls out,
   which the scrape still keeps.

A wrong label, Function name, Service name, namespace, port or container name
in the doc fails one of them. The module brings up and takes down its own
control plane (conftest runs it before the shared fleet).
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from cryptography import x509
from e2e.harness import TIMINGS
from function_scrape import discovered, metrics_container, relabel, scrape_job

from modelplane.dev import release, xpcore, xpkg
from modelplane.dev.fleet import (
    CONTROL_PLANE,
    CROSSPLANE_NAMESPACE,
    Fleet,
    package_report,
)
from modelplane.dev.kubeapi import Api, NotReadyError, condition, wait

pytestmark = pytest.mark.e2e

# Read by conftest: this module brings up a control plane of its own, so it runs first.
OWN_FLEET = True

T = TypeVar("T")
# Each wait: the Function applied → its Pod Running, and the runtime config applied →
# the new Pod Running. Both took seconds on the shared two-core machine (the run's
# summary prints them); the bound is for a loaded machine, not a stuck runtime.
TIMEOUT = 300.0
PKG = "pkg.crossplane.io/v1"
# Where Crossplane's `core init` keeps the root CA the function's certificate is issued from.
ROOT_CA_SECRET = "crossplane-root-ca"
INSTALL = Path(__file__).resolve().parents[2] / "docs" / "install.md"
# install.md's DeploymentRuntimeConfig for the function (section 3).
RUNTIME_CONFIG = "function-modelplane"


@dataclass
class ControlPlane:
    """The running control plane and the Function installed on it."""

    fleet: Fleet
    api: Api
    function: dict[str, Any]
    applied: float  # time.monotonic() when the Function was applied


@dataclass
class Runtime:
    """What Crossplane's Deployment runtime made for the active FunctionRevision."""

    revision: dict[str, Any]
    deployment: dict[str, Any]
    service: dict[str, Any]
    pod: dict[str, Any]

    def container(self, name: str) -> dict[str, Any]:
        """The Pod's container of that name."""
        (found,) = [c for c in self.pod["spec"]["containers"] if c["name"] == name]
        return dict(found)


def _dir(tmp: pytest.TempPathFactory) -> Path:
    base = os.environ.get("MODELPLANE_E2E_DIR")
    return Path(base + "-function-pod") if base else tmp.mktemp("function-pod")


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane whose Crossplane runs packages as Deployments, this checkout's
    Function installed on it as `dev up` installs it."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the real parts cannot be built")
    fleet = Fleet(_dir(tmp_path_factory), lambda m: print(f"[function pod] {m}", file=sys.stderr))
    try:
        started = time.monotonic()
        state = fleet.control_plane(xpcore.DEPLOYMENT)
        TIMINGS["function pod: control plane up (Deployment runtime)"] = time.monotonic() - started
        api = state.api(CONTROL_PLANE)
        build = release.current()
        fleet.offer_packages(api, build)
        (function,) = [o for o in xpkg.package_objects(*build.packages) if o["kind"] == "Function"]
        api.apply(function)
        yield ControlPlane(fleet, api, dict(function), time.monotonic())
    finally:
        if os.environ.get("MODELPLANE_E2E_KEEP") != "1":
            fleet.down()


# --- what Crossplane made, found by ownership ------------------------------------------


def _owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    """Whether `owner` is obj's controller (its controller owner reference, by uid)."""
    return any(
        ref.get("controller") and ref.get("uid") == owner["metadata"]["uid"]
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def _one(objs: list[dict[str, Any]], owner: dict[str, Any]) -> dict[str, Any] | None:
    """The one object of `objs` that `owner` controls (None while there is none)."""
    owned = [o for o in objs if _owned_by(o, owner)]
    return owned[0] if len(owned) == 1 else None


def _runtime(api: Api, want: Callable[[Runtime], bool] = lambda _r: True) -> Runtime | None:
    """The active revision's Deployment, Service and one Running Pod with an address, once
    Crossplane reports the runtime healthy and `want` holds; None until then."""
    # The package manager's label, not one the doc names.
    ours = f"pkg.crossplane.io/package={xpkg.FUNCTION_NAME}"
    revisions = [
        r
        for r in api.list(PKG, "FunctionRevision", selector=ours)
        if (r.get("spec") or {}).get("desiredState") == "Active"
    ]
    if len(revisions) != 1 or condition(revisions[0], "RuntimeHealthy") != "True":
        return None
    (revision,) = revisions
    deployment = _one(api.list("apps/v1", "Deployment", CROSSPLANE_NAMESPACE), revision)
    service = _one(api.list("v1", "Service", CROSSPLANE_NAMESPACE), revision)
    if deployment is None or service is None:
        return None
    sets = [
        rs
        for rs in api.list("apps/v1", "ReplicaSet", CROSSPLANE_NAMESPACE)
        if _owned_by(rs, deployment)
    ]
    pods = [
        p
        for p in api.list("v1", "Pod", CROSSPLANE_NAMESPACE)
        if any(_owned_by(p, rs) for rs in sets)
        and not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") == "Running"
        and (p.get("status") or {}).get("podIP")
    ]
    found = [Runtime(revision, deployment, service, p) for p in pods]
    found = [r for r in found if want(r)]
    return found[0] if len(found) == 1 else None


def _describe(api: Api) -> str:
    """The packages' conditions, the namespace's objects and the warnings, for a timeout."""
    lines = [package_report(api)]
    for api_version, kind in (
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Pod"),
        ("v1", "Service"),
    ):
        for obj in api.list(api_version, kind, CROSSPLANE_NAMESPACE):
            status = obj.get("status") or {}
            conditions = [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
            lines.append(
                f"{kind} {obj['metadata']['name']}: phase={status.get('phase', '')} {conditions}"
            )
    for ns in ("default", CROSSPLANE_NAMESPACE):
        for event in api.list("v1", "Event", ns):
            if event.get("type") == "Warning":
                obj = event.get("involvedObject") or {}
                lines.append(
                    f"event {obj.get('kind')}/{obj.get('name')}: {event.get('reason')} "
                    f"{event.get('message')}"
                )
    return "\n".join(lines)


def _until(api: Api, what: str, probe: Callable[[], T | None]) -> T:
    try:
        return wait(what, probe, TIMEOUT, interval=1.0)
    except NotReadyError as err:
        raise AssertionError(f"{err}\n{_describe(api)}") from err


@pytest.fixture(scope="module")
def runtime(control_plane: ControlPlane) -> Runtime:
    """What Crossplane made for the Function, once its Pod runs."""
    found = _until(
        control_plane.api,
        "Crossplane's Deployment runtime to run the function's Pod",
        lambda: _runtime(control_plane.api),
    )
    TIMINGS["function pod: Function applied → its Pod Running, runtime healthy"] = (
        time.monotonic() - control_plane.applied
    )
    return found


# --- the doc's scrape against it ---------------------------------------------------------


def _target(pod: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, str] | None:
    """The Pod as the doc's scrape job discovers and relabels it (None: not scraped)."""
    job = scrape_job()
    namespaces = [n for sd in job["kubernetes_sd_configs"] for n in sd["namespaces"]["names"]]
    if pod["metadata"]["namespace"] not in namespaces:
        return None
    meta = discovered(
        labels if labels is not None else pod["metadata"]["labels"],
        pod["status"]["podIP"],
        pod["metadata"]["namespace"],
    )
    return relabel(meta, job["relabel_configs"])


def _scraped_port() -> int:
    """The port the doc's relabelling writes into `__address__`."""
    (rule,) = [r for r in scrape_job()["relabel_configs"] if r.get("target_label") == "__address__"]
    return int(rule["replacement"].removeprefix("$1:"))


def test_the_scrape_keeps_the_pod_crossplane_runs_the_function_in(runtime: Runtime) -> None:
    pod = runtime.pod
    kept = _target(pod)
    assert kept is not None, f"the doc's scrape drops the function's Pod: {pod['metadata']}"
    assert kept["__address__"] == f"{pod['status']['podIP']}:{_scraped_port()}"
    # What keeps it is the Function's name on it: the same Pod labelled for another
    # Function is not scraped.
    others = {
        k: ("function-patch-and-transform" if v == xpkg.FUNCTION_NAME else v)
        for k, v in pod["metadata"]["labels"].items()
    }
    assert others != pod["metadata"]["labels"]
    assert _target(pod, others) is None


def test_the_server_name_is_the_service_and_certificate_crossplane_made(
    control_plane: ControlPlane, runtime: Runtime
) -> None:
    api, service = control_plane.api, runtime.service
    server_name = scrape_job()["tls_config"]["server_name"]
    meta = service["metadata"]
    assert server_name == f"{meta['name']}.{meta['namespace']}.svc"
    selector = service["spec"]["selector"]
    assert selector.items() <= runtime.pod["metadata"]["labels"].items()
    # The certificate the function serves: the Secret the runtime container mounts at
    # TLS_SERVER_CERTS_DIR, issued by crossplane-root-ca for the Service's name.
    container = runtime.container(metrics_container()["name"])
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in runtime.pod["spec"].get("volumes") or []}
    volume = volumes[mounts[env["TLS_SERVER_CERTS_DIR"]]]
    secret = api.get("v1", "Secret", volume["secret"]["secretName"], meta["namespace"])
    root = api.get("v1", "Secret", ROOT_CA_SECRET, meta["namespace"])
    assert secret is not None and root is not None
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    ca = x509.load_pem_x509_certificate(base64.b64decode(root["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert server_name in names.get_values_for_type(x509.DNSName)
    # The client CA the endpoint trusts (the doc issues Prometheus' certificate from it).
    assert base64.b64decode(secret["data"]["ca.crt"]) == base64.b64decode(root["data"]["tls.crt"])


def test_the_runtime_container_declares_the_port_scraped(runtime: Runtime) -> None:
    container = runtime.container(metrics_container()["name"])
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports") or []}
    assert ports.get("metrics") == _scraped_port(), container.get("ports")


def _runtime_config() -> dict[str, Any]:
    """install.md's DeploymentRuntimeConfig for the function, with the env the metrics doc
    says to add to its runtime container."""
    text = INSTALL.read_text(encoding="utf-8")
    docs = [d for block in _yaml_blocks(text) for d in yaml.safe_load_all(block) if d]
    (config,) = [
        d
        for d in docs
        if d.get("kind") == "DeploymentRuntimeConfig" and d["metadata"]["name"] == RUNTIME_CONFIG
    ]
    fragment = metrics_container()
    containers = config["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]["containers"]
    same = [c for c in containers if c["name"] == fragment["name"]]
    if same:
        same[0].setdefault("env", []).extend(fragment["env"])
    else:  # the doc names another container: Crossplane adds it beside its own
        containers.append(fragment)
    return dict(config)


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


def test_the_doc_turns_the_metrics_on_in_the_pod_crossplane_rolls_out(
    control_plane: ControlPlane, runtime: Runtime
) -> None:
    api = control_plane.api
    config = _runtime_config()
    api.apply(config)
    function = control_plane.function
    api.apply(
        {**function, "spec": {**function["spec"], "runtimeConfigRef": {"name": RUNTIME_CONFIG}}}
    )
    wanted = {e["name"]: e["value"] for e in metrics_container()["env"]}
    name = metrics_container()["name"]

    def turned_on(r: Runtime) -> bool:
        env = {e["name"]: e.get("value") for e in r.container(name).get("env") or []}
        return r.pod["metadata"]["uid"] != runtime.pod["metadata"]["uid"] and all(
            env.get(k) == v for k, v in wanted.items()
        )

    started = time.monotonic()
    rolled = _until(
        api,
        f"a Pod of the function with {wanted} in its {name} container",
        lambda: _runtime(api, turned_on),
    )
    TIMINGS["function pod: runtime config applied → the new Pod Running"] = (
        time.monotonic() - started
    )
    env = {e["name"]: e.get("value") for e in rolled.container(name).get("env") or []}
    # install.md's own settings arrive too, in the same container.
    assert {"MAX_RECV_MESSAGE_SIZE", "MAX_SEND_MESSAGE_SIZE"} <= env.keys()
    assert int(env["METRICS_PORT"]) == _scraped_port()
    kept = _target(rolled.pod)
    assert kept is not None and kept["__address__"].endswith(f":{env['METRICS_PORT']}")
