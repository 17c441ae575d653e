"""`modelplane function serve --tls-certs-dir`: mTLS as Crossplane speaks it.

The certificates are made here with the openssl command, like the ones
Crossplane mounts into a function's pod (tls.crt, tls.key, ca.crt).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import grpc
import pytest
from crossplane.function.proto.v1.run_function_pb2_grpc import FunctionRunnerServiceStub

from modelplane.crossplane.convert import dict_to_struct

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _issue(name: str, cn: str, cwd: Path, ext: str) -> None:
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=cwd)  # fmt: skip
    (cwd / f"{name}.ext").write_text(ext)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "1", "-out", f"{name}.crt",
             "-extfile", f"{name}.ext", cwd=cwd)  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca", cwd=d)  # fmt: skip
    _issue("tls", "function-modelplane", d, "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _issue("client", "crossplane", d, "extendedKeyUsage=clientAuth\n")
    return d


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def address(certs: Path) -> Iterator[str]:
    addr = f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from modelplane.cli.main import main; main()",
         "function", "serve", "--address", addr, "--tls-certs-dir", str(certs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ},
    )  # fmt: skip
    try:
        yield addr
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _channel(addr: str, certs: Path, *, client_cert: bool) -> grpc.Channel:
    read = lambda name: (certs / name).read_bytes()  # noqa: E731
    creds = grpc.ssl_channel_credentials(
        root_certificates=read("ca.crt"),
        private_key=read("client.key") if client_cert else None,
        certificate_chain=read("client.crt") if client_cert else None,
    )
    return grpc.secure_channel(addr, creds)


def _request() -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="tls"))
    req.observed.composite.resource.CopyFrom(
        dict_to_struct(
            {"apiVersion": "example.org/v1", "kind": "Gadget", "metadata": {"name": "g"}}
        )
    )
    return req


def test_a_client_with_a_certificate_from_the_ca_is_served(address: str, certs: Path) -> None:
    with _channel(address, certs, client_cert=True) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        rsp = FunctionRunnerServiceStub(channel).RunFunction(_request(), timeout=30)
    assert rsp.meta.tag == "tls"
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_FATAL]


def test_a_client_without_a_certificate_is_refused(address: str, certs: Path) -> None:
    # Wait until the server is up through an authenticated channel first, so a
    # refusal below cannot be a server that has not started yet.
    with _channel(address, certs, client_cert=True) as ok:
        grpc.channel_ready_future(ok).result(timeout=30)
    with (
        _channel(address, certs, client_cert=False) as channel,
        pytest.raises(grpc.RpcError) as err,
    ):
        FunctionRunnerServiceStub(channel).RunFunction(_request(), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
