"""The XR fuzz: one malformed object in a real request never withdraws its siblings.

The requests are real: every RunFunctionRequest the embedded control plane
sends while it renders each folder of `examples/` (captured through its
`runner` hook, deduplicated). Each mutated request takes one of them, picks
one object in it — the observed XR, one observed composed resource or one
required resource — and breaks its `metadata`, `status` or
`status.conditions` in one place (a type swap, a null, a wrong shape). The
composer then runs on the unmutated and on the mutated request, and:

- an **escape** is an exception out of the composer, or a result that cannot
  be encoded as a response (the servicer would turn either into a fatal
  result: it keeps everything, but it is a bug);
- a **withdrawal** is a composed resource that exists (the request observes
  it), that the unmutated answer desires and the mutated answer does not,
  when it does not derive from the mutated object (its key or its name holds
  the object's name): Crossplane would delete a sibling of the malformed
  object. One the request does not observe yet is counted apart as **not
  created** (a hold that keeps what exists and creates nothing new, e.g. while
  a cluster's provider config cannot be read): nothing is deleted;
- a **sibling fatal** is a fatal answer to a request whose malformed object
  is not the XR (nothing is withdrawn, but nothing is updated either);
- an **unnamed fatal** is a fatal answer to a malformed XR whose message does
  not name the field.

Pure and seeded: the same seed and count give the same cases.
"""

from __future__ import annotations

import contextlib
import copy
import random
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import crossplane.function.proto.v1.run_function_pb2 as fnv1

from modelplane.compose import registry
from modelplane.compose.common import identity_problem
from modelplane.compose.types import ComposeInput, ComposeResult
from modelplane.crossplane import FunctionRunner
from modelplane.crossplane.convert import to_input, to_response
from modelplane.local import ControlPlane, NotConvergedError, load_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

Obj = dict[str, Any]


# ── The requests: what the embedded control plane sends ─────────────────────


class CapturingRunner(FunctionRunner):
    """The function, recording every request it answers (serialized, deduplicated)."""

    def __init__(self) -> None:
        super().__init__(log_errors=False)
        self.requests: dict[bytes, None] = {}

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, context: Any
    ) -> fnv1.RunFunctionResponse:
        """Record the request, then answer it as the function does."""
        self.requests.setdefault(req.SerializeToString(deterministic=True), None)
        return self.run(req)


def scenarios() -> list[Path]:
    """Every folder of `examples/` that holds manifests (each renders on its own)."""
    return sorted({p.parent for p in EXAMPLES.rglob("*.yaml")})


def capture(folders: list[Path]) -> list[ComposeInput]:
    """The distinct requests a render of each folder sends, as plain composer inputs."""
    runner = CapturingRunner()
    for folder in folders:
        # A render that does not converge sent requests as real on the way.
        with contextlib.suppress(NotConvergedError):
            ControlPlane(load_paths([folder]), runner=runner).run()
    out = []
    for data in runner.requests:
        req = fnv1.RunFunctionRequest.FromString(data)
        out.append(to_input(req, None))  # plain, mutable dicts
    return out


# ── Mutations ───────────────────────────────────────────────────────────────

WEIRD: tuple[Any, ...] = (None, "", "x", 0, -1, 1.5, True, [], ["x"], [None], {}, {"x": 1})
CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")
METADATA_FIELDS = ("name", "namespace", "labels", "annotations", "creationTimestamp", "uid")


def _swap(rng: random.Random, current: Any) -> Any:
    """A value of another type than `current` (or null)."""
    choices = [w for w in WEIRD if type(w) is not type(current) or w is None]
    return copy.deepcopy(rng.choice(choices))


