"""The local fleet's network: pod addresses that are real, kept inside network namespaces.

kwok gives every Pod an address but nothing listens there, and EndpointSlices
refuse loopback addresses, so the traffic path needs addresses a process can
bind. `dev up` makes one network namespace for the fleet (`mpf-<id>`) holding a
bridge; every Pod whose process the fleet runs (an engine) gets a namespace of
its own (`mpp-<id>-<hash>`), joined to that bridge by a veth pair and carrying
the Pod's address, as a CNI plugin would do for a kubelet. All of 10.0.0.0/8 is
one link: each cluster's pod range (`pod_cidr`) is a /16 of it, so any Pod
reaches any other and the fleet namespace reaches them all.

Nothing here has a route to anything else: no default route, no uplink to the
machine's own network. The machine reaches the fleet only by entering its
namespace (`modelplane dev exec`, `exec_argv`) or by opening a socket inside it
(`socket_in`), so no address of a tenant's choosing can ever be reached from a
Pod. Creating namespaces needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import http.client
import json
import os
import shutil
import socket
import struct
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NETNS_DIR = Path("/run/netns")
# `ip netns exec NAME` shows a process the files of /etc/netns/NAME in place of
# those of /etc: how a Pod's processes get a hosts file (the fleet's DNS).
ETC_DIR = Path("/etc/netns")
BRIDGE = "br0"
# The fleet namespace's own address on the bridge: where `dev exec` commands
# come from.
FLEET_ADDRESS = "10.99.0.1"
PREFIX_LEN = 8
_CLONE_NEWNET = 0x40000000
_ETH_P_ARP = 0x0806
_LIBC = ctypes.CDLL(None, use_errno=True)


class NetworkError(RuntimeError):
    """A namespace or link could not be made."""


def pod_cidr(index: int) -> str:
    """The pod address range of the index-th cluster (0 is the control plane)."""
    if not 0 <= index <= 150:
        raise ValueError(f"cluster index {index} is outside 0..150")
    return f"10.{100 + index}.0.0/16"


def kwok_cidr(index: int) -> str:
    """kwok's `--cidr` for a cluster: its pod range, handing out addresses from .0.1."""
    return pod_cidr(index).replace(".0.0/", ".0.1/")


def fleet_id(directory: Path) -> str:
    """A short, stable name for the fleet kept in `directory` (six hex digits)."""
    return hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:6]


def _ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def namespaces() -> list[str]:
    """The names of every network namespace `ip netns` knows."""
    return sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []


