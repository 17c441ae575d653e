"""Composers: pure functions from observed state to desired state, one per kind.

The flat modules are the shared core every composer builds on:
`types` (what a composer receives and returns), `outcome` (the one way to stop
early), `common` (parsing the XR, keeping observed state), `objects`
(provider-kubernetes Objects), `readiness` (how an item says it is ready) and
`registry` (which composer serves which kind; the only core module that imports
a wing).

The composers live in wings, one per domain; each wing's `__init__` says what
it owns and names its entry points:

- `replica/`: ModelReplica, the serving workload on one cluster (backends, pod
  stamping, engines, in-cluster schedulers, the cache mount);
- `clusters/`: InferenceClass, InferenceCluster, ServingStack and the clouds
  that provision clusters (`clusters/clouds/`: EKSCluster, GKECluster);
- `caches/`: ModelCache and the hydration manifests it sends to clusters;
- `routing/`: ModelService, ModelEndpoint, InferenceGateway (Envoy Gateway on
  the control plane);
- `deployments/`: ModelDeployment, which places replicas through
  `modelplane.scheduling` and composes one ModelReplica and ModelEndpoint each.

Which wing may import which is a table in `tests/architecture/test_layers.py`.
"""
