"""Modelplane: a fleet-level control plane for serving open-weight models on Crossplane."""

__version__ = "0.1.0"
