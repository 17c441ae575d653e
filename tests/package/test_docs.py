"""The install guide's manifests are valid: every YAML block of docs/install.md goes
through the schema oracles (Crossplane package kinds, RBAC), its versions match
the package's, and its list of XRDs is the package's (regenerate the block with
`python tests/package/test_docs.py`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from modelplane.api.xrd import (
    CROSSPLANE_VERSION,
    DEFAULT_FUNCTION_PACKAGE,
    FUNCTION_VERSION,
    MANAGED_RESOURCES,
    PROVIDER_HELM_VERSION,
    PROVIDER_KUBERNETES_VERSION,
    installed_name,
    package_files,
    upjet_packages,
)
from modelplane.dev.fleet import PROVIDER_KUBERNETES_FLAGS

ROOT = Path(__file__).resolve().parent.parent.parent
INSTALL = ROOT / "docs" / "install.md"
# Kinds the oracles hold no schema for (Crossplane's DeploymentRuntimeConfig CRD is
# not among them); these blocks are checked for shape below instead.
NO_SCHEMA = {("pkg.crossplane.io/v1beta1", "DeploymentRuntimeConfig")}


def _yaml_blocks() -> list[dict[str, Any]]:
    text = INSTALL.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    # Kubernetes objects only: a Helm values block (Crossplane's chart args) is not one.
    return [d for block in blocks for d in yaml.safe_load_all(block) if d and "apiVersion" in d]


def test_install_guide_manifests_pass_the_schema_oracles(oracle: Any) -> None:
    docs = _yaml_blocks()
    assert len(docs) >= 4
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in NO_SCHEMA:
            continue
        assert [str(i) for i in oracle.validate(doc)] == [], doc["kind"]


def test_runtime_config_targets_the_package_runtime_container() -> None:
    drcs = {
        d["metadata"]["name"]: d for d in _yaml_blocks() if d["kind"] == "DeploymentRuntimeConfig"
    }
    assert set(drcs) == {"function-modelplane", "provider-kubernetes-watches"}

    def container(name: str) -> dict[str, Any]:
        spec = drcs[name]["spec"]["deploymentTemplate"]["spec"]["template"]["spec"]
        (only,) = spec["containers"]
        assert only["name"] == "package-runtime"
        return dict(only)

    # The function SDK's standard environment variables for message size (MB).
    assert {e["name"] for e in container("function-modelplane")["env"]} == {
        "MAX_RECV_MESSAGE_SIZE",
        "MAX_SEND_MESSAGE_SIZE",
    }
    # The flag without which provider-kubernetes ignores the Objects' spec.watch.
    assert container("provider-kubernetes-watches")["args"] == ["--enable-watches"]
    # The local fleet runs the provider as users are told to, its --poll included:
    # a shorter poll there once hid that the inventory was not watched.
    assert list(PROVIDER_KUBERNETES_FLAGS) == container("provider-kubernetes-watches")["args"]


def test_install_guide_states_the_package_constraints_and_names() -> None:
    text = INSTALL.read_text(encoding="utf-8")
    for constraint in (
        CROSSPLANE_VERSION,
        FUNCTION_VERSION,
        PROVIDER_KUBERNETES_VERSION,
        PROVIDER_HELM_VERSION,
    ):
        assert f"`{constraint}`" in text
    # Every upjet provider package is in the table with the package's constraint.
    packages = upjet_packages()
    assert packages
    for package, version in packages:
        assert f"| `{package}` | `{version}` |" in text, package
    # The guide lists exactly what the activation policy activates.
    listed = set(re.findall(r"`([a-z]+\.[a-z0-9.]+\.(?:io|ai))`", text))
    assert {m for m in listed if m.count(".") >= 3 and "/" not in m} >= set(MANAGED_RESOURCES)
    (function,) = [d for d in _yaml_blocks() if d["kind"] == "Function"]
    repository = function["spec"]["package"].rsplit(":", 1)[0]
    # A Function installed by hand must carry the name the Compositions call,
    # which `package build --function-package <repository>` writes.
    assert function["metadata"]["name"] == installed_name(repository)
    assert f"`{installed_name(repository)}` for `{repository}`" in text


XRDS_BEGIN = (
    "<!-- BEGIN XRDs: generated from the package by `python tests/package/test_docs.py` -->"
)
XRDS_END = "<!-- END XRDs -->"


def xrds_block() -> str:
    """install.md's list of the package's XRDs, read from the definitions the package holds."""
    files = package_files(DEFAULT_FUNCTION_PACKAGE)
    xrds = [
        yaml.safe_load(text)
        for path, text in sorted(files.items())
        if path.startswith("configuration/apis/") and path.endswith("/definition.yaml")
    ]
    rows = [
        "| `{name}` | {kind} | {scope} | {short} | {what} |".format(
            name=x["metadata"]["name"],
            kind=x["spec"]["names"]["kind"],
            scope=x["spec"]["scope"],
            short=", ".join(f"`{n}`" for n in x["spec"]["names"].get("shortNames", [])),
            what=x["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"],
        )
        for x in xrds
    ]
    return "\n".join(
        [
            XRDS_BEGIN,
            f"The package installs {len(xrds)} XRDs, one per Modelplane kind "
            "(`package/configuration/apis/<plural>/`, each with its Composition):",
            "",
            "| XRD | kind | scope | short names | what it is |",
            "|---|---|---|---|---|",
            *rows,
            XRDS_END,
        ]
    )


def test_install_guide_lists_exactly_the_package_xrds() -> None:
    text = INSTALL.read_text(encoding="utf-8")
    start, end = text.index(XRDS_BEGIN), text.index(XRDS_END) + len(XRDS_END)
    assert text[start:end] == xrds_block(), "regenerate with `python tests/package/test_docs.py`"
    # Independent of the generator: one row per definition the package directory holds.
    on_disk = sorted(
        p.parent.name for p in (ROOT / "package/configuration/apis").glob("*/definition.yaml")
    )
    listed = sorted(re.findall(r"^\| `([a-z]+)\.", text[start:end], flags=re.M))
    assert listed == on_disk
    assert "fleetquotas" in listed


if __name__ == "__main__":
    print(xrds_block())


def test_the_kubernetes_version_of_provisioned_clusters_is_documented_as_composed() -> None:
    """Each cloud's default is the one constant the composers use, and no description
    leaves the version to a cloud's default (which may predate DRA v1)."""
    from modelplane.api import constants as c
    from modelplane.api.clouds import CLOUDS
    from modelplane.api.inference_cluster import InferenceClusterSpec

    text = INSTALL.read_text(encoding="utf-8")
    section = text[text.index("**Kubernetes version.**") : text.index("## What each workload")]
    assert f"it runs\n`{c.DEFAULT_KUBERNETES_VERSION}`" in section
    for field in (
        "`version`",
        "`minMasterVersion`",
        "`kubernetesVersion`",
        "`orchestratorVersion`",
    ):
        assert field in section
    for cloud in CLOUDS:
        source = InferenceClusterSpec.model_fields[cloud.block].annotation
        block: Any = getattr(source, "__args__", (source,))[0]  # the block of `X | None`
        described = block.model_fields["kubernetes_version"].description or ""
        assert "default if absent" not in described, cloud.name
        written = block.model_validate(_minimal_source(cloud.name)).composite_spec("c", [])
        assert written["kubernetesVersion"] == c.DEFAULT_KUBERNETES_VERSION, cloud.name


def _minimal_source(cloud: str) -> dict[str, Any]:
    return {
        "EKS": {"region": "us-east-1"},
        "GKE": {"project": "p", "region": "europe-west4"},
        "AKS": {"location": "centralus"},
    }[cloud]
