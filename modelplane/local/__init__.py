"""The embedded control plane behind `modelplane render`."""
