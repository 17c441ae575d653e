"""`modelplane validate`: every kind of mistake exits 1 naming file, document, field and a fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from modelplane.api.kinds import KINDS
from modelplane.cli import validate as validate_module
from modelplane.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent.parent
INVALID = ROOT / "tests" / "package" / "invalid"

CLASS = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: l4-1x
spec:
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    attributes:
      productName: { string: NVIDIA L4 }
"""

CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata:
  name: edge
spec:
  source: Existing
  existing:
    kubeconfigSecretRef: { namespace: modelplane-system, name: edge-kubeconfig }
  pools:
  - name: l4
    className: l4-1x
    nodeCount: 2
"""

DEPLOYMENT = """\
apiVersion: modelplane.ai/v1alpha1
kind: ModelDeployment
metadata:
  name: chat
  namespace: team-a
spec:
  replicas: 2
  nodeSelector:
    devices:
    - name: gpu
      selectors:
      - cel: device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"
  workers:
    template:
      spec:
        containers:
        - name: engine
          image: vllm/vllm-openai:v0.11.0
"""

SECRET = """\
apiVersion: v1
kind: Secret
metadata: { name: edge-kubeconfig, namespace: modelplane-system }
stringData: { kubeconfig: "" }
"""


def _write(tmp_path: Path, *docs: str, name: str = "fleet.yaml") -> Path:
    path = tmp_path / name
    path.write_text("---\n".join(docs), encoding="utf-8")
    return path


def _validate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["validate", *args])
    return result.exit_code, result.output


# examples/missing-cache names a ModelCache that does not exist on purpose (the
# deployment is held and explains why); every other example is valid.
BROKEN_EXAMPLES = ("missing-cache",)


def test_examples_are_valid() -> None:
    folders = sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())
    folders = [p for p in folders if p.name not in BROKEN_EXAMPLES]
    code, out = _validate(*map(str, folders))
    assert code == 0, out
    # Counted independently of the validator: every Modelplane document there.
    docs = [
        d
        for folder in folders
        for p in folder.rglob("*.yaml")
        for d in yaml.safe_load_all(p.read_text(encoding="utf-8"))
        if d
    ]
    ours = sum(1 for d in docs if d["apiVersion"].startswith("modelplane.ai/"))
    assert out.count("\n") == 1
    assert out.startswith(f"{ours} Modelplane documents valid in ")
    assert f"; {len(docs) - ours} documents of other kinds not checked" in out


def test_the_missing_cache_example_is_refused_for_exactly_its_missing_cache() -> None:
    code, out = _validate(str(ROOT / "examples" / "missing-cache"))
    assert code == 1
    assert "spec.caches[0].name: ModelCache 'qwen-weights' not found in namespace 'ml-team'" in out
    assert "1 problem found" in out


def test_a_valid_fleet_passes(tmp_path: Path) -> None:
    path = _write(tmp_path, SECRET, CLASS, CLUSTER, DEPLOYMENT)
    code, out = _validate(str(path))
    assert code == 0, out
    assert out == (
        "3 Modelplane documents valid in 1 file (1 InferenceClass, 1 InferenceCluster, "
        "1 ModelDeployment); 1 document of other kinds not checked\n"
    )


# mistake → (which document of [SECRET, CLASS, CLUSTER, DEPLOYMENT] it replaces, the
# broken document, the line validate prints after "<file>: ").
MISTAKES = {
    "misspelled kind": (
        3,
        DEPLOYMENT.replace("kind: ModelDeployment", "kind: ModelDeploymnet"),
        "document 4 (ModelDeploymnet/team-a/chat): kind: modelplane.ai/v1alpha1 has no kind "
        "'ModelDeploymnet'; did you mean 'ModelDeployment'?",
    ),
    "unknown field": (
        2,
        CLUSTER.replace("nodeCount: 2", "nodeCont: 2"),
        "document 3 (InferenceCluster/edge): spec.pools[0].nodeCont: unknown field; "
        "did you mean 'nodeCount'?",
    ),
    "bad selector": (
        3,
        DEPLOYMENT.replace('productName == "NVIDIA L4"', 'productName == "NVIDIA L4" &&'),
        "document 4 (ModelDeployment/team-a/chat): spec.nodeSelector.devices[0].selectors[0].cel: "
        "invalid device selector: compilation failed:",
    ),
    "missing class": (
        2,
        CLUSTER.replace("className: l4-1x", "className: l4-x1"),
        "document 3 (InferenceCluster/edge): spec.pools[0].className: InferenceClass 'l4-x1' "
        "not found; did you mean 'l4-1x'?",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_exits_1_with_file_field_and_fix(tmp_path: Path, mistake: str) -> None:
    index, broken, expected = MISTAKES[mistake]
    docs = [SECRET, CLASS, CLUSTER, DEPLOYMENT]
    docs[index] = broken
    path = _write(tmp_path, *docs)
    code, out = _validate(str(path))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}: {expected}"), out
    assert lines[-1] == "1 problem found"


def test_the_selector_fix_points_at_cel_eval(tmp_path: Path) -> None:
    broken = DEPLOYMENT.replace("productName ==", "productName.size() ==")
    code, out = _validate(str(_write(tmp_path, broken)))
    assert code == 1
    assert "try it with `modelplane cel eval EXPRESSION --device FILE`" in out


def test_defaults_apply_before_cel_rules(tmp_path: Path) -> None:
    # operator defaults to Equal, and an empty key only tolerates with Exists.
    broken = DEPLOYMENT.replace("  replicas: 2\n", "  replicas: 2\n  tolerations:\n  - {}\n")
    code, out = _validate(str(_write(tmp_path, broken)))
    assert code == 1
    assert "spec.tolerations[0]: operator must be Exists when key is empty" in out


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "source: Existing",
            "source: Exsting",
            "spec.source: 'Exsting' is not one of Existing, EKS, GKE, AKS; "
            "did you mean 'Existing'?",
        ),
        ("nodeCount: 2", "nodeCount: two", "spec.pools[0].nodeCount: 'two' is not of type integer"),
        ("nodeCount: 2", "nodeCount: -1", "spec.pools[0].nodeCount: -1 is below the minimum 0"),
        ("  - name: l4\n", "  - name: L4\n", "spec.pools[0].name: 'L4' does not match"),
        ("  pools:", "  pool:", "spec.pool: unknown field; did you mean 'pools'?"),
    ],
)
def test_schema_problems_name_the_field(tmp_path: Path, old: str, new: str, expected: str) -> None:
    code, out = _validate(str(_write(tmp_path, CLASS, CLUSTER.replace(old, new))))
    assert code == 1
    assert expected in out


def test_a_kind_under_the_wrong_api_version(tmp_path: Path) -> None:
    code, out = _validate(str(_write(tmp_path, CLASS.replace("v1alpha1", "v1"))))
    assert code == 1
    assert "apiVersion: InferenceClass is served as modelplane.ai/v1alpha1" in out


def test_the_function_types_refuse_what_the_schema_lets_through(tmp_path: Path) -> None:
    # Label templates allow only .Namespace, .Name and .Cluster (SPEC §5).
    scheduling = "  scheduling:\n    defaultLabels:\n      team: '{{ .Env }}'\n"
    code, out = _validate(str(_write(tmp_path, CLASS, CLUSTER + scheduling)))
    assert code == 1
    assert "spec: the function would refuse it:" in out
    assert "unsupported template '{{ .Env }}'" in out


def test_skip_references_for_a_partial_set(tmp_path: Path) -> None:
    path = _write(tmp_path, CLUSTER)
    assert _validate(str(path))[0] == 1
    assert _validate("--skip-references", str(path))[0] == 0


def test_every_schema_oracle_rejection_is_caught() -> None:
    # The invalid instances the schema oracles reject (tests/package) fail here too.
    paths = sorted(INVALID.glob("*.yaml"))
    assert paths, f"no invalid instances under {INVALID}"
    for path in paths:
        code, out = _validate("--skip-references", str(path))
        assert code == 1, path.name
        assert out.startswith(f"{path}: document 1 ("), out


def test_unreadable_yaml_and_missing_paths(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n", encoding="utf-8")
    code, out = _validate(str(bad))
    assert code == 1
    assert f"{bad}: document 1 (file): not valid YAML" in out
    code, out = _validate(str(tmp_path / "nowhere"))
    assert code == 2
    assert "no such file or directory" in out


def test_cache_references_wait_for_the_modelcache_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_cache = DEPLOYMENT.replace(
        "  replicas: 2\n", "  replicas: 2\n  caches:\n  - name: llama\n"
    )
    path = _write(tmp_path, SECRET, CLASS, CLUSTER, with_cache)
    if all(k.kind != "ModelCache" for k in KINDS):
        # Not served yet: the reference cannot be resolved, so it is not checked.
        assert _validate(str(path))[0] == 0
        cache_kind = dataclasses.replace(KINDS[0], kind="ModelCache")
        monkeypatch.setattr(validate_module, "KINDS", (*KINDS, cache_kind))
    # Once the kind is served, a deployment's cache must exist in its namespace.
    code, out = _validate(str(path))
    assert code == 1
    assert (
        "document 4 (ModelDeployment/team-a/chat): spec.caches[0].name: "
        "ModelCache 'llama' not found in namespace 'team-a'"
    ) in out


# What the composers refuse in one object (or, for a cloud cluster, in it and its
# pools' classes) beyond the schema: validate runs the same checks, so it refuses
# what the render would. Each test below passed validate before it did (checked by
# running them against the previous validate.py: exit 0).

GKE_CLASS = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceClass
metadata:
  name: l4-gke
spec:
  provisioning:
    provider: GKE
    gke:
      machineType: g2-standard-48
      accelerator: {type: nvidia-l4, count: 4}
  devices:
  - name: gpu
    driver: gpu.nvidia.com
    deviceClassName: gpu.nvidia.com
    count: 4
    attributes:
      productName: {string: NVIDIA L4}
"""

