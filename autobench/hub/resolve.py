"""Revision -> full 40-hex commit sha, plus the config.json at that sha; online or from the HF cache.

Online:  ``model_info(repo, revision=label)`` (fresh or fail: it raises instead of silently falling
         back to the cache), then ``hf_hub_download("config.json", revision=<sha>)`` into the real
         cache, and ``refs/<label>`` is recorded so the same label resolves offline later.
Offline: ``<cache>/models--<ns>--<name>/refs/<label>`` gives the sha (a full sha is taken as is)
         and ``snapshots/<sha>/config.json`` the config; nothing is sent anywhere.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from autobench.digits import load_json as load_json_text
from autobench.errors import HubError
from autobench.hub.client import CACHE_HINT, Hub, HubSettings, ref
from autobench.recipe.facts import is_full_sha

if TYPE_CHECKING:
    from huggingface_hub.hf_api import ModelInfo


def is_sha(revision: str | None) -> TypeGuard[str]:
    """A full 40-hex commit sha (``autobench.recipe.facts.is_full_sha``, the one pattern)."""
    return is_full_sha(revision)


def repo_folder(settings: HubSettings, repo: str, repo_type: str = "model") -> Path:
    """``<cache>/models--ns--name`` (``datasets--ns--name`` for a dataset repo), as
    huggingface_hub's ``file_download.repo_folder_name`` names it."""
    return settings.cache_dir / (f"{repo_type}s--" + repo.replace("/", "--"))


def not_cached(settings: HubSettings, repo: str, revision: str, what: str = "", repo_type: str = "model") -> HubError:
    hint = CACHE_HINT.format(repo=repo, rev=revision)
    if repo_type != "model":
        hint = hint.replace("download ", f"download --repo-type {repo_type} ")
    return HubError(f"{what}{ref(repo, revision)} is not in the local HF cache at {settings.cache_dir}", hint=hint)


def cached_sha(settings: HubSettings, repo: str, revision: str, repo_type: str = "model") -> str | None:
    """The sha ``revision`` resolves to in the local cache, or None."""
    folder = repo_folder(settings, repo, repo_type)
    if is_sha(revision):
        return revision if (folder / "snapshots" / revision).is_dir() else None
    try:
        sha = (folder / "refs" / revision).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return sha if is_sha(sha) else None


