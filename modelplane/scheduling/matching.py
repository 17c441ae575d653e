"""Device matching: which devices of a pool each request of a role resolves to.

Pools of one InferenceClass publish identical device lists, so every pool is
interned into a `Shape` (looked up by the canonical keys of its devices, each
computed once per decoded object version) and a role is matched once per
shape, not once per pool or per replica. Selector outcomes are cached per
(expression, device key), so CEL runs once per distinct pair. Shapes that
differ only where no selector looks (a per-cluster driver version every
selector accepts) share one `RoleMatch`: it is built once per distinct
(structure, outcomes), so distinct device lists cost a dictionary lookup each.

The shape table and the evaluator are shared by every call of the process
(`SHARED`), and a cluster's interned pools are remembered on its reading
(`cluster_pools`), so a call over clusters already seen only matches roles
it has not matched before. That is safe because every cache here is keyed by
content that never changes under its key: a Shape by its class and its
devices' canonical text, a match by the requests' content, a selector
outcome by (expression, device text), a cluster's pools by the reading of
one object version; CEL and matching are pure, so a dropped entry only costs
its recomputation. Each table is bounded: the shape table keeps the most
recently used shapes, the evaluator starts afresh past a size. A process runs
one call at a time (the worker pool's processes, the embedded engine's loop),
so the tables need no lock.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pydantic import ValidationError

from modelplane.api.common import format_validation_error
from modelplane.api.frozen import ReadOnlyDict, memoized
from modelplane.api.inference_class import Device
from modelplane.api.memo import SWITCH, Memo, memos_on, on_clear
from modelplane.api.model_deployment import DeviceSelector
from modelplane.api.model_replica import ResolvedDeviceRequest
from modelplane.api.readers import ObservedInferenceCluster, read_devices
from modelplane.dra import cel
from modelplane.scheduling import words
from modelplane.scheduling.ledger import Vector
from modelplane.scheduling.types import DeviceVerdict, RequestVerdict, SelectorVerdict

# A request's selector verdicts on one device, up to the first that is not true.
DeviceOutcome = tuple[SelectorVerdict, ...]

# Outcomes are pure: re-preparing a device dropped from this window costs little.
_PREPARED_KEPT = 64
# Bounds of the process-wide tables (see the module's docstring): shapes kept,
# selector outcomes before the evaluator starts afresh, roles' matches per shape.
SHAPES_KEPT = 4096
OUTCOMES_KEPT = 200_000
_MATCHES_PER_SHAPE = 256
_TRUE: tuple[bool | None, str | None] = (True, None)
_FALSE: tuple[bool | None, str | None] = (False, None)

# Backtracking over requests × devices is tiny in practice (≤ 16 × 16); the cap
# only guards against adversarial inputs.
_SEARCH_BUDGET = 20_000
_MAX_ALTERNATIVES = 16


class Request(NamedTuple):
    """One device request of a role: name, count per node and CEL selectors.

    A tuple, so hashing a role's requests (`role_id`, for every pool the call
    matches) runs in C. Its `count` field hides `tuple.count`, which nothing
    calls on a request.
    """

    name: str
    count: int  # type: ignore[assignment]
    selectors: tuple[str, ...]


@dataclass(frozen=True)
class RoleDef:
    """One role of the deployment being scheduled."""

    role: str
    path: str  # wire path of its nodeSelector, e.g. spec.prefill.nodeSelector
    requests: tuple[Request, ...]
    nodes_per_worker: int
    workers: int

    @property
    def nodes(self) -> int:
        """Nodes one replica's role occupies."""
        return self.nodes_per_worker * self.workers


# A role's requests → a number never handed out twice in the process, so a
# shape remembers its matches under a small integer rather than hashing the
# requests again on every lookup. Forgetting the table only hands out new ids.
_ROLE_IDS: Memo[int] = Memo("scheduling.matching._ROLE_IDS")
_next_role_id = itertools.count()


def role_id(role: RoleDef) -> int:
    """The process-wide id of the role's requests: equal requests, equal ids."""
    return _ROLE_IDS.get(role.requests, lambda: next(_next_role_id))


