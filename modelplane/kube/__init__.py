"""The in-cluster Kubernetes API client shared by the programs that run on workload
clusters: the inventory agent and the hydration Job (stdlib only, no Modelplane imports)."""
