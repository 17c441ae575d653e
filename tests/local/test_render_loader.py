"""`modelplane render` rejects invalid input with exit 1 and a message naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from modelplane.cli.main import cli
from modelplane.local import load_paths

CLUSTER = """\
apiVersion: modelplane.ai/v1alpha1
kind: InferenceCluster
metadata: {name: c1}
spec:
  source: Existing
  existing: {kubeconfigSecretRef: {namespace: ns, name: s}}
  pools:
  - {name: p, className: l4, nodeCount: NODES}
"""
SECRET = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\n"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("a: [1, 2\n", "bad.yaml: line 2 column 1: not valid YAML"),
        (SECRET + "---\nmetadata: {name: x}\n", "bad.yaml: document 2: apiVersion: required"),
        (SECRET + "---\napiVersion: v1\nmetadata: {name: x}\n", "document 2: kind: required"),
        ("apiVersion: v1\nkind: Secret\nmetadata: {}\n", "document 1 (Secret): metadata.name"),
        ("- just\n- a list\n", "bad.yaml: document 1: a manifest must be a mapping"),
        (
            CLUSTER.replace("NODES", "many"),
            "bad.yaml: document 1 (InferenceCluster): spec.pools[0].nodeCount: "
            "Input should be a valid integer",
        ),
        (
            CLUSTER.replace("NODES", "2").replace("className: l4", "className: L4!"),
            "spec.pools[0].className: 'L4!' is not a DNS",
        ),
        (
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
            "bad.yaml: document 1 (Widget): apiVersion 'example.com/v1' kind 'Widget' is not "
            "a Modelplane kind, a Kubernetes built-in, nor a kind Modelplane composes",
        ),
        (
            "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: d}\n",
            "kind 'Deploymnet' is not a Modelplane kind",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: n, namespace: x}\n",
            "metadata.namespace: Namespace is cluster-scoped",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, labels: {a: 1}}\n",
            "metadata.labels: must map strings to strings",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: Bad_Name}\n",
            "document 1 (Secret): metadata.name: 'Bad_Name' is not a DNS subdomain",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: Team.A}\n",
            "metadata.namespace: 'Team.A' is not a DNS label",
        ),
        (SECRET + "---\n" + SECRET, "document 2: Secret ns/s is already declared in"),
        (
            CLUSTER.replace("NODES", "9" * 5000),
            "bad.yaml: not valid YAML: Exceeds the limit (4300 digits) for integer string "
            "conversion: value has 5000 digits",
        ),
    ],
)
def test_invalid_input_exits_1_naming_file_and_field(
    tmp_path: Path, content: str, expected: str
) -> None:
    (tmp_path / "bad.yaml").write_text(content)
    result = CliRunner().invoke(cli, ["render", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_loader_reads_directories_recursively_in_path_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.yml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z}\n")
    (tmp_path / "a.yaml").write_text(
        "---\n# only a comment\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n"
        "---\napiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: l, namespace: n}}\n"
    )
    (tmp_path / "notes.txt").write_text("not a manifest")
    objs = load_paths([tmp_path])
    assert [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs] == [
        ("Namespace", None, "n"),
        ("ConfigMap", "n", "l"),
        # A namespaced object without a namespace goes to "default", as with kubectl.
        ("ConfigMap", "default", "z"),
    ]


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["render", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def _edited_quickstart(tmp_path: Path, old: str, new: str, name: str) -> Path:
    """A copy of the quickstart with one edit to one file (the edit must apply)."""
    for f in QUICKSTART.glob("*.yaml"):
        text = f.read_text()
        if f.name == name:
            assert old in text
            text = text.replace(old, new, 1)
        (tmp_path / f.name).write_text(text)
    return tmp_path


# What the generated XRDs' OpenAPI types refuse and pydantic's lax mode would convert:
# render's loader must refuse it too, naming file, document and field.
@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        (
            "deployments.yaml",
            "replicas: 2",
            "replicas: true",
            "deployments.yaml: document 2 (ModelDeployment): spec.replicas: "
            "Input should be a valid integer",
        ),
        (
            "deployments.yaml",
            "replicas: 2",
            'replicas: "2"',
            "(ModelDeployment): spec.replicas: Input should be a valid integer",
        ),
        (
            "deployments.yaml",
            "replicas: 2",
            "replicas: 2.5",
            "(ModelDeployment): spec.replicas: Input should be a valid integer",
        ),
        (
            "fleet.yaml",
            "nodeCount: 2",
            "nodeCount: false",
            "(InferenceCluster): spec.pools[0].nodeCount: Input should be a valid integer",
        ),
        (
            "fleet.yaml",
            "driverVersion: { version: 570.124.6 }",
            "driverVersion: { string: 570 }",
            "(InferenceClass): spec.devices[0].attributes.driverVersion.string: "
            "Input should be a valid string",
        ),
        (
            "fleet.yaml",
            "count: 1",
            'count: "1"',
            "(InferenceClass): spec.devices[0].count: Input should be a valid integer",
        ),
    ],
)
def test_loader_is_as_strict_as_the_api_server(
    tmp_path: Path, file: str, old: str, new: str, expected: str
) -> None:
    path = _edited_quickstart(tmp_path, old, new, file)
    result = CliRunner().invoke(cli, ["render", str(path)])
    assert result.exit_code == 1, result.output
    assert expected in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_loader_takes_an_integral_float_as_an_integer(tmp_path: Path) -> None:
    # JSON has one number type: the API server stores 2.0 for an integer field as 2.
    path = _edited_quickstart(tmp_path, "replicas: 2", "replicas: 2.0", "deployments.yaml")
    deployments = [o for o in load_paths([path]) if o["kind"] == "ModelDeployment"]
    assert deployments[0]["spec"]["replicas"] == 2.0
