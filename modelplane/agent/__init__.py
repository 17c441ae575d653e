"""Agents that run on workload clusters (the function image's `modelplane inventory`).

They talk to their cluster's API server and share only the contracts and pure
summarizers of `api` and `compose` with the control plane.
"""