@dataclass(frozen=True)
class RoleMatch:
    """The answer of matching one role against one shape (shared by its pools)."""

    matched: bool
    requests: tuple[RequestVerdict, ...]
    demand: Vector  # per node, per DRA device of the shape (the first assignment)
    resolved: tuple[ResolvedDeviceRequest, ...]
    message: str
    # Every demand vector an equivalent assignment makes (first: `demand`).
    demands: tuple[Vector, ...] = ()
    # The pool filter's reason when a pool whose devices match is refused for new
    # replicas (then `matched` is False and `message` says why).
    refused: str | None = None


# `json.dumps` with these options builds an encoder per call; one built once
# writes the same text (every distinct device of a fleet is keyed, each cold read).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def _canonical(device: Any) -> str:
    return _CANONICAL.encode(device)


def device_key(device: Any) -> str:
    """The canonical text of one published device: equal devices, equal keys.

    Remembered on a decoded (read-only) device, so a pool published once is
    keyed once however many calls see it.
    """
    return memoized(device, "device_key", _canonical)


@dataclass(frozen=True)
class Structure:
    """What a shape's devices are, apart from their attributes (shared by equal shapes).

    With the selector outcomes, all that matching a role depends on.
    """

    names: tuple[str, ...]
    counts: tuple[int, ...]
    dra: tuple[bool, ...]
    class_names: tuple[str, ...]
    slot: tuple[int, ...]  # device index -> position in the DRA vector (-1: synthetic)
    cap: Vector


def structure(devices: Sequence[Mapping[str, Any]]) -> Structure:
    """The structure of a published device list."""
    read = read_devices(devices)
    slot: list[int] = []
    cap: list[int] = []
    for d in read:
        slot.append(len(cap) if d.dra else -1)
        if d.dra:
            cap.append(d.count)
    return Structure(
        tuple(d.name for d in read),
        tuple(d.count for d in read),
        tuple(d.dra for d in read),
        tuple(d.device_class_name for d in read),
        tuple(slot),
        tuple(cap),
    )


@dataclass(eq=False, slots=True)
class Shape:
    """A published device list (one node of a pool), interned by value.

    Fleets publish thousands of shapes that differ only in attribute values;
    their structure (and its tuples) is one shared object, so a shape adds
    little for the garbage collector to walk.
    """

    devices: Sequence[Mapping[str, Any]]
    keys: tuple[str, ...] = ()  # device_key of each device
    structure: Structure | None = None
    matches: dict[int, RoleMatch] = field(default_factory=dict)  # by `role_id`
    observed: dict[tuple[tuple[str, int, tuple[str, ...]], ...], tuple[Vector, ...]] | None = None
    problem: str | None = None  # set by `unparsable`: "" when every device parses
    # Device memory per structure slot, in bytes: set by `fill.memory_taken` on
    # first use, so the fill reads the devices' capacities once per shape.
    slot_memory: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.devices):
            self.keys = tuple(device_key(d) for d in self.devices)
        if self.structure is None:
            self.structure = structure(self.devices)

    @property
    def _s(self) -> Structure:
        assert self.structure is not None
        return self.structure

    @property
    def names(self) -> tuple[str, ...]:
        """Each device's name."""
        return self._s.names

    @property
    def counts(self) -> tuple[int, ...]:
        """Each device's count per node."""
        return self._s.counts

    @property
    def dra(self) -> tuple[bool, ...]:
        """Whether each device is claimed through DRA (False: synthetic)."""
        return self._s.dra

    @property
    def class_names(self) -> tuple[str, ...]:
        """Each device's DeviceClass name."""
        return self._s.class_names

    @property
    def slot(self) -> tuple[int, ...]:
        """Device index -> position in the DRA vector (-1: synthetic)."""
        return self._s.slot

    @property
    def cap(self) -> Vector:
        """Per node, the count of each DRA device."""
        return self._s.cap


def unparsable(shape: Shape, ev: Evaluator) -> str | None:
    """The first device of a shape that does not parse, as "device: why" (None if all do).

    A device must both satisfy the InferenceClass device schema (what the API
    server would admit) and convert into the DRA CEL environment. Checked once
    per shape.
    """
    if shape.problem is None:
        shape.problem = next(
            (
                f"{shape.names[d]}: {why}"
                for d, why in enumerate(_device_problems(shape, ev))
                if why
            ),
            "",
        )
    return shape.problem or None


