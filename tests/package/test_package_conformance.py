"""The generated XRDs under the shared schema oracles: valid instances pass, broken ones fail.

Skipped when `<repo>/../shared/conformance` (or its requirements) is absent.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from modelplane.api.kinds import KINDS, kind_for
from modelplane.local import LoadError, load_paths

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CONFORMANCE = ROOT.parent / "shared" / "conformance"
FIXTURES = HERE / "fixtures"
INVALID = HERE / "invalid"

# file under invalid/ → (issue kind, path, message) the API server would answer with.
REJECTED = {
    "eks-one-zone.yaml": (
        "cel",
        "spec.network",
        "zones needs at least two availability zones unless existing is set",
    ),
    "both-serving-forms.yaml": (
        "cel",
        "spec",
        "set either nodeSelector and workers (unified) or prefill and decode "
        "(disaggregated), not both",
    ),
    "dynamo-without-framework.yaml": (
        "cel",
        "spec",
        "framework is set exactly when backend is Dynamo",
    ),
    "framework-without-dynamo.yaml": (
        "cel",
        "spec",
        "framework is set exactly when backend is Dynamo",
    ),
    "prefill-without-decode.yaml": (
        "cel",
        "spec",
        "set either nodeSelector and workers (unified) or prefill and decode "
        "(disaggregated), not both",
    ),
    "attribute-two-types.yaml": (
        "cel",
        "spec.devices.0.attributes.architecture",
        "exactly one of string, int, bool or version must be set",
    ),
    "dra-without-class.yaml": (
        "cel",
        "spec.devices.0",
        "deviceClassName is required when claim is DRA",
    ),
    "duplicate-device-names.yaml": ("cel", "spec", "device names must be unique"),
    "duplicate-pool-names.yaml": ("cel", "spec", "pool names must be unique"),
    "max-below-count.yaml": ("cel", "spec.pools.0", "maxNodeCount must be at least nodeCount"),
    "existing-without-block.yaml": ("cel", "spec", "existing is required when source is Existing"),
    "no-engine-container.yaml": (
        "cel",
        "spec.workers",
        "template.spec.containers must have exactly one container named engine",
    ),
    "topology-not-divisible.yaml": (
        "cel",
        "spec.workers.topology",
        "pipeline × data must be a multiple of dataLocal",
    ),
    "selector-in-values.yaml": (
        "cel",
        "spec.clusterSelector.matchExpressions.0",
        "values must be non-empty for In and NotIn",
    ),
    "selector-exists-values.yaml": (
        "cel",
        "spec.clusterSelector.matchExpressions.0",
        "values must be non-empty for In and NotIn and empty for Exists",
    ),
    "toleration-noop-key.yaml": (
        "cel",
        "spec.tolerations.0",
        "operator must be Exists when key is empty",
    ),
    "toleration-exists-value.yaml": (
        "cel",
        "spec.tolerations.0",
        "value must be empty when operator is Exists",
    ),
    "name-too-long.yaml": (
        "cel",
        "",
        "metadata.name must be at most 63 characters",
    ),
    "gateway-not-default.yaml": (
        "cel",
        "",
        "metadata.name must be 'default': there is one InferenceGateway per control plane",
    ),
    "https-without-certificate.yaml": (
        "cel",
        "spec.listeners.0",
        "certificateSecretRef is required when protocol is HTTPS",
    ),
    "endpoint-ftp-url.yaml": ("cel", "spec", "url must start with http:// or https://"),
    "service-all-weights-zero.yaml": (
        "cel",
        "spec",
        "endpoints: at least one group needs a weight above 0",
    ),
    "replicas-wrong-type.yaml": ("schema", "spec.replicas", "'three' is not of type 'integer'"),
    "unknown-field.yaml": ("unknown-field", "spec.devices.0", "'cuont' was unexpected"),
    "cache-two-sources.yaml": (
        "cel",
        "spec.artifact.source",
        "exactly one of huggingFace, s3, http, inline, oci or configMap must be set",
    ),
    "cache-existing-without-claim.yaml": (
        "cel",
        "spec.storage",
        "claimName is required when backend is ExistingPVC",
    ),
    "cache-inline-dotdot.yaml": (
        "cel",
        "spec.artifact.source.inline",
        "fileName must name a file, not . or ..",
    ),
    "cache-shell-repo.yaml": (
        "schema",
        "spec.artifact.source.huggingFace.repo",
        "does not match",
    ),
}


def load_documents(path: Path) -> list[dict[str, Any]]:
    """Every non-empty YAML document of a file."""
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _pydantic_errors(doc: dict[str, Any]) -> str | None:
    """Validate a document's spec with its pydantic model; None when it is valid."""
    kind = kind_for(doc["apiVersion"], doc["kind"])
    assert kind is not None, doc["kind"]
    # Crossplane injects spec.crossplane into every XR; the types leave it out.
    spec = {k: v for k, v in doc["spec"].items() if k != "crossplane"}
    try:
        kind.spec.model_validate(spec)
    except ValidationError as e:
        return str(e)
    return None


def test_invalid_directory_holds_exactly_the_table() -> None:
    assert {p.name for p in INVALID.glob("*.yaml")} == set(REJECTED)


def test_fixtures_cover_every_kind() -> None:
    kinds = {d["kind"] for p in FIXTURES.glob("*.yaml") for d in load_documents(p)}
    assert kinds == {k.kind for k in KINDS}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.yaml")), ids=lambda p: p.name)
def test_valid_fixtures_pass_the_xrds_and_pydantic(oracle: Any, path: Path) -> None:
    docs = load_documents(path)
    assert docs, path
    for doc in docs:
        name = doc["metadata"]["name"]
        assert [str(i) for i in oracle.validate(doc)] == [], name
        assert _pydantic_errors(doc) is None, name


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_invalid_instances_are_rejected_by_the_xrds_and_pydantic(oracle: Any, name: str) -> None:
    (doc,) = load_documents(INVALID / name)
    issues = oracle.validate(doc)
    want_kind, want_path, want_message = REJECTED[name]
    assert [(i.kind, i.path) for i in issues] == [(want_kind, want_path)], [str(i) for i in issues]
    assert want_message in issues[0].message
    if want_path == "":
        # Metadata rules live outside the spec types: render's loader enforces them.
        with pytest.raises(LoadError, match=want_message):
            load_paths([str(INVALID / name)])
    else:
        # The same input is refused by the types the composers use.
        assert _pydantic_errors(doc) is not None


def test_checker_cli_accepts_the_package_apis_and_fixtures() -> None:
    if not (CONFORMANCE / "check.py").is_file():
        pytest.skip("schema oracles not found at ../shared/conformance")
    # Both package roots: the XRDs, Compositions and activation policy, and the
    # meta.pkg.crossplane.io metadata of the Configuration and the Function.
    roots = ["package/configuration", "package/function"]
    args = ["--quiet", "--xrd", "package/configuration/apis", *roots, str(FIXTURES)]
    proc = subprocess.run(
        [sys.executable, str(CONFORMANCE / "check.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if "ModuleNotFoundError" in proc.stderr:
        pytest.skip("conformance requirements not installed")
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert last.endswith(" documents, 0 invalid")
    # Every kind's XRD and Composition + 2 package metadata + 1 activation policy
    # + the hand-written instances.
    fixtures = sum(len(load_documents(p)) for p in FIXTURES.glob("*.yaml"))
    assert last == f"{2 * len(KINDS) + 2 + 1 + fixtures} documents, 0 invalid"
