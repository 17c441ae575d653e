"""The clouds that provision an InferenceCluster's Kubernetes cluster.

One composer module per cloud (`eks`: EKSCluster on provider-upjet-aws, `gke`:
GKECluster on provider-upjet-gcp, `aks`: AKSCluster on provider-upjet-azure),
each exporting its `PROVISIONER`, over what they share: `provisioned` (inputs,
status, conditions, readiness of a provisioned cluster; the `Provisioner` and
`ProviderReports` shapes) and `capacity` (cloud stock-outs and the nodes
actually up). What a cloud *is* (kinds, codes, storage, providers) is declared
in `modelplane/api/clouds/`; `PROVISIONERS` lists one composer per declared
cloud, in the same order (a test checks it).
"""

from __future__ import annotations

from modelplane.compose.clusters.clouds import aks, eks, gke
from modelplane.compose.clusters.clouds.provisioned import Provisioner

PROVISIONERS: tuple[Provisioner, ...] = (eks.PROVISIONER, gke.PROVISIONER, aks.PROVISIONER)