def _device_problems(shape: Shape, ev: Evaluator) -> Iterator[str | None]:
    for d, device in enumerate(shape.devices):
        try:
            Device.model_validate(device)
        except ValidationError as err:
            yield format_validation_error(err)
            continue
        yield ev.device_error(shape.keys[d], device)


class Shapes:
    """Interns device lists: equal lists share one Shape and thus one match per role.

    Keeps the `limit` most recently interned shapes: a dropped shape is built
    again when next seen (pools that still hold it keep it alive meanwhile).
    """

    def __init__(self, limit: int = SHAPES_KEPT) -> None:
        """An empty table keeping at most `limit` shapes."""
        self.limit = limit
        self._by_key: OrderedDict[tuple[str, tuple[str, ...]], Shape] = OrderedDict()
        self._last: dict[str, Shape] = {}
        self._structures: dict[Structure, Structure] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def intern(self, class_name: str, devices: Sequence[Mapping[str, Any]]) -> Shape:
        """The Shape equal to `devices` (created on first sight).

        Looked up by the devices' canonical keys in a hash table, not by
        scanning every shape of the class: fleets whose pools of one class
        publish different device lists would otherwise intern in quadratic
        time. The class's last shape is tried first, as pools of one class
        usually agree.
        """
        last = self._last.get(class_name)
        if last is not None and last.devices == devices:
            return last
        keys = tuple(device_key(d) for d in devices)
        shape = self._by_key.get((class_name, keys))
        if shape is None:
            found = structure(devices)
            found = self._structures.setdefault(found, found)
            shape = self._by_key[(class_name, keys)] = Shape(devices, keys, found)
            if len(self._by_key) > self.limit:
                self._by_key.popitem(last=False)
            if len(self._structures) > self.limit:
                self._structures.clear()
        else:
            self._by_key.move_to_end((class_name, keys))
        self._last[class_name] = shape
        return shape


