"""The clusters wing: the GPU clusters replicas run on, and how they are reached.

Entry points (composers):
- `inference_class.compose`: InferenceClass, a validated hardware recipe;
- `inference_cluster.compose`: InferenceCluster, its pools, provider configs,
  gateway, inventory and drift; `sources` decides what a cluster's `source`
  composes (Existing, or a provisioning composite) and `infra` builds it;
- `serving_stack.compose`: ServingStack, the software a workload cluster needs
  (Node Feature Discovery, the NVIDIA DRA driver, LeaderWorkerSet, Envoy
  Gateway and its Gateway, the KAI scheduler when asked for, storage classes,
  and the inventory agent of `inventory_agent`);
- `clouds.eks.compose`, `clouds.gke.compose`: EKSCluster and GKECluster, on
  what they share (`clouds.provisioned`) and the stock-out reading
  (`clouds.capacity`).

For the replica wing: `infra.has_serving_stack` and `infra.workload_usages`
(a replica's workload must not outlive its cluster's releases).

Inside: `managed` (upjet managed resources, Usages, stable names),
`inventory` (the inventory ConfigMap as the control plane observes it) and
`drift` (published devices against the class).
"""
