"""The hostile-tenant suite on the real stack (issue 40): what only real servers decide.

`tests/security/` tries each attack against the render. Three defences are
decided by servers the render does not run, so they are tried here on docs/dev's
serving fleet: the personas' ClusterRoles enforced by a real API server (the
fleet's API servers authorize with `Node,RBAC`; a tenant is an impersonated
user bound the way docs/security.md says a platform would), the Pod Security
admission of a workload cluster's API server, and the ReferenceGrant that Envoy
Gateway checks before it routes across namespaces. Team A serves a model;
team B, hostile, attacks it. Each attack is refused by the server, with the
server's own answer, and team A's objects are the same before and after.
"""

from __future__ import annotations

import copy
import json
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e import manifests as m
from e2e.harness import COUNTS, NOTES, World, load_docs
from e2e.test_quickstart import _clear_other_scenarios
from e2e.test_serving_real import (
    DOCS,
    MODEL,
    TIMEOUT,
    _metric,
    _network,
    _request,
)

from modelplane.api import constants as c
from modelplane.dev.kubeapi import Api, condition
from modelplane.dev.nodes import publish, read_fleet_file
from modelplane.kube.client import KubeClient, KubeError
from tests.security.test_rbac import CLUSTER, ML_TEAM_WRITES, NAMESPACED, WRITES

pytestmark = pytest.mark.e2e

TEAM_A, TEAM_B = "team-a", "team-b"
# Alice is team A's, through Kubernetes' own `edit` role (which Modelplane's
# roles aggregate to); Bob is team B's, through `modelplane:ml-team`.
ALICE, BOB = "alice", "bob"
ROUTE_API = "gateway.networking.k8s.io/v1"
BACKEND_API = "gateway.envoyproxy.io/v1alpha1"
GRANT_API = "gateway.networking.k8s.io/v1beta1"
ROLES = Path(__file__).resolve().parents[2] / "package" / "rbac" / "roles.yaml"
REVIEWED = "authorization answers checked against docs/security.md's table"
# Team A as it was once it served, to compare after every attack.
BEFORE: dict[str, Any] = {}


@dataclass(frozen=True)
class _Impersonating(KubeClient):
    """The admin's client, asking the API server to act as another user."""

    user: str = ""

    def _headers(self, content_type: str | None) -> dict[str, str]:
        return {**super()._headers(content_type), "Impersonate-User": self.user}


@dataclass
class _Tenant(Api):
    """An `Api` whose every call is made as `user` (impersonation by the admin)."""

    user: str = ""

    @property
    def client(self) -> KubeClient:
        """The admin's client with the user's impersonation header."""
        cfg = self.config
        return _Impersonating(
            cfg.server, str(cfg.token_file), str(cfg.ca_file), self.timeout, user=self.user
        )


def _as(world: World, user: str) -> _Tenant:
    return _Tenant(world.cp.config, user=user)


def _create(api: Api, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
    """POST the object (a create, exactly the verb RBAC is asked about)."""
    meta = obj["metadata"]
    path = api.path(obj["apiVersion"], obj["kind"], namespace=meta.get("namespace", ""))
    return api.request("POST", path + ("?dryRun=All" if dry_run else ""), obj)


def _refused(call: Any) -> KubeError:
    """The error a call that must be refused raises; fails when it succeeds."""
    try:
        call()
    except KubeError as err:
        return err
    raise AssertionError("the API server allowed it")


def _binding(ns: str, user: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{user}-{role.replace(':', '-')}", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


@pytest.fixture(scope="module")
def tenancy(world: World) -> World:
    """docs/dev's serving fleet, the personas' roles, two team namespaces and their users."""
    _clear_other_scenarios(world)
    for api in world.workloads.values():
        world.install_crds(api, "lws", "cert-manager")
    for cluster in read_fleet_file(DOCS / "nodes.yaml"):
        publish(world.workloads[cluster.cluster], cluster.pools, exclusive=True)
    world.apply(load_docs(DOCS / "serving.yaml"))
    world.apply(load_docs(ROLES))
    world.apply([m.namespace(TEAM_A), m.namespace(TEAM_B)])
    world.apply([_binding(TEAM_A, ALICE, "edit"), _binding(TEAM_B, BOB, "modelplane:ml-team")])
    return world


# --- RBAC, enforced by the control plane's API server --------------------------------


def _allowed(world: World, user: str, ns: str, verb: str, group: str, resource: str) -> bool:
    resource, _, sub = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": ["system:authenticated"],
            "resourceAttributes": {
                "namespace": ns,
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": sub,
            },
        },
    }
    path = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
    COUNTS[REVIEWED] = COUNTS.get(REVIEWED, 0) + 1
    return bool(world.cp.request("POST", path, review)["status"].get("allowed"))


