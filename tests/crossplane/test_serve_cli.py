"""`modelplane function serve`: the SDK's standard flags, ours, and their defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from modelplane.cli import function as function_cli
from modelplane.cli.main import cli
from modelplane.crossplane.function import available_cpus, default_workers

STANDARD_FLAGS = [
    "--address",
    "--tls-server-certs-dir",
    "--tls-certs-dir",
    "--insecure",
    "--debug",
    "--max-recv-message-size",
    "--max-send-message-size",
]


def test_help_lists_the_standard_flags_and_ours() -> None:
    result = CliRunner().invoke(cli, ["function", "serve", "--help"])
    assert result.exit_code == 0
    for flag in [*STANDARD_FLAGS, "--workers", "--deadline-seconds"]:
        assert flag in result.output
    assert "[default: 64]" in result.output
    # Aliases kept for old manifests stay out of the help.
    assert "--max-message-size" not in result.output and "-mb" not in result.output


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def fake(address: str, **kwargs: Any) -> None:
        seen.append({"address": address, **kwargs})

    monkeypatch.setattr(function_cli, "serve_function", fake)
    return seen


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        ([], {}, {"max_recv_message_mb": 64, "max_send_message_mb": None}),
        (["--max-recv-message-size", "100"], {}, {"max_recv_message_mb": 100}),
        (["--max-send-message-size", "8"], {}, {"max_send_message_mb": 8}),
        ([], {"MAX_RECV_MESSAGE_SIZE": "32"}, {"max_recv_message_mb": 32}),
        (["--max-recv-message-mb", "80"], {}, {"max_recv_message_mb": 80}),
        (
            ["--max-message-size", "16"],
            {},
            {"max_recv_message_mb": 16, "max_send_message_mb": 16},
        ),
        (
            ["--workers", "3", "--deadline-seconds", "2.5"],
            {},
            {"workers": 3, "deadline_seconds": 2.5},
        ),
        (
            ["--tls-server-certs-dir", "/tls"],
            {},
            {"tls_certs_dir": "/tls", "insecure": False},
        ),
        ([], {"ADDRESS": "127.0.0.1:1"}, {"address": "127.0.0.1:1"}),
    ],
)
def test_flags_reach_the_server(
    calls: list[dict[str, Any]], args: list[str], env: dict[str, str], expected: dict[str, Any]
) -> None:
    base = [] if "--tls-server-certs-dir" in args else ["--insecure"]
    result = CliRunner().invoke(cli, ["function", "serve", *base, *args], env=env)
    assert result.exit_code == 0, result.output
    [call] = calls
    assert {k: call[k] for k in expected} == expected


def test_a_limit_below_one_mib_is_refused(calls: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(
        cli, ["function", "serve", "--insecure", "--max-recv-message-size", "0"]
    )
    assert result.exit_code == 2 and "at least 1 MiB" in result.output
    assert calls == []


def test_without_the_flag_the_server_chooses_its_workers(calls: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(cli, ["function", "serve", "--insecure"], env={"WORKERS": ""})
    assert result.exit_code == 0, result.output
    assert calls[0]["workers"] is None  # serve() applies default_workers()


def cgroup(tmp_path: Path, cpu: str | None, memory: str | None) -> Path:
    for name, text in (("cpu.max", cpu), ("memory.max", memory)):
        if text is not None:
            (tmp_path / name).write_text(text + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("cpus", "cpu_max", "memory_max", "workers"),
    [
        (8, None, None, 8),  # no cgroup files: every CPU it may run on
        (8, "max 100000", "max", 8),  # no limits
        (8, "250000 100000", None, 3),  # a quota of 2.5 CPUs
        (8, "50000 100000", None, 2),  # half a CPU: still two workers
        (1, None, None, 2),
        (64, None, str(2 * 1024**3), 4),  # no CPU limit, 2 GiB: four of 512 MiB
        (64, None, str(512 * 1024**2), 2),
        (8, "garbage", "garbage", 8),
    ],
)
def test_default_workers_follow_the_cpus_and_memory_available(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cpus: int,
    cpu_max: str | None,
    memory_max: str | None,
    workers: int,
) -> None:
    monkeypatch.setattr(os, "process_cpu_count", lambda: cpus, raising=False)
    assert default_workers(cgroup(tmp_path, cpu_max, memory_max)) == workers


def test_available_cpus_reads_the_affinity_when_python_has_no_process_cpu_count(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert available_cpus(tmp_path) == 3
    assert available_cpus(cgroup(tmp_path, "100000 100000", None)) == 1
