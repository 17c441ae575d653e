"""The deployments wing: a ModelDeployment placed across the fleet.

Entry points:
- `model_deployment.compose`: the ModelDeployment composer (requires
  clusters, replicas and caches, and emits one ModelReplica per placement of
  its plan); `CLUSTERS_REQUIREMENT` and `REPLICAS_REQUIREMENT` name what it
  requires.

- `planner.plan_deployment`: the whole decision of one reconcile (scaling,
  revisions and rollout, the scheduler's complete input, the schedule, the
  replicas leaving), shared with `modelplane explain` and `modelplane fleet`.

- `fleet_quota.compose`: the FleetQuota composer (reads the namespace's replicas
  and every cluster; writes used / hard per limit, counted by
  `modelplane.scheduling.quota`, and `WithinQuota`).

- `observed.scheduler_input`: the scheduler's typed input from an
  `ObservedFleet` (the composer's required resources, `modelplane explain`'s
  store), so both schedule the same thing.

Inside, what the composer emits from a plan: `replica_manifests` (one
ModelReplica per planned replica), `endpoints` (one ModelEndpoint per replica,
only while it can serve), `deployment_status` (the status), `leaving` (the
autoscaler's removals), `conditions` (the conditions and events read off a
plan); and what it reads: `listing` (the fleet's replica listing).
"""
