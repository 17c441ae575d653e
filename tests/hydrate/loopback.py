"""Loopback servers for the hydrator's tests: nothing leaves 127.0.0.1 (fixtures in conftest)."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest
from loopback_http import serving


@dataclass
class FileServer:
    """Serves one payload at /files/<name>; records each request.

    By default it behaves like a careful server (Content-Length, a strong ETag,
    Range and If-Range honoured); each field below turns one behaviour of a
    careless or changing server on, for the hydrator's resume tests.
    """

    payload: bytes
    url: str = ""
    requests: list[dict[str, str]] = field(default_factory=list)
    # Serve only this many bytes of a body, then drop the connection (a download
    # interrupted midway); None serves everything.
    cut_after: int | None = None
    send_etag: bool = True
    weak_etag: bool = False
    last_modified: str | None = None
    honour_range: bool = True  # False: answer a range request with 200 and the whole file
    honour_if_range: bool = True  # False: serve the range even when If-Range does not match
    range_shift: int = 0  # a 206 that starts this many bytes after the byte asked for
    send_length: bool = True  # False: no Content-Length; the body ends when the connection does
    head_length: bool = True  # False: a HEAD reports no Content-Length
    chunked: bool = False  # Transfer-Encoding: chunked (64 KiB chunks)
    status: int | None = None  # answer every request for a file with this error status

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.payload).hexdigest()

    @property
    def etag(self) -> str | None:
        """The current version's ETag (it changes with the payload), unless not sent."""
        if not self.send_etag:
            return None
        return ("W/" if self.weak_etag else "") + f'"{self.sha256[:16]}"'

    def gets(self) -> list[dict[str, str]]:
        return [r for r in self.requests if r["method"] == "GET"]


CHUNK_SIZE = 1 << 16


def _chunked(body: bytes, cut: int | None) -> bytes:
    """`body` in chunked encoding; cut after `cut` body bytes (mid-chunk or between chunks)."""
    out = b""
    sent = 0
    for i in range(0, len(body), CHUNK_SIZE):
        piece = body[i : i + CHUNK_SIZE]
        if cut is not None and sent >= cut:
            return out
        out += f"{len(piece):x}\r\n".encode()
        if cut is not None and sent + len(piece) > cut:
            return out + piece[: cut - sent]  # the chunk announced but not delivered
        out += piece + b"\r\n"
        sent += len(piece)
    return out + b"0\r\n\r\n"


class FileHandler(BaseHTTPRequestHandler):
    """Serves `state` (set on a subclass per server) as the FileServer fields describe."""

    state: ClassVar[FileServer]

    def log_message(self, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def do_GET(self) -> None:
        self._respond(head=False)

    def _if_range_matches(self) -> bool:
        wanted = self.headers.get("If-Range")
        if wanted is None or not self.state.honour_if_range:
            return True
        return wanted in (self.state.etag, self.state.last_modified)

    def _validators(self) -> None:
        if self.state.etag:
            self.send_header("ETag", self.state.etag)
        if self.state.last_modified:
            self.send_header("Last-Modified", self.state.last_modified)

    def _not_a_file(self) -> bool:
        """Answer a redirect, a 404 or the configured error instead of a file; True when it did."""
        if self.path.startswith("/redirect-to-"):
            scheme = self.path.removeprefix("/redirect-to-")
            self.send_response(302)
            self.send_header("Location", f"{scheme}:///etc/passwd")
            self.end_headers()
            return True
        if self.path.startswith("/moved/"):
            self.send_response(301)
            self.send_header("Location", self.path.replace("/moved/", "/files/", 1))
            self.end_headers()
            return True
        if not self.path.startswith("/files/"):
            self.send_error(404)
            return True
        if self.state.status is not None:
            self.send_error(self.state.status)
            return True
        return False

    def _range_start(self) -> int | None:
        """Where a range request this server honours starts; None to serve the whole file."""
        rng = self.headers.get("Range")
        if not rng or not self.state.honour_range or not self._if_range_matches():
            return None
        return int(rng.removeprefix("bytes=").rstrip("-"))

    def _unsatisfiable(self, total: int) -> None:
        self.send_response(416)
        self.send_header("Content-Range", f"bytes */{total}")
        self.send_header("Content-Length", "0")
        self._validators()
        self.end_headers()

    def _respond(self, head: bool) -> None:
        state = self.state
        state.requests.append(
            {"method": self.command, **{k.lower(): v for k, v in self.headers.items()}}
        )
        if self._not_a_file():
            return
        body = state.payload
        start = self._range_start()
        if start is not None and start >= len(body):
            self._unsatisfiable(len(body))
            return
        if start is not None:
            # A server that serves another range than the one asked (and says so).
            start = max(0, min(start + state.range_shift, len(body) - 1))
        self.send_response(200 if start is None else 206)
        if start is not None:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self._validators()
        rest = body[start or 0 :]
        self._body(rest, head)

    def _body(self, rest: bytes, head: bool) -> None:
        state = self.state
        if state.chunked and not head:
            self.send_header("Transfer-Encoding", "chunked")
        elif state.head_length if head else state.send_length:
            self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        self.close_connection = True
        if head:
            return
        if state.chunked:
            self.wfile.write(_chunked(rest, state.cut_after))
        else:
            self.wfile.write(rest if state.cut_after is None else rest[: state.cut_after])
        self.wfile.flush()


def _file_handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (FileHandler,), {"state": state})


@contextmanager
def serving_files(state: FileServer) -> Iterator[FileServer]:
    """Serve `state` on loopback for the duration of the block (its `url` set)."""
    with serving(_file_handler(state)) as state.url:
        yield state


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    with serving_files(FileServer(payload=bytes(range(256)) * 4096 + b"tail")) as state:
        yield state  # 1 MiB + 4 bytes


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
    url = f"http://{host}:{port}"
    # moto keeps its buckets in this process across servers: start each test empty.
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"))
    try:
        yield url
    finally:
        server.stop()