class Evaluator:
    """Compiles selectors and evaluates them against devices, each pair once."""

    def __init__(self, limit: int = OUTCOMES_KEPT) -> None:
        """An evaluator that starts afresh once it holds `limit` selector outcomes."""
        self.limit = limit
        self._reset()

    def _reset(self) -> None:
        self._selectors: dict[str, Any] = {}
        self._errors: dict[str, str] = {}
        self._outcomes: dict[tuple[str, str], tuple[bool | None, str | None]] = {}
        self._prepared: dict[str, Any] = {}
        self._verdicts: dict[tuple[tuple[str, ...], str], tuple[int, DeviceOutcome]] = {}
        self._outcome_ids: dict[DeviceOutcome, int] = {}
        self._canonical: list[DeviceOutcome] = []
        # RoleMatches by (role id, structure, outcome ids): shared by equivalent shapes.
        self.role_matches: dict[Any, RoleMatch] = {}

    def bound(self) -> None:
        """Start afresh when the outcomes outgrew the limit (between calls, never during one:
        the outcome ids a call compares must stay put)."""
        if len(self._outcomes) + len(self._verdicts) > self.limit:
            self._reset()

    def compile_error(self, expr: str) -> str | None:
        """The compiler's message for `expr`, or None when it compiles."""
        if expr in self._selectors:
            return None
        if expr in self._errors:
            return self._errors[expr]
        try:
            self._selectors[expr] = cel.compile_selector(expr)
        except cel.CompileError as err:
            self._errors[expr] = str(err)
            return self._errors[expr]
        return None

    def evaluate(
        self, expr: str, key: str, device: Mapping[str, Any]
    ) -> tuple[bool | None, str | None]:
        """(value, error) of `expr` on a device; an error is a non-match, never a crash."""
        cache_key = (expr, key)
        hit = self._outcomes.get(cache_key)
        if hit is not None:
            return hit
        result: tuple[bool | None, str | None]
        if self.compile_error(expr) is not None:
            result = (None, self._errors[expr])
        else:
            try:
                outcome = self._selectors[expr].evaluate(self._device(key, device))
                value = outcome.value
                if outcome.error is not None:
                    result = (None, str(outcome.error))
                elif isinstance(value, bool):
                    result = _TRUE if value else _FALSE
                else:
                    result = (None, f"selector returned {type(value).__name__}, not bool")
            except Exception as err:  # user CEL must never crash a reconcile
                result = (None, f"{type(err).__name__}: {err}")
        self._outcomes[cache_key] = result
        return result

    def verdicts(
        self, selectors: tuple[str, ...], key: str, device: Mapping[str, Any]
    ) -> tuple[int, DeviceOutcome]:
        """A request's selector verdicts on one device, up to the first not true.

        Returned with an id that is equal exactly when the verdicts are, so a
        shape's outcomes can be compared by a tuple of small integers.
        """
        hit = self._verdicts.get((selectors, key))
        if hit is None:
            found: list[SelectorVerdict] = []
            for expr in selectors:
                value, error = self.evaluate(expr, key, device)
                found.append(SelectorVerdict(expr, value, error))
                if value is not True:
                    break
            outcome = tuple(found)
            ident = self._outcome_ids.get(outcome)
            if ident is None:
                ident = self._outcome_ids[outcome] = len(self._canonical)
                self._canonical.append(outcome)
            # Equal verdicts share one tuple: thousands of devices, a handful of outcomes.
            hit = self._verdicts[(selectors, key)] = (ident, self._canonical[ident])
        return hit

    def device_error(self, key: str, device: Mapping[str, Any]) -> str | None:
        """Why a device does not parse in the DRA CEL environment (None when it does)."""
        error = self._device(key, device).error
        return str(error) if error is not None else None

    def _device(self, key: str, device: Mapping[str, Any]) -> Any:
        # Converting a device to a CEL activation once serves every selector, which
        # are evaluated together; only the latest few are kept, as an activation
        # holds the device's converted data alive for the garbage collector to walk.
        prepared = self._prepared.get(key)
        if prepared is None:
            if len(self._prepared) >= _PREPARED_KEPT:
                self._prepared.clear()
            prepared = self._prepared[key] = cel.prepare_device(device)
        return prepared


def _assignments(
    candidates: Sequence[Sequence[int]], counts: Sequence[int], shape: Shape
) -> Iterator[tuple[int, ...]]:
    """Assignments of requests to devices (requests in order, each over its candidate
    devices in order) that never overdraw a device's count and claim at least one
    DRA device; lazily, within a search budget."""
    remaining = list(shape.counts)
    chosen: list[int] = []
    budget = _SEARCH_BUDGET

    def search(r: int) -> Iterator[tuple[int, ...]]:
        nonlocal budget
        if r == len(candidates):
            if any(shape.dra[d] for d in chosen):
                yield tuple(chosen)
            return
        for d in candidates[r]:
            budget -= 1
            if budget < 0:
                return
            if remaining[d] >= counts[r]:
                remaining[d] -= counts[r]
                chosen.append(d)
                yield from search(r + 1)
                chosen.pop()
                remaining[d] += counts[r]

    return search(0) if candidates else iter(())


def _demand(shape: Shape, assignment: Sequence[int], counts: Sequence[int]) -> Vector:
    demand = [0] * len(shape.cap)
    for d, n in zip(assignment, counts, strict=True):
        if shape.dra[d]:
            demand[shape.slot[d]] += n
    return tuple(demand)


def _alternatives(
    shape: Shape,
    candidates: Sequence[Sequence[int]],
    counts: Sequence[int],
    same_claim: bool,
) -> tuple[tuple[int, ...], tuple[Vector, ...]] | None:
    """The first assignment and every distinct demand vector an equivalent one makes.

    A DRA claim names device classes, not devices, so the cluster's allocator may
    serve it from any device the requests match: a partly used node can still
    take a replica through another assignment. With `same_claim`, only
    assignments resolving to the same device classes count as equivalent.
    """
    found = _assignments(candidates, counts, shape)
    first = next(found, None)
    if first is None:
        return None
    claim = tuple(shape.class_names[d] if shape.dra[d] else None for d in first)
    demands = [_demand(shape, first, counts)]
    for other in found:
        if len(demands) >= _MAX_ALTERNATIVES:
            break
        if same_claim and claim != tuple(
            shape.class_names[d] if shape.dra[d] else None for d in other
        ):
            continue
        demand = _demand(shape, other, counts)
        if demand not in demands:
            demands.append(demand)
    return first, tuple(demands)