def _writes(world: World, user: str, ns: str) -> dict[tuple[str, str], set[str]]:
    """The write verbs the API server allows `user` on each kind (in `ns` when namespaced)."""
    kinds = [(k, ns) for k in sorted(NAMESPACED)] + [(k, "") for k in sorted(CLUSTER)]
    return {
        (g, r): {v for v in WRITES if _allowed(world, user, where, v, g, r)}
        for (g, r), where in kinds
    }


def _expected(writable: set[tuple[str, str]]) -> dict[tuple[str, str], set[str]]:
    return {k: set(WRITES) if k in writable else set() for k in NAMESPACED | CLUSTER}


def test_the_api_server_grants_each_tenant_what_the_security_table_says(tenancy: World) -> None:
    """docs/security.md's table (the evaluator test's hand-written answers), asked of the
    real authorizer: each team writes its three kinds in its own namespace, nothing
    else anywhere, reads every namespaced kind of its own, and never writes status."""
    for user, own, other in ((ALICE, TEAM_A, TEAM_B), (BOB, TEAM_B, TEAM_A)):
        tenancy.settle(
            f"{user}'s role aggregated and bound",
            lambda u=user, ns=own: (
                True if _allowed(tenancy, u, ns, "create", c.GROUP, "modeldeployments") else None
            ),
            60,
        )
        assert _writes(tenancy, user, own) == _expected(ML_TEAM_WRITES), user
        assert _writes(tenancy, user, other) == _expected(set()), user
        for group, resource in NAMESPACED:
            assert _allowed(tenancy, user, own, "get", group, resource), (user, resource)
            assert not _allowed(tenancy, user, other, "get", group, resource), (user, resource)
        for sub in ("modeldeployments/status", "modelreplicas/status", "modelservices/status"):
            assert not _allowed(tenancy, user, own, "update", c.GROUP, sub), (user, sub)
            assert not _allowed(tenancy, user, own, "patch", c.GROUP, sub), (user, sub)


def _served(world: World) -> dict[str, Any] | None:
    svc = world.cp.get(m.API, "ModelService", "chat", TEAM_A) or {}
    address = (svc.get("status") or {}).get("address")
    return svc if address and condition(svc, "Ready") == "True" else None


def _engine_pods(world: World, ns: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (wl, pod)
        for wl, api in world.workloads.items()
        for pod in api.list("v1", "Pod", ns, selector=c.LABEL_ROLE)
    ]


def _team_a_successes(world: World) -> float:
    network = _network(world)
    return sum(
        _metric(network, pod["status"]["podIP"], "vllm:request_success_total")
        for _wl, pod in _engine_pods(world, TEAM_A)
        if pod["status"].get("podIP")
    )


def _chat(world: World, url: str) -> tuple[int, Any]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "team a"}]}
    return _request(_network(world), url, body)


def _team_a(world: World) -> dict[str, Any]:
    """What must not change: team A's deployment, replicas, service, routes, hop objects
    and engine Pods, without the status fields that move on their own."""
    md = world.cp.get(m.API, "ModelDeployment", "chat", TEAM_A) or {}
    svc = world.cp.get(m.API, "ModelService", "chat", TEAM_A) or {}
    mine = f"{c.LABEL_SERVICE_NAMESPACE}={TEAM_A}"
    return {
        "deployment": (md["metadata"]["generation"], md["spec"], md["status"]["placements"]),
        "replicas": sorted(
            (r["metadata"]["name"], r["metadata"]["generation"], json.dumps(r["spec"]))
            for r in world.cp.list(m.API, "ModelReplica", TEAM_A)
        ),
        "service": (
            svc["metadata"]["generation"],
            [(e["name"], e["weight"]) for e in svc["status"]["endpoints"]],
        ),
        "routes": sorted(
            (r["metadata"]["name"], json.dumps(r["spec"]))
            for r in world.cp.list(ROUTE_API, "HTTPRoute", TEAM_A)
        ),
        "hop": sorted(
            (o["kind"], o["metadata"]["name"], json.dumps(o["spec"]))
            for api_version, kind in ((BACKEND_API, "Backend"), (GRANT_API, "ReferenceGrant"))
            for o in world.cp.list(api_version, kind, c.SYSTEM_NAMESPACE, selector=mine)
        ),
        "pods": sorted((wl, p["metadata"]["uid"]) for wl, p in _engine_pods(world, TEAM_A)),
    }


