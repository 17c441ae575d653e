"""The deployments wing: a ModelDeployment placed across the fleet.

Entry points:
- `model_deployment.compose`: the ModelDeployment composer (reads clusters,
  replicas and caches, places replicas with `modelplane.scheduling`, composes
  one ModelReplica per placement); `CLUSTERS_REQUIREMENT`,
  `REPLICAS_REQUIREMENT` and the kind constants name what it requires.

- `fleet_quota.compose`: the FleetQuota composer (reads the namespace's replicas
  and every cluster; writes used / hard per limit, counted by
  `modelplane.scheduling.quota`, and `WithinQuota`).

- `observed.scheduler_input`: the scheduler's typed input from an
  `ObservedFleet` (the composer's required resources, `modelplane explain`'s
  store), so both schedule the same thing.

Inside: `endpoints` (one ModelEndpoint per replica, only while it can serve).
"""
