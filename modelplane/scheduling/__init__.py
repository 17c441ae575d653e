"""The fleet scheduler: placements of a deployment's replicas across clusters and pools."""
