"""docs/autoscaling.md's setup of the function's metrics works against the code: the
scrape config keeps the pods by the label Crossplane gives them and checks the name
the server certificate carries, the port is the one the doc turns on, the metric
table is what the function registers, and a client certificate made with the doc's
openssl lines scrapes the mutual-TLS endpoint (`serve_metrics` with a certs dir).

Crossplane's labels, port and Service name are written here by hand from its
source; `e2e/test_function_pod_real.py` applies the same scrape config to the
function Pod and Service a real Crossplane makes."""

from __future__ import annotations

import datetime
import re
import socket
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from function_scrape import SECTION, blocks, discovered, metrics_container, relabel, scrape_job

from modelplane.api.xrd import DEFAULT_FUNCTION_PACKAGE, installed_name
from modelplane.crossplane.metrics import FunctionMetrics, serve_metrics

# What Crossplane does for a function (internal/controller/pkg/runtime/runtime.go):
# label its pods pkg.crossplane.io/function=<the Function's name>, declare port 8080
# named metrics on the runtime container, and name the Service after the Function.
CROSSPLANE_METRICS_PORT = 8080
NAMESPACE = "crossplane-system"


def test_the_scrape_keeps_the_pods_of_the_function_the_compositions_call() -> None:
    job = scrape_job()
    keep = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    assert keep == [
        {
            "source_labels": ["__meta_kubernetes_pod_label_pkg_crossplane_io_function"],
            "regex": installed_name(DEFAULT_FUNCTION_PACKAGE),
            "action": "keep",
        }
    ]
    service = installed_name(DEFAULT_FUNCTION_PACKAGE)
    assert job["tls_config"]["server_name"] == f"{service}.{NAMESPACE}.svc"
    assert job["tls_config"]["insecure_skip_verify"] is False
    (address,) = [r for r in job["relabel_configs"] if r.get("target_label") == "__address__"]
    assert address["replacement"] == f"$1:{CROSSPLANE_METRICS_PORT}"


def _crossplane_pod_labels(package_type: str, name: str, revision: str) -> dict[str, str]:
    """The labels Crossplane v2.3.4 gives a package's runtime pods (runtime.go's
    podSelectors): its revision and `pkg.crossplane.io/<function|provider>: <name>`."""
    return {"pkg.crossplane.io/revision": revision, f"pkg.crossplane.io/{package_type}": name}


def test_the_scrape_finds_the_functions_pod_by_the_labels_crossplane_gives_it() -> None:
    job = scrape_job()
    (namespace,) = job["kubernetes_sd_configs"][0]["namespaces"]["names"]
    name = installed_name(DEFAULT_FUNCTION_PACKAGE)
    ours = _crossplane_pod_labels("function", name, f"{name}-2d711642b726")
    kept = relabel(discovered(ours, "10.0.3.7", namespace), job["relabel_configs"])
    assert kept is not None and kept["__address__"] == f"10.0.3.7:{CROSSPLANE_METRICS_PORT}"
    # Another function's pod, and a provider's pod named like ours, are not scraped.
    other = _crossplane_pod_labels("function", "function-patch-and-transform", "fpt-1")
    provider = _crossplane_pod_labels("provider", name, "p-1")
    for labels in (other, provider):
        assert relabel(discovered(labels, "10.0.3.8", namespace), job["relabel_configs"]) is None


def test_the_port_the_doc_turns_on_is_the_one_scraped() -> None:
    container = metrics_container()
    assert container["name"] == "package-runtime"
    assert {"name": "METRICS_PORT", "value": str(CROSSPLANE_METRICS_PORT)} in container["env"]


def test_the_metric_table_is_what_the_function_registers() -> None:
    documented = set(re.findall(r"^\| `(modelplane_[a-z_]+)` \|", SECTION, flags=re.M))
    registered = {
        m.name + ("_total" if m.type == "counter" else "")
        for m in FunctionMetrics().registry.collect()
    }
    assert documented == registered


def _key() -> Any:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, key: Any, issuer: Any, issuer_key: Any, **ext: Any) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    for extension in ext.values():
        builder = builder.add_extension(extension, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(path: Path, obj: Any) -> None:
    if isinstance(obj, x509.Certificate):
        path.write_bytes(obj.public_bytes(serialization.Encoding.PEM))
    else:
        path.write_bytes(
            obj.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )


def _crossplane_pki(tmp: Path, service: str) -> Path:
    """A root CA as crossplane-root-ca holds it (ca.crt, ca.key as the doc saves them) and
    the function's server certificate dir as Crossplane mounts it (tls.crt, tls.key, ca.crt)."""
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Crossplane Root CA")])
    ca = _cert(
        "Crossplane Root CA", ca_key, ca_name, ca_key,
        basic=x509.BasicConstraints(ca=True, path_length=None),
    )  # fmt: skip
    _pem(tmp / "ca.crt", ca)
    _pem(tmp / "ca.key", ca_key)
    server_dir = tmp / "server"
    server_dir.mkdir()
    server_key = _key()
    names = [service, f"{service}.{NAMESPACE}", f"{service}.{NAMESPACE}.svc"]
    server = _cert(
        service, server_key, ca_name, ca_key,
        san=x509.SubjectAlternativeName([x509.DNSName(n) for n in names]),
    )  # fmt: skip
    _pem(server_dir / "tls.crt", server)
    _pem(server_dir / "tls.key", server_key)
    _pem(server_dir / "ca.crt", ca)
    return server_dir


def _openssl_lines() -> list[str]:
    (block,) = [b for b in blocks("sh") if "openssl" in b]
    return [line for line in block.splitlines() if line.startswith(("openssl ", "printf "))]


@pytest.mark.skipif(subprocess.run(["which", "openssl"], capture_output=True).returncode != 0,
                    reason="openssl is not installed")  # fmt: skip
def test_a_client_certificate_made_as_documented_scrapes_the_function(tmp_path: Path) -> None:
    service = installed_name(DEFAULT_FUNCTION_PACKAGE)
    server_dir = _crossplane_pki(tmp_path, service)
    lines = _openssl_lines()
    assert len(lines) == 3
    for line in lines:  # printf needs a shell for its redirection; run each through one
        subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, capture_output=True)
    metrics = FunctionMetrics()
    server = serve_metrics(metrics, 0, "127.0.0.1", str(server_dir))
    port = server.server_address[1]
    job = scrape_job()["tls_config"]

    def fetch(ctx: ssl.SSLContext) -> str:
        """GET /metrics from the pod's address, verifying the name the scrape checks."""
        with ctx.wrap_socket(
            socket.create_connection(("127.0.0.1", port), timeout=5),
            server_hostname=job["server_name"],
        ) as tls:
            tls.sendall(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")
            data = b""
            while chunk := tls.recv(65536):
                data += chunk
        return data.decode()

    try:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            fetch(ssl.create_default_context(cafile=str(tmp_path / "ca.crt")))  # no client cert
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        context.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
        page = fetch(context)
    finally:
        server.shutdown()
        server.server_close()
    assert page.startswith("HTTP/1.0 200")
    assert "modelplane_function_calls_total" in page
