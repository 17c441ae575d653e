"""One fetcher per source kind: each downloads into a staging folder and returns its digest.

Each fetcher resumes what an earlier, interrupted run of the same source left
in the staging folder, and each measures a digest that names exactly what was
staged:

- Hugging Face: the commit the revision resolved to (`huggingface_hub`
  `snapshot_download`, whose blob downloads resume);
- S3 (AWS or an S3-compatible endpoint, `boto3`): `s3-etags:sha256:<hex>`, a
  sha256 over the sorted (relative key, ETag, size) manifest; objects already
  staged with the same ETag and size are not fetched again;
- HTTP(S): `sha256:<hex>` of the file, streamed and checked against the
  expected sha256 when one is given; a partial file resumes with a Range
  request;
- inline: `sha256:<hex>` of the content.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from modelplane.hydrate.staging import Fetch, HydrationError

CHUNK = 1 << 20
PROGRESS = ".modelplane-progress.json"
HF_CACHE = ".cache/hf"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def safe_relative(name: str) -> PurePosixPath:
    """`name` as a relative path that stays inside the staging folder, or raise."""
    rel = PurePosixPath(name.lstrip("/"))
    if not rel.parts or any(p in ("..", ".") for p in rel.parts):
        raise HydrationError(f"refusing to write {name!r}: not a path inside the cache")
    return rel


# ── Hugging Face ─────────────────────────────────────────────────────────────


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link (else copy) every file of a snapshot, resolving its symlinks to blobs."""
    for dirpath, _, filenames in os.walk(src):
        for f in filenames:
            source = Path(dirpath) / f
            target = dst / source.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.unlink(missing_ok=True)
            real = source.resolve()
            try:
                os.link(real, target)
            except OSError:
                shutil.copyfile(real, target)


def huggingface(repo: str, revision: str, token: str | None = None) -> Fetch:
    """Fetch a Hub repository at `revision`; the digest is the commit it resolved to.

    The download goes through huggingface_hub's own cache inside the staging
    folder (resumable blobs; `HF_HUB_OFFLINE` and `HF_ENDPOINT` are honoured
    by the library), then the snapshot's files are linked into place.
    """

    def fetch(staging: Path) -> str:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

        # Inside the staging folder (on the PVC in a Job) so blob downloads
        # resume across pods; HF_HUB_CACHE points elsewhere when set.
        cache = Path(os.environ.get("HF_HUB_CACHE") or staging / HF_CACHE)
        try:
            snapshot = Path(
                snapshot_download(
                    repo_id=repo, revision=revision, cache_dir=cache, token=token or None
                )
            )
        except (HfHubHTTPError, LocalEntryNotFoundError, ValueError) as err:
            raise HydrationError(f"huggingFace {repo}@{revision}: {err}") from err
        commit = snapshot.name
        if not _COMMIT.match(commit):
            raise HydrationError(f"huggingFace {repo}@{revision}: no commit resolved ({commit})")
        _link_tree(snapshot, staging)
        return commit

    return fetch


# ── S3 and S3-compatible stores ──────────────────────────────────────────────


