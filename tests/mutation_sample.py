"""A seeded mutation sample of chosen modules (`make mutation-sample`).

For each module of `SAMPLE` (or those named on the command line), a scratch
project under `build/mutation-sample/<module>/` links the package, the tests
and the files they read, and carries a `[tool.mutmut]` that mutates that one
module and runs only the tests named beside it. mutmut generates every mutant
of the module; `random.Random(SEED)` picks `PER_MODULE` of their sorted names;
`mutmut run` tries those. The summary counts each module's mutants killed
(a timeout counts as killed), survived and judged equivalent (`EQUIVALENT`,
each explained in tests/README.md), and the share killed of the
non-equivalent ones.

Run from the repository root with the `mutation` extra installed; each module
reuses its scratch results until `build/mutation-sample/` is deleted.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "mutation-sample"
SEED = 47
PER_MODULE = 30
# What the scratch project links: the package, the tests, and what tests read.
LINKED = ("modelplane", "tests", "examples", "package")

# Module → the tests that judge its mutants (the narrower, the faster).
SAMPLE: dict[str, tuple[str, ...]] = {
    "modelplane/compose/deployments/rollout.py": (
        "tests/compose/test_rollout_decisions.py",
        "tests/local/test_rollout_properties.py",
    ),
    "modelplane/compose/deployments/autoscaling.py": (
        "tests/compose/test_autoscaling.py",
        "tests/compose/test_autoscaling_removals.py",
    ),
    "modelplane/scheduling/quota.py": ("tests/scheduling",),
    "modelplane/scheduling/preempt.py": ("tests/scheduling",),
    "modelplane/scheduling/cost.py": ("tests/scheduling",),
    "modelplane/scheduling/rules/spot.py": ("tests/scheduling",),
    # The LowestCost score and the preemption filter moved here out of cost.py and preempt.py.
    "modelplane/scheduling/rules/lowest_cost.py": ("tests/scheduling",),
    "modelplane/scheduling/rules/preemption.py": ("tests/scheduling",),
    "modelplane/agent/engines.py": ("tests/agent",),
}

# Sampled mutants that cannot change a result (why: tests/README.md). Names hold
# mutmut's class separator "ǁ" (U+01C1).
EQUIVALENT: frozenset[str] = frozenset(
    {
        "modelplane.agent.engines.x__count_request_series__mutmut_8",
        "modelplane.agent.engines.x_scrape__mutmut_38",
        "modelplane.compose.deployments.autoscaling.x_message__mutmut_39",
        "modelplane.scheduling.cost.x__cluster_cost__mutmut_9",
        "modelplane.scheduling.cost.x__cluster_cost__mutmut_10",
        "modelplane.scheduling.cost.x_combo_price__mutmut_3",
        "modelplane.scheduling.preempt.x__others_charges__mutmut_18",
        "modelplane.scheduling.quota.x_refuse__mutmut_1",
        "modelplane.scheduling.quota.x_use__mutmut_30",
        "modelplane.scheduling.rules.lowest_cost.x\u01c1LowestCost\u01c1score__mutmut_3",
        "modelplane.scheduling.rules.spot.x\u01c1SpotFilter\u01c1refusals__mutmut_4",
        "modelplane.scheduling.rules.spot.x\u01c1SpotFilter\u01c1refusals__mutmut_10",
        "modelplane.scheduling.rules.spot.x\u01c1SpotFilter\u01c1refusals__mutmut_11",
    }
)


@dataclass(frozen=True)
class Tally:
    """One module's sample: mutant names by outcome."""

    module: str
    sampled: tuple[str, ...]
    killed: tuple[str, ...]
    equivalent: tuple[str, ...]
    survived: tuple[str, ...]

    def line(self) -> str:
        """The module's row of the summary table."""
        judged = len(self.sampled) - len(self.equivalent)
        share = f"{100 * len(self.killed) / judged:.1f}%" if judged else "-"
        return (
            f"| `{self.module}` | {len(self.sampled)} | {len(self.killed)} | "
            f"{len(self.equivalent)} | {len(self.survived)} | {share} |"
        )


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def _scratch(module: str, tests: tuple[str, ...]) -> Path:
    """The module's scratch project: links to the tree, its own mutmut settings."""
    where = WORK / Path(module).stem
    where.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        link = where / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)
    pytest_opts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    options = pytest_opts["ini_options"]
    text = [
        "[tool.pytest.ini_options]",
        f"testpaths = {_toml_list(options['testpaths'])}",
        f"addopts = {json.dumps(options['addopts'])}",
        f"markers = {_toml_list(options['markers'])}",
        "",
        "[tool.mutmut]",
        'source_paths = ["modelplane/"]',
        f"only_mutate = {_toml_list([module])}",
        'also_copy = ["examples/", "package/"]',
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-x"]',
        f"pytest_add_cli_args_test_selection = {_toml_list(list(tests))}",
        "",
    ]
    (where / "pyproject.toml").write_text("\n".join(text))
    return where


# Generation only: what `mutmut run` does before it runs any test.
_GENERATE = """
from mutmut.__main__ import (
    copy_also_copy_files, copy_src_dir, create_mutants, set_mutant_under_test, setup_source_paths,
)
set_mutant_under_test("mutant_generation")
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(1)
"""


def _mutmut(where: Path, *args: str) -> str:
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["nice", "-n", "19", str(bin_dir / "mutmut"), *args],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"mutmut {args[0]} failed in {where}")
    return done.stdout


def _statuses(where: Path) -> dict[str, str]:
    """Every mutant of the scratch project and its status, from `mutmut results`."""
    out: dict[str, str] = {}
    for line in _mutmut(where, "results", "--all", "true").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            out[name] = status
    return out


def run_module(module: str, tests: tuple[str, ...]) -> Tally:
    """Sample one module's mutants and try them; its tally."""
    where = _scratch(module, tests)
    subprocess.run(
        ["nice", "-n", "19", sys.executable, "-c", _GENERATE],
        cwd=where,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    names = sorted(_statuses(where))
    sample = sorted(random.Random(SEED).sample(names, min(PER_MODULE, len(names))))
    print(f"{module}: {len(sample)} of {len(names)} mutants", flush=True)
    _mutmut(where, "run", "--max-children", "1", *sample)
    status = _statuses(where)
    killed = tuple(n for n in sample if status.get(n) in ("killed", "timeout"))
    equivalent = tuple(n for n in sample if n in EQUIVALENT and n not in killed)
    survived = tuple(n for n in sample if n not in killed and n not in equivalent)
    return Tally(module, tuple(sample), killed, equivalent, survived)


def main(argv: list[str]) -> int:
    """Sample the modules named in `argv` (default: every module of `SAMPLE`)."""
    chosen = argv or list(SAMPLE)
    unknown = [m for m in chosen if m not in SAMPLE]
    if unknown:
        print(f"not in the sample table: {', '.join(unknown)}", file=sys.stderr)
        return 2
    tallies = [run_module(m, SAMPLE[m]) for m in chosen]
    print("| module | sampled | killed | equivalent | survived | killed of non-equivalent |")
    print("|---|---|---|---|---|---|")
    for t in tallies:
        print(t.line())
    for t in tallies:
        for name in t.survived:
            print(f"survived: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
