"""Components a workload cluster already runs (`spec.present`): checked, not installed.

A brownfield cluster may run cert-manager, Node Feature Discovery or Envoy
Gateway already; installing them again would clash. Marked present, the stack
composes no Release of theirs, yet still needs them: the hop's Issuer and
Certificates are cert-manager's, the Gateway and its ClientTrafficPolicy Envoy
Gateway's, and the NVIDIA DRA driver reads NFD's node labels. So each present
component is checked by the CRDs the stack relies on, each observed through an
Observe-only provider-kubernetes Object (Crossplane never writes them), and the
stack is Ready only once every one is found.
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import constants as c
from modelplane.api.serving_stack import PresentComponentStatus, ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.readiness import EXISTS
from modelplane.compose.types import Resource

# The CRDs that show a component runs: the kinds the stack's own objects (or the
# charts it still installs) use, as (group, plural, kind, scope, served version).
CRD = tuple[str, str, str, str, str]
CHECKS: dict[str, tuple[CRD, ...]] = {
    "CertManager": (
        ("cert-manager.io", "certificates", "Certificate", "Namespaced", "v1"),
        ("cert-manager.io", "issuers", "Issuer", "Namespaced", "v1"),
    ),
    "NodeFeatureDiscovery": (
        ("nfd.k8s-sigs.io", "nodefeaturerules", "NodeFeatureRule", "Cluster", "v1alpha1"),
    ),
    "EnvoyGateway": (
        ("gateway.envoyproxy.io", "envoyproxies", "EnvoyProxy", "Namespaced", "v1alpha1"),
        (
            "gateway.envoyproxy.io",
            "clienttrafficpolicies",
            "ClientTrafficPolicy",
            "Namespaced",
            "v1alpha1",
        ),
    ),
}


def crd_name(crd: CRD) -> str:
    """`<plural>.<group>`, the CRD's name."""
    return f"{crd[1]}.{crd[0]}"


def _manifest(crd: CRD) -> Resource:
    """The CRD as the component installs it. Observed only (never written), so only its
    name is looked up; the rest says what is expected there."""
    group, plural, kind, scope, version = crd
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(crd)},
        "spec": {
            "group": group,
            "names": {"plural": plural, "kind": kind},
            "scope": scope,
            "versions": [{"name": version, "served": True, "storage": True}],
        },
    }


def check_key(crd: str) -> str:
    """The composed-resource key of the Object observing `crd`."""
    return f"present-{crd.replace('.', '-')}"


def objects(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    """An Observe-only Object per CRD of each component marked present."""
    out: dict[str, Resource] = {}
    for component in sorted(set(spec.present or ())):
        for crd in CHECKS[component]:
            key = check_key(crd_name(crd))
            out[key] = {
                "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
                "kind": "Object",
                "metadata": {
                    "name": resource_name(spec.cluster_name, key),
                    "namespace": namespace,
                    "labels": labels(spec.cluster_name, "present"),
                },
                "spec": {
                    "managementPolicies": ["Observe"],
                    "forProvider": {"manifest": _manifest(crd)},
                    "providerConfigRef": {
                        "kind": "ClusterProviderConfig",
                        "name": spec.provider_config_name,
                    },
                    "readiness": EXISTS.wire(),
                },
            }
    return out


def statuses(
    spec: ServingStackSpec, observed: Mapping[str, Resource]
) -> list[PresentComponentStatus]:
    """Each component marked present: found once every CRD it is checked by was observed."""
    out = []
    for component in sorted(set(spec.present or ())):
        names = [crd_name(crd) for crd in CHECKS[component]]
        missing = [
            name
            for name in names
            if (obs := observed.get(check_key(name))) is None or not EXISTS.reads(obs)
        ]
        out.append(
            PresentComponentStatus(name=component, found=not missing, missing=missing or None)
        )
    return out
