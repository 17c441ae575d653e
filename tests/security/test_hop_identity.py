"""Issue 40, finding 1: a tenant reaches for the fleet gateway's identity.

The fleet gateway reaches a workload cluster's Gateway with a client
certificate that Gateway trusts for every replica path on it. Before the
defence, every ModelService routing to a replica copied that certificate *and
its private key* into the service's namespace (`<service>-<cluster>-hop`),
where the tenant reads Secrets; and a ModelEndpoint naming a cluster and any
path on its Gateway was routed under that identity, another namespace's
replica path included. Now the hop's Backend and the ReferenceGrant that opens
it sit in `modelplane-system` beside the cluster's connection Secret, and an
endpoint on a cluster's Gateway is honoured only for its own namespace's
replica paths on that cluster's address; anything else gets weight 0, an
`EndpointsRoutable` condition naming the field and a warning event.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api import gateway_hop as hop
from modelplane.local import RenderResult
from tests.security.tenants import (
    HOSTILE,
    L4,
    OBJECT_API,
    condition,
    deployment,
    get,
    render,
    warned,
)
from tests.security.tenants import namespace as namespace_object

ROUTING = "examples/routing"
VICTIM = "ml-team"
EU_WEST = "203.0.113.20"  # examples/routing/fleet.yaml: eu-west's gateway address
US_EAST = "us-east.inference.example.com"


def _service(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": HOSTILE},
        "spec": {"endpoints": [{"selector": {"matchLabels": selector}}]},
    }


def _endpoint(name: str, url: str, cluster: str = "eu-west") -> dict[str, Any]:
    """A ModelEndpoint of the hostile namespace on `cluster`'s Gateway."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": "ModelEndpoint",
        "metadata": {"name": name, "namespace": HOSTILE, "labels": {"steal": "yes"}},
        "spec": {"url": url, "cluster": cluster},
    }


def _manifests(rendered: RenderResult) -> list[tuple[str, dict[str, Any]]]:
    """(the Object's namespace, its wrapped manifest) for every control-plane Object."""
    return [
        (o["metadata"]["namespace"], o)
        for o in rendered.store.list(OBJECT_API, "Object", None)
        if o["spec"]["providerConfigRef"]["name"] == c.CONTROL_PLANE_PROVIDER_CONFIG
    ]


def _of_namespace(rendered: RenderResult, ns: str) -> dict[str, Any]:
    """What the control plane holds for namespace `ns`: each of its Objects' specs, by
    name, and each wrapped manifest that names `ns` (its own or a grant's source)."""
    out = {}
    for where, obj in _manifests(rendered):
        manifest = obj["spec"]["forProvider"]["manifest"]
        sources = [f.get("namespace") for f in (manifest.get("spec") or {}).get("from") or []]
        if where == ns or ns in sources or manifest["metadata"].get("namespace") == ns:
            out[f"{where}/{obj['metadata']['name']}"] = obj["spec"]
    return out


@pytest.fixture(scope="module")
def quiet() -> RenderResult:
    return render(ROUTING, namespace_object())


def test_a_tenant_routing_to_its_own_replica_gets_no_key(quiet: RenderResult) -> None:
    """(a) The ordinary way in: a ModelDeployment and a ModelService of one's own.
    Nothing in the tenant's namespace holds, patches from or refers to a Secret of the
    system namespace; the only hop objects are there, and grant only the tenant."""
    rendered = render(
        ROUTING,
        namespace_object(),
        deployment("chat", L4, count=1),
        _service("chat", {c.LABEL_DEPLOYMENT: "chat"}),
    )
    service = get(rendered, "ModelService", HOSTILE, "chat")
    assert [e["weight"] for e in service["status"]["endpoints"]] == [1000]
    connection = hop.connection_secret("eu-west")
    hop_objects = []  # what the tenant's service composed that names the cluster's Secret
    for where, obj in _manifests(rendered):
        manifest = obj["spec"]["forProvider"]["manifest"]
        patched = [r["patchesFrom"] for r in obj["spec"].get("references") or []]
        if where == HOSTILE:
            assert manifest["kind"] != "Secret", obj["metadata"]["name"]
            assert all(p.get("namespace") == HOSTILE for p in patched), patched
        if where == HOSTILE and connection in str(manifest):
            hop_objects.append(manifest)
    assert [(m["kind"], m["metadata"]["namespace"]) for m in hop_objects] == [
        ("Backend", c.SYSTEM_NAMESPACE)
    ]
    (backend,) = hop_objects
    grants = [
        m
        for _, o in _manifests(rendered)
        if (m := o["spec"]["forProvider"]["manifest"])["kind"] == "ReferenceGrant"
        and m["spec"]["to"][0]["name"] == backend["metadata"]["name"]
    ]
    assert [(g["metadata"]["namespace"], g["spec"]["from"]) for g in grants] == [
        (
            c.SYSTEM_NAMESPACE,
            [{"group": c.GATEWAY_GROUP, "kind": "HTTPRoute", "namespace": HOSTILE}],
        )
    ]
    assert _of_namespace(rendered, VICTIM) == _of_namespace(quiet, VICTIM)
    assert condition(service, "EndpointsRoutable")[0] == "True"


@pytest.mark.parametrize(
    ("url", "cluster", "field", "why"),
    [
        # Another namespace's replica, named plainly.
        (f"https://{EU_WEST}/{VICTIM}/llama-stable/0", "eu-west", "spec.url", "replica path"),
        # The same, behind a segment a gateway would normalise away.
        (
            f"https://{EU_WEST}/{HOSTILE}/../{VICTIM}/llama-stable/0",
            "eu-west",
            "spec.url",
            "replica path",
        ),
        # The whole Gateway, every namespace's replicas under it.
        (f"https://{EU_WEST}", "eu-west", "spec.url", "replica path"),
        # Its own path, but the host of another cluster than the one it names.
        (f"https://{US_EAST}/{HOSTILE}/chat/0", "eu-west", "spec.url", "gateway address"),
    ],
    ids=["other-namespace", "dot-dot", "gateway-root", "other-host"],
)
def test_an_endpoint_toward_another_namespaces_replica_is_refused(
    quiet: RenderResult, url: str, cluster: str, field: str, why: str
) -> None:
    """(b) A ModelEndpoint naming a cluster and a path outside the tenant's own replicas,
    selected by the tenant's ModelService: weight 0, no Backend, no grant, a condition
    naming the field and a warning event; the victim's objects are as they were."""
    rendered = render(
        ROUTING,
        namespace_object(),
        _endpoint("steal", url, cluster),
        _service("steal", {"steal": "yes"}),
    )
    service = get(rendered, "ModelService", HOSTILE, "steal")
    (entry,) = service["status"]["endpoints"]
    assert (entry["name"], entry["weight"], entry["ready"]) == ("steal", 0, False)
    # Nothing composed for it: no Backend, no grant, no route.
    assert _of_namespace(rendered, HOSTILE) == {}
    assert _of_namespace(rendered, VICTIM) == _of_namespace(quiet, VICTIM)
    message = entry["message"]
    assert message.startswith(f"steal: {field}: ") and why in message, message
    status, reason, text = condition(service, "EndpointsRoutable")
    assert (status, reason) == ("False", "EndpointRefused")
    assert f"steal: {field}" in text
    assert warned(rendered, "ModelService", HOSTILE, "steal", "EndpointRefused")