def test_team_a_deploys_and_serves_as_its_own_user(tenancy: World) -> None:
    alice = _as(tenancy, ALICE)
    _create(alice, m.deployment("chat", TEAM_A, replicas=1, gpus=1, labels={"model": "chat"}))
    _create(alice, m.model_service("chat", TEAM_A, "chat"))
    svc = tenancy.settle(
        "team A's ModelService Ready with an address",
        lambda: _served(tenancy),
        TIMEOUT,
        describe=lambda: tenancy.describe(m.API, "ModelDeployment", "chat", TEAM_A),
    )
    url = svc["status"]["address"]
    tenancy.settle(
        f"a 200 from {url}", lambda: True if _chat(tenancy, url)[0] == 200 else None, 120
    )
    BEFORE.update(_team_a(tenancy), url=url)
    assert BEFORE["hop"], "team A's service composed no Backend and grant"
    for kind, _name, spec in BEFORE["hop"]:
        if kind == "ReferenceGrant":
            assert [f["namespace"] for f in json.loads(spec)["from"]] == [TEAM_A]


# --- the fleet's kinds a tenant must not write ------------------------------------------


def _forged_replica(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": m.API,
        "kind": "ModelReplica",
        "metadata": {"name": "forged", "namespace": ns},
        "spec": {"deploymentName": "chat", "cluster": "local-1", "preempts": []},
    }


def test_team_b_is_forbidden_the_fleets_kinds_other_namespaces_and_system_secrets(
    tenancy: World,
) -> None:
    """Finding 4's forged replica, finding 5's own quota, the fleet's cluster-scoped kinds,
    a write into team A and the system namespace's Secrets: 403 from the API server."""
    bob = _as(tenancy, BOB)
    quota = {
        "apiVersion": m.API,
        "kind": "FleetQuota",
        "metadata": {"name": "aaa-mine", "namespace": TEAM_B},
        "spec": {"limits": []},
    }
    endpoint = {
        "apiVersion": m.API,
        "kind": "ModelEndpoint",
        "metadata": {"name": "mine", "namespace": TEAM_B},
        "spec": {"url": "http://example.invalid"},
    }
    attempts = {
        "ModelReplica in team-b": lambda: _create(bob, _forged_replica(TEAM_B)),
        "ModelReplica in team-a": lambda: _create(bob, _forged_replica(TEAM_A)),
        "FleetQuota in team-b": lambda: _create(bob, quota),
        "ModelEndpoint in team-b": lambda: _create(bob, endpoint),
        "InferenceCluster": lambda: _create(
            bob, m.inference_cluster("mine", tenancy.secret_ref("wl-1"), "l4")
        ),
        "InferenceClass": lambda: _create(bob, m.inference_class("mine")),
        "ModelDeployment in team-a": lambda: _create(bob, m.deployment("x", TEAM_A, replicas=1)),
        "ModelService in team-a": lambda: _create(bob, m.model_service("x", TEAM_A, "chat")),
        "status of team-a's deployment": lambda: bob.merge_status(
            {
                "apiVersion": m.API,
                "kind": "ModelDeployment",
                "metadata": {"name": "chat", "namespace": TEAM_A},
            },
            {"placements": []},
        ),
        "Secrets of modelplane-system (list)": lambda: bob.list("v1", "Secret", c.SYSTEM_NAMESPACE),
        "Secrets of modelplane-system (get)": lambda: bob.get(
            "v1", "Secret", "wl-1-kubeconfig", c.SYSTEM_NAMESPACE
        ),
    }
    answers = {}
    for what, call in attempts.items():
        err = _refused(call)
        assert err.code == 403, f"{what}: {err}"
        answers[what] = err.code
    NOTES["team B refused (HTTP 403)"] = ", ".join(answers)
    assert _team_a(tenancy) == {k: v for k, v in BEFORE.items() if k != "url"}


# --- Pod Security: the workload cluster's admission and the fleet's own check ----------


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if spec.pop("privileged", False):
        container["securityContext"] = {"privileged": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": TEAM_A},
        "spec": {"containers": [container], **spec},
    }