def write_ref(settings: HubSettings, repo: str, label: str, sha: str, repo_type: str = "model") -> None:
    """Record ``refs/<label>`` = sha (atomic), as huggingface_hub's resolve_revision does."""
    if is_sha(label) or label == sha:
        return
    path = repo_folder(settings, repo, repo_type) / "refs" / label
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == sha:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_text(sha, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise HubError(
            f"{ref(repo, label)}: cannot write the HF cache at {settings.cache_dir} ({exc.strerror})",
            hint="check HF_HOME / HF_HUB_CACHE points to a writable directory",
        ) from exc


def read_cached_file(
    settings: HubSettings, repo: str, sha: str, filename: str, repo_type: str = "model"
) -> Path | None:
    """snapshots/<sha>/<filename> from the cache via huggingface_hub's own lookup, else None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, filename, cache_dir=str(settings.cache_dir), revision=sha, repo_type=repo_type)
    return Path(found) if isinstance(found, str) else None


def cached_missing(settings: HubSettings, repo: str, sha: str, filename: str, repo_type: str = "model") -> bool:
    """True if the cache recorded that ``filename`` does not exist at ``sha`` (.no_exist marker)."""
    return (repo_folder(settings, repo, repo_type) / ".no_exist" / sha / filename).exists()


def load_json(path: Path, repo: str, revision: str, filename: str) -> dict[str, Any]:
    try:
        data = load_json_text(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HubError(
            f"{ref(repo, revision)}: {filename} is not readable JSON ({exc})",
            hint=f"delete {path.parent} from the HF cache and lock again",
        ) from exc
    if not isinstance(data, dict):
        raise HubError(
            f"{ref(repo, revision)}: {filename} is not a JSON object",
            hint="pin a revision with a transformers-style config.json",
        )
    return data


@dataclass
class Resolved:
    """One Hub reference resolved to a commit."""

    repo: str
    label: str
    sha: str
    config: dict[str, Any]
    resolved_at: str
    source: str  # "hub" | "cache"
    info: ModelInfo | None = None  # when online
    files: dict[str, Path] = field(default_factory=dict)  # other small files read (tokenizer_config.json)


def utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class Resolver:
    """Resolves (repo, revision) pairs; one Hub client per command run, created lazily."""

    def __init__(self, settings: HubSettings):
        self.settings = settings
        self._hub: Hub | None = None

    @property
    def hub(self) -> Hub:
        if self._hub is None:
            self._hub = Hub(self.settings)
        return self._hub

    # -- sha only ------------------------------------------------------------------------------
    def sha(self, repo: str, label: str, repo_type: str = "model") -> str:
        """Where ``label`` points now (online), or in the local cache (offline)."""
        if self.settings.offline:
            sha = cached_sha(self.settings, repo, label, repo_type)
            if sha is None:
                raise not_cached(self.settings, repo, label, repo_type=repo_type)
            return sha
        info = self.hub.dataset_info(repo, label) if repo_type == "dataset" else self.hub.model_info(repo, label)
        sha = info.sha
        if not is_sha(sha):
            raise HubError(f"{ref(repo, label)}: the Hub returned no commit sha", hint="check HF_ENDPOINT")
        write_ref(self.settings, repo, label, sha, repo_type)
        return sha

    # -- config ---------------------------------------------------------------------------------
    def file(
        self, repo: str, sha: str, filename: str, *, label: str | None = None, required: bool = True
    ) -> Path | None:
        path = read_cached_file(self.settings, repo, sha, filename)
        if path is not None:
            return path
        if self.settings.offline:
            if not required:
                return None
            if cached_missing(self.settings, repo, sha, filename):
                raise HubError(
                    f"{ref(repo, label or sha)}: the Hub has no {filename} at this revision",
                    hint=f"pin a revision of {repo} that contains {filename}",
                )
            raise not_cached(self.settings, repo, label or sha, what=f"{filename} of ")
        return self.hub.download(repo, filename, sha, label=label)

    def config(self, repo: str, sha: str, *, label: str | None = None) -> dict[str, Any]:
        path = self.file(repo, sha, "config.json", label=label)
        assert path is not None
        return load_json(path, repo, label or sha, "config.json")

    # -- everything lock needs ------------------------------------------------------------------
    def resolve(self, repo: str, revision: str | None, *, label: str | None = None) -> Resolved:
        """Resolve ``revision`` (branch, tag or sha) to a sha and read config.json there.

        ``label`` is the human ref recorded with the pin (defaults to ``revision``).
        """
        revision = revision or "main"
        label = label or revision
        s = self.settings
        if s.offline:
            sha = self.sha(repo, revision)
            config = self.config(repo, sha, label=revision)
            files = {}
            for name in ("tokenizer_config.json", "chat_template.jinja"):
                path = self.file(repo, sha, name, required=False)
                if path is not None:
                    files[name] = path
            return Resolved(repo, label, sha, config, utc_now(), "cache", None, files)
        info = self.hub.model_info(repo, revision, files_metadata=True)
        if not is_sha(info.sha):
            raise HubError(f"{ref(repo, revision)}: the Hub returned no commit sha", hint="check HF_ENDPOINT")
        sha = info.sha
        write_ref(s, repo, revision, sha)
        config = self.config(repo, sha, label=revision)
        names = {sib.rfilename for sib in (info.siblings or [])}
        files = {}
        if "tokenizer_config.json" in names and "chat_template.jinja" not in names:
            path = self.file(repo, sha, "tokenizer_config.json", label=revision, required=False)
            if path is not None:
                files["tokenizer_config.json"] = path
        return Resolved(repo, label, sha, config, utc_now(), "hub", info, files)