def _map(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _mutate_metadata(rng: random.Random, obj: Obj) -> str | None:
    meta = _map(obj.get("metadata"))
    roll = rng.random()
    if meta is None or roll < 0.15:
        obj["metadata"] = _swap(rng, obj.get("metadata"))
        return "metadata"
    labels = _map(meta.get("labels"))
    if labels and roll < 0.35:
        key = rng.choice(sorted(labels))
        labels[key] = _swap(rng, labels[key])
        return f"metadata.labels[{key}]"
    name = rng.choice(METADATA_FIELDS)
    meta[name] = _swap(rng, meta.get(name))
    return f"metadata.{name}"


def _mutate_conditions(rng: random.Random, obj: Obj) -> str | None:
    status = _map(obj.get("status"))
    if status is None:
        return None
    conditions = status.get("conditions")
    roll = rng.random()
    if not isinstance(conditions, list) or not conditions or roll < 0.2:
        if roll < 0.1 and isinstance(conditions, list):
            conditions.append(_swap(rng, {}))
            return "status.conditions[+]"
        status["conditions"] = _swap(rng, conditions)
        return "status.conditions"
    i = rng.randrange(len(conditions))
    entry = conditions[i]
    if not isinstance(entry, dict) or roll < 0.4:
        conditions[i] = _swap(rng, entry)
        return f"status.conditions[{i}]"
    name = rng.choice(CONDITION_FIELDS)
    entry[name] = _swap(rng, entry.get(name))
    return f"status.conditions[{i}].{name}"


def _children(value: Any) -> list[tuple[str, Any, Any]]:
    """(path step, container, key) of each child of a dict or list."""
    if isinstance(value, dict):
        return [(f".{k}", value, k) for k in value]
    if isinstance(value, list):
        return [(f"[{i}]", value, i) for i in range(len(value))]
    return []


def _mutate_status(rng: random.Random, obj: Obj) -> str | None:
    status = obj.get("status")
    if not isinstance(status, dict) or not status or rng.random() < 0.1:
        obj["status"] = _swap(rng, status)
        return "status"
    path, value = "status", status
    parent: tuple[Any, Any] | None = None
    for _ in range(rng.randint(1, 5)):
        children = _children(value)
        if not children:
            break
        step, container, key = rng.choice(children)
        path, parent, value = path + step, (container, key), container[key]
        if rng.random() < 0.35:
            break
    if parent is None:
        return None
    container, key = parent
    container[key] = _swap(rng, value)
    return path


MUTATIONS: tuple[Callable[[random.Random, Obj], str | None], ...] = (
    _mutate_metadata,
    _mutate_conditions,
    _mutate_status,
)


# ── Targets ─────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Target:
    """One object of a request: the XR, an observed composed resource or a required one."""

    where: str  # "xr", "observed" or "required"
    key: str = ""  # the observed key or the requirement name
    index: int = 0  # the position among the required objects

    def get(self, inp: ComposeInput) -> Obj:
        """The targeted object of `inp`."""
        if self.where == "xr":
            return inp.composite
        if self.where == "observed":
            return dict(inp.observed[self.key])
        return inp.required[self.key][self.index]

    def replaced(self, inp: ComposeInput, obj: Obj) -> ComposeInput:
        """`inp` with the targeted object replaced by `obj` (the rest shared)."""
        if self.where == "xr":
            return ComposeInput(composite=obj, observed=inp.observed, required=inp.required)
        if self.where == "observed":
            observed = {**inp.observed, self.key: obj}
            return ComposeInput(composite=inp.composite, observed=observed, required=inp.required)
        objs = list(inp.required[self.key])
        objs[self.index] = obj
        required = {**inp.required, self.key: objs}
        return ComposeInput(composite=inp.composite, observed=inp.observed, required=required)

    def describe(self) -> str:
        """How a finding names the object."""
        if self.where == "xr":
            return "the XR"
        if self.where == "observed":
            return f"observed[{self.key}]"
        return f"required[{self.key}][{self.index}]"


def targets(inp: ComposeInput) -> list[Target]:
    """Every object of a request a mutation may break."""
    out = [Target("xr")]
    out += [Target("observed", k) for k in sorted(inp.observed)]
    out += [
        Target("required", name, i)
        for name, objs in sorted(inp.required.items())
        for i in range(len(objs))
    ]
    return out


# ── Running and judging ─────────────────────────────────────────────────────


@dataclass
class Finding:
    """One case the fuzz counts against the composers."""

    what: str  # "escape", "withdrawal", "sibling-fatal", "unnamed-fatal"
    kind: str
    target: str
    mutation: str
    detail: str

    def line(self) -> str:
        """One line for the report."""
        return f"{self.what}: {self.kind} {self.target} {self.mutation}: {self.detail}"


@dataclass
class Tally:
    """What a fuzz run tried and found."""

    mutated: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_target: Counter[str] = field(default_factory=Counter)
    fatal: Counter[str] = field(default_factory=Counter)
    not_created: int = 0  # requests whose answer leaves out a sibling not created yet
    findings: list[Finding] = field(default_factory=list)

    def count(self, what: str) -> int:
        """How many findings of one kind."""
        return sum(1 for f in self.findings if f.what == what)

    def summary(self) -> list[str]:
        """The report: counts, then each finding (at most 40)."""
        lines = [
            f"XR fuzz: {self.mutated} mutated requests; "
            f"{self.count('withdrawal')} sibling withdrawals, {self.count('escape')} escapes, "
            f"{self.count('sibling-fatal')} fatal answers to a malformed sibling, "
            f"{self.count('unnamed-fatal')} fatal answers to a malformed XR not naming the field",
            "  by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items())),
            "  by object: " + ", ".join(f"{k} {n}" for k, n in sorted(self.by_target.items())),
            f"  answers that leave out a sibling not created yet (nothing deleted): "
            f"{self.not_created}",
            "  fatal answers (kept everything): "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.fatal.items())) or "none"),
        ]
        lines += [f"  {f.line()}" for f in self.findings[:40]]
        return lines


