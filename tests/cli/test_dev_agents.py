"""The local fleet's inventory agent: when it scrapes, and how it reaches the engines."""

from __future__ import annotations

import http.client
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from modelplane.agent.engines import fetch
from modelplane.cli.dev_agents import cluster_scrapes, scraping
from modelplane.kube.client import KubeError
from tests.loopback_http import serving


def ic(secret: str, stack: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"existing": {"kubeconfigSecretRef": {"name": secret}}}
    if stack is not None:
        spec["servingStack"] = stack
    return {"spec": spec}


ON = {"inventory": {"engineMetrics": True}}


@pytest.mark.parametrize(
    ("clusters", "expected"),
    [
        ([ic("wl-1-kubeconfig", ON)], True),
        ([ic("wl-1-kubeconfig", {"inventory": {"engineMetrics": False}})], False),
        ([ic("wl-1-kubeconfig", {})], False),  # off by default, as the API says
        ([ic("wl-1-kubeconfig", None)], False),
        ([ic("wl-1-kubeconfig", {"inventory": {"enabled": False, "engineMetrics": True}})], False),
        ([ic("wl-2-kubeconfig", ON)], False),  # another cluster's setting
        ([ic("wl-2-kubeconfig", ON), ic("wl-1-kubeconfig", ON)], True),
        ([], False),
    ],
)
def test_the_agent_scrapes_only_where_its_cluster_asks(
    clusters: list[dict[str, Any]], expected: bool
) -> None:
    assert cluster_scrapes(clusters, "wl-1-kubeconfig") is expected


class ControlPlane:
    """A control plane whose InferenceClusters change between rounds, or fail."""

    def __init__(self, answers: list[list[dict[str, Any]] | None]) -> None:
        self.answers = answers

    def list_all(self, path: str, **query: str) -> list[dict[str, Any]]:
        assert path == "/apis/modelplane.ai/v1alpha1/inferenceclusters"
        got = self.answers.pop(0)
        if got is None:
            raise KubeError("connection refused")
        return got


def test_each_round_follows_the_setting_and_keeps_it_when_the_control_plane_is_down() -> None:
    marker: Any = object()
    logged: list[str] = []
    plane = ControlPlane(
        [
            [ic("wl-1-kubeconfig", {})],
            [ic("wl-1-kubeconfig", ON)],
            None,
            [ic("wl-1-kubeconfig", {})],
        ]
    )
    decide = scraping(plane, "wl-1", marker, logged.append)  # type: ignore[arg-type]
    assert [decide() for _ in range(4)] == [None, marker, marker, None]
    assert logged == ["control plane: connection refused; engine scraping as before"]


class Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"vllm:num_requests_running 3\n"
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_fetch_goes_through_the_opener_it_is_given() -> None:
    opened: list[tuple[str, int]] = []

    with serving(Page) as base:
        port = int(base.rsplit(":", 1)[1])

        def opener(host: str, p: int, timeout: float) -> http.client.HTTPConnection:
            opened.append((host, p))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            conn.connect()
            return conn

        # The URL names an address nothing on this machine answers: only the opener reaches it.
        text = fetch("http://10.100.0.7:8000/metrics", 2.0, 1 << 16, opener=opener)
    assert text == "vllm:num_requests_running 3\n"
    assert opened == [("10.100.0.7", 8000)]