def test_a_workload_clusters_admission_refuses_a_privileged_pod_beside_the_fleets(
    tenancy: World,
) -> None:
    """On the workload cluster that runs team A's replica, its namespace carries the
    cluster's level (baseline) and the real PodSecurity admission refuses a privileged,
    host-network or hostPath Pod there, while the fleet's engine Pod runs and a plain Pod
    is admitted (all by dry run: nothing is left behind)."""
    (placement,) = BEFORE["deployment"][2]
    ic = tenancy.cp.get(m.API, "InferenceCluster", placement["cluster"]) or {}
    api = tenancy.workloads[tenancy.workload_of(ic)]
    labels = (api.get("v1", "Namespace", TEAM_A) or {})["metadata"].get("labels") or {}
    assert labels.get("pod-security.kubernetes.io/enforce") == "baseline", labels
    engines = [p for wl, p in _engine_pods(tenancy, TEAM_A) if api is tenancy.workloads[wl]]
    assert engines and all(condition(p, "Ready") == "True" for p in engines)
    _create(api, _pod("probe-0"), dry_run=True)
    refused = {}
    for name, pod in {
        "privileged": _pod("probe-1", privileged=True),
        "hostNetwork": _pod("probe-2", hostNetwork=True),
        "hostPath": _pod("probe-3", volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
    }.items():
        err = _refused(lambda p=pod: _create(api, p, dry_run=True))
        # The API server's message arrives inside a JSON body: its quotes are escaped.
        text = str(err).replace('\\"', '"')
        assert err.code == 403 and 'violates PodSecurity "baseline:latest"' in text, text
        assert name in str(err), str(err)
        refused[name] = str(err).split("violates PodSecurity", 1)[1][:90]
    NOTES["PodSecurity admission on the workload cluster"] = "; ".join(refused.values())


ROOTKIT = "rootkit"


def test_a_privileged_template_is_refused_by_the_fleet_and_lands_nowhere(tenancy: World) -> None:
    """Finding 2 on the real fleet: team B's own ModelDeployment (RBAC lets it) with a
    host-network, privileged template is held with a condition naming the field and
    level; no replica is made and nothing of team B reaches a workload cluster."""
    bob = _as(tenancy, BOB)
    hostile = m.deployment(ROOTKIT, TEAM_B, replicas=1, gpus=1)
    template = hostile["spec"]["workers"]["template"]["spec"]
    template["hostNetwork"] = True
    template["containers"][0]["securityContext"] = {"privileged": True}
    _create(bob, hostile)

    def held() -> dict[str, Any] | None:
        md = tenancy.cp.get(m.API, "ModelDeployment", ROOTKIT, TEAM_B) or {}
        cond = next(
            (
                x
                for x in (md.get("status") or {}).get("conditions") or []
                if x["type"] == "Scheduled"
            ),
            None,
        )
        return (
            cond
            if cond and cond["status"] == "False" and "PodSecurity" in cond["message"]
            else None
        )

    cond = tenancy.settle("team B's privileged deployment held", held, 120)
    assert "level baseline (spec.podSecurity) forbids" in cond["message"], cond
    assert "spec.workers.template.spec.hostNetwork" in cond["message"], cond
    NOTES["privileged template, Scheduled=False"] = cond["message"][:200]
    assert tenancy.cp.list(m.API, "ModelReplica", TEAM_B) == []
    for wl, api in tenancy.workloads.items():
        assert api.get("v1", "Namespace", TEAM_B) is None, wl


# --- ReferenceGrant and the endpoint's path, on the real Envoy Gateway ----------------


def _route_condition(route: dict[str, Any] | None, kind: str) -> tuple[str, str]:
    for parent in ((route or {}).get("status") or {}).get("parents") or []:
        for cond in parent.get("conditions") or []:
            if cond["type"] == kind:
                return cond["status"], cond.get("reason", "")
    return "", ""


def test_a_route_from_team_b_to_team_as_backend_is_not_permitted(tenancy: World) -> None:
    """Team B's HTTPRoute (applied by the admin, standing in for a tenant with route
    rights) is team A's own route under team B's path: Envoy Gateway refuses its
    backend (ResolvedRefs=False, RefNotPermitted: the grant names only team A), its
    requests never reach team A's engine, and team A's service still answers."""
    own = tenancy.cp.get(ROUTE_API, "HTTPRoute", "chat", TEAM_A)
    assert own is not None
    assert _route_condition(own, "ResolvedRefs") == ("True", "ResolvedRefs")
    spec = copy.deepcopy(own["spec"])
    for rule in spec["rules"]:
        for match in rule.get("matches") or []:
            path = match["path"]["value"]
            match["path"]["value"] = path.replace(f"/{TEAM_A}/chat", f"/{TEAM_B}/steal", 1)
    tenancy.cp.apply(
        {
            "apiVersion": ROUTE_API,
            "kind": "HTTPRoute",
            "metadata": {"name": "steal", "namespace": TEAM_B},
            "spec": spec,
        }
    )
    refused = tenancy.settle(
        "team B's route refused",
        lambda: (
            got
            if (
                got := _route_condition(
                    tenancy.cp.get(ROUTE_API, "HTTPRoute", "steal", TEAM_B), "ResolvedRefs"
                )
            )[0]
            == "False"
            else None
        ),
        60,
    )
    assert refused == ("False", "RefNotPermitted")
    address = urllib.parse.urlsplit(BEFORE["url"])
    stolen = f"{address.scheme}://{address.netloc}/{TEAM_B}/steal"
    before = _team_a_successes(tenancy)
    # Gateway API: a rule whose every backend is invalid answers 500. Until Envoy
    # has the route, the path is unknown to it (404).
    tenancy.settle(
        f"Envoy answering {stolen} with 500",
        lambda: True if _chat(tenancy, stolen)[0] == 500 else None,
        60,
    )
    statuses = [_chat(tenancy, stolen)[0] for _ in range(10)]
    assert statuses == [500] * 10, statuses
    assert _team_a_successes(tenancy) == before
    assert _chat(tenancy, BEFORE["url"])[0] == 200
    assert _team_a_successes(tenancy) == before + 1
    NOTES["team B's route to team A's Backend"] = f"{refused}, 10 requests answered 500"
    tenancy.cp.delete(ROUTE_API, "HTTPRoute", "steal", TEAM_B)


def test_an_endpoint_of_team_b_on_team_as_replica_path_gets_weight_zero(tenancy: World) -> None:
    """Team A's replica's own endpoint URL and cluster, copied into a ModelEndpoint of
    team B (by the admin: the tenant's roles refuse it) and selected by team B's
    ModelService: EndpointRefused, weight 0, and no Backend or grant for team B."""
    mine = next(
        e for e in tenancy.cp.list(m.API, "ModelEndpoint", TEAM_A) if e["spec"].get("cluster")
    )
    tenancy.cp.apply(
        {
            "apiVersion": m.API,
            "kind": "ModelEndpoint",
            "metadata": {"name": "steal", "namespace": TEAM_B, "labels": {"steal": "yes"}},
            "spec": mine["spec"],
        }
    )
    service = {
        "apiVersion": m.API,
        "kind": "ModelService",
        "metadata": {"name": "steal", "namespace": TEAM_B},
        "spec": {"endpoints": [{"selector": {"matchLabels": {"steal": "yes"}}}]},
    }
    _create(_as(tenancy, BOB), service)

    def refused() -> dict[str, Any] | None:
        svc = tenancy.cp.get(m.API, "ModelService", "steal", TEAM_B) or {}
        entries = (svc.get("status") or {}).get("endpoints") or []
        cond = next(
            (
                x
                for x in (svc.get("status") or {}).get("conditions") or []
                if x["type"] == "EndpointsRoutable"
            ),
            None,
        )
        return svc if entries and cond and cond["status"] == "False" else None

    svc = tenancy.settle("team B's service judged", refused, 120)
    (entry,) = svc["status"]["endpoints"]
    assert (entry["name"], entry["weight"]) == ("steal", 0), entry
    cond = next(x for x in svc["status"]["conditions"] if x["type"] == "EndpointsRoutable")
    assert cond["reason"] == "EndpointRefused", cond
    assert "steal: spec." in cond["message"], cond
    theirs = f"{c.LABEL_SERVICE_NAMESPACE}={TEAM_B}"
    for api_version, kind in ((BACKEND_API, "Backend"), (GRANT_API, "ReferenceGrant")):
        assert tenancy.cp.list(api_version, kind, c.SYSTEM_NAMESPACE, selector=theirs) == []
    NOTES["team B's endpoint on team A's path"] = cond["message"][:200]


def test_nothing_of_team_a_changed_through_the_attacks(tenancy: World) -> None:
    assert _team_a(tenancy) == {k: v for k, v in BEFORE.items() if k != "url"}
    assert _chat(tenancy, BEFORE["url"])[0] == 200
    for kind, name in (("ModelService", "steal"), ("ModelEndpoint", "steal")):
        tenancy.cp.delete(m.API, kind, name, TEAM_B)
    tenancy.cp.delete(m.API, "ModelDeployment", ROOTKIT, TEAM_B)
