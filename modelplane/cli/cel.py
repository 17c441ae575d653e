"""`modelplane cel`: evaluate DRA device-selector CEL ("does my selector match this device?")."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from modelplane.dra import Quantity, Semver
from modelplane.dra.cel import (
    CompileError,
    EvaluationError,
    compile_selector,
    evaluate,
    prepare_device,
)


@click.group("cel")
def cel() -> None:
    """Evaluate DRA device-selector CEL expressions (Kubernetes 1.34 semantics)."""


def render(value: Any) -> str:
    """Render an evaluation result the way CEL would spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Quantity):
        return f'quantity("{value}")'
    if isinstance(value, Semver):
        return f'semver("{value}")'
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bytes):
        return "b" + json.dumps(value.decode("utf-8", "backslashreplace"))
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render(k)}: {render(v)}" for k, v in value.items()) + "}"
    return str(value)


def _load_yaml(path: str) -> list[Any]:
    import yaml  # only `--device FILE` reads YAML; `cel eval EXPR` starts without it

    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        raise click.ClickException(f"cannot read {path}: {e}") from None
    except ValueError as e:  # e.g. an integer past Python's 4,300-digit limit
        raise click.ClickException(f"cannot read {path}: {str(e).split(';')[0]}") from None


def _class_devices(docs: list[Any], name: str, path: str) -> Iterator[Mapping[str, Any]]:
    for doc in docs:
        items = doc.get("items", [doc]) if isinstance(doc, Mapping) else []
        for obj in items:
            if not isinstance(obj, Mapping) or obj.get("kind") != "InferenceClass":
                continue
            if (obj.get("metadata") or {}).get("name") != name:
                continue
            devices = (obj.get("spec") or {}).get("devices") or []
            if not isinstance(devices, list):
                raise click.ClickException(f"InferenceClass {name}: spec.devices is not a list")
            yield from (d for d in devices if isinstance(d, Mapping))
            return
    raise click.ClickException(f"no InferenceClass named {name!r} in {path}")


@cel.command("eval")
@click.argument("expression")
@click.option(
    "--device",
    "device_file",
    metavar="FILE|-",
    help="A device in InferenceClass form (YAML or JSON; '-' reads stdin).",
)
@click.option("--class", "class_name", metavar="NAME", help="Evaluate against every device of it.")
@click.option(
    "-f",
    "--filename",
    metavar="PATH",
    help="Manifest file holding the InferenceClass named by --class.",
)
@click.option(
    "--any-type",
    is_flag=True,
    help="Evaluate any expression of the environment, not only a bool selector.",
)
def eval_(
    expression: str,
    device_file: str | None,
    class_name: str | None,
    filename: str | None,
    any_type: bool,
) -> None:
    """Evaluate EXPRESSION as a device selector and print the result.

    Exits non-zero when the expression does not compile (a selector must evaluate to
    bool) or when evaluating it fails.
    """
    if device_file and class_name:
        raise click.UsageError("--device and --class are mutually exclusive")
    if bool(class_name) != bool(filename):
        raise click.UsageError("--class and -f/--filename go together")

    devices: list[tuple[str, Mapping[str, Any] | None]] = [("", None)]
    if device_file:
        docs = _load_yaml(device_file)
        if len(docs) != 1 or not isinstance(docs[0], Mapping):
            raise click.ClickException(f"{device_file}: expected one device mapping")
        devices = [("", docs[0])]
    elif class_name and filename:
        found = list(_class_devices(_load_yaml(filename), class_name, filename))
        devices = [(str(d.get("name", f"#{i}")), d) for i, d in enumerate(found)]

    if any_type:
        _eval_any(expression, devices)
    else:
        _eval_selector(expression, devices)


def _eval_selector(expression: str, devices: list[tuple[str, Mapping[str, Any] | None]]) -> None:
    try:
        selector = compile_selector(expression)
    except CompileError as e:
        raise click.ClickException(str(e)) from None
    failed = False
    for name, device in devices:
        outcome = selector.evaluate(prepare_device(device or {}))
        text = render(outcome.value) if outcome.error is None else f"error: {outcome.error}"
        failed = failed or outcome.error is not None
        click.echo(f"{name}: {text}" if name else text)
    if failed:
        sys.exit(1)


def _eval_any(expression: str, devices: list[tuple[str, Mapping[str, Any] | None]]) -> None:
    failed = False
    for name, device in devices:
        try:
            text = render(evaluate(expression, prepare_device(device or {})))
        except CompileError as e:
            raise click.ClickException(str(e)) from None
        except EvaluationError as e:
            text, failed = f"error: {e}", True
        click.echo(f"{name}: {text}" if name else text)
    if failed:
        sys.exit(1)
