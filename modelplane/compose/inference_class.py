"""InferenceClass composer: validate the hardware recipe and report it.

An InferenceClass composes nothing; it is Ready when its spec is valid, so that
InferenceClusters and the scheduler can trust the devices it describes.
"""

from __future__ import annotations

from modelplane.api import constants as c
from modelplane.api.inference_class import InferenceClassSpec
from modelplane.compose.common import parse_spec
from modelplane.compose.types import ComposeInput, ComposeResult


def compose(inp: ComposeInput) -> ComposeResult:
    """Validate the class; Ready and `status.draDevices` when valid, a condition when not."""
    result = ComposeResult()
    spec, error = parse_spec(InferenceClassSpec, inp.composite)
    if spec is None:
        result.condition(c.CONDITION_VALID, False, c.REASON_INVALID_SPEC, error)
        result.warn(c.REASON_INVALID_SPEC, error)
        result.ready = "False"
        return result
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