def answer(inp: ComposeInput) -> tuple[ComposeResult | None, str | None]:
    """The composer's result for `inp`, or the escape: an exception, or a result not JSON.

    As the servicer dispatches (`FunctionRunner.compose`), without its net: a
    composite whose metadata does not read is a fatal result before any composer.
    """
    kind = str(inp.composite.get("kind"))
    problem = identity_problem(inp.composite)
    if problem is not None:
        return ComposeResult(fatal=f"the observed {kind}'s {problem}"), None
    composer = registry.composer_for(str(inp.composite.get("apiVersion")), kind)
    assert composer is not None, kind
    try:
        result = composer(inp)
        to_response(fnv1.RunFunctionRequest(), result)
    except Exception as exc:  # the finding itself
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return None, f"{type(exc).__name__}: {exc} at {Path(where.filename).name}:{where.lineno}"
    return result, None


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def derived(base: ComposeResult, target: Target, original: Obj) -> set[str]:
    """Keys of `base`'s desired state that derive from the targeted object."""
    out = {target.key} if target.where == "observed" else set()
    name = _name(original)
    if target.where == "observed":
        # A composed resource is named by its composer: what holds its name derives from it.
        name = _name(original) or target.key
    if not name:
        return out
    for key, desired in base.desired.items():
        if name in key or name in _name(desired.resource):
            out.add(key)
    return out


def judge(
    tally: Tally,
    inp: ComposeInput,
    base: ComposeResult,
    target: Target,
    mutation: str,
    mutated: ComposeInput,
) -> None:
    """Run the mutated request and record what it finds."""
    kind = str(inp.composite.get("kind"))
    result, escape = answer(mutated)
    where = target.describe()
    if escape is not None:
        tally.findings.append(Finding("escape", kind, where, mutation, escape))
        return
    assert result is not None
    if result.fatal is not None:
        tally.fatal[f"{kind} {target.where}"] += 1
        if target.where != "xr":
            tally.findings.append(Finding("sibling-fatal", kind, where, mutation, result.fatal))
        elif mutation.startswith("metadata") and "metadata" not in result.fatal:
            tally.findings.append(Finding("unnamed-fatal", kind, where, mutation, result.fatal))
        return
    if target.where == "xr" or base.fatal is not None:
        return
    gone = set(base.desired) - set(result.desired) - derived(base, target, target.get(inp))
    if gone - set(inp.observed):
        tally.not_created += 1
    withdrawn = gone & set(inp.observed)
    if withdrawn:
        names = sorted(withdrawn)
        detail = "withdrew " + ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
        tally.findings.append(Finding("withdrawal", kind, where, mutation, detail))


def cases(
    inputs: list[ComposeInput], count: int, seed: int
) -> Iterator[tuple[int, Target, str, ComposeInput]]:
    """`count` mutated requests, spread evenly over the kinds of `inputs`."""
    rng = random.Random(seed)
    by_kind: dict[str, list[int]] = {}
    for i, inp in enumerate(inputs):
        by_kind.setdefault(str(inp.composite.get("kind")), []).append(i)
    kinds = sorted(by_kind)
    made = 0
    while made < count:
        i = rng.choice(by_kind[kinds[made % len(kinds)]])
        inp = inputs[i]
        target = rng.choice(targets(inp))
        obj = copy.deepcopy(target.get(inp))
        before = copy.deepcopy(obj)
        mutation = rng.choice(MUTATIONS)(rng, obj)
        if mutation is None or obj == before:
            continue  # nothing broken: not a case
        made += 1
        yield i, target, mutation, target.replaced(inp, obj)


def fuzz(inputs: list[ComposeInput], count: int, seed: int) -> Tally:
    """Run `count` seeded mutated requests over `inputs` and tally what they find."""
    tally = Tally()
    bases: dict[int, ComposeResult | None] = {}
    for i, target, mutation, mutated in cases(inputs, count, seed):
        inp = inputs[i]
        if i not in bases:
            bases[i], escape = answer(inp)
            assert escape is None, f"the unmutated request escapes: {escape}"
        base = bases[i]
        assert base is not None
        tally.mutated += 1
        tally.by_kind[str(inp.composite.get("kind"))] += 1
        tally.by_target[target.where] += 1
        judge(tally, inp, base, target, mutation, mutated)
    return tally