@dataclass(frozen=True)
class Network:
    """One fleet's namespaces: the fleet's own and one per Pod attached to it."""

    ident: str

    @property
    def name(self) -> str:
        """The fleet namespace's name."""
        return f"mpf-{self.ident}"

    @property
    def pod_prefix(self) -> str:
        """What every Pod namespace of this fleet is named with."""
        return f"mpp-{self.ident}-"

    def exists(self) -> bool:
        """Whether the fleet namespace is there."""
        return (NETNS_DIR / self.name).exists()

    def up(self) -> bool:
        """Make the fleet namespace and its bridge unless they exist; True when made now."""
        if self.exists():
            return False
        _ip("netns", "add", self.name)
        _ip("-n", self.name, "link", "set", "lo", "up")
        _ip("-n", self.name, "link", "add", BRIDGE, "type", "bridge")
        _ip("-n", self.name, "addr", "add", f"{FLEET_ADDRESS}/{PREFIX_LEN}", "dev", BRIDGE)
        _ip("-n", self.name, "link", "set", BRIDGE, "up")
        return True

    def pod_namespace(self, key: str) -> str:
        """The namespace name of a Pod (key: cluster/namespace/name/uid)."""
        return self.pod_prefix + hashlib.sha256(key.encode()).hexdigest()[:10]

    def attach(self, key: str, address: str) -> str:
        """Give a Pod a namespace holding `address`, joined to the fleet; its name.

        A namespace left from an earlier run of the same Pod is made again, so
        the address and link are always the ones asked for.
        """
        ns = self.pod_namespace(key)
        self.detach(key)
        tag = ns.rsplit("-", 1)[-1]
        outer, inner = f"h{tag}", f"p{tag}"
        _ip("netns", "add", ns)
        try:
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip(
                "link", "add", outer, "netns", self.name, "type", "veth", "peer", inner, "netns", ns
            )
            _ip("-n", self.name, "link", "set", outer, "master", BRIDGE, "up")
            _ip("-n", ns, "link", "set", inner, "name", "eth0")
            _ip("-n", ns, "addr", "add", f"{address}/{PREFIX_LEN}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            self._await_forwarding(outer)
            announce(ns, address)
        except (NetworkError, OSError):
            self.detach(key)
            raise
        return ns

    def _await_forwarding(self, link: str, timeout: float = 2.0) -> None:
        """Wait, at most `timeout`, until the bridge forwards through one of its ports
        (it does once the link's carrier is up), so that what the Pod sends first
        reaches its neighbours."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = json.loads(_ip("-n", self.name, "-j", "-d", "link", "show", "dev", link))
            data = (shown[0].get("linkinfo") or {}).get("info_slave_data") or {}
            if data.get("state") == "forwarding":
                return
            time.sleep(0.02)

    def detach(self, key: str) -> bool:
        """Remove a Pod's namespace (its veth goes with it); False when there was none."""
        ns = self.pod_namespace(key)
        # A process still running in the namespace keeps it (and the veth pair)
        # alive after `netns del`: remove the fleet's end, which takes the pair.
        with contextlib.suppress(NetworkError):
            _ip("-n", self.name, "link", "del", f"h{ns.rsplit('-', 1)[-1]}")
        shutil.rmtree(ETC_DIR / ns, ignore_errors=True)
        if not (NETNS_DIR / ns).exists():
            return False
        _ip("netns", "del", ns)
        return True

    def write_hosts(self, namespace: str, names: Mapping[str, str]) -> None:
        """The hosts file a namespace's processes see (name → address), rewritten in place
        so that processes already running read the new names."""
        path = ETC_DIR / namespace / "hosts"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1 localhost"] + [f"{a} {n}" for n, a in sorted(names.items())]
        with path.open("a+") as out:
            out.seek(0)
            out.truncate()
            out.write("\n".join(lines) + "\n")

    def down(self) -> list[str]:
        """Remove every namespace of this fleet; the names removed."""
        gone = [ns for ns in namespaces() if ns.startswith(self.pod_prefix)]
        if self.exists():
            gone.append(self.name)
        for ns in gone:
            shutil.rmtree(ETC_DIR / ns, ignore_errors=True)
            with contextlib.suppress(NetworkError):
                _ip("netns", "del", ns)
        return gone

    def exec_argv(
        self, argv: Sequence[str], namespace: str | None = None, hosts: bool = False
    ) -> list[str]:
        """The command line that runs argv inside the fleet namespace (or a Pod's); with
        `hosts`, it sees the namespace's own hosts file (`write_hosts`)."""
        if hosts:
            return ["ip", "netns", "exec", namespace or self.name, *argv]
        return ["nsenter", f"--net={NETNS_DIR / (namespace or self.name)}", "--", *argv]

    def http(self, host: str, port: int, timeout: float = 5.0) -> http.client.HTTPConnection:
        """An HTTP connection made from inside the fleet namespace."""
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        sock = socket_in(self.name)
        sock.settimeout(timeout)
        try:
            sock.connect((host, port))
        except OSError:
            sock.close()
            raise
        conn.sock = sock
        return conn


def _setns(fd: int) -> None:
    if _LIBC.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def _entered(namespace: str) -> Iterator[None]:
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(NETNS_DIR / namespace, os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


def socket_in(namespace: str) -> socket.socket:
    """A TCP socket that lives in the named namespace (a socket keeps the namespace
    it was made in), while the calling thread stays in its own."""
    with _entered(namespace):
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)


def announce(namespace: str, address: str) -> None:
    """Send a gratuitous ARP from the namespace's eth0: `address` is now at its link.

    kwok hands a freed Pod address to the next Pod it starts, and a neighbour that
    spoke to the previous holder keeps its link address for tens of seconds: until
    that entry expires, the neighbour's packets for the new Pod go to a link that is
    gone and its connections hang. The CNI bridge plugin announces a new Pod's address
    for the same reason.
    """
    with _entered(namespace):
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with sock:
        sock.bind(("eth0", _ETH_P_ARP))
        sock.send(arp_announcement(sock.getsockname()[4], address))


def arp_announcement(mac: bytes, address: str) -> bytes:
    """A broadcast Ethernet frame carrying an ARP request for `address` from `address`
    at `mac` (sender and target the same: a gratuitous ARP, RFC 5227's announcement)."""
    ip = socket.inet_aton(address)
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, ip, bytes(6), ip)
    return b"\xff" * 6 + mac + struct.pack("!H", _ETH_P_ARP) + arp


def listening(namespace: str, port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on host:port inside the namespace."""
    sock = socket_in(namespace)
    sock.settimeout(1.0)
    try:
        return sock.connect_ex((host, port)) == 0
    finally:
        sock.close()


def get(network: Network, url_host: str, port: int, path: str, timeout: float = 2.0) -> int:
    """The status code of GET path on host:port from inside the fleet; 0 when unreachable."""
    try:
        conn = network.http(url_host, port, timeout)
        try:
            conn.request("GET", path)
            return conn.getresponse().status
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return 0
