"""`modelplane function serve`: the composition-function gRPC server."""

from __future__ import annotations

from typing import Any

import click
from crossplane.function import cli as sdkcli

from modelplane.crossplane.function import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_MESSAGE_MB,
)
from modelplane.crossplane.function import serve as serve_function


@click.group("function")
def function() -> None:
    """The composition function Crossplane calls."""


# The SDK's standard options (--address, --tls-server-certs-dir/--tls-certs-dir,
# --insecure, --debug, --max-recv-message-size, --max-send-message-size) with
# their environment variables, as Crossplane's function template uses them.
# Only the message-size default differs, through Click's default map: 4 MiB
# does not hold a fleet-sized ModelDeployment request.
@function.command(
    "serve", context_settings={"default_map": {"max_recv_message_size": DEFAULT_MAX_MESSAGE_MB}}
)
@sdkcli.standard_options
# Ours, because the SDK runs a function in its event loop and has no notion of
# a worker pool or a per-call deadline.
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    envvar="WORKERS",
    help="Worker processes that run composers, one call each at a time "
    "[default: one per available CPU (affinity, cgroup quota), at least 2, "
    "at most one per 512 MiB of the cgroup's memory limit].",
)
@click.option(
    "--deadline-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_DEADLINE_SECONDS,
    show_default=True,
    envvar="DEADLINE_SECONDS",
    help="Stop a call that runs longer and answer with a fatal result naming its composite "
    "(Crossplane then keeps every composed resource).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    default=0,
    show_default=True,
    envvar="METRICS_PORT",
    help="Serve Prometheus metrics on this port (0: off); mutual TLS with the server's "
    "certificates, or loopback only with --insecure unless --metrics-address is given.",
)
@click.option(
    "--metrics-address",
    default=None,
    envvar="METRICS_ADDRESS",
    help="Address the metrics endpoint listens on.",
)
# Hidden spellings: the issue's --max-*-message-mb and the server's former
# --max-message-size (both directions), so existing manifests keep working.
@click.option("--max-recv-message-mb", "recv_mb_alias", type=int, hidden=True)
@click.option("--max-send-message-mb", "send_mb_alias", type=int, hidden=True)
@click.option("--max-message-size", "both_mb_alias", type=int, hidden=True)
def serve(**options: Any) -> None:
    """Serve RunFunction for every Modelplane Composition."""
    if not options["insecure"] and not options["tls_certs_dir"]:
        raise click.UsageError("pass --tls-certs-dir (or TLS_SERVER_CERTS_DIR) or --insecure")
    recv, send = _message_limits(options)
    serve_function(
        options["address"],
        insecure=options["insecure"],
        tls_certs_dir=options["tls_certs_dir"],
        debug=options["debug"],
        max_recv_message_mb=recv,
        max_send_message_mb=send,
        workers=options["workers"],
        deadline_seconds=options["deadline_seconds"],
        metrics_port=options["metrics_port"],
        metrics_address=options["metrics_address"],
    )


def _message_limits(options: dict[str, Any]) -> tuple[int, int | None]:
    """(receive, send) limits in MiB, an alias winning over the standard flag."""
    both = options["both_mb_alias"]
    recv = options["recv_mb_alias"] or both or options["max_recv_message_size"]
    send = options["send_mb_alias"] or both or options["max_send_message_size"]
    for flag, value in (("receive", recv), ("send", send)):
        if value is not None and value < 1:
            raise click.BadParameter(f"the {flag} message limit must be at least 1 MiB")
    return recv, send
