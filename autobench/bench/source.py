"""Where the bench's dataset file comes from, verified and recorded (issue #33, docs/datasets.md).

``dataset_source(...)`` gives the file to read before a single request is sent:

- a Hub dataset (``repo``, ``file``, ``revision``): fetched through huggingface_hub into the HF
  cache, or read from it (a pinned sha already cached needs no network; ``HF_HUB_OFFLINE=1``
  reads the cache only), checked against ``sha256`` (autobench.hub.datasets.fetch_dataset);
- a local file: hashed (at most ``MAX_DATASET_BYTES``) and checked against ``sha256`` when given.

The result records ``repo``, ``revision`` (the commit), ``file`` and ``file_sha256`` beside the
sample's ``prompts_sha256``; the run's ledger row gets them too (autobench.runrow).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from autobench.bench.records import MAX_DATASET_BYTES
from autobench.errors import BenchError
from autobench.hub.datasets import DatasetFile

_CHUNK = 1 << 20


def local_file(path: str, expected: str | None = None) -> DatasetFile:
    """A local dataset file, recorded by its sha256 (refused when it is not ``expected``).  Read
    at most MAX_DATASET_BYTES + 1 bytes: a file that never ends is not hashed forever."""
    p = Path(path).expanduser()
    h = hashlib.sha256()
    size = 0
    try:
        with p.open("rb") as f:
            while chunk := f.read(_CHUNK):
                size += len(chunk)
                if size > MAX_DATASET_BYTES:
                    raise BenchError(
                        f"dataset file is over {MAX_DATASET_BYTES:,} bytes", location=str(p), hint="use a smaller file"
                    )
                h.update(chunk)
    except OSError as exc:
        raise BenchError(f"cannot read the dataset file ({exc.strerror or exc})", location=str(p)) from exc
    digest = h.hexdigest()
    if expected is not None and digest != expected:
        raise BenchError(
            f"dataset file has sha256 {digest}, not {expected} (bench.dataset.sha256)",
            location=str(p),
            hint="the file changed: restore it, or write its new sha256 in the recipe (--dataset-sha256)",
        )
    return DatasetFile(p, digest, size, "local")


def hub_file(
    repo: str,
    file: str,
    revision: str | None,
    expected: str | None,
    expected_from: str,
) -> DatasetFile:
    """A Hub dataset file on this machine (HF_ENDPOINT, HF_HOME, HF_HUB_OFFLINE read now)."""
    from autobench.hub.client import HubSettings
    from autobench.hub.datasets import fetch_dataset
    from autobench.hub.resolve import Resolver

    return fetch_dataset(
        Resolver(HubSettings.from_env()), repo, revision, file, expected=expected, expected_from=expected_from
    )