def match_role(role: RoleDef, shape: Shape, ev: Evaluator) -> RoleMatch:
    """Match a role's requests against a shape's devices (cached on the shape).

    The answer depends only on the shape's structure and its selector outcomes,
    so shapes equal in both share one RoleMatch, built once.
    """
    ident = role_id(role)
    hit = shape.matches.get(ident)
    if hit is not None:
        return hit
    rows = [
        [
            ev.verdicts(req.selectors, shape.keys[d], device)
            for d, device in enumerate(shape.devices)
        ]
        for req in role.requests
    ]
    key = (ident, shape.structure, tuple(tuple(i for i, _ in row) for row in rows))
    result = ev.role_matches.get(key)
    if result is None:
        outcomes = [[outcome for _, outcome in row] for row in rows]
        result = ev.role_matches[key] = _match(role, shape, outcomes)
    if len(shape.matches) >= _MATCHES_PER_SHAPE:
        shape.matches.clear()
    shape.matches[ident] = result
    return result


def _match(role: RoleDef, shape: Shape, outcomes: list[list[DeviceOutcome]]) -> RoleMatch:
    """Match a role against a shape whose selector outcomes are known."""
    ok: list[list[bool]] = []
    verdicts: list[list[DeviceVerdict]] = []
    for row in outcomes:
        good = [all(s.value is True for s in sels) for sels in row]
        ok.append(good)
        verdicts.append(
            [
                DeviceVerdict(shape.names[d], g, sels)
                for d, (g, sels) in enumerate(zip(good, row, strict=True))
            ]
        )
    candidates = [[d for d, good in enumerate(row) if good] for row in ok]
    found = _alternatives(shape, candidates, [r.count for r in role.requests], same_claim=True)
    if found is not None:
        return _matched(role, shape, found[0], verdicts, found[1])
    return _unmatched(role, shape, ok, verdicts)


def _matched(
    role: RoleDef,
    shape: Shape,
    assignment: Sequence[int],
    verdicts: list[list[DeviceVerdict]],
    demands: tuple[Vector, ...],
) -> RoleMatch:
    resolved = []
    requests = []
    for req, d, vrow in zip(role.requests, assignment, verdicts, strict=True):
        requests.append(RequestVerdict(req.name, True, shape.names[d], tuple(vrow)))
        if shape.dra[d]:
            resolved.append(
                ResolvedDeviceRequest(
                    name=req.name,
                    device_class_name=shape.class_names[d],
                    count=req.count,
                    selectors=[DeviceSelector(cel=s) for s in req.selectors],
                )
            )
    return RoleMatch(True, tuple(requests), demands[0], tuple(resolved), "", demands)


def _unmatched(
    role: RoleDef, shape: Shape, ok: list[list[bool]], verdicts: list[list[DeviceVerdict]]
) -> RoleMatch:
    requests: list[RequestVerdict] = []
    failed = ""
    no_selector_match = [i for i, row in enumerate(ok) if not any(row)]
    if no_selector_match:
        for i, req in enumerate(role.requests):
            if i in no_selector_match:
                msg = words.no_selector_match(verdicts[i])
                requests.append(RequestVerdict(req.name, False, None, tuple(verdicts[i]), msg))
                failed = failed or words.request_failed(req.name, msg)
            else:
                requests.append(RequestVerdict(req.name, True, None, tuple(verdicts[i])))
        return RoleMatch(False, tuple(requests), (), (), failed)
    # Every request has candidate devices: explain where counting ran out, consuming
    # greedily in request order (the search above already tried every alternative).
    remaining = list(shape.counts)
    synthetic_only = True
    for i, req in enumerate(role.requests):
        pick = next((d for d, good in enumerate(ok[i]) if good and remaining[d] >= req.count), None)
        if pick is not None:
            remaining[pick] -= req.count
            synthetic_only = synthetic_only and not shape.dra[pick]
            requests.append(RequestVerdict(req.name, True, shape.names[pick], tuple(verdicts[i])))
            continue
        devs = tuple(
            DeviceVerdict(v.device, False, v.selectors, (req.count, remaining[d]))
            if ok[i][d]
            else v
            for d, v in enumerate(verdicts[i])
        )
        msg = words.not_enough_devices(devs)
        requests.append(RequestVerdict(req.name, False, None, devs, msg))
        failed = failed or words.request_failed(req.name, msg)
    if not failed:
        failed = words.SYNTHETIC_ONLY if synthetic_only else words.NO_ASSIGNMENT
    return RoleMatch(False, tuple(requests), (), (), failed)