EKS_CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata:
  name: us-east
spec:
  source: EKS
  eks:
    region: us-east-1
    zones: [us-east-1a, us-east-1b]
    accessPrincipalArns: ["arn:aws:iam::123456789012:role/crossplane-provider-aws"]
  pools:
  - {name: l4, className: l4-gke, nodeCount: 2}
"""

NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: modelplane-system}\n"


def test_a_class_for_another_cloud_is_refused_as_the_render_refuses_it(tmp_path: Path) -> None:
    from modelplane.local import ControlPlane, load_paths

    path = _write(tmp_path, NAMESPACE, GKE_CLASS, EKS_CLUSTER)
    code, out = _validate(str(path))
    assert code == 1, out
    expected = (
        "spec.pools[0].className: the function would refuse it: InferenceClass 'l4-gke' of "
        "pool 'l4' has no spec.provisioning for EKS; a EKS cluster can only provision pools "
        "whose class says how"
    )
    assert f"document 3 (InferenceCluster/us-east): {expected}\n" in out
    assert "1 problem found" in out
    # The render of the same file holds the cluster with those words.
    store = ControlPlane(load_paths([str(path)])).run().store
    (cluster,) = [o for o in store.objects() if o["kind"] == "InferenceCluster"]
    (resolved,) = [x for x in cluster["status"]["conditions"] if x["type"] == "PoolsResolved"]
    assert (resolved["status"], resolved["reason"]) == ("False", "NotProvisionable")
    assert resolved["message"] == expected.replace("the function would refuse it: ", "")
    # With a class that provisions on EKS the same cluster passes.
    fixed = GKE_CLASS.replace("provider: GKE\n    gke:", "provider: EKS\n    eks:").replace(
        "machineType: g2-standard-48\n      accelerator: {type: nvidia-l4, count: 4}",
        "instanceType: g6.12xlarge",
    )
    code, out = _validate(str(_write(tmp_path, NAMESPACE, fixed, EKS_CLUSTER, name="ok.yaml")))
    assert code == 0, out


def test_a_pod_template_the_composer_cannot_stamp_is_refused(tmp_path: Path) -> None:
    broken = DEPLOYMENT + "          args: --max-model-len=4096\n"
    code, out = _validate(str(_write(tmp_path, SECRET, CLASS, CLUSTER, broken)))
    assert code == 1, out
    assert (
        "document 4 (ModelDeployment/team-a/chat): spec.workers.template.spec.containers[0].args:"
        " the function would refuse it: " in out
    )
    assert "1 problem found" in out
