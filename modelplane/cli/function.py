"""`modelplane function serve`: the composition-function gRPC server."""

from __future__ import annotations

import click

from modelplane.crossplane.function import DEFAULT_ADDRESS
from modelplane.crossplane.function import serve as serve_function


@click.group("function")
def function() -> None:
    """The composition function Crossplane calls."""


@function.command("serve")
@click.option(
    "--address",
    default=DEFAULT_ADDRESS,
    show_default=True,
    envvar="ADDRESS",
    help="Address at which to listen for gRPC connections.",
)
@click.option(
    "--insecure",
    is_flag=True,
    envvar="INSECURE",
    help="Serve without mTLS credentials (--tls-certs-dir is then ignored).",
)
@click.option(
    "--tls-certs-dir",
    "--tls-server-certs-dir",
    "tls_certs_dir",
    envvar="TLS_SERVER_CERTS_DIR",
    type=click.Path(file_okay=False),
    help="Directory holding tls.crt, tls.key and ca.crt (Crossplane mounts it here).",
)
@click.option("--debug", "-d", is_flag=True, envvar="DEBUG", help="Emit human-readable debug logs.")
@click.option(
    "--max-message-size",
    type=int,
    default=4,
    show_default=True,
    envvar="MAX_RECV_MESSAGE_SIZE",
    help="Maximum gRPC message size in MB.",
)
def serve(
    address: str, insecure: bool, tls_certs_dir: str | None, debug: bool, max_message_size: int
) -> None:
    """Serve RunFunction for every Modelplane Composition."""
    if not insecure and not tls_certs_dir:
        raise click.UsageError("pass --tls-certs-dir (or TLS_SERVER_CERTS_DIR) or --insecure")
    serve_function(
        address,
        insecure=insecure,
        tls_certs_dir=tls_certs_dir,
        debug=debug,
        max_message_mb=max_message_size,
    )
