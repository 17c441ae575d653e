"""The local fleet's bookkeeping: state that survives `up` runs, the External runtime hand-off."""

from __future__ import annotations

from pathlib import Path

from modelplane.dev import procs
from modelplane.dev.fleet import CONTROL_PLANE, State, _runtime_healthy, workload_name


def test_state_round_trips_and_keeps_its_ports(tmp_path: Path) -> None:
    state = State(tmp_path)
    cp = state.port(f"{CONTROL_PLANE}-apiserver")
    wl = state.port(f"{workload_name(1)}-apiserver")
    assert cp != wl and state.port(f"{CONTROL_PLANE}-apiserver") == cp
    state.clusters = [CONTROL_PLANE, workload_name(1)]
    state.procs["etcd"] = procs.Proc("etcd", 123, "/bin/etcd", str(tmp_path / "etcd.log"))
    state.save()
    again = State.load(tmp_path)
    assert again.ports == state.ports and again.clusters == state.clusters
    assert again.procs == state.procs
    assert again.kubeconfig(workload_name(1)).server == f"https://127.0.0.1:{wl}"
    assert again.kubeconfig_path(CONTROL_PLANE) == tmp_path / "kubeconfig" / "control-plane.yaml"


def test_a_new_directory_has_an_empty_state(tmp_path: Path) -> None:
    state = State.load(tmp_path / "absent")
    assert state.ports == {} and state.procs == {} and state.clusters == []


def test_runtime_healthy_replaces_only_its_own_condition() -> None:
    revision = {
        "status": {
            "conditions": [
                {"type": "RevisionHealthy", "status": "True", "reason": "HealthyPackageRevision"},
                {
                    "type": "RuntimeHealthy",
                    "status": "Unknown",
                    "reason": "UnknownPackageRevisionHealth",
                },
            ]
        }
    }
    conditions = _runtime_healthy(revision, "127.0.0.1:9444")
    by_type = {c["type"]: c for c in conditions}
    assert set(by_type) == {"RevisionHealthy", "RuntimeHealthy"}
    assert by_type["RevisionHealthy"]["status"] == "True"
    runtime = by_type["RuntimeHealthy"]
    assert (runtime["status"], runtime["reason"]) == ("True", "HealthyPackageRevision")
    assert "127.0.0.1:9444" in runtime["message"]
    # A revision with no status yet gets the one condition.
    assert [c["type"] for c in _runtime_healthy({}, "x")] == ["RuntimeHealthy"]


def test_the_function_metrics_are_read_over_mutual_tls_on_the_host(tmp_path: Path) -> None:
    state = State(tmp_path)
    state.functions = {"xpkg.example/function@sha256:ab": "function-0"}
    port = state.port("function-0-metrics")
    state.port("function-0")
    (metrics,) = state.function_metrics()
    url = f"https://127.0.0.1:{port}/metrics"
    assert metrics["url"] == url
    assert metrics["curl"] == [
        "curl",
        "-sS",
        "--cacert",
        str(tmp_path / "pki" / "function" / "ca.crt"),
        "--cert",
        str(tmp_path / "pki" / "crossplane" / "tls.crt"),
        "--key",
        str(tmp_path / "pki" / "crossplane" / "tls.key"),
        url,
    ]
    # A function process that serves no metrics (none kept a port) is not listed.
    state.functions["xpkg.example/function@sha256:cd"] = "function-1"
    assert [m["process"] for m in state.function_metrics()] == ["function-0"]
