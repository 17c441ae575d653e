"""`modelplane hydrate`: the ModelCache hydration Job's entry point.

The Job runs a fixed command, `modelplane hydrate <source>`, and passes every
parameter as an environment variable (names in `api.model_cache.HydrateEnv`),
so no user string is ever parsed as an option or by a shell. Each option can
also be given on the command line for local use. Without a result ConfigMap
the result is only printed (one JSON line).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from modelplane.api.model_cache import HydrateEnv, HydrationResult
from modelplane.hydrate import sources
from modelplane.hydrate.report import write_result
from modelplane.hydrate.run import hydrate as run_hydration
from modelplane.hydrate.staging import Fetch, HydrationError, Workspace
from modelplane.kube.client import KubeClient, KubeError

E = HydrateEnv


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--dest", envvar=E.DEST, required=True, type=click.Path(path_type=Path)),
        click.option("--key", envvar=E.SOURCE_HASH, required=True, help="The source's digest."),
        click.option("--result-configmap", envvar=E.RESULT_CONFIGMAP, default=None),
        click.option("--result-namespace", envvar=E.RESULT_NAMESPACE, default=None),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _reporter(configmap: str | None, namespace: str | None) -> Callable[[HydrationResult], None]:
    api = KubeClient.in_cluster() if configmap and namespace else None

    def report(result: HydrationResult) -> None:
        click.echo(json.dumps(result.to_data(), sort_keys=True))
        if api is not None and configmap and namespace:
            write_result(api, namespace, configmap, result)

    return report


def _run(fetch: Fetch, dest: Path, key: str, configmap: str | None, namespace: str | None) -> None:
    """Run one hydration; any failure ends as an error message and exit code 1.

    The run itself has reported it as Failed (when it got as far as reporting);
    what is left is to fail the pod without a traceback.
    """
    try:
        report = _reporter(configmap, namespace)
        run_hydration(fetch, dest, key, report)
    except (HydrationError, KubeError, OSError) as err:
        raise click.ClickException(str(err)) from None
    except Exception as err:
        raise click.ClickException(f"unexpected {type(err).__name__}: {err}") from None


@click.group("hydrate")
def hydrate() -> None:
    """Stage a ModelCache artifact into a folder (what the hydration Job runs)."""


@hydrate.command("huggingface")
@_common
@click.option("--repo", envvar=E.HF_REPO, required=True)
@click.option("--revision", envvar=E.HF_REVISION, default="main", show_default=True)
@click.option("--token", envvar=E.HF_TOKEN, default=None, show_envvar=True)
def huggingface(
    dest: Path,
    key: str,
    result_configmap: str | None,
    result_namespace: str | None,
    repo: str,
    revision: str,
    token: str | None,
) -> None:
    """A Hugging Face Hub repository at a revision (resolved to its commit)."""
    fetch = sources.huggingface(repo, revision, token)
    _run(fetch, dest, key, result_configmap, result_namespace)


@hydrate.command("s3")
@_common
@click.option("--bucket", envvar=E.S3_BUCKET, required=True)
@click.option("--prefix", envvar=E.S3_PREFIX, default="")
@click.option("--region", envvar=E.S3_REGION, default=None)
@click.option("--endpoint", envvar=E.S3_ENDPOINT, default=None)
def s3(
    dest: Path,
    key: str,
    result_configmap: str | None,
    result_namespace: str | None,
    bucket: str,
    prefix: str,
    region: str | None,
    endpoint: str | None,
) -> None:
    """Every object under a prefix of an S3 (or S3-compatible) bucket."""
    fetch = sources.s3(bucket, prefix, region, endpoint)
    _run(fetch, dest, key, result_configmap, result_namespace)


@hydrate.command("http")
@_common
@click.option("--url", envvar=E.HTTP_URL, required=True)
@click.option("--sha256", envvar=E.HTTP_SHA256, default=None)
@click.option("--headers-dir", envvar=E.HTTP_HEADERS_DIR, default=None)
def http(
    dest: Path,
    key: str,
    result_configmap: str | None,
    result_namespace: str | None,
    url: str,
    sha256: str | None,
    headers_dir: str | None,
) -> None:
    """One file over HTTP(S), verified against its sha256 when given."""

    def fetch(space: Workspace) -> str:
        # The headers are read inside the run, so an unreadable Secret folder
        # is reported as Failed like any other failure.
        return sources.http(url, sha256, sources.read_headers(headers_dir))(space)

    _run(fetch, dest, key, result_configmap, result_namespace)


@hydrate.command("inline")
@_common
@click.option("--content", envvar=E.INLINE_CONTENT, required=True)
@click.option("--file-name", envvar=E.INLINE_FILE, default="content", show_default=True)
def inline(
    dest: Path,
    key: str,
    result_configmap: str | None,
    result_namespace: str | None,
    content: str,
    file_name: str,
) -> None:
    """Small inline content written as one file."""
    fetch = sources.inline(content, file_name)
    _run(fetch, dest, key, result_configmap, result_namespace)
