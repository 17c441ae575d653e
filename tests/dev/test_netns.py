"""The fleet network: address ranges by rule, and (as root) real namespaces a server answers in."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplane.dev import netns


def test_each_cluster_has_a_pod_range_of_its_own_inside_the_fleet_link() -> None:
    link = ipaddress.ip_network(f"{netns.FLEET_ADDRESS}/{netns.PREFIX_LEN}", strict=False)
    ranges = [ipaddress.ip_network(netns.pod_cidr(i)) for i in range(151)]
    assert all(r.subnet_of(link) for r in ranges)  # type: ignore[arg-type]
    assert len(set(ranges)) == 151
    assert not any(a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1 :])
    # Nor with the Service range the API servers hand ClusterIPs from.
    assert not any(r.overlaps(ipaddress.ip_network("10.0.0.0/24")) for r in ranges)
    assert ipaddress.ip_address(netns.FLEET_ADDRESS) not in ranges[0]
    with pytest.raises(ValueError):
        netns.pod_cidr(151)


def test_kwok_hands_out_addresses_of_the_cluster_range() -> None:
    assert netns.kwok_cidr(2) == "10.102.0.1/16"
    assert ipaddress.ip_interface(netns.kwok_cidr(2)).network == ipaddress.ip_network(
        netns.pod_cidr(2)
    )


def test_a_fleet_is_named_by_its_directory(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert netns.fleet_id(a) == netns.fleet_id(a)
    assert netns.fleet_id(a) != netns.fleet_id(b)
    net = netns.Network(netns.fleet_id(a))
    assert net.name == f"mpf-{net.ident}"
    assert net.pod_namespace("wl-1/ml/p/uid").startswith(net.pod_prefix)
    assert net.pod_namespace("wl-1/ml/p/uid") != net.pod_namespace("wl-2/ml/p/uid")
    assert net.exec_argv(["curl", "x"]) == [
        "nsenter",
        f"--net=/run/netns/{net.name}",
        "--",
        "curl",
        "x",
    ]


def _can_make_namespaces() -> bool:
    return (
        os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("nsenter") is not None
    )


@pytest.fixture
def network() -> Iterator[netns.Network]:
    if not _can_make_namespaces():
        pytest.skip("making network namespaces needs root, ip and nsenter")
    net = netns.Network(f"t{os.getpid() % 100000:05d}")
    net.down()
    assert net.up() is True
    assert net.up() is False  # already there: nothing made twice
    try:
        yield net
    finally:
        net.down()
        assert not any(n.startswith((net.name, net.pod_prefix)) for n in netns.namespaces())


def test_a_server_in_a_pod_namespace_answers_at_the_pod_address_and_nowhere_else(
    network: netns.Network,
) -> None:
    ns = network.attach("wl-1/ml/engine-0/u1", "10.101.7.9")
    server = subprocess.Popen(
        network.exec_argv([sys.executable, "-m", "http.server", "8000", "--bind", "0.0.0.0"], ns),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while netns.get(network, "10.101.7.9", 8000, "/") != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert netns.get(network, "10.101.7.9", 8000, "/") == 200
        # Another address of the same range: nothing there.
        assert netns.get(network, "10.101.7.10", 8000, "/", timeout=0.5) == 0
        # The machine's own namespace has no route to the Pod.
        done = subprocess.run(
            ["ip", "route", "get", "10.101.7.9"], capture_output=True, text=True, check=False
        )
        assert "br0" not in done.stdout
        # Attaching again (the kubelet restarted) gives the Pod a fresh namespace.
        assert network.attach("wl-1/ml/engine-0/u1", "10.101.7.9") == ns
    finally:
        server.kill()
        server.wait()
    assert network.detach("wl-1/ml/engine-0/u1") is True
    assert network.detach("wl-1/ml/engine-0/u1") is False


def test_an_announcement_is_a_broadcast_arp_request_for_the_address_from_itself() -> None:
    frame = netns.arp_announcement(bytes.fromhex("0a0b0c0d0e0f"), "10.101.0.7")
    expected = [
        "ffffffffffff0a0b0c0d0e0f0806",  # to everyone on the link, from the Pod's, ARP
        "0001080006040001",  # Ethernet and IPv4, a request
        "0a0b0c0d0e0f0a650007",  # sender: the Pod's link and address
        "0000000000000a650007",  # target: the same address
    ]
    assert frame.hex() == "".join(expected)


_ANSWER = (
    "import socket, sys\n"
    "s = socket.socket(); s.bind((sys.argv[1], 8000)); s.listen(8)\n"
    "while True:\n"
    "    c, _ = s.accept(); c.sendall(sys.argv[2].encode()); c.close()\n"
)


def _ask(client_ns: str, address: str, timeout: float) -> bytes:
    sock = netns.socket_in(client_ns)
    sock.settimeout(timeout)
    with sock:
        deadline = time.monotonic() + 10  # the server starting
        while sock.connect_ex((address, 8000)) != 0:
            assert time.monotonic() < deadline, f"nothing answers at {address}"
            sock.close()
            time.sleep(0.1)
            sock = netns.socket_in(client_ns)
            sock.settimeout(timeout)
        return sock.recv(16)


def _answer(network: netns.Network, client: str, pod: str, word: str, timeout: float) -> bytes:
    """What a server in a Pod at 10.101.0.2 answers the client, asked with `timeout`."""
    ns = network.attach(pod, "10.101.0.2")
    server = subprocess.Popen(
        network.exec_argv([sys.executable, "-c", _ANSWER, "10.101.0.2", word], ns)
    )
    try:
        return _ask(client, "10.101.0.2", timeout)
    finally:
        server.kill()
        server.wait()


def test_a_pod_given_a_freed_address_is_reached_at_once_by_a_neighbour_of_the_last(
    network: netns.Network,
) -> None:
    """kwok hands a deleted Pod's address to the next Pod. A neighbour that spoke to the
    old Pod reaches the new one at once: without the new Pod's announcement it kept the
    old link address and its connections hung for tens of seconds."""
    client = network.attach("wl-1/ml/router/u0", "10.101.0.1")
    assert _answer(network, client, "wl-1/ml/engine-0/u1", "old", 5) == b"old"
    network.detach("wl-1/ml/engine-0/u1")
    assert _answer(network, client, "wl-1/ml/engine-1/u2", "new", 2) == b"new"
