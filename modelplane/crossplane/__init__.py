"""The composition-function server Crossplane calls."""

from modelplane.crossplane.servicer import FunctionRunner

__all__ = ["FunctionRunner"]
