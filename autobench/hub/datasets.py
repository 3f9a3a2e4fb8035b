"""A bench dataset file from a Hub dataset repo, pinned like a model (issue #33, docs/datasets.md).

``bench.dataset: {repo, file, revision[, sha256]}`` names one file of a dataset repo.  What
huggingface_hub (2.5) does with ``repo_type="dataset"``, read in its source:

- ``HfApi.dataset_info(repo, revision=...)`` asks ``GET /api/datasets/{repo}/revision/{rev}``
  (``hf_api.py``); the answer's ``sha`` is the commit.  ``files_metadata=True`` (``?blobs=True``)
  gives each sibling its size, git blob id and, for an LFS file, ``lfs.sha256``.
- ``hf_hub_download(..., repo_type="dataset")`` fetches ``{endpoint}/datasets/{repo}/resolve/
  {rev}/{file}`` (``file_download.hf_hub_url``: ``REPO_TYPES_URL_PREFIXES``) into
  ``<cache>/datasets--{ns}--{name}/snapshots/<sha>/<file>`` (``repo_folder_name``), a link to
  ``blobs/<etag>``.  It trusts the ETag and does not hash what it wrote: we do.

The file's sha256 is checked against the recipe's ``sha256`` (else the lock file's, for the same
repo, commit and file), and against the Hub's own LFS sha256 when the Hub gives one.  A file that
does not match is removed from the cache (the snapshot link and its blob) and refused: one line.
A pinned sha whose file is in the cache is read from there without a network call, so a run
works offline once ``lock`` (or a first run) has fetched it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from autobench.errors import HubError
from autobench.hub.client import ref
from autobench.hub.resolve import (
    Resolver,
    cached_missing,
    cached_sha,
    is_sha,
    not_cached,
    read_cached_file,
    utc_now,
    write_ref,
)

if TYPE_CHECKING:
    from huggingface_hub.hf_api import DatasetInfo

REPO_TYPE = "dataset"
_CHUNK = 1 << 20


class DatasetMismatch(HubError):
    """A dataset file whose sha256 is not the one expected (it was removed from the cache)."""

    def __init__(self, message: str, *, hint: str, expected_from: str):
        super().__init__(message, hint=hint)
        self.expected_from = expected_from


@dataclass(frozen=True)
class DatasetFile:
    """One verified dataset file on this machine and where it came from."""

    path: Path  # the file to read (a Hub file: its snapshot path in the HF cache)
    sha256: str
    size: int
    source: Literal["hub", "cache", "local"]
    repo: str | None = None  # None: a local file
    file: str | None = None  # the file inside the repo
    sha: str | None = None  # the repo's commit
    resolved_at: str | None = None


def file_sha256(path: Path) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of ``path``, read in 1 MiB chunks."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _hash(path: Path, where: str, what: str) -> tuple[str, int]:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise HubError(f"{where}: cannot read {what} ({exc.strerror or exc})", location=str(path)) from exc


def _remove(path: Path) -> None:
    """Remove a cached file: the snapshot link and the blob it points to (best effort)."""
    try:
        blob = path.resolve() if path.is_symlink() else None
        path.unlink(missing_ok=True)
        if blob is not None:
            blob.unlink(missing_ok=True)
    except OSError:
        pass


def _hub_sha256(info: DatasetInfo, file: str) -> str | None:
    """The Hub's LFS sha256 of ``file`` (None: not listed as LFS, or no file list)."""
    for sib in info.siblings or []:
        if sib.rfilename == file and sib.lfs is not None:
            return str(sib.lfs.sha256)
    return None


def _listed(info: DatasetInfo, file: str) -> bool:
    return info.siblings is None or any(sib.rfilename == file for sib in info.siblings)


def _no_such_file(repo: str, label: str, file: str, info: DatasetInfo | None, endpoint: str) -> HubError:
    names = sorted(sib.rfilename for sib in ((info.siblings if info is not None else None) or []))
    near = [n for n in names if PurePosixPath(n).suffix == PurePosixPath(file).suffix][:5]
    listed = f"; files of that kind there: {', '.join(near)}" if near else f"; it has {len(names)} files"
    return HubError(
        f"{ref(repo, label)}: the dataset repo has no file {file!r} at this revision{listed}",
        hint=f"set bench.dataset.file to a path the repo has (see {endpoint}/datasets/{repo}/tree/{label})",
    )


def verify(path: Path, where: str, file: str, expected: str | None, expected_from: str, hub: str | None) -> str:
    """The file's sha256 after checking it against ``expected`` and the Hub's LFS sha256; a file
    that matches neither is removed and refused."""
    digest, _ = _hash(path, where, file)
    for want, source in ((expected, expected_from), (hub, "the Hub's LFS sha256")):
        if want is not None and digest != want:
            _remove(path)
            raise DatasetMismatch(
                f"{where}: {file} has sha256 {digest}, not {want} ({source}); the file was removed from the cache",
                hint="a corrupt or changed download: run again to fetch it anew; if the Hub still serves it, "
                f"check {expected_from} and the repo's commit",
                expected_from=source,
            )
    return digest


def fetch_dataset(
    resolver: Resolver,
    repo: str,
    revision: str | None,
    file: str,
    *,
    expected: str | None = None,
    expected_from: str = "bench.dataset.sha256",
) -> DatasetFile:
    """``file`` of dataset ``repo`` at ``revision`` (branch, tag or sha; None: main) on this
    machine, verified.  A full sha already in the cache is read without the network."""
    revision = revision or "main"
    s = resolver.settings
    where = ref(repo, revision)
    if is_sha(revision) or s.offline:
        sha = cached_sha(s, repo, revision, REPO_TYPE)
        path = read_cached_file(s, repo, sha, file, REPO_TYPE) if sha else None
        if sha is not None and path is not None:
            digest = verify(path, f"{repo}@{sha}", file, expected, expected_from, None)
            return DatasetFile(path, digest, path.stat().st_size, "cache", repo, file, sha, utc_now())
        if s.offline:
            if sha is not None and cached_missing(s, repo, sha, file, REPO_TYPE):
                raise _no_such_file(repo, revision, file, None, s.endpoint)
            raise not_cached(s, repo, revision, what=f"{file} of ", repo_type=REPO_TYPE)
    info = resolver.hub.dataset_info(repo, revision, files_metadata=True)
    if not is_sha(info.sha):
        raise HubError(f"{where}: the Hub returned no commit sha", hint="check HF_ENDPOINT")
    sha = info.sha
    if not _listed(info, file):
        raise _no_such_file(repo, revision, file, info, s.endpoint)
    write_ref(s, repo, revision, sha, REPO_TYPE)
    path = resolver.hub.download(repo, file, sha, label=revision, repo_type=REPO_TYPE)
    digest = verify(path, f"{repo}@{sha}", file, expected, expected_from, _hub_sha256(info, file))
    return DatasetFile(path, digest, os.path.getsize(path), "hub", repo, file, sha, utc_now())


def file_ids(resolver: Resolver, repo: str, file: str, old: str, new: str) -> tuple[str | None, str | None]:
    """The identity of ``file`` at two commits (LFS sha256, else git blob id; None: absent), for
    ``outdated``: online only (``dataset_info`` with file metadata at each commit)."""

    def one(sha: str) -> str | None:
        info = resolver.hub.dataset_info(repo, sha, files_metadata=True)
        for sib in info.siblings or []:
            if sib.rfilename == file:
                return f"sha256:{sib.lfs.sha256}" if sib.lfs is not None else f"blob:{sib.blob_id}"
        return None

    return one(old), one(new)
