"""Load balancers for a local cluster's `type: LoadBalancer` Services, as a cloud would provide.

Envoy Gateway exposes each Gateway through a LoadBalancer Service and calls the
Gateway Programmed, with an address, only once that Service has one. On the
local fleet the engine kubelet plays the cloud's load balancer: each such
Service gets an address of its cluster's range (`address`), written to
`status.loadBalancer.ingress`, held by a network namespace of its own on the
fleet bridge; a relay there accepts connections on every Service port and
passes each, as bytes, to one of the Service's ready endpoints (its
EndpointSlices), in turn. TLS and HTTP stay end to end: the relay reads
nothing. A Service with no ready endpoint refuses connections, as a cloud
load balancer with no healthy target does.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.dev import netns
from modelplane.dev.portal import pipe

# Load balancer addresses are the top of each cluster's pod range (kwok hands
# Pod addresses out from the bottom).
_FIRST, _LAST = 1, 254


@dataclass(frozen=True)
class Port:
    """One Service port: where the balancer listens and the ready endpoints behind it."""

    port: int
    endpoints: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Balancer:
    """One LoadBalancer Service as the relay serves it."""

    key: str  # namespace/name
    address: str
    ports: tuple[Port, ...]


def address(cluster_index: int, taken: Iterable[str], preferred: str | None = None) -> str:
    """An address for a new load balancer of the cluster: its current one if still free, else
    the first free one of 10.<100+i>.255.1-254."""
    taken = set(taken)
    if preferred and preferred not in taken:
        return preferred
    base = netns.pod_cidr(cluster_index).split(".0.0/")[0]
    for host in range(_FIRST, _LAST + 1):
        candidate = f"{base}.255.{host}"
        if candidate not in taken:
            return candidate
    raise RuntimeError(f"no load balancer address left in {base}.255.0/24")


def is_balanced(service: Mapping[str, Any]) -> bool:
    """Whether a Service asks for a load balancer."""
    return (service.get("spec") or {}).get("type") == "LoadBalancer"


def current_address(service: Mapping[str, Any]) -> str | None:
    """The address the Service's status already gives it, if any."""
    for ingress in ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if isinstance(ingress, dict) and ingress.get("ip"):
            return str(ingress["ip"])
    return None


def ready_endpoints(
    service: Mapping[str, Any], slices: Iterable[Mapping[str, Any]]
) -> tuple[Port, ...]:
    """Each Service port with the ready (address, port) pairs its EndpointSlices give it."""
    out = []
    for sp in (service.get("spec") or {}).get("ports") or []:
        pairs: list[tuple[str, int]] = []
        for eps in slices:
            numbers = {
                p.get("name") or "": p.get("port") for p in eps.get("ports") or [] if p.get("port")
            }
            target = numbers.get(sp.get("name") or "")
            if target is None:
                continue
            for endpoint in eps.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready"):
                    pairs += [(str(a), int(target)) for a in endpoint.get("addresses") or []]
        out.append(Port(int(sp["port"]), tuple(sorted(pairs))))
    return tuple(out)


class Relays:
    """The relays of one cluster's load balancers, on an event loop of their own thread."""

    def __init__(self, network: netns.Network) -> None:
        self.network = network
        self.loop = asyncio.new_event_loop()
        self.servers: dict[tuple[str, int], asyncio.Server] = {}
        self.routes: dict[tuple[str, int], itertools.cycle[tuple[str, int]] | None] = {}
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def apply(self, balancers: Iterable[Balancer], namespaces: Mapping[str, str]) -> None:
        """Serve exactly these balancers (namespaces: address → the namespace holding it)."""
        future = asyncio.run_coroutine_threadsafe(
            self._apply(list(balancers), namespaces), self.loop
        )
        future.result(30)

    async def _apply(self, balancers: list[Balancer], namespaces: Mapping[str, str]) -> None:
        wanted = {(b.address, p.port): p for b in balancers for p in b.ports}
        for key in set(self.servers) - set(wanted):
            self.servers.pop(key).close()
            self.routes.pop(key, None)
        for key, port in wanted.items():
            self.routes[key] = itertools.cycle(port.endpoints) if port.endpoints else None
            if key not in self.servers:
                self.servers[key] = await self._listen(namespaces[key[0]], *key)

    async def _listen(self, namespace: str, address: str, port: int) -> asyncio.Server:
        sock = netns.socket_in(namespace)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(256)
        sock.setblocking(False)

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._relay((address, port), reader, writer)

        return await asyncio.start_server(handle, sock=sock)

    async def _relay(
        self, key: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        route = self.routes.get(key)
        if route is None:
            writer.close()
            return
        target = next(route)
        upstream = netns.socket_in(self.network.name)
        upstream.setblocking(False)
        try:
            await asyncio.wait_for(self.loop.sock_connect(upstream, target), 5)
            up_reader, up_writer = await asyncio.open_connection(sock=upstream)
        except (OSError, TimeoutError):
            upstream.close()
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def close(self) -> None:
        """Stop every relay and the loop."""
        self.apply([], {})
        self.loop.call_soon_threadsafe(self.loop.stop)
