"""`modelplane rollout status|pause|resume|undo` against hand-written ModelDeployments.

Rendered mode replaces the render step with a hand-written object and no store
to plan over, so the status is read as a live one's (the rollout composer's
status is what these tests fix by hand; tests/cli/test_explain_agrees.py checks
the plan's side against every example); live mode talks to a real
HTTP server on loopback that stands in for the API server and applies merge
patches as RFC 7386 says (its own implementation, below).
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from modelplane.cli import rollout as rollout_cli
from modelplane.cli.kubeconfig import KubeconfigError, load_kubeconfig
from modelplane.cli.main import cli
from modelplane.cli.rollout import Rendered
from modelplane.cli.rollout_view import merge_diff, undo_patch
from modelplane.dev import pki
from tests.loopback_http import serving

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token"
PATH = "/apis/modelplane.ai/v1alpha1/namespaces/ml-team/modeldeployments/chat"


def _workers(image: str, *args: str) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [{"name": "engine", "image": image,
                                                  "args": list(args)}]}}}  # fmt: skip


OLD = _workers("vllm/vllm-openai:v0.10.0", "--model=Qwen/Qwen2.5-0.5B-Instruct")
NEW = _workers("vllm/vllm-openai:v0.11.0", "--model=Qwen/Qwen2.5-0.5B-Instruct", "--fp8")
OLDER = _workers("vllm/vllm-openai:v0.9.0", "--model=Qwen/Qwen2.5-0.5B-Instruct")


def _placement(cluster: str, index: int, revision: str, ready: bool = True) -> dict[str, Any]:
    return {"cluster": cluster, "index": index, "replicaName": f"chat-{cluster}-{index}",
            "pools": [{"role": "unified", "pool": "l4"}], "ready": ready,
            "revision": revision}  # fmt: skip


def deployment(decision: str = "Progressing", **rollout: Any) -> dict[str, Any]:
    """ml-team/chat rolling revision 9c1d from 3f2a in 3 waves: wave 1 passed, wave 2
    analysing; the new revision adds --fp8, a newer image and a cache."""
    status_rollout = {
        "revision": "9c1d", "stableRevision": "3f2a", "decision": decision, "wave": 2,
        "stableTemplate": {"backend": "Native", "caches": [], "roles": {"unified": OLD}},
        "waves": [
            {"wave": 1, "phase": "Passed", "clusters": ["east"], "replicas": 2, "ready": 2,
             "reporting": 2, "requests": 1200, "errors": 0, "errorRate": 0.0,
             "ttftP90Seconds": 0.31, "readyFraction": 1.0,
             "startedAt": "2026-11-01T00:00:00Z", "decidedAt": "2026-11-01T00:05:00Z",
             "message": "every limit met for 300s"},
            {"wave": 2, "phase": "Analyzing", "clusters": ["west"], "replicas": 1, "ready": 1,
             "reporting": 1, "requests": 500, "errors": 2, "errorRate": 0.004,
             "ttftP90Seconds": 0.42, "readyFraction": 1.0,
             "startedAt": "2026-11-01T00:05:00Z", "message": "held 120s of 300s"},
        ],
        "revisions": [{"revision": "9c1d", "replicas": 3, "ready": 3},
                      {"revision": "3f2a", "replicas": 1, "ready": 1}],
        "message": "wave 2 of 3 is being analysed",
    } | rollout  # fmt: skip
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelDeployment",
        "metadata": {"name": "chat", "namespace": "ml-team", "generation": 4,
                     "resourceVersion": "100"},
        "spec": {
            "replicas": 4,
            "rollout": {"strategy": "Progressive", "maxSurge": 1,
                        "waves": [{"clusterSelector": {"matchLabels": {"wave": str(i)}}}
                                  for i in (1, 2, 3)]},
            "nodeSelector": {"devices": [{"name": "gpu", "count": 1}]},
            "caches": [{"name": "qwen-fp8"}],
            "workers": copy.deepcopy(NEW),
        },
        "status": {
            "placements": [_placement("east", 0, "9c1d"), _placement("east", 1, "9c1d"),
                           _placement("west", 0, "9c1d"), _placement("north", 0, "3f2a")],
            "conditions": [{"type": "RolledOut", "status": "False", "reason": "Analyzing",
                            "message": "wave 2 of 3: analysing revision 9c1d on west",
                            "lastTransitionTime": "2026-11-01T00:05:00Z"}],
            "rollout": status_rollout,
        },
    }  # fmt: skip


def run(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(cli, ["rollout", *args])
    return result.exit_code, result.output


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The render step replaced: PATH (an empty folder) renders to the object yielded."""
    obj = deployment()

    def fake(paths: tuple[str, ...], namespace: str, name: str, rounds: int) -> Rendered:
        assert (paths, namespace, name) == ((str(tmp_path),), "ml-team", "chat")
        return Rendered(copy.deepcopy(obj))

    monkeypatch.setattr(rollout_cli, "render_deployment", fake)
    yield obj


