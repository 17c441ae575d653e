"""Kubernetes quantities, semantic versions and the DRA device-selector CEL environment."""

from modelplane.dra.cel import (
    MAX_EXPRESSION_LENGTH,
    CompileError,
    EvaluationError,
    Outcome,
    PreparedDevice,
    Selector,
    compile_selector,
    device_errors,
    evaluate,
    prepare_device,
)
from modelplane.dra.quantity import Quantity, QuantityError, parse_quantity
from modelplane.dra.semver import Semver, SemverError, parse_semver

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CompileError",
    "EvaluationError",
    "Outcome",
    "PreparedDevice",
    "Quantity",
    "QuantityError",
    "Selector",
    "Semver",
    "SemverError",
    "compile_selector",
    "device_errors",
    "evaluate",
    "parse_quantity",
    "parse_semver",
    "prepare_device",
]
