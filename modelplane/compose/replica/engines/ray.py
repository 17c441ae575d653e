"""The Ray bootstrap multi-node vLLM runs on (pipeline or data parallelism over nodes).

The leader runs `ray start --head` and then execs the engine; workers join the
head and block. The scripts are constants; the engine's argv reaches the leader
only as `"$@"` arguments of `sh -c`, never spliced into script text.
LeaderWorkerSet injects `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and
`LWS_WORKER_INDEX` (the rank; 0 is the leader) into every container, which is
how leader and workers learn the leader's address and their rank.

A Ray worker serves nothing, so it has no readiness probe: the engine's probe
would never pass there, and a LeaderWorkerSet group is Ready only when every
pod is, so the group would never become Ready.
"""

from __future__ import annotations

from typing import Any

from modelplane.api import constants as c
from modelplane.api.model_replica import ReplicaRole
from modelplane.compose.replica.engines.vllm import VLLM_ENTRYPOINT, is_vllm

# The leader's engine argv follows the script as "$@" ($0 is the name below),
# so no user text is ever part of it.
RAY_LEADER_SCRIPT = f'ray start --head --port={c.RAY_PORT} && exec "$@"'
# A worker waits for the head first: LeaderWorkerSet starts leader and workers
# together, and a worker that exits early would restart the whole group.
RAY_WORKER_SCRIPT = (
    f'until ray health-check --address="${{LWS_LEADER_ADDRESS}}:{c.RAY_PORT}" >/dev/null 2>&1;'
    f' do sleep 5; done; exec ray start --address="${{LWS_LEADER_ADDRESS}}:{c.RAY_PORT}" --block'
)
RAY_SCRIPT_NAME = "modelplane-ray-leader"


def needs_ray(role: ReplicaRole, engine: dict[str, Any]) -> bool:
    """Multi-node vLLM: pipeline or data parallelism over several nodes runs on Ray."""
    topo = role.workers.topology
    return topo.nodes_per_worker > 1 and (topo.pipeline > 1 or topo.data > 1) and is_vllm(engine)


def stamp_leader(engine: dict[str, Any]) -> None:
    """Start the Ray head, then exec the engine's own argv (its command, else vLLM's)."""
    command = [str(x) for x in engine.get("command") or []]
    args = [str(x) for x in engine.get("args") or []]
    engine["command"] = ["/bin/sh", "-c", RAY_LEADER_SCRIPT, RAY_SCRIPT_NAME]
    engine["args"] = (command or list(VLLM_ENTRYPOINT)) + args


def stamp_worker(engine: dict[str, Any]) -> None:
    """Join the leader's Ray cluster and block; serve nothing, so probe nothing."""
    engine["command"] = ["/bin/sh", "-c", RAY_WORKER_SCRIPT]
    engine.pop("args", None)
    engine.pop("readinessProbe", None)