def _progress(staging: Path) -> dict[str, str]:
    try:
        data = json.loads((staging / PROGRESS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _list_objects(client: Any, bucket: str, prefix: str) -> list[tuple[str, str, int]]:
    entries = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            if not obj["Key"].endswith("/"):
                entries.append((obj["Key"], str(obj["ETag"]).strip('"'), int(obj["Size"])))
    return sorted(entries)


def etag_manifest_digest(entries: list[tuple[str, str, int]]) -> str:
    """The digest of a set of objects: sha256 over sorted `relative-key TAB etag TAB size` lines."""
    lines = "".join(f"{k}\t{e}\t{s}\n" for k, e, s in sorted(entries))
    return "s3-etags:sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def s3(
    bucket: str,
    prefix: str,
    region: str | None = None,
    endpoint: str | None = None,
    client_factory: Callable[..., Any] | None = None,
) -> Fetch:
    """Fetch every object under `prefix`; the digest hashes their ETag manifest.

    Credentials come from boto3's usual chain (the Job's AWS_* environment).
    """

    def fetch(staging: Path) -> str:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        factory = client_factory or boto3.client
        client = factory("s3", region_name=region or None, endpoint_url=endpoint or None)
        try:
            return _fetch_objects(client, bucket, prefix, staging)
        except (BotoCoreError, ClientError) as err:
            raise HydrationError(f"s3://{bucket}/{prefix}: {err}") from err

    return fetch


def _fetch_objects(client: Any, bucket: str, prefix: str, staging: Path) -> str:
    entries = _list_objects(client, bucket, prefix)
    if not entries:
        raise HydrationError(f"s3://{bucket}/{prefix}: no objects under this prefix")
    done = _progress(staging)
    manifest = []
    for key, etag, size in entries:
        rel = str(safe_relative(key[len(prefix) :]))
        target = staging / rel
        manifest.append((rel, etag, size))
        if done.get(rel) == etag and target.is_file() and target.stat().st_size == size:
            continue  # staged by an earlier run
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        client.download_file(bucket, key, str(part))
        part.replace(target)
        done[rel] = etag
        (staging / PROGRESS).write_text(json.dumps(done, sort_keys=True), encoding="utf-8")
    return etag_manifest_digest(manifest)


# ── HTTP(S) ──────────────────────────────────────────────────────────────────


class _HTTPOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only to http(s): never to ftp:// or file://."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        """Refuse a redirect that leaves http(s)."""
        if urlsplit(newurl).scheme not in ("http", "https"):
            raise HydrationError(f"refusing redirect to {newurl!r}: not http or https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def read_headers(folder: str | None) -> dict[str, str]:
    """Request headers from a mounted Secret: one file per header name."""
    if not folder:
        return {}
    out = {}
    for entry in sorted(Path(folder).iterdir()):
        if entry.is_file() and not entry.name.startswith("."):
            out[entry.name] = entry.read_text(encoding="utf-8").strip()
    return out


def file_name(url: str) -> str:
    """The staged file's name: the URL path's last segment, else `download`."""
    name = unquote(PurePosixPath(urlsplit(url).path).name)
    return name if name and name not in (".", "..") and "/" not in name else "download"


def _open(url: str, headers: Mapping[str, str], offset: int) -> Any:
    request = urllib.request.Request(url, headers=dict(headers))
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    opener = urllib.request.build_opener(_HTTPOnlyRedirects)
    return opener.open(request, timeout=60)


def _hash_file(path: Path, digest: Any) -> None:
    with path.open("rb") as existing:
        for chunk in iter(lambda: existing.read(CHUNK), b""):
            digest.update(chunk)


def _download(url: str, headers: Mapping[str, str], part: Path, digest: Any) -> None:
    """Fill `part` from `url`, appending to what it holds when the server resumes."""
    offset = part.stat().st_size if part.exists() else 0
    try:
        response = _open(url, headers, offset)
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # nothing left to fetch: `part` is whole
            _hash_file(part, digest)
            return
        raise HydrationError(f"{url}: HTTP {err.code} {err.reason}") from err
    except OSError as err:
        raise HydrationError(f"{url}: {err}") from err
    with response:
        resumed = offset > 0 and response.status == 206
        if resumed:
            _hash_file(part, digest)
        received = _stream(response, part, "ab" if resumed else "wb", digest)
    length = response.headers.get("Content-Length")
    if length is not None and length.isdigit() and received < int(length):
        # Kept for the next run, which resumes it with a Range request.
        raise HydrationError(f"{url}: connection closed after {received} of {length} bytes")


def _stream(response: Any, part: Path, mode: str, digest: Any) -> int:
    received = 0
    with part.open(mode) as out:
        for chunk in iter(lambda: response.read(CHUNK), b""):
            digest.update(chunk)
            out.write(chunk)
            received += len(chunk)
    return received


def http(url: str, sha256: str | None = None, headers: Mapping[str, str] | None = None) -> Fetch:
    """Stream one file; resume a partial download; verify sha256 when given."""

    def fetch(staging: Path) -> str:
        target = staging / file_name(url)
        part = target.with_name(target.name + ".part")
        if target.is_file() and not part.exists():
            target.rename(part)  # verify again what an earlier run finished
        digest = hashlib.sha256()
        _download(url, headers or {}, part, digest)
        actual = digest.hexdigest()
        if sha256 and actual != sha256.lower():
            part.unlink()
            raise HydrationError(f"{url}: sha256 {actual} does not match the expected {sha256}")
        part.replace(target)
        return f"sha256:{actual}"

    return fetch


# ── Inline ───────────────────────────────────────────────────────────────────


def inline(content: str, name: str) -> Fetch:
    """Write the content as one file; the digest is its sha256."""

    def fetch(staging: Path) -> str:
        data = content.encode()
        (staging / str(safe_relative(name))).write_bytes(data)
        return "sha256:" + hashlib.sha256(data).hexdigest()

    return fetch
