"""The Hugging Face fetcher in this process, offline over a prepared Hub cache.

The Job-shaped tests (test_job_env.py) run it in a pod-like subprocess; these
run the same code here, so that each of its rules has a test that sees it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydration import COMMIT, files, hf_cache, run

from modelplane.hydrate import sources
from modelplane.hydrate.staging import workspace

REPO = "acme/tiny"
CONTENT = {"config.json": b'{"a": 1}', "weights/model.safetensors": os.urandom(30_000)}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """huggingface_hub offline (a flag it reads at import, so set on the module); no HF_* set."""
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    for name in [n for n in os.environ if n.startswith("HF_")]:
        monkeypatch.delenv(name)
    yield


def _default_cache(dest: Path, key: str = "k1") -> Path:
    return workspace(dest, key).work / sources.HF_CACHE


def test_without_hf_hub_cache_the_cache_is_the_workspaces(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    hf_cache(_default_cache(dest), REPO, CONTENT)

    done = run(sources.huggingface(REPO, "main", "hf_token"), dest)

    assert done.final.phase == "Ready", done.final.message
    assert done.final.resolved_digest == COMMIT
    assert files(dest) == CONTENT


def test_hf_hub_cache_when_set_is_used_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    hf_cache(tmp_path / "hub", REPO, CONTENT)
    done = run(sources.huggingface(REPO, "main"), tmp_path / "model")
    assert done.final.phase == "Ready", done.final.message
    assert files(tmp_path / "model") == CONTENT
    assert (tmp_path / "hub").is_dir()  # a cache the caller owns is left alone


def test_a_workspace_a_killed_pod_already_linked_into_is_linked_again(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    snapshot = hf_cache(_default_cache(dest), REPO, CONTENT)
    tree = workspace(dest, "k1").tree
    tree.mkdir(parents=True)
    sources._link_tree(snapshot, tree)  # what the killed pod did

    done = run(sources.huggingface(REPO, "main"), dest)

    assert done.final.phase == "Ready", done.final.message  # not a SameFileError
    assert files(dest) == CONTENT


def test_files_are_copied_where_they_cannot_be_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "model"
    hf_cache(_default_cache(dest), REPO, CONTENT)
    refused: list[object] = []

    def cross_device(src: object, dst: object) -> None:
        refused.append(dst)
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    done = run(sources.huggingface(REPO, "main"), dest)

    assert done.final.phase == "Ready", done.final.message
    assert len(refused) == len(CONTENT)
    assert files(dest) == CONTENT


def test_an_unknown_revision_fails_naming_the_repository_and_revision(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    hf_cache(_default_cache(dest), REPO, CONTENT)
    failed = run(sources.huggingface(REPO, "v9"), dest)
    assert failed.final.phase == "Failed"
    assert str(failed.final.message).startswith("huggingFace acme/tiny@v9: ")
    assert not dest.exists()


def test_a_revision_that_resolves_to_no_commit_fails(tmp_path: Path) -> None:
    dest = tmp_path / "model"
    hf_cache(_default_cache(dest), REPO, CONTENT, commit="not-a-commit")
    failed = run(sources.huggingface(REPO, "main"), dest)
    assert failed.final.message == "huggingFace acme/tiny@main: no commit resolved (not-a-commit)"
    assert not dest.exists()


@pytest.mark.parametrize(("token", "sent"), [("hf_secret", "hf_secret"), ("", None), (None, None)])
def test_the_token_reaches_huggingface_hub_and_an_empty_one_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str | None, sent: str | None
) -> None:
    import huggingface_hub

    snapshot = hf_cache(tmp_path / "hub", REPO, CONTENT)
    calls: list[dict[str, object]] = []

    def snapshot_download(**kwargs: object) -> str:
        calls.append(kwargs)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    done = run(sources.huggingface(REPO, "v1", token), tmp_path / "model")

    assert done.final.phase == "Ready", done.final.message
    (call,) = calls
    assert (call["repo_id"], call["revision"], call["token"]) == (REPO, "v1", sent)
