"""InferenceClass composer: validate the hardware recipe and report it.

An InferenceClass composes nothing; it is Ready when its spec is valid, so that
InferenceClusters and the scheduler can trust the devices it describes. Valid means
more than schema-valid: every attribute and capacity must be readable by the DRA CEL
layer that evaluates selectors against it (`device_problems`), otherwise each selector
would silently fail to match the device and replicas would lose their pool.
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.compose.common import parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.dra import device_errors


def device_problems(spec: InferenceClassSpec) -> list[str]:
    """Each attribute or capacity value the DRA CEL layer cannot read, naming the field.

    Uses the CEL layer's own conversion (`modelplane.dra.device_errors`), so a class
    passing this check can never have a device that selectors fail to read.
    """
    problems = []
    for i, device in enumerate(spec.devices):
        for field, name, reason in device_errors(device.to_dict()):
            problems.append(
                f"spec.devices[{i}].{field}.{name}: device {device.name!r}: "
                f"the DRA CEL layer cannot read it: {reason}"
            )
    return problems


def _invalid(result: ComposeResult, message: str) -> ComposeResult:
    result.condition(c.CONDITION_VALID, False, c.REASON_INVALID_SPEC, message)
    result.warn(c.REASON_INVALID_SPEC, message)
    result.ready = "False"
    return result


def compose(inp: ComposeInput) -> ComposeResult:
    """Validate the class; Ready and `status.draDevices` when valid, a condition when not."""
    result = ComposeResult()
    spec, error = parse_spec(InferenceClassSpec, inp.composite)
    if spec is None:
        return _invalid(result, error)
    problems = device_problems(spec)
    if problems:
        return _invalid(result, "; ".join(problems))
    dra = [d for d in spec.devices if d.claim == "DRA"]
    result.status = {"draDevices": sum(d.count for d in dra)}
    if not dra:
        # Legal, but a pool of this class can never satisfy a deployment:
        # placement requires at least one claimable device.
        message = "spec.devices: no device has claim DRA, so no deployment can be placed on it"
        result.condition(c.CONDITION_VALID, True, "NoClaimableDevices", message)
        result.warn("NoClaimableDevices", message)
    else:
        summary = ", ".join(f"{d.count}× {d.name} ({d.claim})" for d in spec.devices)
        result.condition(c.CONDITION_VALID, True, c.REASON_VALID, f"devices per node: {summary}")
    result.ready = "True"
    return result
