"""Issue 40, finding 2: a tenant's pod template asks for the node.

A hostile namespace writes a ModelDeployment whose template is privileged,
shares the host's namespaces or mounts a `hostPath`. The fleet refuses the
replica before anything lands on the workload cluster (`Valid=False`,
`ForbiddenByPodSecurity`, naming the field, with a warning event), and the
namespaces Modelplane creates there carry the cluster's Pod Security level, so
the cluster's own admission enforces it too.

The table below is Kubernetes' Pod Security Standards (policy version
`latest`, kubernetes.io/docs/concepts/security/pod-security-standards), one
row per control: what a template sets, and whether `baseline` and `restricted`
allow it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelplane.api import constants as c
from modelplane.api import pod_security
from modelplane.compose.replica.model_replica import compose
from modelplane.compose.types import ComposeInput
from modelplane.local import ControlPlane, RenderResult, load_paths
from tests.compose.replicas import cluster, placed_by, replica

# A restricted-compliant engine container, the base every row edits.
_HARDENED_CTX = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
    "capabilities": {"drop": ["ALL"]},
}


def _template(pod: dict[str, Any] | None = None, ctr: dict[str, Any] | None = None) -> Any:
    container = {"name": "engine", "image": "vllm", "securityContext": copy.deepcopy(_HARDENED_CTX)}
    for key, value in (ctr or {}).items():
        if key == "securityContext":
            container["securityContext"].update(value)
        else:
            container[key] = value
    return {"metadata": {}, "spec": {"containers": [container], **(pod or {})}}


def _sc(**kw: Any) -> dict[str, Any]:
    return {"securityContext": kw}


# (what, pod spec edits, engine container edits, allowed by baseline, allowed by restricted)
PSS_TABLE: list[tuple[str, dict[str, Any], dict[str, Any], bool, bool]] = [
    ("nothing", {}, {}, True, True),
    ("hostNetwork", {"hostNetwork": True}, {}, False, False),
    ("hostNetwork false", {"hostNetwork": False}, {}, True, True),
    ("hostPID", {"hostPID": True}, {}, False, False),
    ("hostIPC", {"hostIPC": True}, {}, False, False),
    ("privileged", {}, _sc(privileged=True), False, False),
    ("privileged false", {}, _sc(privileged=False), True, True),
    ("hostProcess", {}, _sc(windowsOptions={"hostProcess": True}), False, False),
    ("hostPath", {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}, {}, False, False),
    ("emptyDir", {"volumes": [{"name": "e", "emptyDir": {}}]}, {}, True, True),
    (
        "pvc",
        {"volumes": [{"name": "p", "persistentVolumeClaim": {"claimName": "x"}}]},
        {},
        True,
        True,
    ),
    (
        "nfs volume",
        {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]},
        {},
        True,
        False,
    ),
    ("hostPort", {}, {"ports": [{"containerPort": 8000, "hostPort": 8000}]}, False, False),
    ("hostPort 0", {}, {"ports": [{"containerPort": 8000, "hostPort": 0}]}, True, True),
    ("SYS_ADMIN", {}, _sc(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]}), False, False),
    ("NET_ADMIN", {}, _sc(capabilities={"drop": ["ALL"], "add": ["NET_ADMIN"]}), False, False),
    ("CHOWN", {}, _sc(capabilities={"drop": ["ALL"], "add": ["CHOWN"]}), True, False),
    (
        "NET_BIND_SERVICE",
        {},
        _sc(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}),
        True,
        True,
    ),
    ("no drop ALL", {}, _sc(capabilities={}), True, False),
    ("procMount Unmasked", {}, _sc(procMount="Unmasked"), False, False),
    ("seccomp Unconfined", {}, _sc(seccompProfile={"type": "Unconfined"}), False, False),
    ("seccomp Localhost", {}, _sc(seccompProfile={"type": "Localhost"}), True, True),
    ("apparmor Unconfined", {}, _sc(appArmorProfile={"type": "Unconfined"}), False, False),
    ("selinux spc_t", {}, _sc(seLinuxOptions={"type": "spc_t"}), False, False),
    ("selinux container_t", {}, _sc(seLinuxOptions={"type": "container_t"}), True, True),
    ("selinux user", {}, _sc(seLinuxOptions={"user": "root"}), False, False),
    ("unsafe sysctl", _sc(sysctls=[{"name": "kernel.msgmax", "value": "1"}]), {}, False, False),
    (
        "safe sysctl",
        _sc(sysctls=[{"name": "net.ipv4.tcp_syncookies", "value": "1"}]),
        {},
        True,
        True,
    ),
    ("allowPrivilegeEscalation", {}, _sc(allowPrivilegeEscalation=True), True, False),
    ("runAsNonRoot false", {}, _sc(runAsNonRoot=False), True, False),
    ("runAsUser 0", {}, _sc(runAsUser=0), True, False),
    ("seccomp unset", {}, _sc(seccompProfile={}), True, False),
]


@pytest.mark.parametrize(
    ("what", "pod", "ctr", "baseline", "restricted"), PSS_TABLE, ids=[r[0] for r in PSS_TABLE]
)
def test_pod_security_levels_follow_the_upstream_table(
    what: str, pod: dict[str, Any], ctr: dict[str, Any], baseline: bool, restricted: bool
) -> None:
    tpl = _template(pod, ctr)
    assert (pod_security.violations(tpl, "baseline", "t") == []) is baseline, what
    assert (pod_security.violations(tpl, "restricted", "t") == []) is restricted, what
    assert pod_security.violations(tpl, "privileged", "t") == []


def test_apparmor_annotation_unconfined_is_forbidden_by_baseline() -> None:
    tpl = _template()
    key = "container.apparmor.security.beta.kubernetes.io/engine"
    tpl["metadata"]["annotations"] = {key: "unconfined"}
    assert pod_security.violations(tpl, "baseline", "t") == [
        f"t.metadata.annotations[{key}]: AppArmor must not be unconfined"
    ]
    tpl["metadata"]["annotations"] = {key: "runtime/default"}
    assert pod_security.violations(tpl, "baseline", "t") == []


def test_an_unknown_level_is_checked_as_restricted() -> None:
    tpl = _template(ctr=_sc(runAsUser=0))
    assert pod_security.violations(tpl, "baseline", "t") == []
    assert pod_security.violations(tpl, "bogus", "t") == [
        "t.spec.containers[0].securityContext.runAsUser: must not be 0"
    ]


# --- the hostile tenant against the embedded engine -------------------------------------

_HOSTILE = {
    "apiVersion": c.API_VERSION,
    "kind": "ModelDeployment",
    "metadata": {"name": "rootkit", "namespace": "mallory"},
    "spec": {
        "replicas": 1,
        "nodeSelector": {
            "devices": [
                {
                    "name": "gpu",
                    "count": 1,
                    "selectors": [
                        {"cel": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'}
                    ],
                }
            ]
        },
        "workers": {
            "count": 1,
            "template": {
                "spec": {
                    "hostNetwork": True,
                    "containers": [
                        {
                            "name": "engine",
                            "image": "vllm/vllm-openai:v0.11.0",
                            "securityContext": {"privileged": True},
                        }
                    ],
                    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                }
            },
        },
    },
}
_NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "mallory"}}


def _render(*extra: dict[str, Any]) -> RenderResult:
    return ControlPlane([*load_paths(["examples/quickstart"]), *extra]).run(50)


@pytest.fixture(scope="module")
def quiet() -> RenderResult:
    return _render()


@pytest.fixture(scope="module")
def hostile() -> RenderResult:
    return _render(copy.deepcopy(_NAMESPACE), copy.deepcopy(_HOSTILE))


def _objects(rendered: RenderResult, namespace: str) -> dict[str, Any]:
    """The provider Objects composed for replicas of `namespace`, by name, as wrapped."""
    out = {}
    for obj in rendered.store.list("kubernetes.m.crossplane.io/v1alpha1", "Object", None):
        manifest = obj["spec"]["forProvider"]["manifest"]
        if manifest.get("metadata", {}).get("namespace") == namespace or (
            manifest.get("kind") == "Namespace" and manifest["metadata"]["name"] == namespace
        ):
            out[obj["metadata"]["name"]] = obj["spec"]
    return out


def test_privileged_host_template_is_refused_before_anything_lands(hostile: RenderResult) -> None:
    # The scheduler places it on no cluster whose level forbids it: no replica at all.
    assert hostile.store.list(c.API_VERSION, "ModelReplica", "mallory") == []
    dep = hostile.get(c.API_VERSION, "ModelDeployment", "rootkit", "mallory")
    assert dep is not None
    cond = next(x for x in dep["status"]["conditions"] if x["type"] == "Scheduled")
    assert cond["status"] == "False"
    assert "PodSecurityForbidden on eu-west-h100, us-east-l4" in cond["message"]
    assert "level baseline (spec.podSecurity) forbids" in cond["message"]
    assert "spec.workers.template.spec.hostNetwork" in cond["message"]
    refused = {u["cluster"]: u["reason"] for u in dep["status"]["unschedulable"]}
    assert refused == {"eu-west-h100": "PodSecurityForbidden", "us-east-l4": "PodSecurityForbidden"}
    key = (c.API_VERSION, "ModelDeployment", "mallory", "rootkit")
    assert any(e.type == "Warning" for e in hostile.events.get(key, []))
    # Nothing of mallory reaches a workload cluster: no namespace, no workload.
    assert _objects(hostile, "mallory") == {}


def test_a_replica_its_cluster_forbids_is_refused_by_the_replica_composer() -> None:
    # Defence in depth: a replica that reached a cluster whose level forbids its template
    # (say the level was tightened after placement) composes nothing new there.
    xr = replica()
    xr["spec"]["workers"]["template"]["spec"]["hostPID"] = True
    xr["spec"]["workers"]["template"]["spec"]["volumes"] = [
        {"name": "h", "hostPath": {"path": "/"}}
    ]
    res = compose(
        ComposeInput(composite=xr, required={"cluster": [cluster()], "deployment": placed_by(xr)})
    )
    valid = next(x for x in res.conditions if x.type == c.CONDITION_VALID)
    assert (valid.status, valid.reason) == ("False", "ForbiddenByPodSecurity")
    assert "spec.workers.template.spec.hostPID: must be unset or false" in valid.message
    assert "spec.workers.template.spec.volumes[0].hostPath" in valid.message
    assert "level 'baseline'" in valid.message and "spec.podSecurity" in valid.message
    assert [e.reason for e in res.events] == ["ForbiddenByPodSecurity"]
    assert res.desired == {}


def test_the_hostile_template_changes_nothing_of_another_namespace(
    quiet: RenderResult, hostile: RenderResult
) -> None:
    assert _objects(hostile, "ml-team") == _objects(quiet, "ml-team")


def test_composed_namespaces_carry_the_clusters_pod_security_level(quiet: RenderResult) -> None:
    namespaces = [
        o["spec"]["forProvider"]["manifest"]
        for o in quiet.store.list("kubernetes.m.crossplane.io/v1alpha1", "Object", None)
        if o["spec"]["forProvider"]["manifest"].get("kind") == "Namespace"
        and o["spec"]["forProvider"]["manifest"]["metadata"]["name"] == "ml-team"
    ]
    assert namespaces
    for ns in namespaces:
        labels = ns["metadata"]["labels"]
        for mode in ("enforce", "warn", "audit"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == "baseline"
            assert labels[f"pod-security.kubernetes.io/{mode}-version"] == "latest"


def test_a_privileged_cluster_admits_the_template_and_labels_its_namespace() -> None:
    objects = load_paths(["examples/quickstart"])
    for obj in objects:
        if obj["kind"] == "InferenceCluster":
            obj["spec"]["podSecurity"] = "privileged"
    rendered = ControlPlane([*objects, copy.deepcopy(_NAMESPACE), copy.deepcopy(_HOSTILE)]).run(50)
    [replica] = rendered.store.list(c.API_VERSION, "ModelReplica", "mallory")
    cond = next(x for x in replica["status"]["conditions"] if x["type"] == c.CONDITION_VALID)
    assert cond["status"] == "True"
    ns = [
        o["forProvider"]["manifest"]
        for o in _objects(rendered, "mallory").values()
        if o["forProvider"]["manifest"]["kind"] == "Namespace"
    ]
    assert ns and ns[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
