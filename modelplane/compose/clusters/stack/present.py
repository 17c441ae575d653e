"""Components a workload cluster already runs (`spec.present`): checked, not installed.

A brownfield cluster may run cert-manager, Node Feature Discovery or Envoy
Gateway already; installing them again would clash. Marked present, the stack
composes no Release of theirs, yet still needs them: the hop's Issuer and
Certificates are cert-manager's, the Gateway and its ClientTrafficPolicy Envoy
Gateway's, and the NVIDIA DRA driver reads NFD's node labels. So each present
component is checked by the CRDs the stack relies on, each observed through an
Observe-only provider-kubernetes Object (Crossplane never writes them), and the
stack is Ready only once every one is found.

NVIDIA Dynamo is checked the same way though the stack never installs it (its
platform team does, `spec.servingStack.dynamo.present`): by the
DynamoGraphDeployment CRD every Dynamo replica needs and by the namespace its
platform runs in.
"""

from __future__ import annotations

from collections.abc import Mapping

from modelplane.api import constants as c
from modelplane.api.serving_stack import PresentComponentStatus, ServingStackSpec
from modelplane.compose.clusters.managed import labels, resource_name
from modelplane.compose.objects import object_metadata
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


DYNAMO = "Dynamo"
DYNAMO_CRD: CRD = (
    "nvidia.com",
    "dynamographdeployments",
    "DynamoGraphDeployment",
    "Namespaced",
    "v1alpha1",
)


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
    """The composed-resource key of the Object observing `crd` (or `namespace <name>`)."""
    return "present-" + crd.replace(".", "-").replace(" ", "-")


def _namespace_manifest(name: str) -> Resource:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _checks(spec: ServingStackSpec) -> list[tuple[str, dict[str, Resource]]]:
    """Each checked component, with what it is checked by: a name for messages → the
    manifest observed."""
    out: list[tuple[str, dict[str, Resource]]] = [
        (component, {crd_name(crd): _manifest(crd) for crd in CHECKS[component]})
        for component in sorted(set(spec.present or ()))
    ]
    if spec.dynamo_namespace:
        ns = spec.dynamo_namespace
        checks = {
            crd_name(DYNAMO_CRD): _manifest(DYNAMO_CRD),
            f"namespace {ns}": _namespace_manifest(ns),
        }
        out.append((DYNAMO, checks))
    return out


def objects(spec: ServingStackSpec, namespace: str) -> dict[str, Resource]:
    """An Observe-only Object per check of each component marked present (and of Dynamo)."""
    out: dict[str, Resource] = {}
    for _, checks in _checks(spec):
        for name, manifest in checks.items():
            key = check_key(name)
            out[key] = {
                "apiVersion": c.PROVIDER_KUBERNETES_API_VERSION,
                "kind": "Object",
                "metadata": object_metadata(
                    resource_name(spec.cluster_name, key),
                    namespace,
                    labels(spec.cluster_name, "present"),
                ),
                "spec": {
                    "managementPolicies": ["Observe"],
                    "forProvider": {"manifest": manifest},
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
    """Each component marked present (and Dynamo): found once everything it is checked by
    was observed."""
    out = []
    for component, checks in _checks(spec):
        missing = [
            name
            for name in checks
            if (obs := observed.get(check_key(name))) is None or not EXISTS.reads(obs)
        ]
        out.append(
            PresentComponentStatus(name=component, found=not missing, missing=missing or None)
        )
    return out
