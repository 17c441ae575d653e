"""Pod Security Standards, checked at the fleet before a pod template lands.

A workload cluster's admission enforces the level its namespace carries
(`pod-security.kubernetes.io/enforce`), but only after Modelplane has applied
the workload: a refused pod then fails on the cluster, where the tenant sees
nothing. So the ModelReplica composer checks each role's pod template against
its InferenceCluster's `spec.podSecurity` first and refuses a template the
level forbids, naming the field. The rules are Kubernetes' Pod Security
Standards (policy version `latest`): `baseline` forbids known privilege
escalations; `restricted` adds current hardening practice; `privileged`
forbids nothing.

The check reads the tenant's template as written. What Modelplane stamps into
it (DRA claims, an `emptyDir` for shared memory, the cache's claim, probes and
ports) passes `restricted`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES = frozenset(
    {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
)
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_APPARMOR_PREFIX = "container.apparmor.security.beta.kubernetes.io/"


def _map(value: Any) -> Mapping[str, Any]:
    # Most values are absent or dicts (plain or read-only): the ABC check is the
    # slow fallback, run for every field a pod template leaves out otherwise.
    if value is None:
        return {}
    return value if isinstance(value, (dict, Mapping)) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: Mapping[str, Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key in _CONTAINER_LISTS:
        for i, ctr in enumerate(_list(spec.get(key))):
            yield f"{where}.spec.{key}[{i}]", _map(ctr)


def _contexts(spec: Mapping[str, Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The pod's security context, then each container's, with their paths."""
    yield f"{where}.spec.securityContext", _map(spec.get("securityContext"))
    for path, ctr in _containers(spec, where):
        yield f"{path}.securityContext", _map(ctr.get("securityContext"))


def _is_true(value: Any) -> bool:
    return value is not None and value is not False


def _baseline_pod(template: Mapping[str, Any], spec: Mapping[str, Any], where: str) -> list[str]:
    errors = [
        f"{where}.spec.{key}: must be unset or false"
        for key in ("hostNetwork", "hostPID", "hostIPC")
        if _is_true(spec.get(key))
    ]
    for i, vol in enumerate(_list(spec.get("volumes"))):
        if _map(vol).get("hostPath") is not None:
            errors.append(f"{where}.spec.volumes[{i}].hostPath: hostPath volumes are forbidden")
    for i, sysctl in enumerate(_list(_map(spec.get("securityContext")).get("sysctls"))):
        if _map(sysctl).get("name") not in SAFE_SYSCTLS:
            errors.append(f"{where}.spec.securityContext.sysctls[{i}].name: not a safe sysctl")
    annotations = _map(_map(template.get("metadata")).get("annotations"))
    for key, value in annotations.items():
        allowed = value in ("runtime/default",) or str(value).startswith("localhost/")
        if str(key).startswith(_APPARMOR_PREFIX) and not allowed:
            errors.append(f"{where}.metadata.annotations[{key}]: AppArmor must not be unconfined")
    return errors


def _baseline_context(ctx: Mapping[str, Any], path: str) -> list[str]:
    errors = []
    if _is_true(_map(ctx.get("windowsOptions")).get("hostProcess")):
        errors.append(f"{path}.windowsOptions.hostProcess: must be unset or false")
    for key in ("seccompProfile", "appArmorProfile"):
        if _map(ctx.get(key)).get("type") == "Unconfined":
            errors.append(f"{path}.{key}.type: must not be Unconfined")
    selinux = _map(ctx.get("seLinuxOptions"))
    if selinux.get("type") is not None and selinux.get("type") not in SELINUX_TYPES:
        errors.append(f"{path}.seLinuxOptions.type: not an allowed container type")
    errors.extend(
        f"{path}.seLinuxOptions.{key}: must be unset"
        for key in ("user", "role")
        if selinux.get(key)
    )
    return errors


def _baseline_container(ctr: Mapping[str, Any], path: str) -> list[str]:
    ctx = _map(ctr.get("securityContext"))
    errors = []
    if _is_true(ctx.get("privileged")):
        errors.append(f"{path}.securityContext.privileged: must be unset or false")
    for cap in _list(_map(ctx.get("capabilities")).get("add")):
        if cap not in BASELINE_CAPABILITIES:
            errors.append(f"{path}.securityContext.capabilities.add: {cap} is forbidden")
    if ctx.get("procMount") not in (None, "Default"):
        errors.append(f"{path}.securityContext.procMount: must be unset or Default")
    for i, port in enumerate(_list(ctr.get("ports"))):
        if _map(port).get("hostPort") not in (None, 0):
            errors.append(f"{path}.ports[{i}].hostPort: must be unset or 0")
    return errors


def _restricted_container(
    ctr: Mapping[str, Any], path: str, pod_ctx: Mapping[str, Any]
) -> list[str]:
    ctx = _map(ctr.get("securityContext"))
    where = f"{path}.securityContext"
    errors = []
    if ctx.get("allowPrivilegeEscalation") is not False:
        errors.append(f"{where}.allowPrivilegeEscalation: must be false")
    non_root = ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot"))
    if non_root is not True:
        errors.append(f"{where}.runAsNonRoot: must be true (here or in the pod's securityContext)")
    seccomp = _map(ctx.get("seccompProfile")).get("type") or _map(
        pod_ctx.get("seccompProfile")
    ).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        errors.append(f"{where}.seccompProfile.type: must be RuntimeDefault or Localhost")
    caps = _map(ctx.get("capabilities"))
    if "ALL" not in _list(caps.get("drop")):
        errors.append(f"{where}.capabilities.drop: must include ALL")
    for cap in _list(caps.get("add")):
        if cap != "NET_BIND_SERVICE":
            errors.append(f"{where}.capabilities.add: only NET_BIND_SERVICE may be added")
    return errors


def _restricted(spec: Mapping[str, Any], where: str) -> list[str]:
    errors = []
    for i, vol in enumerate(_list(spec.get("volumes"))):
        kinds = [k for k in _map(vol) if k != "name"]
        bad = [k for k in kinds if k not in RESTRICTED_VOLUMES and k != "hostPath"]
        if bad:
            errors.append(f"{where}.spec.volumes[{i}].{bad[0]}: volume type forbidden")
    for path, ctx in _contexts(spec, where):
        if ctx.get("runAsUser") == 0:
            errors.append(f"{path}.runAsUser: must not be 0")
    pod_ctx = _map(spec.get("securityContext"))
    for path, ctr in _containers(spec, where):
        errors.extend(_restricted_container(ctr, path, pod_ctx))
    return errors


def violations(template: Any, level: str, where: str) -> list[str]:
    """Each field of pod template `template` (at wire path `where`) that Pod Security
    level `level` forbids, as `path: why`; none under `privileged`.

    An unknown level is checked as `restricted`: a level that cannot be read
    refuses rather than admits.
    """
    if level == "privileged":
        return []
    tpl = _map(template)
    spec = _map(tpl.get("spec"))
    errors = _baseline_pod(tpl, spec, where)
    for path, ctx in _contexts(spec, where):
        errors.extend(_baseline_context(ctx, path))
    for path, ctr in _containers(spec, where):
        errors.extend(_baseline_container(ctr, path))
    if level != "baseline":
        errors.extend(_restricted(spec, where))
    return errors


LEVELS = ("privileged", "baseline", "restricted")


def templates_violations(templates: list[tuple[Any, str]], level: str) -> list[str]:
    """Every violation of level `level` in `templates`, each (template, its wire path)."""
    return [err for tpl, where in templates for err in violations(tpl, level, where)]
