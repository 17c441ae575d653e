"""Kubernetes quantities, semantic versions and the DRA device-selector CEL environment."""
