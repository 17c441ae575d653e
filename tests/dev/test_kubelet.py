"""The engine kubelet's decisions, from hand-written Pods: what it runs, and what it reports."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.dev import kubelet
from modelplane.dev.kubelet import Engine

AT = "2026-11-29T06:00:00Z"
BEFORE = "2026-11-29T05:00:00Z"


def _pod(container: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ml", "labels": labels or {"app": "llama"}},
        "spec": {"containers": [{"name": "sidecar", "image": "x"}, container]},
    }


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        # vLLM as Modelplane composes it: --model=, the http port, a /health probe.
        (
            {
                "name": "engine",
                "args": ["--model=meta-llama/Llama-3.1-8B", "--tensor-parallel-size=1"],
                "ports": [{"name": "http", "containerPort": 8000}],
                "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}},
            },
            Engine("meta-llama/Llama-3.1-8B", ("meta-llama/Llama-3.1-8B",), 8000, "/health", 8000),
        ),
        # Several served names after one flag, the model as `serve <model>`, --port wins.
        (
            {
                "name": "engine",
                "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
                "args": ["--served-model-name", "qwen", "qwen-latest", "--port", "8200"],
                "ports": [{"name": "metrics", "containerPort": 9000}],
            },
            Engine("Qwen/Qwen3-8B", ("qwen", "qwen-latest"), 8200, "/health", 8200),
        ),
        # SGLang's --model-path; a probe on a named port falls back to the engine's port.
        (
            {
                "name": "engine",
                "args": ["--model-path", "/models/m", "--served-model-name=m"],
                "ports": [{"name": "http", "containerPort": 30000}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}},
            },
            Engine("/models/m", ("m",), 30000, "/ready", 30000),
        ),
        # No model named at all: the Pod's app label; no port declared: 8000.
        (
            {"name": "engine", "args": ["--enforce-eager"]},
            Engine("llama", ("llama",), 8000, "/health", 8000),
        ),
        # A port that is not a port is not trusted.
        (
            {
                "name": "engine",
                "args": ["--model=m", "--port=99999"],
                "ports": [{"containerPort": True}],
            },
            Engine("m", ("m",), 8000, "/health", 8000),
        ),
    ],
)
def test_the_engine_a_pod_asks_for(container: dict[str, Any], expected: Engine) -> None:
    assert kubelet.engine_of(_pod(container)) == expected


def test_a_pod_without_an_engine_container_has_no_engine() -> None:
    assert kubelet.engine_of(_pod({"name": "proxy", "args": ["--model=m"]})) is None


@pytest.mark.parametrize(
    ("index", "owner", "runs"),
    [
        (None, "StatefulSet", True),
        ("0", "StatefulSet", True),
        ("1", "StatefulSet", False),
        ("3", "StatefulSet", False),
        # The label on a Pod no group's StatefulSet made (a template may carry any
        # label): its engine runs, as a kubelet would run it.
        ("1", "ReplicaSet", True),
        ("1", None, True),
    ],
)
def test_a_multi_node_groups_workers_run_no_engine_of_their_own(
    index: str | None, owner: str | None, runs: bool
) -> None:
    # The leader (worker index 0, as LeaderWorkerSet's webhook labels it) serves;
    # its workers join its engine and serve nothing themselves.
    pod = _pod({"name": "engine", "args": ["--model=m"]})
    if index is not None:
        pod["metadata"]["labels"][kubelet.LWS_WORKER_INDEX] = index
    if owner is not None:
        pod["metadata"]["ownerReferences"] = [{"kind": owner, "name": "g"}]
    assert (kubelet.engine_of(pod) is not None) is runs


def test_the_double_never_asks_a_model_hub_and_serves_every_name() -> None:
    argv = kubelet.engine_argv("/bin/sim", Engine("org/m", ("a", "b"), 8100, "/health", 8100))
    # The front listens on the engine's port; the double behind it on one of its own.
    front, double = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    assert front[1:] == [
        "-m",
        "modelplane.dev.engine_front",
        "--port=8100",
        "--upstream-port=18123",
    ]
    assert double[:4] == ["/bin/sim", "--port=18123", "--model=org/m", "--served-model-name"]
    assert double[4:6] == ["a", "b"]
    assert "--force-dummy-tokenizer" in double
    assert not any(a.startswith(("--dataset-url", "--render-url")) for a in argv)


def test_the_double_listens_where_the_pod_does_not() -> None:
    engine = Engine("org/m", ("m",), 18123, "/health", 18124)
    assert kubelet.inner_port(engine) == 18125


@pytest.mark.parametrize(
    ("args", "flags"),
    [
        (
            ["--failure-injection-rate=10", "--failure-types", "server_error"],
            ["--failure-injection-rate=10", "--failure-types", "server_error"],
        ),
        (
            ["--failure-injection-rate", "100", "--failure-types=server_error,rate_limit"],
            ["--failure-injection-rate=100", "--failure-types", "server_error", "rate_limit"],
        ),
        (["--failure-injection-rate=10"], ["--failure-injection-rate=10"]),
        (
            ["--failure-injection-rate=10", "--failure-types=rm -rf"],
            ["--failure-injection-rate=10"],
        ),
        (["--failure-injection-rate=0"], []),
        (["--failure-injection-rate=101"], []),
        (["--failure-injection-rate=lots"], []),
        (["--failure-types=server_error"], []),
    ],
)
def test_the_doubles_failure_injection_passes_through(args: list[str], flags: list[str]) -> None:
    """A template may play an engine that fails (the double's own flags); values the
    double would not take are left out, and nothing else passes."""
    engine = kubelet.engine_of(_pod({"name": "engine", "args": ["--model=m", *args]}))
    assert engine is not None
    double = kubelet.engine_argv("/bin/sim", engine)
    double = double[double.index("--") + 1 :]
    at = next((i for i, a in enumerate(double) if a.startswith("--failure")), len(double))
    assert double[at:] == flags


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--model=m", "--max-num-seqs=2"], "--max-num-seqs=2"),
        (["--model=m", "--max-num-seqs", "3", "--max-num-seqs=7"], "--max-num-seqs=7"),
        (["--model=m"], None),
        (["--model=m", "--max-num-seqs=0"], None),
        (["--model=m", "--max-num-seqs=-1"], None),
        (["--model=m", "--max-num-seqs=lots"], None),
        (["--model=m", "--max-num-seqs=99999999"], None),
    ],
)
def test_the_double_runs_as_many_requests_at_once_as_vllm_would(
    args: list[str], flag: str | None
) -> None:
    """vLLM's --max-num-seqs reaches the double (which takes the same flag): beyond it,
    requests wait and `vllm:num_requests_waiting` counts them. A value vLLM would refuse
    leaves the double at its default."""
    engine = kubelet.engine_of(_pod({"name": "engine", "args": args}))
    assert engine is not None
    argv = kubelet.engine_argv("/bin/sim", engine)
    assert [a for a in argv if a.startswith("--max-num-seqs")] == ([flag] if flag else [])


@pytest.mark.parametrize(
    ("restarts", "seconds"), [(1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (40, 300)]
)
def test_restarts_back_off_as_a_kubelet_does(restarts: int, seconds: float) -> None:
    assert kubelet.backoff(restarts) == seconds


def _running(ready: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": BEFORE},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": BEFORE},
                {"type": "Ready", "status": ready, "lastTransitionTime": BEFORE},
            ],
            "containerStatuses": [
                {"name": "engine", "ready": ready == "True", "restartCount": 0},
                {"name": "sidecar", "ready": True, "restartCount": 0},
            ],
        },
    }


def test_an_engine_that_stops_answering_makes_its_pod_not_ready() -> None:
    patch = kubelet.pod_status(_running("True"), ready=False, restarts=1, at=AT)
    by_type = {c["type"]: c for c in patch["conditions"]}
    assert by_type["Initialized"] == {
        "type": "Initialized",
        "status": "True",
        "lastTransitionTime": BEFORE,
    }
    for kind in ("Ready", "ContainersReady"):
        assert by_type[kind]["status"] == "False"
        assert by_type[kind]["lastTransitionTime"] == AT
        assert by_type[kind]["reason"] == "ContainersNotReady"
        assert "[engine]" in by_type[kind]["message"]
    assert patch["containerStatuses"] == [
        {"name": "engine", "ready": False, "restartCount": 1},
        {"name": "sidecar", "ready": True, "restartCount": 0},
    ]


def test_a_condition_that_does_not_change_keeps_its_transition_time() -> None:
    patch = kubelet.pod_status(_running("True"), ready=True, restarts=0, at=AT)
    ready = next(c for c in patch["conditions"] if c["type"] == "Ready")
    assert ready == {"type": "Ready", "status": "True", "lastTransitionTime": BEFORE}


def test_what_a_pod_reports_now() -> None:
    assert kubelet.reported(_running("True")) == (True, 0)
    assert kubelet.reported(_running("False")) == (False, 0)
    assert kubelet.reported({"status": {}}) == (False, 0)


@pytest.mark.parametrize(
    ("pod", "runs"),
    [
        ({"spec": {"nodeName": "n"}, "status": {"phase": "Running", "podIP": "10.101.0.2"}}, True),
        ({"spec": {"nodeName": "n"}, "status": {"phase": "Pending", "podIP": "10.101.0.2"}}, False),
        ({"spec": {"nodeName": "n"}, "status": {"phase": "Running"}}, False),
        ({"spec": {}, "status": {"phase": "Running", "podIP": "10.101.0.2"}}, False),
        (
            {
                "metadata": {"deletionTimestamp": AT},
                "spec": {"nodeName": "n"},
                "status": {"phase": "Running", "podIP": "10.101.0.2"},
            },
            False,
        ),
    ],
)
def test_which_pods_get_a_process(pod: dict[str, Any], runs: bool) -> None:
    assert kubelet._runs_here(pod) is runs
