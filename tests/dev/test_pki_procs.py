"""Certificates, kubeconfigs and process supervision of the local fleet."""

from __future__ import annotations

import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import yaml
from cryptography import x509

from modelplane.dev import pki, procs
from modelplane.dev.kubeapi import Kubeconfig


def test_issued_certificates_verify_against_the_ca(tmp_path: Path) -> None:
    ca = pki.CA.create()
    ca.write(tmp_path)
    ca.issue(tmp_path / "srv", "srv", server=True, client=False)
    ca.issue(tmp_path / "cli", "cli", server=False, client=True)
    leaf = x509.load_pem_x509_certificate((tmp_path / "srv" / "tls.crt").read_bytes())
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    assert (tmp_path / "srv" / "tls.key").stat().st_mode & 0o777 == 0o600
    # A real TLS handshake: the server presents srv, the client verifies it with the CA
    # and presents cli, which the server verifies in turn.
    server_ctx = ssl.create_default_context(
        ssl.Purpose.CLIENT_AUTH, cafile=str(tmp_path / "ca.crt")
    )
    server_ctx.load_cert_chain(tmp_path / "srv" / "tls.crt", tmp_path / "srv" / "tls.key")
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    client_ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    client_ctx.load_cert_chain(tmp_path / "cli" / "tls.crt", tmp_path / "cli" / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: list[str] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            peer = tls.getpeercert() or {}
            seen.append(dict(x[0] for x in peer.get("subject", ()))["commonName"])
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.recv(2) == b"ok"
    thread.join(5)
    listener.close()
    assert seen == ["cli"]
    assert pki.CA.load(tmp_path).cert == ca.cert


def test_kubeconfig_texts(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("CA\n")
    (tmp_path / "token").write_text("secret-token\n")
    kc = Kubeconfig("wl-1", "https://127.0.0.1:1234", tmp_path / "ca.crt", tmp_path / "token")
    doc = yaml.safe_load(kc.text())
    assert doc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1234"
    assert doc["users"][0]["user"]["token"] == "secret-token"
    portable = yaml.safe_load(kc.portable_text())
    assert portable["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:1234",
        "certificate-authority-data": "Q0EK",
    }


def test_a_started_process_is_found_alive_and_stopped_with_its_children(tmp_path: Path) -> None:
    code = "import subprocess,time; subprocess.Popen(['sleep','60']); time.sleep(60)"
    proc = procs.start("sleeper", [sys.executable, "-c", code], tmp_path)
    # Between fork and exec the child still shows its parent's command line.
    deadline = time.monotonic() + 10
    while not proc.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.alive()
    again = procs.Proc.from_json(proc.to_json())
    assert again == proc and again.alive()
    procs.stop(proc, grace=5)
    assert not proc.alive()
    # A pid recorded for another executable is never taken for ours.
    assert not procs.Proc("x", proc.pid, "/bin/not-this", "").alive()


def test_free_ports_differ() -> None:
    ports = procs.free_ports(5)
    assert len(set(ports)) == 5 and not any(procs.listening(p) for p in ports)
