"""Issue 40, finding 8: credentials follow a redirect to whatever host it names.

A hostile file server (or anyone who can make one redirect) must not collect
the hydration Job's header Secret, and an API server address that redirects
must not collect the inventory agent's or hydrator's bearer token. The servers
are real, on loopback: 127.0.0.1 and 127.0.0.2 are two hosts, and two ports of
one address are two origins.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from loopback_http import serving

from modelplane.hydrate import sources
from modelplane.hydrate.staging import stage
from modelplane.kube.client import KubeClient

PAYLOAD = b"weights " * 512
SECRET_HEADERS = {"Authorization": "Bearer tenant-secret", "X-Api-Key": "k-123"}


def now() -> str:
    return "2026-01-01T00:00:00Z"


class Recorder(BaseHTTPRequestHandler):
    """Answers `/go` with a redirect to `target`, anything else with the payload (or `{}`)."""

    seen: ClassVar[list[dict[str, str]]]
    target: ClassVar[str] = ""
    body: ClassVar[bytes] = PAYLOAD

    def log_message(self, *_: Any) -> None:
        pass

    def _answer(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        if self.path.startswith("/go"):
            self.send_response(302)
            self.send_header("Location", self.target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(self.body)

    def do_GET(self) -> None:
        self._answer()

    def do_HEAD(self) -> None:
        self._answer()


def _handler(body: bytes = PAYLOAD) -> type[Recorder]:
    return type("R", (Recorder,), {"seen": [], "body": body})


@contextmanager
def two_servers(
    redirect_host: str, target_host: str, target_path: str, body: bytes = PAYLOAD
) -> Iterator[tuple[type[Recorder], type[Recorder], str]]:
    """A redirecting server and the server it redirects to; (redirector, target, start URL)."""
    first, second = _handler(body), _handler(body)
    with ExitStack() as stack:
        there = stack.enter_context(serving(second, target_host))
        here = stack.enter_context(serving(first, redirect_host))
        first.target = there + target_path
        yield first, second, here


def _leaked(seen: list[dict[str, str]]) -> list[str]:
    return [k for h in seen for k in h if k in {n.lower() for n in SECRET_HEADERS}]


def test_hydrate_redirect_to_another_host_does_not_collect_the_header_secret(
    tmp_path: Path,
) -> None:
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    with two_servers("127.0.0.1", "127.0.0.2", "/files/model.bin") as (first, second, start):
        stage(tmp_path / "m", "k", sources.http(f"{start}/go", sha, SECRET_HEADERS), now)
    assert _leaked(first.seen) == ["authorization", "x-api-key"]  # given for this host
    assert second.seen, "the redirect was followed"
    assert _leaked(second.seen) == []


def test_hydrate_redirect_to_another_port_does_not_collect_the_header_secret(
    tmp_path: Path,
) -> None:
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    with two_servers("127.0.0.1", "127.0.0.1", "/files/model.bin") as (_, second, start):
        stage(tmp_path / "m", "k", sources.http(f"{start}/go", sha, SECRET_HEADERS), now)
    assert second.seen and _leaked(second.seen) == []


def test_hydrate_redirect_within_its_host_keeps_the_header_secret(tmp_path: Path) -> None:
    handler = _handler()
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    with serving(handler) as base:
        handler.target = base + "/files/model.bin"
        stage(tmp_path / "m", "k", sources.http(f"{base}/go", sha, SECRET_HEADERS), now)
    assert [len(_leaked([h])) for h in handler.seen] == [2, 2]


@pytest.mark.parametrize(
    ("given", "redirected", "keeps"),
    [
        ("https://hub.example/a", "https://hub.example/b", True),
        ("https://hub.example/a", "https://HUB.example:443/b", True),
        ("https://hub.example/a", "http://hub.example/b", False),  # plain http after https
        ("https://hub.example/a", "https://cdn.example/b", False),
        ("https://hub.example/a", "https://hub.example:8443/b", False),
        ("http://hub.example/a", "https://hub.example/b", False),  # another origin
    ],
)
def test_hydrate_redirect_downgrade_or_new_origin_drops_credentials(
    given: str, redirected: str, keeps: bool
) -> None:
    assert sources.keeps_credentials(given, redirected) is keeps


def _token(tmp_path: Path) -> str:
    path = tmp_path / "token"
    path.write_text("sa-token\n")
    return str(path)


def test_api_client_redirect_to_another_host_does_not_collect_the_bearer_token(
    tmp_path: Path,
) -> None:
    body = json.dumps({"items": []}).encode()
    with two_servers("127.0.0.1", "127.0.0.2", "/api/v1/nodes", body) as (first, second, start):
        client = KubeClient(start, token_file=_token(tmp_path), timeout=5)
        assert client.request("GET", "/go") == {"items": []}
    assert first.seen[0]["authorization"] == "Bearer sa-token"
    assert second.seen and all("authorization" not in h for h in second.seen)


def test_api_client_redirect_to_another_port_does_not_collect_the_bearer_token(
    tmp_path: Path,
) -> None:
    body = json.dumps({"items": []}).encode()
    with two_servers("127.0.0.1", "127.0.0.1", "/api/v1/nodes", body) as (_, second, start):
        KubeClient(start, token_file=_token(tmp_path), timeout=5).request("GET", "/go")
    assert second.seen and all("authorization" not in h for h in second.seen)


def test_api_client_redirect_within_its_server_keeps_the_bearer_token(tmp_path: Path) -> None:
    handler = _handler(json.dumps({"kind": "NodeList"}).encode())
    with serving(handler) as base:
        handler.target = base + "/api/v1/nodes"
        KubeClient(base, token_file=_token(tmp_path), timeout=5).request("GET", "/go")
    assert [h.get("authorization") for h in handler.seen] == ["Bearer sa-token"] * 2
