"""A loopback port of the machine, made to appear inside network namespaces.

The fleet's API servers listen on the machine's 127.0.0.1; a controller the
fleet runs in a namespace of its own (Envoy Gateway, which binds fixed ports)
still reaches its cluster's API server at the same `https://127.0.0.1:<port>`,
with the same kubeconfig and the same certificate: this process listens on
127.0.0.1:<port> inside each named namespace and relays every connection to
127.0.0.1:<port> of the machine. Nothing else is relayed, and the listening
sockets exist only inside the namespaces named.

Usage: python -m modelplane.dev.portal PORT NAMESPACE [NAMESPACE...]
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from collections.abc import Sequence

from modelplane.dev import netns

CHUNK = 65536


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction of a relayed connection until it ends, then close the writer."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            writer.close()


async def _serve_one(port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


def listener(namespace: str, port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:port inside the namespace."""
    sock = netns.socket_in(namespace)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve(port: int, namespaces: Sequence[str]) -> None:
    """Relay port from every namespace to the machine until cancelled."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_one(port, reader, writer)

    servers = [await asyncio.start_server(handle, sock=listener(ns, port)) for ns in namespaces]
    await asyncio.gather(*(s.serve_forever() for s in servers))


def main(argv: Sequence[str]) -> None:
    """Parse PORT NAMESPACE... and relay until killed."""
    if len(argv) < 2 or not argv[0].isdigit():
        raise SystemExit(__doc__)
    asyncio.run(serve(int(argv[0]), argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
