"""A real HTTP server on loopback, for the tests of code that talks HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1") -> Iterator[str]:
    """Serve `handler` on `host` (a loopback address; a free port) in a thread; yields the base URL.

    127.0.0.1 and 127.0.0.2 are both loopback but different hosts, as a client
    that binds credentials to a host tells them apart.
    """
    server = ThreadingHTTPServer((host, 0), handler)
    # A short poll interval: shutdown() waits up to one interval (0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
