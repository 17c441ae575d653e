"""Entry point of the composition-function server (`modelplane function serve`)."""

from __future__ import annotations

from typing import cast

import grpc
from crossplane.function import logging, runtime

from modelplane.crossplane.servicer import FunctionRunner

DEFAULT_ADDRESS = "0.0.0.0:9443"


def serve(
    address: str = DEFAULT_ADDRESS,
    *,
    insecure: bool = False,
    tls_certs_dir: str | None = None,
    debug: bool = False,
    max_message_mb: int = 4,
) -> None:
    """Serve RunFunction over gRPC until terminated (mTLS unless `insecure`)."""
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    creds = runtime.load_credentials(tls_certs_dir) if tls_certs_dir and not insecure else None
    size = max_message_mb * 1024 * 1024
    runtime.serve(
        FunctionRunner(),
        address,
        # The SDK accepts None credentials when serving insecurely.
        creds=cast(grpc.ServerCredentials, creds),
        insecure=insecure,
        options=[
            ("grpc.max_receive_message_length", size),
            ("grpc.max_send_message_length", size),
        ],
    )
