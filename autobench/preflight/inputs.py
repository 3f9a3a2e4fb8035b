"""What a prediction needs from a recipe: the configs at the pinned revisions, the serve options,
the vLLM version and the weights' size.

Configs come from a local folder (``--target-config`` / ``--draft-config``), else through
``autobench.hub.Resolver`` (online, or the local HF cache when offline, exactly as ``lock`` reads
them).  The vLLM version comes from ``--vllm-version``, else the image tag (``:v0.23.1``), else the
table of known images below; otherwise preflight says it cannot predict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from autobench.digits import load_json
from autobench.errors import AutobenchError, PreflightError
from autobench.files import read_regular
from autobench.preflight.layout import ServeOptions
from autobench.preflight.versions import Version, parse_version

if TYPE_CHECKING:
    from autobench.hub.client import Hub, HubSettings
    from autobench.recipe.schema import Recipe

# Images whose tag does not say the version, with where the mapping comes from.
KNOWN_IMAGES: dict[str, tuple[str, str]] = {
    "vllm/vllm-openai:nightly-aarch64": (
        "0.23.1",
        "the seed page (2026-06-24) ran nightly-aarch64 as vLLM 0.23.1; a floating tag moves, pin a digest",
    ),
}
_TAG_VERSION = re.compile(r":v?(\d+\.\d+(?:\.\d+)?)(?:$|[-+._])")


@dataclass(frozen=True)
class VersionPick:
    version: Version
    source: str  # how it was found


def vllm_version(image: str, flag: str | None) -> VersionPick:
    if flag:
        return VersionPick(parse_version(flag), "--vllm-version")
    if not image:  # a process-only recipe
        raise PreflightError(
            "cannot predict: the recipe has no container image, so no tag says its vLLM version",
            hint="pass --vllm-version X.Y.Z (the version `vllm serve` runs), or set container.vllm_version",
        )
    base = image.split("@", 1)[0]
    m = _TAG_VERSION.search(base)
    if m:
        return VersionPick(parse_version(m.group(1)), f"image tag {base}")
    if base in KNOWN_IMAGES:
        version, why = KNOWN_IMAGES[base]
        return VersionPick(parse_version(version), f"known image {base} ({why})")
    raise PreflightError(
        f"cannot predict: the vLLM version of image {image} is unknown (its tag names no version)",
        hint="pass --vllm-version X.Y.Z (the version the image runs)",
    )


def serve_options(recipe: Recipe) -> ServeOptions:
    e = recipe.engine
    spec = recipe.speculative
    if not e.max_model_len:
        raise PreflightError(
            "cannot predict: engine.max_model_len is not set (vLLM would take the model's own maximum)",
            hint="set engine.max_model_len in the recipe",
        )
    if e.max_model_len == "auto":  # the schema allows it: vLLM then fits the length to the KV cache it finds
        raise PreflightError(
            "cannot predict: engine.max_model_len is auto (vLLM fits it to the KV cache it measures at boot)",
            hint="set engine.max_model_len to the length to predict for",
        )
    block = _extra_int(e.extra_args, "--block-size")
    return ServeOptions(
        max_model_len=e.max_model_len,
        tensor_parallel_size=e.tensor_parallel_size or 1,
        dtype=e.dtype,
        kv_cache_dtype=e.kv_cache_dtype,
        block_size=block,
        enable_prefix_caching=e.enable_prefix_caching,
        max_num_batched_tokens=e.max_num_batched_tokens,
        spec_method=spec.method if spec else None,
        num_speculative_tokens=(spec.num_speculative_tokens or 0) if spec else 0,
    )


def _extra_int(args: list[str], flag: str) -> int | None:
    for i, arg in enumerate(args):
        value = None
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
        if value is not None:
            try:
                return int(value)
            except ValueError:
                raise PreflightError(
                    f"cannot predict: {flag} {value!r} is not an integer", hint="fix the flag"
                ) from None
    return None


@dataclass
class Loaded:
    config: dict[str, Any]
    source: str  # repo@sha or a folder
    weights_bytes: int | None


#: A model's config.json is a few KB, a weight index a few MB; 16 MiB is beyond any real one.
MAX_CONFIG_BYTES = 16 * 2**20


def read_local(path: str | Path) -> Loaded:
    p = Path(path)
    file = p / "config.json" if p.is_dir() else p
    try:
        config = load_json(read_regular(file, what="model config", limit=MAX_CONFIG_BYTES, error=PreflightError))
    except ValueError as exc:
        raise PreflightError(f"{file} is not JSON ({exc})", hint="pass a transformers config.json") from exc
    weights = None
    index = file.parent / "model.safetensors.index.json"
    if index.is_file():
        weights = _index_total(index)
    return Loaded(config, str(file.parent), weights)


def read_model_dir(path: str, key: str) -> Loaded:
    """The config.json of a local model directory (``key`` names it in the recipe): read from the
    directory itself; a missing directory or config is one line naming it as a local directory
    (never a Hub download hint: there is nothing on the Hub to download)."""
    folder = Path(path)
    if not (folder / "config.json").is_file():
        what = "has no config.json" if folder.is_dir() else "does not exist on this machine"
        raise PreflightError(
            f"cannot predict: {key} is the local model directory {path}, which {what}",
            hint="run preflight where the directory is, or pass --target-config / --draft-config with its config.json",
        )
    return read_local(folder)


def _index_total(path: Path) -> int | None:
    try:
        raw = read_regular(path, what="weight index", limit=MAX_CONFIG_BYTES, error=PreflightError)
        total = load_json(raw).get("metadata", {}).get("total_size")
    except (PreflightError, ValueError, AttributeError):
        return None
    return int(total) if isinstance(total, int | float) else None


class HubReader(Protocol):
    """What preflight reads from the Hub: ``autobench.hub.resolve.Resolver`` (or a wrapper of it)."""

    @property
    def settings(self) -> HubSettings: ...
    @property
    def hub(self) -> Hub: ...
    def sha(self, repo: str, label: str) -> str: ...
    def config(self, repo: str, sha: str, *, label: str | None = None) -> dict[str, Any]: ...
    def file(
        self, repo: str, sha: str, filename: str, *, label: str | None = None, required: bool = True
    ) -> Path | None: ...


def read_hub(resolver: HubReader, repo: str, revision: str | None, *, weights: bool) -> Loaded:
    """config.json at the revision (Hub or HF cache) and, if asked, the weights' total size."""
    sha = resolver.sha(repo, revision or "main")
    config = resolver.config(repo, sha, label=revision)
    source = f"{repo}@{sha[:7]}"
    total = None
    if weights:
        try:
            index = resolver.file(repo, sha, "model.safetensors.index.json", required=False)
        except AutobenchError:
            index = None
        if index is not None:
            total = _index_total(Path(index))
        if total is None and not resolver.settings.offline:
            info = resolver.hub.model_info(repo, sha, files_metadata=True)
            sizes = [s.size or 0 for s in (info.siblings or []) if s.rfilename.endswith(".safetensors")]
            total = sum(sizes) or None
    return Loaded(config, source, total)
