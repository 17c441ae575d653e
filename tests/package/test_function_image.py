"""Images follow the package: `--function-package REF` names what every program of ours runs.

The package built with a custom REF carries the image in each Composition's
step input; rendering with that input (as Crossplane passes it), every Job and
Deployment on a workload cluster that runs `modelplane` names `REF:v<version>`,
and nothing names the default repository. A cluster's
`spec.servingStack.modelplaneImage` overrides it for that cluster only.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1
import pytest
import yaml

from modelplane import __version__
from modelplane.api import constants as c
from modelplane.api.xrd import package_files
from modelplane.crossplane.convert import to_input
from modelplane.local import ControlPlane, load_paths

ROOT = Path(__file__).resolve().parents[2]
REF = "registry.example.com/acme/function-modelplane"
IMAGE = f"{REF}:v{__version__}"
# A scenario with a hydrated cache (its Job) and clusters (their agents).
SCENARIOS = [ROOT / "examples" / "caches" / "huggingface", ROOT / "examples" / "quickstart"]


def _step_inputs(ref: str) -> list[dict[str, Any]]:
    out = []
    for path, text in package_files(ref).items():
        if path.endswith("composition.yaml"):
            (step,) = yaml.safe_load(text)["spec"]["pipeline"]
            out.append(step["input"])
    return out


def _ours(store_objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, image) of every wrapped Job and Deployment whose container runs `modelplane`."""
    found = []
    for obj in store_objects:
        if obj.get("kind") != "Object":
            continue
        manifest = obj["spec"]["forProvider"]["manifest"]
        if manifest.get("kind") not in ("Job", "Deployment"):
            continue
        for container in manifest["spec"]["template"]["spec"]["containers"]:
            if (container.get("command") or [""])[0] == "modelplane":
                found.append((manifest["kind"], container["image"]))
    return found


def test_every_composition_passes_the_image_of_its_package() -> None:
    inputs = _step_inputs(REF)
    assert inputs
    assert all(
        i == {"apiVersion": "fn.modelplane.ai/v1alpha1", "kind": "Input", "image": IMAGE}
        for i in inputs
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_a_custom_ref_is_the_image_of_every_job_and_deployment_we_run(scenario: Path) -> None:
    (step_input, *_) = _step_inputs(REF)
    result = ControlPlane(load_paths([scenario]), function_input=step_input).run(50)
    objects = result.store.objects()
    ours = _ours(objects)
    assert ours, "no Job or Deployment of ours rendered: nothing checked"
    assert {image for _, image in ours} == {IMAGE}
    assert c.FUNCTION_PACKAGE not in yaml.safe_dump_all(objects)


HERE = "eu-west-h100"


def test_a_clusters_modelplane_image_overrides_it_there_only(tmp_path: Path) -> None:
    mirror = "mirror.internal:5000/modelplane/function-modelplane:v9"
    docs = []
    scenario = ROOT / "examples" / "caches" / "huggingface"
    for path in sorted(scenario.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "InferenceCluster" and doc["metadata"]["name"] == HERE:
                doc = copy.deepcopy(doc)
                doc["spec"].setdefault("servingStack", {})["modelplaneImage"] = mirror
            docs.append(doc)
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    (step_input, *_) = _step_inputs(REF)
    result = ControlPlane(load_paths([tmp_path]), function_input=step_input).run(50)
    by_cluster: dict[str, set[tuple[str, str]]] = {}
    for obj in result.store.objects():
        cluster = (obj.get("metadata", {}).get("labels") or {}).get(c.LABEL_CLUSTER)
        for found in _ours([obj]):
            by_cluster.setdefault(str(cluster), set()).add(found)
    assert by_cluster[HERE] == {("Job", mirror), ("Deployment", mirror)}
    others = {
        image for cluster, found in by_cluster.items() if cluster != HERE for _, image in found
    }
    assert others == {IMAGE}


def test_the_function_reads_the_image_from_its_request_input() -> None:
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.update({"apiVersion": "v1", "kind": "X"})
    assert to_input(req, None).image == c.FUNCTION_IMAGE
    req.input.update({"apiVersion": "fn.modelplane.ai/v1alpha1", "kind": "Input", "image": IMAGE})
    assert to_input(req, None).image == IMAGE
    # A malformed input never stops a reconcile: the release's own image.
    req.input.update({"image": "not an image; rm -rf /"})
    assert to_input(req, None).image == c.FUNCTION_IMAGE


def test_render_takes_the_same_ref() -> None:
    from click.testing import CliRunner

    from modelplane.cli.main import cli

    scenario = str(SCENARIOS[0])
    out = CliRunner().invoke(cli, ["render", scenario, "-o", "yaml", "--function-package", REF])
    assert out.exit_code == 0, out.output
    ours = _ours(list(yaml.safe_load_all(out.output)))
    assert ours and {image for _, image in ours} == {IMAGE}
