"""The inventory agent against a real loopback HTTP server faking the Kubernetes API.

The server checks the bearer token, paginates with `limit`/`continue`, honours
the pods' label and field selectors, records every request, and can fail the
next calls with a status of the test's choosing. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner
from loopback_http import serving

from modelplane.agent.inventory import Settings, run
from modelplane.api.inventory import read_inventory
from modelplane.cli.main import cli
from modelplane.kube import client as kube
from modelplane.kube.client import KubeClient, KubeError

TOKEN = "s3cret-token"
NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)
CM_PATH = "/api/v1/namespaces/modelplane-system/configmaps/modelplane-inventory"


@dataclass
class FakeAPI:
    """The state behind the fake API server."""

    nodes: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)  # statuses for the next calls
    fail_patch: list[int] = field(default_factory=list)  # statuses for the next applies
    applied: dict[str, Any] | None = None
    url: str = ""


def _pod_matches(pod: dict[str, Any], query: dict[str, list[str]]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    for key in query.get("labelSelector", []):
        if key not in labels:
            return False
    for selector in query.get("fieldSelector", []):
        name, _, value = selector.partition("=")
        if name == "status.phase" and pod["status"].get("phase") != value:
            return False
    return True


def _refusal(state: FakeAPI, method: str, auth: str | None) -> tuple[int, dict] | None:
    """The error to answer instead (a wrong token, or a failure the test asked for)."""
    if auth != f"Bearer {TOKEN}":
        return 401, {"kind": "Status", "message": "Unauthorized"}
    fail = state.fail_patch if method == "PATCH" else []
    if state.fail_next or fail:
        return (state.fail_next or fail).pop(0), {"kind": "Status", "message": "boom"}
    return None


def _handler(state: FakeAPI) -> type[BaseHTTPRequestHandler]:
    collections = {
        "/api/v1/nodes": lambda: state.nodes,
        "/apis/resource.k8s.io/v1/resourceslices": lambda: state.slices,
        "/api/v1/pods": lambda: state.pods,
    }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> tuple[str, dict[str, list[str]]] | None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append(
                {
                    "method": self.command,
                    "path": parts.path,
                    "query": parse_qs(parts.query),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
            )
            refused = _refusal(state, self.command, self.headers.get("Authorization"))
            if refused is not None:
                self._send(*refused)
                return None
            return parts.path, parse_qs(parts.query)

        def do_GET(self) -> None:
            got = self._record()
            if got is None:
                return
            path, query = got
            if path not in collections:
                self._send(404, {"kind": "Status", "message": "not found"})
                return
            items = [
                i for i in collections[path]() if path != "/api/v1/pods" or _pod_matches(i, query)
            ]
            limit = int(query["limit"][0])
            start = int(query.get("continue", ["0"])[0])
            page = items[start : start + limit]
            more = start + limit < len(items)
            meta = {"continue": str(start + limit)} if more else {}
            self._send(200, {"kind": "List", "metadata": meta, "items": page})

        def do_PATCH(self) -> None:
            got = self._record()
            if got is None:
                return
            state.applied = json.loads(state.requests[-1]["body"])
            self._send(200, state.applied)

    return Handler


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    state = FakeAPI()
    with serving(_handler(state)) as state.url:
        yield state


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def _node(name: str, pool: str, ready: str = "True", zone: str = "us-east-1a") -> dict[str, Any]:
    labels = {"modelplane.ai/pool": pool, "topology.kubernetes.io/zone": zone}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def _slice(node: str, n: int, memory: str = "80Gi") -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"productName": {"string": "H100"}, "uuid": {"string": f"{node}-{i}"}},
            "capacity": {"memory": {"value": memory}},
        }
        for i in range(n)
    ]
    return {"spec": {"driver": "gpu.nvidia.com", "nodeName": node, "devices": devices}}


def _pod(name: str, replica: str, minutes_ago: int, phase: str = "Pending") -> dict[str, Any]:
    since = NOW - datetime.timedelta(minutes=minutes_ago)
    return {
        "metadata": {"name": name, "labels": {"modelplane.ai/replica": replica}},
        "spec": {"nodeSelector": {"modelplane.ai/pool": "h100"}},
        "status": {
            "phase": phase,
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/5 nodes are available: 3 Insufficient devices",
                    "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ],
        },
    }


def _run(api: FakeAPI, token_file: Path, rounds: int = 1, **settings: Any) -> tuple[int, list]:
    lines: list[str] = []
    client = KubeClient(api.url, str(token_file))
    failed = run(
        client,
        Settings(**settings),
        rounds=rounds,
        clock=lambda: NOW,
        sleep=lambda _: None,
        log=lines.append,
    )
    return failed, [json.loads(line) for line in lines]


def _summary(api: FakeAPI) -> Any:
    assert api.applied is not None
    summary, problem = read_inventory(api.applied["data"])
    assert summary is not None, problem
    return summary


def test_lists_page_by_page_and_applies_the_summary(
    api: FakeAPI, token_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube, "PAGE_SIZE", 2)
    api.nodes = [_node("n1", "h100"), _node("n2", "h100", "False"), _node("n3", "l4")]
    api.slices = [_slice("n1", 2), _slice("n2", 2), _slice("n3", 1, "24Gi")]
    failed, logs = _run(api, token_file)
    assert failed == 0
    node_gets = [r for r in api.requests if r["path"] == "/api/v1/nodes"]
    # Three nodes, two per page: the second request carries the continue token.
    assert [r["query"].get("continue") for r in node_gets] == [None, ["2"]]
    assert all(r["query"]["limit"] == ["2"] for r in node_gets)
    (pods_get,) = [r for r in api.requests if r["path"] == "/api/v1/pods"]
    assert pods_get["query"]["labelSelector"] == ["modelplane.ai/replica"]
    assert pods_get["query"]["fieldSelector"] == ["status.phase=Pending"]
    assert all(r["headers"]["authorization"] == f"Bearer {TOKEN}" for r in api.requests)
    # The write: one server-side apply of the ConfigMap, owning only its fields.
    (patch,) = [r for r in api.requests if r["method"] == "PATCH"]
    assert patch["path"] == CM_PATH
    assert patch["headers"]["content-type"] == "application/apply-patch+yaml"
    assert patch["query"] == {"fieldManager": ["modelplane-inventory"], "force": ["true"]}
    body = json.loads(patch["body"])
    assert {k: v for k, v in body.items() if k != "data"} == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "modelplane-inventory",
            "namespace": "modelplane-system",
            "labels": {
                "app.kubernetes.io/managed-by": "modelplane",
                "modelplane.ai/component": "inventory",
            },
        },
    }
    summary = _summary(api)
    assert summary.observed_at == "2026-03-01T12:00:00Z"
    h100 = summary.pool("h100")
    assert (h100.nodes, h100.ready_nodes, h100.zones[0].to_dict()) == (
        2,
        1,
        {"zone": "us-east-1a", "nodes": 2},
    )
    # Two nodes × two GPUs differing only by uuid: one shape.
    assert [(s.devices_per_node, s.nodes) for s in h100.shapes] == [(2, 2)]
    assert logs == [
        {
            "level": "info",
            "msg": "inventory written",
            "observedAt": "2026-03-01T12:00:00Z",
            "pools": 2,
            "unschedulable": 0,
        }
    ]


def test_a_500_is_logged_as_one_json_line_and_retried_next_interval(
    api: FakeAPI, token_file: Path
) -> None:
    api.nodes = [_node("n1", "h100")]
    api.fail_next = [500]
    failed, logs = _run(api, token_file, rounds=2)
    assert failed == 1
    assert [line["level"] for line in logs] == ["error", "info"]
    assert logs[0]["error"] == 'GET /api/v1/nodes: HTTP 500: {"kind": "Status", "message": "boom"}'
    assert _summary(api).pool("h100").nodes == 1
    # The failed round wrote nothing; the retry wrote once.
    assert len([r for r in api.requests if r["method"] == "PATCH"]) == 1


def test_a_refused_apply_is_logged_too(api: FakeAPI, token_file: Path) -> None:
    api.fail_patch = [403]
    failed, logs = _run(api, token_file)
    assert failed == 1
    assert logs[0]["error"].startswith(f"PATCH {CM_PATH}: HTTP 403")
    assert api.applied is None


def test_a_wrong_token_is_refused_and_reported(api: FakeAPI, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text("nope")
    failed, logs = _run(api, wrong)
    assert failed == 1
    assert logs[0]["error"].startswith("GET /api/v1/nodes: HTTP 401")
    assert api.applied is None


def test_only_pods_past_the_grace_period_are_reported(api: FakeAPI, token_file: Path) -> None:
    api.nodes = [_node("n1", "h100")]
    api.pods = [
        _pod("a-0", "a", minutes_ago=10),
        _pod("a-1", "a", minutes_ago=7),
        _pod("b-0", "b", minutes_ago=2),  # within the 5m grace period
        _pod("c-0", "c", minutes_ago=30, phase="Running"),  # not Pending
    ]
    failed, logs = _run(api, token_file, grace_seconds=300)
    assert failed == 0
    assert [u.to_dict() for u in _summary(api).unschedulable] == [
        {
            "replica": "a",
            "pool": "h100",
            "pods": 2,
            "since": "2026-03-01T11:50:00Z",
            "message": "0/5 nodes are available: 3 Insufficient devices",
        }
    ]
    assert logs[0]["unschedulable"] == 1


def test_the_cli_runs_once_against_the_given_server(api: FakeAPI, token_file: Path) -> None:
    api.nodes = [_node("n1", "h100")]
    result = CliRunner().invoke(
        cli,
        ["inventory", "--once", "--server", api.url, "--token-file", str(token_file)],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["msg"] == "inventory written"
    assert _summary(api).pool("h100").ready_nodes == 1
    api.fail_next = [503]
    failed = CliRunner().invoke(
        cli, ["inventory", "--once", "--server", api.url, "--token-file", str(token_file)]
    )
    assert failed.exit_code == 1
    assert json.loads(failed.output)["level"] == "error"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--server", "http://example.com"], "plain http is only allowed for a loopback server"),
        (["--server", "http://127.0.0.1:1", "--grace", "5 minutes"], "is not a duration"),
    ],
)
def test_the_cli_refuses_bad_settings(args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["inventory", "--once", *args])
    assert result.exit_code != 0
    assert message in result.output


def test_in_cluster_settings_come_from_the_service_account(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    client = KubeClient.in_cluster(env, tmp_path)
    assert (client.server, client.token_file, client.ca_file) == (
        "https://10.0.0.1:6443",
        str(tmp_path / "token"),
        str(tmp_path / "ca.crt"),
    )
    assert KubeClient.in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1"}, tmp_path).server == (
        "https://[fd00::1]:443"
    )
    with pytest.raises(KubeError, match="KUBERNETES_SERVICE_HOST is not set"):
        KubeClient.in_cluster({}, tmp_path)


def test_an_unchanged_summary_is_rewritten_only_as_a_heartbeat(
    api: FakeAPI, token_file: Path
) -> None:
    from modelplane.agent.inventory import HEARTBEAT_ROUNDS

    api.nodes = [_node("n1", "h100")]
    failed, logs = _run(api, token_file, rounds=HEARTBEAT_ROUNDS + 1)
    assert failed == 0
    patches = [r for r in api.requests if r["method"] == "PATCH"]
    # The first round writes; the same summary again writes nothing until the
    # heartbeat round, HEARTBEAT_ROUNDS rounds later.
    assert len(patches) == 2
    assert [line["msg"] for line in logs] == ["inventory written"] * 2


def test_a_changed_summary_is_written_at_once(api: FakeAPI, token_file: Path) -> None:
    api.nodes = [_node("n1", "h100")]
    calls = []

    def clock() -> Any:
        calls.append(1)
        if len(calls) == 3:  # a node joins before the third round
            api.nodes = [_node("n1", "h100"), _node("n2", "h100")]
        return NOW

    client = KubeClient(api.url, str(token_file))
    failed = run(client, Settings(), rounds=3, clock=clock, sleep=lambda _: None, log=print)
    assert failed == 0
    # Round one writes, round two (the same) does not, round three (changed) does.
    assert len([r for r in api.requests if r["method"] == "PATCH"]) == 2
    assert _summary(api).pool("h100").nodes == 2
