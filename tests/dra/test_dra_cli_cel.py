"""`modelplane cel eval`: results, exit codes, devices from a file, stdin, or a class."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from modelplane.cli.main import cli

MANIFEST = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: other
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    attributes:
      architecture: {string: Ampere}
---
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: h100-ib
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    count: 8
    attributes:
      architecture: {string: Hopper}
    capacity:
      memory: {value: 80Gi}
  - name: ib
    claim: Synthetic
    driver: ib.example.com
    attributes:
      fabric: {string: ndr}
"""


def run(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["cel", "eval", *args], input=stdin)
    return result.exit_code, result.output


def test_acceptance_quantity_comparison_prints_true() -> None:
    assert run('quantity("1Gi").isGreaterThan(quantity("1000Mi"))') == (0, "true\n")


def test_acceptance_non_bool_is_a_compile_error() -> None:
    code, out = run("1")
    assert code != 0
    assert "must evaluate to bool" in out


def test_syntax_error_exits_non_zero() -> None:
    code, out = run("device.driver ==")
    assert code != 0
    assert "Syntax error" in out


def test_any_type_prints_cel_values() -> None:
    assert run("--any-type", 'quantity("1.5Gi")') == (0, 'quantity("1536Mi")\n')
    assert run("--any-type", '[semver("v1", true), "a", 2]') == (
        0,
        '[semver("1.0.0"), "a", 2]\n',
    )


def test_device_from_file_and_stdin(tmp_path: Path) -> None:
    device = {
        "driver": "gpu.nvidia.com",
        "attributes": {"architecture": {"string": "Hopper"}},
        "capacity": {"memory": {"value": "80Gi"}},
    }
    path = tmp_path / "device.json"
    path.write_text(json.dumps(device))
    expr = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
    assert run(expr, "--device", str(path)) == (0, "true\n")
    assert run(expr, "--device", "-", stdin=json.dumps(device)) == (0, "true\n")
    assert run('device.driver == "x"', "--device", str(path)) == (0, "false\n")


def test_evaluation_error_is_printed_and_exits_non_zero() -> None:
    code, out = run('device.attributes["x.example.com"].missing')
    assert code == 1
    assert out.startswith("error: ")


def test_every_device_of_a_class(tmp_path: Path) -> None:
    path = tmp_path / "classes.yaml"
    path.write_text(MANIFEST)
    code, out = run(
        'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
        "--class",
        "h100-ib",
        "-f",
        str(path),
    )
    assert code == 1  # the InfiniBand device has no gpu.nvidia.com attributes
    assert out.splitlines()[0] == "gpu: true"
    assert out.splitlines()[1].startswith("ib: error: ")
    code, out = run('device.driver == "ib.example.com"', "--class", "h100-ib", "-f", str(path))
    assert (code, out) == (0, "gpu: false\nib: true\n")


def test_unknown_class_and_option_misuse(tmp_path: Path) -> None:
    path = tmp_path / "classes.yaml"
    path.write_text(MANIFEST)
    code, out = run("true", "--class", "nope", "-f", str(path))
    assert code != 0
    assert "no InferenceClass named 'nope'" in out
    code, _ = run("true", "--class", "h100-ib")
    assert code != 0
