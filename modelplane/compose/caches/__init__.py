"""The caches wing: a ModelCache staged once on every cluster it covers.

Entry points:
- `model_cache.compose`: the ModelCache composer (a claim and a hydration Job
  per covered cluster, observed back into `status.clusters[]`);
- `manifests.pvc_object_name`: the claim's Object, which a replica that mounts
  the cache keeps in use.

Inside: `manifests` (what is sent to each workload cluster: claim, Job, its
RBAC and result ConfigMap).
"""
