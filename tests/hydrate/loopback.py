"""Loopback servers for the hydrator's tests: nothing leaves 127.0.0.1 (fixtures in conftest)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from loopback_http import serving


@dataclass
class FileServer:
    """Serves one payload at /files/<name>, honouring Range; records each request."""

    payload: bytes
    url: str = ""
    requests: list[dict[str, str]] = field(default_factory=list)
    # Serve only this many bytes of a full response, then drop the connection
    # (a download interrupted midway); None serves everything.
    cut_after: int | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.payload).hexdigest()


def _file_handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            state.requests.append({k.lower(): v for k, v in self.headers.items()})
            if self.path.startswith("/redirect-to-"):
                scheme = self.path.removeprefix("/redirect-to-")
                self.send_response(302)
                self.send_header("Location", f"{scheme}:///etc/passwd")
                self.end_headers()
                return
            if not self.path.startswith("/files/"):
                self.send_error(404)
                return
            body = state.payload
            start = 0
            rng = self.headers.get("Range")
            if rng:
                start = int(rng.removeprefix("bytes=").rstrip("-"))
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            else:
                self.send_response(200)
            chunk = body[start:]
            self.send_header("Content-Length", str(len(chunk)))
            self.end_headers()
            if state.cut_after is not None and not rng:
                self.wfile.write(chunk[: state.cut_after])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(chunk)

    return Handler


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    state = FileServer(payload=bytes(range(256)) * 4096 + b"tail")  # 1 MiB + 4 bytes
    with serving(_file_handler(state)) as state.url:
        yield state


@dataclass
class FakeKubeAPI:
    """A loopback stand-in for the API server: records PATCHes of ConfigMaps."""

    url: str = ""
    patches: list[tuple[str, str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    configmaps: dict[str, dict[str, str]] = field(default_factory=dict)
    forbidden: bool = False


def _api_handler(state: FakeKubeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_PATCH(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.patches.append((self.command, self.path, body, headers))
            if state.forbidden:
                self.send_response(403)
                self.end_headers()
                self.wfile.write(b'{"reason":"Forbidden"}')
                return
            data = state.configmaps.setdefault(self.path, {})
            data.update(body.get("data") or {})
            out = json.dumps({"kind": "ConfigMap", "data": data}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    return Handler


@pytest.fixture
def kube_api() -> Iterator[FakeKubeAPI]:
    state = FakeKubeAPI()
    with serving(_api_handler(state)) as state.url:
        yield state


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto in server mode on loopback: a real S3-compatible HTTP endpoint."""
    server_mod = pytest.importorskip("moto.server")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