def observed_demand(
    shape: Shape,
    requests: tuple[tuple[str, int, tuple[str, ...]], ...],
    ev: Evaluator,
) -> tuple[Vector, ...]:
    """Per-node DRA demand alternatives of an observed replica's resolved requests.

    Requests carry a deviceClassName, not a device name: a request may be served
    by any DRA device of its class that its selectors accept (all of the class
    when none does). When no assignment fits one node, each request charges the
    first device of its class, so an impossible replica still shows as held.
    """
    if shape.observed is None:
        shape.observed = {}
    hit = shape.observed.get(requests)
    if hit is not None:
        return hit
    candidates: list[list[int]] = []
    counts: list[int] = []
    for class_name, count, selectors in requests:
        of_class = [
            d
            for d in range(len(shape.devices))
            if shape.dra[d] and shape.class_names[d] == class_name
        ]
        if not of_class:
            continue  # the pool no longer offers that class: nothing to charge
        narrowed = [
            d
            for d in of_class
            if all(ev.evaluate(s, shape.keys[d], shape.devices[d])[0] is True for s in selectors)
        ]
        candidates.append(narrowed or of_class)
        counts.append(count)
    found = _alternatives(shape, candidates, counts, same_claim=False)
    if found is not None:
        result = found[1]
    else:
        result = (_demand(shape, [c[0] for c in candidates], counts),)
    shape.observed[requests] = result
    return result


@dataclass
class Shared:
    """The process's shape table and evaluator, shared by every scheduling call."""

    shapes: Shapes = field(default_factory=Shapes)
    ev: Evaluator = field(default_factory=Evaluator)

    def reset(self) -> None:
        """Forget everything (what a fresh process would know)."""
        self.shapes, self.ev = Shapes(), Evaluator()


SHARED = Shared()
"""What every call of this process shares (see the module's docstring)."""
on_clear(SHARED.reset)


def shared() -> Shared:
    """The process's tables, or new ones for this call alone while memos are off."""
    return SHARED if memos_on() else Shared()


@dataclass(frozen=True)
class ClusterPools:
    """A cluster's known pools, interned: what matching needs of one cluster version."""

    # Read-only containers: remembered on the cluster reading, shared by every call.
    names: tuple[str, ...]
    shapes: Mapping[str, Shape]
    nodes: Mapping[str, int]


def cluster_pools(cluster: ObservedInferenceCluster, shapes: Shapes) -> ClusterPools:
    """The cluster's known pools with their shapes, interned once per cluster reading.

    A reading (`read_inference_cluster`) is made once per decoded object
    version and never changes, so its pools are interned on first use and
    remembered on it (`derived`) for every later call and round; a reading of
    a plain dict is read afresh per call, and so is this.
    """
    memo = cluster.derived if SWITCH.on else {}
    found = memo.get("scheduling.pools")
    if found is None or found[0] is not shapes:
        known = [p for p in cluster.pools if p.unknown is None]
        pools = ClusterPools(
            tuple([p.name for p in known]),
            ReadOnlyDict({p.name: shapes.intern(p.class_name, p.devices) for p in known}),
            ReadOnlyDict({p.name: p.nodes for p in known}),
        )
        found = memo["scheduling.pools"] = (shapes, pools)
    return found[1]
