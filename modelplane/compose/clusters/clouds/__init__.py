"""The clouds that provision an InferenceCluster's Kubernetes cluster.

One composer module per cloud (`eks`: EKSCluster on provider-upjet-aws, `gke`:
GKECluster on provider-upjet-gcp), over what they share: `provisioned` (inputs,
status, conditions, readiness of a provisioned cluster) and `capacity` (cloud
stock-outs and the nodes actually up).
"""
