"""ModelReplica composer: cluster resolution, safe holds, templates, readiness, argv safety."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from replicas import (
    NAME,
    NS,
    cluster,
    cond,
    manifest,
    observed_from,
    parent,
    placed_by,
    replica,
    run,
)

from modelplane.compose import objects
from modelplane.compose.replica.engines import ray
from modelplane.compose.replica.model_replica import compose
from modelplane.compose.replica.templates import TemplateVars, render, render_map
from modelplane.compose.types import ComposeInput, ComposeResult

# --- the InferenceCluster: not fetched, absent, unusable -------------------------------


def test_requires_its_cluster_by_name() -> None:
    res = run(replica(), fetched=False)
    req = res.requirements["cluster"]
    assert (req.api_version, req.kind, req.match_name) == (
        "modelplane.ai/v1alpha1",
        "InferenceCluster",
        "east",
    )
    assert res.fatal is None
    assert cond(res, "ClusterResolved")[:2] == ("Unknown", "WaitingForResources")
    # Nothing observed yet: nothing to keep, nothing composed.
    assert res.desired == {}
    # Every answer, not only the first, repeats the requirement.
    assert "cluster" in run(replica(), cluster()).requirements


def test_unresolved_cluster_keeps_existing_resources_unchanged() -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    res = run(replica(), observed=observed, fetched=False)
    assert res.fatal is None
    assert sorted(res.desired) == sorted(first.desired)
    for key, d in res.desired.items():
        assert d.resource["spec"] == first.desired[key].resource["spec"]
        assert "status" not in d.resource and "uid" not in d.resource["metadata"]
    # Readiness still comes from what is observed: a serving replica stays ready
    # while its cluster is being fetched.
    assert res.ready == "True"


@pytest.mark.parametrize(
    ("cl", "reason", "needle"),
    [
        (None, "ClusterNotFound", "'east' not found"),
        (cluster(providerConfigName=None), "ProviderConfigMissing", "'east'"),
        (cluster(providerConfigName=""), "ProviderConfigMissing", "providerConfigName"),
    ],
)
def test_unusable_cluster_is_a_condition_and_keeps_what_exists(
    cl: dict[str, Any] | None, reason: str, needle: str
) -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    for obs in ({}, observed):
        res = run(replica(), cl, observed=obs)
        assert res.fatal is None
        status, got, message = cond(res, "ClusterResolved")
        assert (status, got) == ("False", reason)
        assert needle in message
        assert [(e.severity, e.reason) for e in res.events] == [("Warning", reason)]
        assert sorted(res.desired) == sorted(obs)
        assert res.ready == "False"


def test_invalid_spec_is_a_condition_not_an_exception() -> None:
    xr = replica(workers={"count": 1, "template": {"spec": {"containers": [{"name": "x"}]}}})
    res = run(xr, cluster())
    status, reason, message = cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert "engine" in message
    assert res.desired == {} and res.fatal is None


def test_crossplane_spec_fields_are_ignored() -> None:
    xr = replica(crossplane={"compositionRef": {"name": "x"}, "resourceRefs": []})
    assert cond(run(xr, cluster()), "Valid")[0] == "True"


def test_quickstart_style_gateway_falls_back_to_defaults() -> None:
    cl = cluster()
    cl["spec"]["gateway"] = {"address": "east.example.com"}
    ref = manifest(run(replica(), cl), "route")["spec"]["parentRefs"][0]
    assert (ref["name"], ref["namespace"]) == ("modelplane-inference", "modelplane-system")


# --- scheduling templates, priority, scheduler contracts -------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("{{ .Namespace }}", "team-a"),
        ("{{.Name}}-{{ .Cluster }}", "llama-east"),
        ("q-{{ .Namespace }}-{{ .Namespace }}", "q-team-a-team-a"),
        ("static", "static"),
        ("", ""),
    ],
)
def test_templates_render_by_substitution(value: str, expected: str) -> None:
    assert render(value, TemplateVars("team-a", "llama", "east")) == expected


@pytest.mark.parametrize(
    ("labels", "needle"),
    [
        # The cluster's reader (api.readers) names the field and the key.
        ({"q": "{{ .Labels }}"}, "spec.scheduling.defaultLabels: q:"),
        ({"q": '{{ printf "%s" .Namespace }}'}, "printf"),
        ({"q": "{{ .Namespace"}, "unbalanced"),
        ({"q": "{{ index . 0 }}"}, "index"),
        ({"q": "{{ .Name }}" * 13}, "not a valid label value"),
    ],
)
def test_bad_templates_are_a_condition_naming_them(labels: dict[str, str], needle: str) -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    res = run(replica(), cluster({"defaultLabels": labels}), observed=observed)
    status, reason, message = cond(res, "ClusterResolved")
    assert (status, reason) == ("False", "InvalidSchedulingTemplate")
    assert needle in message
    assert res.events[0].reason == "InvalidSchedulingTemplate"
    assert res.ready == "False"
    # The old, correctly stamped workload stays; nothing is rewritten.
    assert manifest(res, "unified-deployment") == manifest(first, "unified-deployment")


def test_bad_annotation_template_is_named_too() -> None:
    res = run(replica(), cluster({"defaultAnnotations": {"a": "{{ .Secret }}"}}))
    assert "spec.scheduling.defaultAnnotations: a:" in cond(res, "ClusterResolved")[2]


@pytest.mark.parametrize(
    ("priority", "default", "expected"),
    [
        ("production-critical", "standard", "production-critical"),
        (None, "standard", "standard"),
        (None, None, None),
    ],
)
def test_priority_falls_back_to_cluster_default(
    priority: str | None, default: str | None, expected: str | None
) -> None:
    scheduling = {"defaultPriority": default} if default else {}
    res = run(replica(priority=priority), cluster(scheduling))
    pod = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    assert pod.get("priorityClassName") == expected


def test_reserved_label_prefix_cannot_be_stamped_by_the_platform() -> None:
    res = run(replica(), cluster({"defaultLabels": {"modelplane.ai/pool": "{{ .Name }}"}}))
    pod = manifest(res, "unified-deployment")["spec"]["template"]
    assert "modelplane.ai/pool" not in pod["metadata"]["labels"]
    assert pod["spec"]["nodeSelector"] == {"modelplane.ai/pool": "l4"}


def test_reserved_label_prefix_cannot_be_stamped_by_the_user() -> None:
    xr = replica()
    xr["spec"]["workers"]["template"]["metadata"] = {
        "labels": {"modelplane.ai/pool": "h100", "modelplane.ai/anything": "x", "team": "a"}
    }
    labels = manifest(run(xr, cluster()), "unified-deployment")["spec"]["template"]["metadata"][
        "labels"
    ]
    assert labels["team"] == "a"
    assert "modelplane.ai/pool" not in labels and "modelplane.ai/anything" not in labels


def test_kai_without_queue_label_composes_a_queueless_podgroup() -> None:
    res = run(replica(), cluster({"schedulerName": "kai-scheduler"}))
    assert manifest(res, "podgroup")["spec"] == {"minMember": 1}


def test_plain_scheduler_name_has_no_podgroup_and_no_kueue_label() -> None:
    res = run(replica(), cluster({"schedulerName": "my-scheduler"}))
    assert "podgroup" not in res.desired
    dep = manifest(res, "unified-deployment")
    assert dep["spec"]["template"]["spec"]["schedulerName"] == "my-scheduler"
    assert "kueue.x-k8s.io/queue-name" not in dep["metadata"]["labels"]


def test_gang_counts_every_pod_of_the_replica() -> None:
    xr = replica(
        workers={
            "count": 3,
            "topology": {"tensor": 8, "pipeline": 2, "data": 2},
            "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}},
        }
    )
    res = run(xr, cluster({"schedulerName": "volcano"}))
    lws = manifest(res, "unified-leaderworkerset")
    assert (lws["spec"]["replicas"], lws["spec"]["leaderWorkerTemplate"]["size"]) == (3, 4)
    assert manifest(res, "podgroup")["spec"]["minMember"] == 12


# --- argv safety and the Ray bootstrap ---------------------------------------------------

MALICIOUS = "--model=x; rm -rf /"


def _multi_node(args: list[str], command: list[str] | None = None) -> dict[str, Any]:
    engine: dict[str, Any] = {"name": "engine", "image": "vllm/vllm-openai:v0.9.0", "args": args}
    if command is not None:
        engine["command"] = command
    return replica(
        workers={
            "count": 1,
            "topology": {"tensor": 1, "pipeline": 2},
            "template": {"spec": {"containers": [engine]}},
        }
    )


def _engine(pod: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == "engine")
    return found


def test_malicious_argument_stays_one_argv_element() -> None:
    res = run(_multi_node(["--tensor-parallel-size=1", MALICIOUS, "$(reboot)"]), cluster())
    lwt = manifest(res, "unified-leaderworkerset")["spec"]["leaderWorkerTemplate"]
    leader, worker = _engine(lwt["leaderTemplate"]), _engine(lwt["workerTemplate"])
    # The scripts are the constants, byte for byte: no user text is spliced in.
    assert leader["command"] == [
        "/bin/sh",
        "-c",
        ray.RAY_LEADER_SCRIPT,
        "modelplane-ray-leader",
    ]
    assert worker["command"] == ["/bin/sh", "-c", ray.RAY_WORKER_SCRIPT]
    assert leader["args"] == [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--tensor-parallel-size=1",
        MALICIOUS,
        "$(reboot)",
    ]
    assert "args" not in worker
    # The leader script hands its arguments to exec as "$@", one word each.
    assert '"$@"' in ray.RAY_LEADER_SCRIPT and "rm" not in ray.RAY_LEADER_SCRIPT
    assert shlex.split(ray.RAY_LEADER_SCRIPT)[-2:] == ["exec", "$@"]


def test_single_node_args_pass_through_untouched() -> None:
    xr = replica()
    xr["spec"]["workers"]["template"]["spec"]["containers"][0]["args"] = [MALICIOUS]
    xr["spec"]["workers"]["template"]["spec"]["containers"][0]["command"] = ["vllm", "serve"]
    engine = _engine(manifest(run(xr, cluster()), "unified-deployment")["spec"]["template"])
    assert (engine["command"], engine["args"]) == (["vllm", "serve"], [MALICIOUS])


def test_engine_command_is_kept_behind_the_bootstrap() -> None:
    res = run(_multi_node(["--pipeline-parallel-size=2"], ["vllm", "serve", "m"]), cluster())
    leader = _engine(
        manifest(res, "unified-leaderworkerset")["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    )
    assert leader["args"] == ["vllm", "serve", "m", "--pipeline-parallel-size=2"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["--model=/mnt/models"]),
        (["--model=org/m"], ["--model=org/m"]),
        (["--model", "org/m"], ["--model", "org/m"]),
        # `vllm serve <model>` names it positionally; a flag after serve does not.
        (["serve", "org/m"], ["serve", "org/m"]),
        (["serve", "--port=8000"], ["serve", "--port=8000", "--model=/mnt/models"]),
    ],
)
def test_cache_points_vllm_at_the_mount_unless_it_names_a_model(
    args: list[str], expected: list[str]
) -> None:
    xr = replica(caches=[{"name": "weights"}])
    xr["spec"]["workers"]["template"]["spec"]["containers"][0]["args"] = args
    cache = {
        "metadata": {"name": "weights", "namespace": "team-a"},
        "spec": {"storage": {"backend": "PVC"}},
        "status": {"clusters": [{"cluster": "east", "phase": "Ready", "claimName": "weights"}]},
    }
    required = {"cluster": [cluster()], "model-cache": [cache], "deployment": placed_by(xr)}
    res = compose(ComposeInput(composite=xr, required=required))
    tpl = manifest(res, "unified-deployment")["spec"]["template"]
    assert _engine(tpl)["args"] == expected
    assert {
        "name": "model-cache",
        "mountPath": "/mnt/models",
        "readOnly": True,
        "subPath": "model",
    } in _engine(tpl)["volumeMounts"]
    assert tpl["spec"]["volumes"] == [
        {
            "name": "model-cache",
            "persistentVolumeClaim": {"claimName": "weights", "readOnly": True},
        },
        {"name": "engine-scratch", "emptyDir": {}},
    ]


def test_shm_only_when_sharded() -> None:
    tpl = manifest(run(replica(), cluster()), "unified-deployment")["spec"]["template"]
    assert "volumes" not in tpl["spec"]
    assert "volumeMounts" not in _engine(tpl)


# --- DRA and GPU resources ----------------------------------------------------------------


def test_gpu_resources_are_stripped_everywhere_with_a_warning() -> None:
    xr = replica()
    pod = xr["spec"]["workers"]["template"]["spec"]
    pod["initContainers"] = [
        {"name": "fetch", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": 1}}}
    ]
    pod["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 2, "cpu": "4"}}
    res = run(xr, cluster())
    spec = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    assert spec["initContainers"][0]["resources"] == {}
    assert _engine({"spec": spec})["resources"] == {
        "limits": {"cpu": "4"},
        "claims": [{"name": "devices"}],
    }
    assert [e.reason for e in res.events] == ["GPUResourceLimitIgnored"] * 2
    assert "spec.workers.template.spec.initContainers[fetch]" in res.events[0].message


def test_no_device_requests_means_no_claim_and_no_gpu_toleration() -> None:
    res = run(replica(deviceRequests=[]), cluster())
    spec = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    assert "resourceClaims" not in spec and "tolerations" not in spec
    assert not [k for k in res.desired if "claims" in k]


def _claims(res: ComposeResult) -> tuple[str, str, str, dict[str, Any]]:
    """(key, Object name, template name, template) of the claim template the pods use."""
    pod = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
    [claim] = pod["resourceClaims"]
    [key] = [
        k
        for k, d in res.desired.items()
        if d.resource["spec"]["forProvider"]["manifest"]["metadata"]["name"]
        == claim["resourceClaimTemplateName"]
        and d.resource["spec"]["forProvider"]["manifest"]["kind"] == "ResourceClaimTemplate"
    ]
    obj = res.desired[key].resource
    tpl = obj["spec"]["forProvider"]["manifest"]
    return key, obj["metadata"]["name"], tpl["metadata"]["name"], tpl


def _edited_selector() -> dict[str, Any]:
    edited = replica()
    edited["spec"]["deviceRequests"][0]["selectors"] = [
        {"cel": "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"}
    ]
    return edited


def _rolled(res: ComposeResult, updated: int, total: int, seen: int = 2) -> dict[str, Any]:
    """Observed state once the cluster applied `res` at generation 2 and has
    `updated` of `total` pods on the new revision (observed generation `seen`)."""
    observed = observed_from(res, available=True)
    live = observed["unified-deployment"]["status"]["atProvider"]["manifest"]
    live["metadata"]["generation"] = 2
    live["status"].update(observedGeneration=seen, updatedReplicas=updated, replicas=total)
    return observed


def test_changed_device_requests_are_a_new_claim_template_the_pods_roll_to() -> None:
    # ResourceClaimTemplate.spec is immutable: an in-place change of the
    # resolved requests (same pool, edited selector) must be a new template.
    before = run(replica(), cluster())
    after = run(_edited_selector(), cluster(), observed=observed_from(before, available=True))
    (k0, o0, t0, tpl0), (k1, o1, t1, tpl1) = _claims(before), _claims(after)
    assert tpl0["spec"] != tpl1["spec"]
    # Template, Object and composed-resource key all change, so Crossplane
    # deletes the old Object (never renames it) and creates the new one.
    assert len({t0, t1}) == len({o0, o1}) == len({k0, k1}) == 2
    for res, name in ((before, t0), (after, t1)):
        pod = manifest(res, "unified-deployment")["spec"]["template"]["spec"]
        assert pod["resourceClaims"] == [{"name": "devices", "resourceClaimTemplateName": name}]
    # The digest is sha256 over the template spec as canonical JSON.
    for key, obj_name, name, tpl in (_claims(before), _claims(after)):
        canonical = json.dumps(tpl["spec"], sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:8]
        assert (key, obj_name, name) == (
            f"unified-claims-{digest}",
            f"{NAME}-claims-{digest}",
            f"{NAME}-{digest}",
        )


@pytest.mark.parametrize(
    ("updated", "total", "seen", "kept"),
    [
        (0, 2, 1, True),  # the cluster has not seen the new pod template yet
        (1, 2, 2, True),  # one pod rolled, one old pod left
        (2, 3, 2, True),  # all updated but an old pod still terminating
        (2, 2, 1, True),  # counts from before the change
        (2, 2, 2, False),  # every pod on the new template: the old one goes
    ],
)
def test_previous_claim_template_stays_until_the_pods_moved(
    updated: int, total: int, seen: int, kept: bool
) -> None:
    two = replica(workers={**replica()["spec"]["workers"], "count": 2})
    edited = _edited_selector()
    edited["spec"]["workers"]["count"] = 2
    before = run(two, cluster())
    old_key = _claims(before)[0]
    after = run(edited, cluster(), observed=observed_from(before, available=True))
    assert old_key in after.desired  # the live workload still names the old template
    assert after.desired[old_key].resource["spec"] == before.desired[old_key].resource["spec"]
    # The cluster applies `after`; the rollout progresses.
    rolled = run(edited, cluster(), observed=_rolled(after, updated, total, seen))
    assert (old_key in rolled.desired) is kept
    assert _claims(rolled)[0] != old_key


def test_claim_template_from_before_digests_is_kept_until_the_pods_moved() -> None:
    # An upgrade from names without a digest: key `unified-claims`, template
    # named after the replica, which the live pods still reference.
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    key = _claims(first)[0]
    legacy = observed.pop(key)
    legacy["metadata"]["name"] = f"{NAME}-claims"
    legacy["status"]["atProvider"]["manifest"]["metadata"]["name"] = NAME
    legacy["spec"]["forProvider"]["manifest"]["metadata"]["name"] = NAME
    live = observed["unified-deployment"]["status"]["atProvider"]["manifest"]
    live["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = NAME
    observed["unified-claims"] = legacy
    res = run(replica(), cluster(), observed=observed)
    assert res.desired["unified-claims"].resource["metadata"]["name"] == f"{NAME}-claims"
    assert key in res.desired
    done = _rolled(res, 1, 1)
    done["unified-claims"] = legacy
    assert "unified-claims" not in run(replica(), cluster(), observed=done).desired


def test_unchanged_device_requests_keep_their_claim_template() -> None:
    # Labels, scheduler and priority are not part of the template's spec.
    a = run(replica(), cluster())
    b = run(replica(priority="high"), cluster({"schedulerName": "kai-scheduler"}))
    assert _claims(a)[:3] == _claims(b)[:3]


def test_user_toleration_for_gpu_is_not_duplicated() -> None:
    xr = replica()
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    xr["spec"]["workers"]["template"]["spec"]["tolerations"] = [gpu]
    spec = manifest(run(xr, cluster()), "unified-deployment")["spec"]["template"]["spec"]
    assert spec["tolerations"] == [gpu]


# --- readiness from observed state ---------------------------------------------------------


def test_ready_only_once_the_workload_is_observed_available() -> None:
    first = run(replica(), cluster(gatewayAddress="east.example.com"))
    assert first.ready == "False"
    assert first.status == {
        "namespace": NS,
        "endpoint": "https://east.example.com/team-a/llama/0",
        # What its route sends to there: a ModelService's route on the cluster does too.
        "backendRef": {"name": "llama-5e1f0c2a-engine", "port": 8000, "kind": "Service"},
    }

    pending = run(replica(), cluster(), observed=observed_from(first, available=False))
    assert pending.ready == "False"
    assert pending.desired["unified-deployment"].ready == "False"
    assert pending.desired["unified-service"].ready == "True"
    status, reason, message = cond(pending, "WorkloadReady")
    assert (status, reason) == ("False", "WorkloadNotAvailable")
    assert "not Available" in message

    ready = run(replica(), cluster(), observed=observed_from(first, available=True))
    assert ready.ready == "True"
    assert {d.ready for d in ready.desired.values()} == {"True"}
    assert cond(ready, "WorkloadReady")[:2] == ("True", "Available")
    assert not any(c.type in ("Ready", "Synced") for c in ready.conditions)


def test_object_ready_condition_is_the_fallback_signal() -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=None)
    dep = observed["unified-deployment"]
    dep["status"]["conditions"].append({"type": "Ready", "status": "True"})
    assert run(replica(), cluster(), observed=observed).ready == "True"
    dep["status"]["conditions"][-1]["status"] = "False"
    assert run(replica(), cluster(), observed=observed).ready == "False"


def test_config_object_reported_unready_is_not_ready() -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    observed["unified-service"]["status"]["conditions"].append({"type": "Ready", "status": "False"})
    res = run(replica(), cluster(), observed=observed)
    assert res.desired["unified-service"].ready == "False"
    assert res.ready == "False"
    assert cond(res, "WorkloadReady")[0] == "True"


# --- the HTTPRoute: accepted by its Gateway, or the replica is not serving ------------------

GATEWAY = "Gateway modelplane-system/modelplane-inference"
ROUTE = f"HTTPRoute {NAME}"


def test_route_rejected_by_the_gateway_keeps_the_replica_unready() -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True)
    observed["route"]["status"]["atProvider"]["manifest"]["status"] = {
        "parents": [parent(False, "NotAllowedByListeners", "namespace team-a not allowed")]
    }
    # Even a Ready Object does not override what the Gateway reported.
    observed["route"]["status"]["conditions"].append({"type": "Ready", "status": "True"})
    res = run(replica(), cluster(), observed=observed)
    assert res.ready == "False"
    assert res.desired["route"].ready == "False"
    assert res.desired["unified-deployment"].ready == "True"
    status, reason, message = cond(res, "WorkloadReady")
    assert (status, reason) == ("True", "Available")
    assert message == (
        f"Deployment {NAME} (unified) Available; the replica still waits for {ROUTE} "
        "(RouteAccepted)"
    )
    assert cond(res, "RouteAccepted") == (
        "False",
        "RouteNotAccepted",
        f"{ROUTE} rejected by {GATEWAY} (NotAllowedByListeners: namespace team-a not "
        "allowed): the replica is not Ready until it is accepted",
    )


def test_accepted_route_and_unavailable_workload_say_the_workload_waits() -> None:
    first = run(replica(), cluster())
    res = run(replica(), cluster(), observed=observed_from(first, available=False))
    assert res.ready == "False"
    assert res.desired["route"].ready == "True"
    assert cond(res, "RouteAccepted") == ("True", "Accepted", f"{ROUTE} accepted by {GATEWAY}")
    assert cond(res, "WorkloadReady") == (
        "False",
        "WorkloadNotAvailable",
        f"Deployment {NAME} (unified) not Available: the replica is not Ready until it is "
        "Available",
    )


def test_route_without_gateway_status_is_not_accepted_yet() -> None:
    first = run(replica(), cluster())
    res = run(replica(), cluster(), observed=observed_from(first, True, accepted=None))
    assert res.ready == "False"
    assert cond(res, "RouteAccepted")[2] == (
        f"{ROUTE} not accepted by {GATEWAY} yet: the replica is not Ready until it is accepted"
    )
    # Nothing observed at all: nothing created yet.
    assert cond(run(replica(), cluster()), "RouteAccepted")[2].startswith(
        f"{ROUTE} not created yet:"
    )


def test_held_replica_reads_the_route_from_its_gateway_status() -> None:
    first = run(replica(), cluster())
    observed = observed_from(first, available=True, accepted=False)
    observed["route"]["status"]["conditions"].append({"type": "Ready", "status": "True"})
    held = run(replica(), observed=observed, fetched=False)
    assert held.ready == "False" and held.desired["route"].ready == "False"
    observed = observed_from(first, available=True, accepted=True)
    assert run(replica(), observed=observed, fetched=False).ready == "True"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"parents": [parent(True)]}, True),
        ({"parents": [parent(False, "NotAllowedByListeners")]}, False),
        ({"parents": [parent(False), parent(True)]}, True),
        ({"parents": [{"parentRef": {"name": "gw"}, "controllerName": "x"}]}, False),
        ({"parents": []}, False),
        ({}, False),
        (None, False),
    ],
)
def test_route_readiness_query_evaluates(status: dict[str, Any] | None, expected: bool) -> None:
    from cel_expr_python import cel
    from google.protobuf import descriptor_pool

    env = cel.NewEnv(descriptor_pool.Default(), variables={"object": cel.Type.DYN})
    route_object = run(replica(), cluster()).desired["route"].resource
    assert route_object["spec"]["readiness"]["policy"] == "DeriveFromCelQuery"
    query = route_object["spec"]["readiness"]["celQuery"]
    wrapped: dict[str, Any] = {"metadata": {"name": "r"}}
    if status is not None:
        wrapped["status"] = status
    result = env.compile(query).eval(env.Activation({"object": wrapped}))
    assert (result.type(), result.value()) == (cel.Type.BOOL, expected)


def test_composition_is_deterministic() -> None:
    a = run(replica(), cluster({"schedulerName": "kai-scheduler"}))
    b = run(copy.deepcopy(replica()), copy.deepcopy(cluster({"schedulerName": "kai-scheduler"})))
    assert {k: d.resource for k, d in a.desired.items()} == {
        k: d.resource for k, d in b.desired.items()
    }


# --- names -------------------------------------------------------------------------------------

_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_names = st.from_regex(_SUBDOMAIN, fullmatch=True).filter(lambda s: len(s) <= 253)


@given(_names)
def test_wrapped_names_are_rfc1035_labels(name: str) -> None:
    out = objects.dns_label(name, 40)
    assert _RFC1035.match(out) and len(out) <= 40
    assert objects.dns_label(name, 40) == out


@given(_names, _names)
def test_shortened_names_stay_distinct(a: str, b: str) -> None:
    if a != b:
        assert objects.dns_label(a, 40) != objects.dns_label(b, 40)
        assert objects.object_name(a, "deployment") != objects.object_name(b, "deployment")


@given(_names, st.sampled_from(["deployment", "leaderworkerset", "claims", "namespace"]))
def test_object_names_fit(name: str, kind: str) -> None:
    out = objects.object_name(name, "prefill", kind)
    assert len(out) <= 63 and _SUBDOMAIN.match(out)


def test_render_map_keeps_order_independent_output() -> None:
    vars_ = TemplateVars("ns", "dep", "c")
    a, _ = render_map("f", {"b": "{{ .Name }}", "a": "x"}, vars_, labels=True)
    b, _ = render_map("f", {"a": "x", "b": "{{ .Name }}"}, vars_, labels=True)
    assert a == b == {"a": "x", "b": "dep"}


def test_leader_script_execs_each_argument_verbatim(tmp_path: Any) -> None:
    # Run the real bootstrap under /bin/sh with a stub `ray` and an engine that
    # prints its argv one element per line: the hostile argument arrives intact.
    import os
    import subprocess

    stub = tmp_path / "ray"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    res = run(_multi_node([MALICIOUS, "$(touch pwned)", "a b"]), cluster())
    leader = _engine(
        manifest(res, "unified-leaderworkerset")["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    )
    argv = [*leader["command"], "printf", "%s\\n", *leader["args"][3:]]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert out.stdout.splitlines() == [MALICIOUS, "$(touch pwned)", "a b"]
    assert not (tmp_path / "pwned").exists()


def test_service_does_not_collide_with_the_lws_headless_service() -> None:
    # LeaderWorkerSet creates a headless Service named after itself.
    res = run(_multi_node([]), cluster())
    lws = manifest(res, "unified-leaderworkerset")["metadata"]["name"]
    svc = manifest(res, "unified-service")["metadata"]["name"]
    assert svc != lws
    backend = manifest(res, "route")["spec"]["rules"][0]["backendRefs"][0]["name"]
    assert backend == svc


@pytest.mark.parametrize(
    ("wrapped", "expected"),
    [
        (
            {
                "spec": {"replicas": 1},
                "status": {"replicas": 1, "updatedReplicas": 1, "availableReplicas": 1},
            },
            True,
        ),
        # Available with no Pod running (maxUnavailable 1 of 1): not ready.
        ({"status": {"conditions": [{"type": "Available", "status": "True"}]}}, False),
        ({"status": {"conditions": [{"type": "Progressing", "status": "True"}]}}, False),
        ({"status": {"replicas": 1}}, False),
        ({"metadata": {"name": "x"}}, False),
    ],
)
def test_workload_readiness_query_evaluates(wrapped: dict[str, Any], expected: bool) -> None:
    # provider-kubernetes evaluates the query with the observed object bound
    # to `object`; a missing status must read as not ready, not as an error.
    from cel_expr_python import cel
    from google.protobuf import descriptor_pool

    env = cel.NewEnv(descriptor_pool.Default(), variables={"object": cel.Type.DYN})
    workload_object = run(replica(), cluster()).desired["unified-deployment"].resource
    query = workload_object["spec"]["readiness"]["celQuery"]
    result = env.compile(query).eval(env.Activation({"object": wrapped}))
    assert (result.type(), result.value()) == (cel.Type.BOOL, expected)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda t: t.update(metadata=["x"]), "spec.workers.template.metadata"),
        (lambda t: t.setdefault("metadata", {}).update(labels="a=b"), "metadata.labels"),
        (lambda t: t.setdefault("metadata", {}).update(labels={0: None}), "metadata.labels"),
        (
            lambda t: t.setdefault("metadata", {}).update(annotations={"a": 1}),
            "metadata.annotations",
        ),
        (lambda t: t["spec"].update(tolerations={"key": "x"}), "spec.tolerations"),
        (lambda t: t["spec"].update(volumes=["dshm"]), "spec.volumes[0]"),
        (lambda t: t["spec"].update(nodeSelector=["pool"]), "spec.nodeSelector"),
        (lambda t: t["spec"]["containers"].append("sidecar"), "spec.containers[1]"),
        (lambda t: t["spec"]["containers"][0].update(args="--model=x"), "containers[0].args"),
        (
            lambda t: t["spec"]["containers"][0].update(resources={"limits": ["gpu"]}),
            "containers[0].resources.limits",
        ),
        (lambda t: t["spec"].update(initContainers=[{"name": "i", "ports": {}}]), "ports"),
    ],
)
def test_malformed_template_is_a_condition_not_an_exception(mutate: Any, field: str) -> None:
    xr = replica()
    mutate(xr["spec"]["workers"]["template"])
    res = run(xr, cluster())
    status, reason, message = cond(res, "Valid")
    assert (status, reason) == ("False", "InvalidSpec")
    assert field in message
    assert res.desired == {} and res.fatal is None


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    scheduling=_json,
    gateway=_json,
    status=st.dictionaries(st.sampled_from(["providerConfigName", "gatewayAddress"]), _json),
    labels=_json,
    extra=_json,
)
def test_arbitrary_cluster_and_template_data_never_raise(
    scheduling: Any, gateway: Any, status: dict[str, Any], labels: Any, extra: Any
) -> None:
    cl = cluster()
    cl["spec"]["scheduling"] = scheduling
    cl["spec"]["gateway"] = gateway
    cl["status"] = status
    xr = replica()
    tpl = xr["spec"]["workers"]["template"]
    tpl["metadata"] = {"labels": labels}
    tpl["spec"]["volumes"] = extra
    res = run(xr, cl)
    assert res.fatal is None


# --- shared helpers ------------------------------------------------------------------------


def test_long_deployment_label_matches_the_shared_label_value() -> None:
    # The ModelDeployment side labels its replicas with api.objects.label_value;
    # the cluster side must agree, or selecting a deployment's pods misses some.
    # Expected by hand: 52 characters of the name, "-", 10 hex of its sha256.
    long = "a" * 80
    res = run(replica(deploymentName=long), cluster())
    label = manifest(res, "unified-deployment")["metadata"]["labels"]["modelplane.ai/deployment"]
    digest = hashlib.sha256(long.encode()).hexdigest()[:10]
    assert label == "a" * 52 + "-" + digest


# --- the engine's port ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ports", "expected_port", "expected_ports"),
    [
        # TGI serves on 80: the declared port, nothing added.
        ([{"containerPort": 80}], 80, [{"containerPort": 80}]),
        # The `http`-named port wins over an earlier metrics port.
        (
            [{"name": "metrics", "containerPort": 9090}, {"name": "http", "containerPort": 30000}],
            30000,
            [{"name": "metrics", "containerPort": 9090}, {"name": "http", "containerPort": 30000}],
        ),
        # Without a name match, the first declared port.
        (
            [{"name": "api", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}],
            8080,
            [{"name": "api", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}],
        ),
        # Nothing declared: the default, declared for the user.
        (None, 8000, [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]),
    ],
)
def test_engine_port_is_the_one_the_container_declares(
    ports: list[dict[str, Any]] | None, expected_port: int, expected_ports: list[dict[str, Any]]
) -> None:
    xr = replica()
    if ports is not None:
        xr["spec"]["workers"]["template"]["spec"]["containers"][0]["ports"] = ports
    res = run(xr, cluster())
    engine = _engine(manifest(res, "unified-deployment")["spec"]["template"])
    assert engine["ports"] == expected_ports
    assert engine["readinessProbe"]["httpGet"]["port"] == expected_port
    svc = manifest(res, "unified-service")["spec"]["ports"]
    assert [(p["port"], p["targetPort"]) for p in svc] == [(expected_port, expected_port)]
    backend = manifest(res, "route")["spec"]["rules"][0]["backendRefs"]
    assert [b["port"] for b in backend] == [expected_port]
