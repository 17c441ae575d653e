"""The replica wing: one ModelReplica composed onto its workload cluster.

Entry points:
- `model_replica.compose`: the ModelReplica composer (validate, resolve the
  cluster, build through a serving backend, readiness and status);
- `backends` (`BACKENDS`, `backend`, `spec_errors`): the serving backends
  (`native`, `kserve`, `dynamo`) behind the `backends.base.ServingBackend` seam;
- `workload.template_errors`: the pod-template checks a ModelDeployment also
  runs before it places anything.

Inside: `workload` (what every backend shares for one replica, and the fixed
order of pod stamping), `stamping/` (DRA claims, volumes), `engines/` (vLLM,
Ray), `schedulers` and `templates` (the in-cluster GPU scheduler's stamping and
its label templates), `disaggregation` (prefill → decode on the native backend)
and `cache` (the ModelCache claim a replica mounts, and its Usages).
"""