def _row(out: str, first: str) -> list[str]:
    (line,) = [ln for ln in out.splitlines() if ln.startswith(f"│ {first} ")]
    return [cell.strip() for cell in line.split("│")[1:-1]]


# --- status -----------------------------------------------------------------


def test_status_table_shows_revisions_decision_waves_and_clusters(
    rendered: dict, tmp_path: Path
) -> None:
    code, out = run("status", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "ModelDeployment ml-team/chat: Progressing, wave 2 of 3" in out
    assert "revision 9c1d (spec), stable 3f2a" in out
    assert "RolledOut=False Analyzing: wave 2 of 3: analysing revision 9c1d on west" in out
    assert "wave 2 of 3 is being analysed" in out  # the rollout's message, not the condition's
    assert _row(out, "1") == ["1", "Passed", "east", "2/2/2", "1200", "0", "0.00%", "0.31 s",
                              "100%", "2026-11-01T00:00:00Z", "2026-11-01T00:05:00Z",
                              "every limit met for 300s"]  # fmt: skip
    assert _row(out, "2") == ["2", "Analyzing", "west", "1/1/1", "500", "2", "0.40%", "0.42 s",
                              "100%", "2026-11-01T00:05:00Z", "—", "held 120s of 300s"]  # fmt: skip
    assert _row(out, "9c1d") == ["9c1d", "spec", "3", "3"]
    assert _row(out, "3f2a") == ["3f2a", "stable", "1", "1"]
    assert _row(out, "east") == ["east", "9c1d", "2", "2", "0"]
    assert _row(out, "north") == ["north", "3f2a", "1", "1", "0"]


def test_status_of_a_complete_rollout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One revision that is both the spec's and the stable one is named as both; a message
    the RolledOut condition already says is said once."""
    said = "every replica runs revision 9c1d"
    obj = deployment(
        "Complete",
        stableRevision="9c1d",
        previousRevision="3f2a",
        wave=3,
        revisions=[{"revision": "9c1d", "replicas": 4, "ready": 4}],
        message=said,
    )
    obj["status"]["conditions"][0] |= {"status": "True", "reason": "Complete", "message": said}
    monkeypatch.setattr(rollout_cli, "render_deployment", lambda *a: Rendered(obj))
    code, out = run("status", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "ModelDeployment ml-team/chat: Complete, wave 3 of 3" in out
    assert "revision 9c1d (spec), stable 9c1d, previous 3f2a" in out
    assert out.count(said) == 1
    assert _row(out, "9c1d") == ["9c1d", "spec, stable", "4", "4"]


def test_status_json_and_yaml(rendered: dict, tmp_path: Path) -> None:
    code, out = run("status", str(tmp_path), "--deployment", "ml-team/chat", "-o", "json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["clusters"] == [
        {"cluster": "east", "revision": "9c1d", "replicas": 2, "ready": 2, "draining": 0},
        {"cluster": "north", "revision": "3f2a", "replicas": 1, "ready": 1, "draining": 0},
        {"cluster": "west", "revision": "9c1d", "replicas": 1, "ready": 1, "draining": 0},
    ]
    assert (doc["strategy"], doc["paused"], doc["plannedWaves"]) == ("Progressive", False, 3)
    assert doc["rolledOut"]["reason"] == "Analyzing"
    assert doc["rollout"]["decision"] == "Progressing"
    assert doc["rollout"]["waves"][1]["errorRate"] == 0.004
    assert doc["rollout"]["stableTemplate"]["roles"]["unified"] == OLD
    code, out = run("status", str(tmp_path), "--deployment", "ml-team/chat", "-o", "yaml")
    assert code == 0 and yaml.safe_load(out) == doc


def test_status_of_a_rendered_example_without_a_rollout() -> None:
    """A real render (no stand-in): a MakeBeforeBreak deployment has no rollout to show,
    and pause is refused with what to change."""
    rolling = str(ROOT / "examples" / "operations" / "rolling")
    code, out = run("status", rolling, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "rollout strategy MakeBeforeBreak, no Progressive rollout recorded" in out
    central = _row(out, "central")
    assert central[0] == "central" and central[2:] == ["3", "3", "0"]
    assert len(central[1]) == 10 and int(central[1], 16) >= 0  # the revision hash
    code, out = run("pause", rolling, "--deployment", "ml-team/chat")
    assert code == 1
    assert "uses rollout strategy MakeBeforeBreak" in out
    assert "set spec.rollout.strategy: Progressive" in out
    code, out = run("status", rolling, "--deployment", "ml-team/nope")
    assert code == 1 and "ModelDeployment ml-team/nope not found" in out
    assert "ModelDeployments there: ml-team/chat" in out


def test_a_source_is_required_and_only_one(tmp_path: Path) -> None:
    code, out = run("status", "--deployment", "ml-team/chat")
    assert code == 2 and "give either PATH..." in out
    config = _kubeconfig(tmp_path, "http://127.0.0.1:1")
    code, out = run("status", str(tmp_path), "--kubeconfig", str(config), "--deployment", "a/b")
    assert code == 2 and "not both" in out
    code, out = run("status", str(tmp_path), "--deployment", "chat")
    assert code == 2 and "'chat' is not NAMESPACE/NAME" in out


# --- pause, resume, undo: rendered (a dry run) --------------------------------


def test_pause_prints_the_patch_and_does_not_apply_it(rendered: dict, tmp_path: Path) -> None:
    code, out = run("pause", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert out == (
        "merge patch for ModelDeployment ml-team/chat:\n"
        "spec:\n  rollout:\n    paused: true\n"
        "rollout pause ml-team/chat: spec.rollout.paused true (the rollout at revision 9c1d "
        "holds where it is)\n"
        "not applied: the deployment was rendered from manifests (a dry run); change the "
        "manifests, or run with --kubeconfig to patch a live control plane\n"
    )


def test_resume_of_a_rollout_not_paused_changes_nothing(rendered: dict, tmp_path: Path) -> None:
    code, out = run("resume", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert out == "rollout resume ml-team/chat: already not paused; nothing to change\n"


def _apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2, as written there."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _apply_merge_patch(result.get(key), value)
    return result


def test_undo_in_flight_goes_back_to_the_stable_template(rendered: dict, tmp_path: Path) -> None:
    code, out = run("undo", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 0, out
    head, _, rest = out.partition("\n")
    assert head == "merge patch for ModelDeployment ml-team/chat:"
    body, summary, note = rest.rsplit("\n", 3)[0], *rest.rsplit("\n", 3)[1:3]
    patch = yaml.safe_load(body)
    # Only what differs: the containers (a list, replaced whole) and the caches (removed).
    assert patch == {"spec": {"workers": {"template": {"spec": {"containers": [
        {"name": "engine", "image": "vllm/vllm-openai:v0.10.0",
         "args": ["--model=Qwen/Qwen2.5-0.5B-Instruct"]}]}}}, "caches": None}}  # fmt: skip
    assert summary == "rollout undo ml-team/chat: spec back to revision 3f2a (from 9c1d)"
    assert note.startswith("not applied:")
    after = _apply_merge_patch(rendered, patch)
    assert after["spec"]["workers"] == OLD and "caches" not in after["spec"]
    assert after["spec"]["rollout"] == rendered["spec"]["rollout"]


def test_undo_removes_what_the_template_does_not_have() -> None:
    """What only the new revision set is undone: a changed count and backend are set back, a
    key the template lacks (pod labels) is removed by null, since a merge patch merges."""
    obj = deployment("RolledBack")
    obj["spec"]["workers"]["count"] = 2
    obj["spec"]["backend"] = "KServe"
    obj["spec"]["workers"]["template"]["metadata"] = {"labels": {"canary": "yes"}}
    patch = undo_patch("ml-team/chat", obj).patch
    assert patch["spec"]["workers"]["count"] == 1  # the template's (default) count
    assert patch["spec"]["backend"] == "Native"
    assert patch["spec"]["workers"]["template"]["metadata"] is None
    after = _apply_merge_patch(obj, patch)
    assert after["spec"]["workers"]["count"] == 1
    assert "metadata" not in after["spec"]["workers"]["template"]


def test_undo_once_complete_uses_the_previous_template() -> None:
    obj = deployment(
        "Complete",
        stableRevision="9c1d",
        stableTemplate={"backend": "Native", "caches": ["qwen-fp8"], "roles": {"unified": NEW}},
        previousRevision="77ab",
        previousTemplate={"backend": "Native", "caches": ["qwen"], "roles": {"unified": OLDER}},
    )
    change = undo_patch("ml-team/chat", obj)
    assert change.summary == "rollout undo ml-team/chat: spec back to revision 77ab (from 9c1d)"
    assert change.patch["spec"]["caches"] == [{"name": "qwen"}]
    assert change.patch["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] == (
        "vllm/vllm-openai:v0.9.0"
    )


@pytest.mark.parametrize(
    ("decision", "changes", "message"),
    [
        ("Complete", {}, "the rollout of revision 9c1d is Complete and no earlier revision"),
        ("Progressing", {"stableTemplate": None}, "has no template in status.rollout"),
        (
            "Progressing",
            {"stableTemplate": {"backend": "Native", "roles": {"prefill": OLD, "decode": OLD}}},
            "revision 3f2a has roles decode, prefill but the spec has unified",
        ),
        (
            "Progressing",
            {"stableTemplate": {"roles": {"unified": {"count": 0}}}},
            "revision 3f2a's unified workers is not valid workers",
        ),
    ],
)
def test_undo_refusals(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    decision: str,
    changes: dict[str, Any],
    message: str,
) -> None:
    obj = deployment(decision, **changes)
    monkeypatch.setattr(rollout_cli, "render_deployment", lambda *a: Rendered(obj))
    code, out = run("undo", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 1
    assert message in out


def test_undo_without_status_rollout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    obj = deployment()
    del obj["status"]["rollout"]
    monkeypatch.setattr(rollout_cli, "render_deployment", lambda *a: Rendered(obj))
    code, out = run("undo", str(tmp_path), "--deployment", "ml-team/chat")
    assert code == 1 and "has no status.rollout" in out


def test_merge_diff_is_the_patch_rfc7386_applies_back() -> None:
    current = {"a": 1, "b": {"c": 1, "d": 2}, "l": [1, 2], "gone": "x"}
    desired = {"a": 1, "b": {"c": 3, "d": 2}, "l": [2], "new": {"k": "v"}}
    patch = merge_diff(current, desired)
    assert patch == {"b": {"c": 3}, "l": [2], "new": {"k": "v"}, "gone": None}
    assert _apply_merge_patch(current, patch) == desired
    assert merge_diff(desired, desired) == {}


# --- live: a loopback API server -----------------------------------------------


@dataclass
class FakeAPI:
    """One ModelDeployment behind a fake API server; every request recorded."""

    obj: dict[str, Any] = field(default_factory=deployment)
    requests: list[tuple[str, str, str, Any]] = field(default_factory=list)
    # Other writers, one before each PATCH that comes (each bumps resourceVersion).
    meddle: list[Callable[[dict[str, Any]], None]] = field(default_factory=list)


def _patch(state: FakeAPI, patch: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    if state.meddle:
        state.meddle.pop(0)(state.obj)
        meta = state.obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    wanted = (patch.get("metadata") or {}).get("resourceVersion")
    if wanted is not None and wanted != state.obj["metadata"]["resourceVersion"]:
        return 409, {"kind": "Status", "reason": "Conflict", "message": "modified"}
    before = state.obj["spec"]
    state.obj = _apply_merge_patch(state.obj, patch)
    meta = state.obj["metadata"]
    meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    if state.obj["spec"] != before:
        meta["generation"] += 1
    return 200, state.obj


def _handler(state: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            ctype = self.headers.get("Content-Type") or ""
            state.requests.append((self.command, self.path, ctype, body))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"kind": "Status", "message": "Unauthorized"})
            elif self.path != PATH:
                self._send(404, {"kind": "Status", "reason": "NotFound"})
            elif self.command == "GET":
                self._send(200, state.obj)
            elif ctype != "application/merge-patch+json":
                self._send(415, {"kind": "Status", "message": ctype})
            else:
                self._send(*_patch(state, body or {}))

        def do_GET(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

    return Handler


@pytest.fixture
def api() -> Iterator[tuple[FakeAPI, str]]:
    state = FakeAPI()
    with serving(_handler(state)) as url:
        yield state, url


def _kubeconfig(tmp_path: Path, server: str, **user: Any) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cp", "cluster": {"server": server}}],
        "users": [{"name": "admin", "user": user or {"token": TOKEN}}],
        "contexts": [{"name": "fleet", "context": {"cluster": "cp", "user": "admin"}},
                     {"name": "other", "context": {"cluster": "cp", "user": "admin"}}],
        "current-context": "fleet",
    }  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_live_status_reads_the_deployment(api: tuple[FakeAPI, str], tmp_path: Path) -> None:
    state, url = api
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("status", "--kubeconfig", config, "--deployment", "ml-team/chat", "-o", "json")
    assert code == 0, out
    assert json.loads(out)["rollout"]["revision"] == "9c1d"
    assert [(m, p) for m, p, _, _ in state.requests] == [("GET", PATH)]


def test_live_pause_applies_the_patch(api: tuple[FakeAPI, str], tmp_path: Path) -> None:
    state, url = api
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("pause", "--kubeconfig", config, "--context", "other",
                    "--deployment", "ml-team/chat")  # fmt: skip
    assert code == 0, out
    assert state.requests[-1] == (
        "PATCH",
        PATH,
        "application/merge-patch+json",
        {"spec": {"rollout": {"paused": True}}},
    )
    assert state.obj["spec"]["rollout"]["paused"] is True
    assert state.obj["spec"]["rollout"]["waves"]  # the rest of spec.rollout kept
    last = out.splitlines()[-1]
    assert last == (
        f"applied on {url} (context other): generation 5, resourceVersion 101; "
        "spec.rollout.paused is now true"
    )
    code, out = run("resume", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert state.obj["spec"]["rollout"]["paused"] is False
    assert out.splitlines()[-1].endswith("spec.rollout.paused is now false")


def test_live_undo_carries_the_version_it_read(api: tuple[FakeAPI, str], tmp_path: Path) -> None:
    state, url = api
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("undo", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 0, out
    method, _, _, body = state.requests[-1]
    assert method == "PATCH" and body["metadata"] == {"resourceVersion": "100"}
    assert state.obj["spec"]["workers"] == OLD and "caches" not in state.obj["spec"]
    assert "rollout undo ml-team/chat: spec back to revision 3f2a (from 9c1d)" in out
    assert out.splitlines()[-1].endswith("the spec now matches that revision")
    # Run again: nothing left to change, and nothing is sent.
    sent = len(state.requests)
    code, out = run("undo", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert (
        out == "rollout undo ml-team/chat: the spec already is revision 3f2a; nothing to change\n"
    )
    assert [m for m, *_ in state.requests[sent:]] == ["GET"]


def _status_write(obj: dict[str, Any]) -> None:
    # What Crossplane does on every reconcile of a composite: a status-only write.
    obj["status"]["conditions"] = [{"type": "Synced", "status": "True", "reason": "Again"}]


SOMEONE_ELSES = _workers("vllm/vllm-openai:v0.12.0", "--model=Qwen/Qwen2.5-0.5B-Instruct")


def _spec_write(obj: dict[str, Any]) -> None:
    # The same undo patch would follow (the workers list is replaced whole), but the
    # spec it was decided on is gone: the API server moved the generation.
    obj["spec"]["workers"] = copy.deepcopy(SOMEONE_ELSES)
    obj["metadata"]["generation"] += 1


def test_live_undo_sends_again_after_a_status_write(
    api: tuple[FakeAPI, str], tmp_path: Path
) -> None:
    state, url = api
    state.meddle = [_status_write]
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("undo", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 0, out
    assert [m for m, *_ in state.requests] == ["GET", "PATCH", "GET", "PATCH"]
    first, second = state.requests[1][3], state.requests[3][3]
    assert first["metadata"] == {"resourceVersion": "100"}
    assert second["metadata"] == {"resourceVersion": "101"}
    assert {**first, "metadata": None} == {**second, "metadata": None}
    assert "resourceVersion 100 became 101 meanwhile" in out
    assert state.obj["spec"]["workers"] == OLD
    assert out.splitlines()[-1].endswith("the spec now matches that revision")


def test_live_undo_refuses_a_spec_changed_meanwhile(
    api: tuple[FakeAPI, str], tmp_path: Path
) -> None:
    state, url = api
    state.meddle = [_spec_write]
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("undo", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 1
    assert "changed since it was read (its spec, or the revision it goes back to)" in out
    assert "nothing was applied: run the command again to see the new patch" in out
    assert state.obj["spec"]["workers"] == SOMEONE_ELSES  # the other writer's spec stands
    assert [m for m, *_ in state.requests] == ["GET", "PATCH", "GET"]


def test_live_undo_gives_up_under_contention(api: tuple[FakeAPI, str], tmp_path: Path) -> None:
    state, url = api
    state.meddle = [_status_write] * 6
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("undo", "--kubeconfig", config, "--deployment", "ml-team/chat")
    assert code == 1
    assert "kept changing (6 conflicts in a row); nothing was applied" in out
    assert state.obj["spec"]["workers"] == NEW
    assert [m for m, *_ in state.requests].count("PATCH") == 6


def test_live_errors_are_actionable(api: tuple[FakeAPI, str], tmp_path: Path) -> None:
    _, url = api
    config = str(_kubeconfig(tmp_path, url))
    code, out = run("status", "--kubeconfig", config, "--deployment", "ml-team/other")
    assert code == 1
    assert f"ModelDeployment ml-team/other not found on {url} (context fleet)" in out
    bad = str(_kubeconfig(tmp_path, url, token="wrong"))
    code, out = run("status", "--kubeconfig", bad, "--deployment", "ml-team/chat")
    assert code == 1 and "HTTP 401" in out
    code, out = run("status", "--kubeconfig", config, "--context", "nope", "--deployment", "a/b")
    assert code == 1 and "context 'nope' is not in the kubeconfig (contexts: fleet, other)" in out


@pytest.mark.parametrize(
    ("user", "cluster", "message"),
    [
        ({"exec": {"command": "aws"}}, {}, "authenticates with 'exec', which modelplane does not"),
        ({"token": TOKEN}, {"insecure-skip-tls-verify": True}, "insecure-skip-tls-verify is not"),
        ({"token": TOKEN}, {"certificate-authority-data": "!!"}, "is not valid base64"),
        ({"token": TOKEN}, {"certificate-authority": "missing.crt"}, "cannot load the"),
    ],
)
def test_kubeconfig_refusals(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    path = _kubeconfig(tmp_path, "https://cp.example:6443", **user)
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"].update(cluster)
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(KubeconfigError) as err:
        load_kubeconfig(path)
    assert message in str(err.value)


def test_kubeconfig_token_file_is_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    client = load_kubeconfig(_kubeconfig(tmp_path, "http://127.0.0.1:1", tokenFile="token"))
    assert client.token_file == str(tmp_path / "token")
    assert client._headers(None)["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(client)


@pytest.fixture
def tls_api(tmp_path: Path) -> Iterator[tuple[FakeAPI, str, Path]]:
    """The fake API server over TLS that requires a client certificate signed by its CA;
    the CA, server and client certificates are in tmp_path (ca.crt, srv/, cli/)."""
    ca = pki.CA.create()
    ca.write(tmp_path)
    ca.issue(tmp_path / "srv", "srv", server=True, client=False)
    ca.issue(tmp_path / "cli", "cli", server=False, client=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(tmp_path / "ca.crt"))
    context.load_cert_chain(tmp_path / "srv" / "tls.crt", tmp_path / "srv" / "tls.key")
    context.verify_mode = ssl.CERT_REQUIRED
    state = FakeAPI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state, f"https://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()
        server.server_close()


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_live_over_tls_with_a_client_certificate(tls_api: tuple[FakeAPI, str, Path]) -> None:
    """Inline (-data) and file forms both reach a server that checks the client's certificate
    and is checked against the kubeconfig's CA; the token rides along."""
    state, url, pki_dir = tls_api
    inline = _kubeconfig(pki_dir, url, token=TOKEN,
                         **{"client-certificate-data": _b64(pki_dir / "cli" / "tls.crt"),
                            "client-key-data": _b64(pki_dir / "cli" / "tls.key")})  # fmt: skip
    doc = yaml.safe_load(inline.read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = _b64(pki_dir / "ca.crt")
    inline.write_text(yaml.safe_dump(doc))
    code, out = run("status", "--kubeconfig", str(inline), "--deployment", "ml-team/chat",
                    "-o", "json")  # fmt: skip
    assert code == 0, out
    assert json.loads(out)["rollout"]["stableRevision"] == "3f2a"
    files = pki_dir / "files.yaml"
    doc["clusters"][0]["cluster"] = {"server": url, "certificate-authority": "ca.crt"}
    doc["users"][0]["user"] = {"token": TOKEN, "client-certificate": "cli/tls.crt",
                               "client-key": "cli/tls.key"}  # fmt: skip
    files.write_text(yaml.safe_dump(doc))
    code, out = run("pause", "--kubeconfig", str(files), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert state.obj["spec"]["rollout"]["paused"] is True
    # No client certificate: the handshake fails, and the command says it could not read.
    doc["users"][0]["user"] = {"token": TOKEN}
    files.write_text(yaml.safe_dump(doc))
    code, out = run("status", "--kubeconfig", str(files), "--deployment", "ml-team/chat")
    assert code == 1 and "cannot read ModelDeployment ml-team/chat" in out
    # Another CA: the server is not trusted.
    other = pki.CA.create()
    (pki_dir / "other.crt").write_bytes(other.pem)
    doc["clusters"][0]["cluster"]["certificate-authority"] = "other.crt"
    files.write_text(yaml.safe_dump(doc))
    code, out = run("status", "--kubeconfig", str(files), "--deployment", "ml-team/chat")
    assert code == 1 and "CERTIFICATE_VERIFY_FAILED" in out


# --- the real renders: examples/operations/progressive ---------------------------

PROGRESSIVE = ROOT / "examples" / "operations" / "progressive"


def test_status_of_the_three_wave_rollout_that_passes() -> None:
    code, out = run("status", str(PROGRESSIVE / "pass"), "--deployment", "ml-team/chat",
                    "-o", "json")  # fmt: skip
    assert code == 0, out
    doc = json.loads(out)
    rollout = doc["rollout"]
    assert (rollout["decision"], rollout["wave"], doc["plannedWaves"]) == ("Complete", 3, 3)
    assert [w["phase"] for w in rollout["waves"]] == ["Passed", "Passed", "Passed"]
    assert rollout["stableRevision"] == rollout["revision"] != rollout["previousRevision"]
    assert {r["revision"] for r in doc["clusters"]} == {rollout["revision"]}
    assert doc["rolledOut"]["reason"] == "Complete"
    # Complete: undo goes to the revision before (the manifests' older image).
    code, out = run("undo", str(PROGRESSIVE / "pass"), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert (
        f"spec back to revision {rollout['previousRevision']} (from {rollout['revision']})" in out
    )
    assert "image: vllm/vllm-openai:v0.10.2" in out and "not applied" in out


def test_status_of_the_rollout_that_fails_in_wave_2() -> None:
    code, out = run("status", str(PROGRESSIVE / "fail"), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "ModelDeployment ml-team/chat: RolledBack, wave 2 of 3" in out
    assert _row(out, "1")[:2] == ["1", "Passed"]
    wave2 = _row(out, "2")
    assert wave2[:2] == ["2", "Failed"] and wave2[6] == "8.00%"
    assert "RolledOut=False RolledBack: wave 2 failed: error rate 8.00%" in out
    # RolledBack: undo writes the stable revision into the spec, so it stops being retried.
    code, out = run("undo", str(PROGRESSIVE / "fail"), "--deployment", "ml-team/chat")
    assert code == 0, out
    assert "image: vllm/vllm-openai:v0.10.2" in out
