"""The one door to huggingface_hub: settings read at call time, bounded calls, translated errors.

huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE / HF_HOME once, at import.  We never rely on
that: ``HubSettings.from_env()`` reads the environment when a command runs and every call gets an
explicit ``endpoint=``, ``cache_dir=`` and ``token=``.  Offline mode never calls the client's
network functions at all (see ``resolve.py``).

Bounded time: every API call passes ``timeout=``; file downloads pass a small ``etag_timeout`` and
run in a daemon worker with a deadline, because on a timeout the client silently retries with a
60 s timeout and 5 backoff rounds.

Every huggingface_hub / httpx2 / OS exception becomes ONE HubError line naming the repo, the
revision and the fix.  The token is never part of a message (``redact``).
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from autobench.digits import MAX_JSON_DEPTH, is_digits, json_depth
from autobench.errors import AutobenchError, HubError
from autobench.files import read_regular

if TYPE_CHECKING:
    from huggingface_hub.hf_api import DatasetInfo, ModelInfo

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT = 10.0
#: Largest Hub API answer read (bytes on the wire): model_info of a repo with thousands of files
#: with metadata is a few MB; a 300 MB answer is not a Hub's.
MAX_API_BODY = 32 * 1024 * 1024
MAX_REDIRECTS = 10
T = TypeVar("T")

CACHE_HINT = "run `autobench lock` online once, or `huggingface-cli download {repo} --revision {rev}`"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def hf_home(env: dict[str, str] | os._Environ[str]) -> Path:
    home = env.get("HF_HOME")
    if home:
        return Path(home).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface"


def stored_token(env: dict[str, str] | os._Environ[str]) -> str | None:
    """HF_TOKEN, else the token huggingface_hub stores (``hf auth login``) -- read at call time."""
    token = (env.get("HF_TOKEN") or "").strip()
    if token:
        return token
    path = Path(env["HF_TOKEN_PATH"]).expanduser() if env.get("HF_TOKEN_PATH") else hf_home(env) / "token"
    try:  # a token is ~40 bytes: a token path naming /dev/zero or a FIFO must not hang or fill memory
        token = read_regular(path, what="token file", limit=64 * 1024).decode("utf-8").strip()
    except (AutobenchError, UnicodeDecodeError):
        return None
    return token or None


@dataclass(frozen=True)
class HubSettings:
    endpoint: str
    cache_dir: Path
    offline: bool
    timeout: float
    token: str | None = field(default=None, repr=False)  # never printed

    @classmethod
    def from_env(
        cls, *, offline: bool | None = None, timeout: float | None = None, env: dict[str, str] | None = None
    ) -> HubSettings:
        env_ = os.environ if env is None else env
        cache = env_.get("HF_HUB_CACHE")
        cache_dir = Path(cache).expanduser() if cache else hf_home(env_) / "hub"
        if timeout is None:
            raw = env_.get("AUTOBENCH_HUB_TIMEOUT")
            try:
                timeout = float(raw) if raw else DEFAULT_TIMEOUT
            except ValueError as exc:
                raise HubError(
                    f"AUTOBENCH_HUB_TIMEOUT={raw!r} is not a number of seconds", hint="set it to e.g. 10"
                ) from exc
        if timeout <= 0:
            raise HubError(f"timeout must be positive, got {timeout}", hint="pass e.g. --timeout 10")
        offline_ = bool(offline) or _truthy(env_.get("HF_HUB_OFFLINE")) or _truthy(env_.get("TRANSFORMERS_OFFLINE"))
        return cls(
            endpoint=(env_.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            cache_dir=cache_dir,
            offline=offline_,
            timeout=float(timeout),
            token=stored_token(env_),
        )

    def redact(self, text: str) -> str:
        return text.replace(self.token, "***") if self.token else text


class HubAnswerTooLarge(Exception):
    """An API answer longer than :data:`MAX_API_BODY` (refused while it is read)."""

    def __init__(self, size: int | None):
        super().__init__(f"answer larger than {MAX_API_BODY} bytes")
        self.size = size


class HubAnswerTooDeep(Exception):
    """An API answer nesting deeper than :data:`autobench.digits.MAX_JSON_DEPTH`."""

    def __init__(self, depth: int):
        super().__init__(f"answer nested {depth} levels deep")
        self.depth = depth


class DeadlineExceeded(TimeoutError):
    """A whole call (connect, every read, retries) took longer than its deadline: a server that
    trickles bytes keeps every single read within the read timeout."""

    def __init__(self, seconds: float):
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


def _bounded_stream(inner: Any, limit: int) -> Any:
    """``inner`` (a response byte stream) stopping with HubAnswerTooLarge past ``limit`` bytes."""
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        def __init__(self) -> None:
            self.seen = 0

        def __iter__(self) -> Any:
            # Held whole (huggingface_hub reads an API answer whole anyway) so that its nesting is
            # checked before huggingface_hub parses it: JSON nested past MAX_JSON_DEPTH was a
            # RecursionError inside the library (an internal error).
            chunks: list[bytes] = []
            for chunk in inner:
                self.seen += len(chunk)
                if self.seen > limit:
                    self.close()
                    raise HubAnswerTooLarge(None)
                chunks.append(chunk)
            body = b"".join(chunks)
            if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH:
                depth = json_depth(body.decode("utf-8", errors="replace"))
                if depth > MAX_JSON_DEPTH:
                    raise HubAnswerTooDeep(depth)
            yield body

        def close(self) -> None:
            close = getattr(inner, "close", None)
            if close is not None:
                close()

    return BoundedStream()


def _identity_encoding(request: Any) -> None:
    if request.url.path.startswith("/api/"):
        request.headers["Accept-Encoding"] = "identity"  # the size bound is then the JSON's size


def _bounded_response(response: Any) -> None:
    """Hub API answers are read at most MAX_API_BODY bytes (huggingface_hub reads them whole)."""
    if not response.request.url.path.startswith("/api/"):
        return  # file downloads stream to disk
    length = response.headers.get("content-length", "")
    if is_digits(length) and int(length) > MAX_API_BODY:
        response.close()
        raise HubAnswerTooLarge(int(length))
    response.stream = _bounded_stream(response.stream, MAX_API_BODY)


def _client_factory() -> Any:
    """huggingface_hub's own client, plus the API answer bound and a redirect limit."""
    from huggingface_hub.utils._http import default_client_factory

    client = default_client_factory()
    hooks = client.event_hooks
    hooks.setdefault("request", []).append(_identity_encoding)
    hooks.setdefault("response", []).append(_bounded_response)
    client.event_hooks = hooks
    client.max_redirects = MAX_REDIRECTS
    return client


_FACTORY_SET = False


def _install_client_factory() -> None:
    global _FACTORY_SET
    if not _FACTORY_SET:
        from huggingface_hub import set_client_factory

        set_client_factory(_client_factory)
        _FACTORY_SET = True


def ref(repo: str, revision: str | None) -> str:
    return f"{repo}@{revision or 'main'}"


def translate(
    exc: BaseException,
    settings: HubSettings,
    repo: str,
    revision: str | None,
    *,
    filename: str | None = None,
    repo_type: str = "model",
) -> HubError:
    """Map any exception raised by huggingface_hub / httpx2 / the OS to one HubError line."""
    import httpx2
    from huggingface_hub import errors as hf

    where = ref(repo, revision)
    endpoint = settings.endpoint
    status = getattr(getattr(exc, "response", None), "status_code", None)
    net_hint = (
        "check the network and HF_ENDPOINT, raise --timeout / AUTOBENCH_HUB_TIMEOUT, or work from "
        "the local HF cache with --offline / HF_HUB_OFFLINE=1"
    )
    # Order matters: GatedRepoError < RepositoryNotFoundError; Remote/LocalEntryNotFound < EntryNotFound.
    page = f"{endpoint}/{repo}" if repo_type == "model" else f"{endpoint}/{repo_type}s/{repo}"
    if isinstance(exc, hf.GatedRepoError):
        msg, hint = (
            f"{where}: gated repo, this token has no access ({status or 'denied'})",
            f"accept the repo's conditions at {page} with the account whose token is in HF_TOKEN (or `hf auth login`)",
        )
    elif isinstance(exc, hf.RepositoryNotFoundError):
        msg, hint = (
            f"{where}: repository not found on {endpoint} (or private and not visible to this token)",
            "check the repo id (owner/name) in the recipe; for a private repo set HF_TOKEN",
        )
    elif isinstance(exc, hf.RevisionNotFoundError):
        msg, hint = (
            f"{where}: revision {revision!r} not found in the repo",
            f"use an existing branch, tag or full 40-hex sha (`autobench hub info {repo}` shows main)",
        )
    elif isinstance(exc, hf.RemoteEntryNotFoundError):
        name = filename or "file"
        msg, hint = (
            f"{where}: the Hub has no {name} at this revision",
            f"pin a revision of {repo} that contains {name} (is it a transformers model repo?)"
            if repo_type == "model"
            else f"name a file the dataset repo has at this revision (its file list: {page}/tree/{revision or 'main'})",
        )
    elif isinstance(exc, hf.LocalEntryNotFoundError | hf.RevisionResolutionError | hf.OfflineModeIsEnabled):
        name = f"{filename} of " if filename else ""
        msg, hint = (
            f"{name}{where} is not in the local HF cache at {settings.cache_dir}",
            CACHE_HINT.format(repo=repo, rev=revision or "main"),
        )
    elif isinstance(exc, hf.HFValidationError):
        msg, hint = (
            f"{where}: invalid repo id or revision ({str(exc).splitlines()[0]})",
            "write the repo as owner/name and the revision as a branch, tag or 40-hex sha",
        )
    elif isinstance(exc, hf.HfHubHTTPError) and status == 401:
        msg, hint = (
            f"{where}: the Hub rejected the token (401 Unauthorized: invalid credentials)",
            "HF_TOKEN (or the stored token) is wrong or expired: create a new one at "
            f"{endpoint}/settings/tokens, or unset HF_TOKEN for public repos",
        )
    elif isinstance(exc, hf.HfHubHTTPError) and status == 403:
        msg, hint = (
            f"{where}: the Hub refused access (403 Forbidden)",
            "use a token with read access to this repo (HF_TOKEN)",
        )
    elif isinstance(exc, hf.HfHubHTTPError) and status == 429:
        msg, hint = (f"{where}: rate limited by the Hub (429)", "wait a minute and retry, or set HF_TOKEN")
    elif isinstance(exc, hf.HfHubHTTPError):
        msg, hint = (f"{where}: the Hub answered HTTP {status}", net_hint)
    elif isinstance(exc, DeadlineExceeded):
        msg, hint = (
            f"{where}: {endpoint} did not finish answering within {exc.seconds:g} s "
            f"(each read waits at most {settings.timeout:g} s)",
            net_hint,
        )
    elif isinstance(exc, httpx2.TimeoutException | TimeoutError):
        msg, hint = (f"{where}: no answer from {endpoint} within {settings.timeout:g} s", net_hint)
    elif isinstance(exc, HubAnswerTooLarge):
        msg, hint = (
            f"{where}: {endpoint} sent an answer larger than {MAX_API_BODY // (1024 * 1024)} MiB; "
            "a Hub's API answers are far smaller",
            "check HF_ENDPOINT",
        )
    elif isinstance(exc, HubAnswerTooDeep | RecursionError):
        msg, hint = (
            f"{where}: {endpoint} sent an answer nested more than {MAX_JSON_DEPTH} levels deep; "
            "a Hub's API answers nest a few levels",
            "check HF_ENDPOINT",
        )
    elif isinstance(exc, httpx2.TooManyRedirects):
        msg, hint = (
            f"{where}: {endpoint} redirects in a loop (more than {MAX_REDIRECTS} redirects)",
            "check HF_ENDPOINT",
        )
    elif isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        msg, hint = (
            f"{where}: {endpoint} does not answer like a Hugging Face Hub (its answer is not JSON)",
            "check HF_ENDPOINT (a proxy or login page may be answering instead)",
        )
    elif isinstance(exc, httpx2.TransportError):
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        msg, hint = (f"{where}: cannot reach {endpoint} ({reason})", net_hint)
    elif isinstance(exc, hf.FileMetadataError):
        msg, hint = (f"{where}: {endpoint} does not answer like a Hugging Face Hub", "check HF_ENDPOINT")
    elif isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        msg, hint = (
            f"{where}: cannot use the HF cache at {settings.cache_dir} ({reason})",
            "check HF_HOME / HF_HUB_CACHE points to a writable directory",
        )
    else:
        raise exc  # not ours to translate: a bug, surfaced by the CLI's internal-error path
    return HubError(settings.redact(msg), hint=settings.redact(hint))


def with_deadline(fn: Callable[[], T], seconds: float) -> T:
    """Run ``fn`` in a daemon thread; raise TimeoutError if it has not finished after ``seconds``."""
    box: queue.Queue[tuple[T] | BaseException] = queue.Queue(maxsize=1)  # (the value,) or what fn raised

    def work() -> None:
        try:
            box.put((fn(),))
        except BaseException as exc:  # handed to the caller
            box.put(exc)

    threading.Thread(target=work, name="autobench-hub", daemon=True).start()
    try:
        got = box.get(timeout=seconds)
    except queue.Empty:
        raise DeadlineExceeded(seconds) from None
    if isinstance(got, BaseException):
        raise got
    return got[0]


class Hub:
    """Online access: an HfApi with explicit endpoint/token, bounded calls, translated errors."""

    def __init__(self, settings: HubSettings):
        from huggingface_hub import HfApi

        _install_client_factory()
        self.settings = settings
        self.api = HfApi(endpoint=settings.endpoint, token=settings.token or False, library_name="autobench")

    def _token(self) -> str | bool:
        return self.settings.token or False

    def model_info(self, repo: str, revision: str | None, *, files_metadata: bool = False) -> ModelInfo:
        return self._info(self.api.model_info, "model", repo, revision, files_metadata)

    def dataset_info(self, repo: str, revision: str | None, *, files_metadata: bool = False) -> DatasetInfo:
        """``HfApi.dataset_info``: GET ``/api/datasets/{repo}/revision/{rev}`` (huggingface_hub
        2.5 ``hf_api.py``); with ``files_metadata`` each sibling has its size, blob id and, for an
        LFS file, its sha256."""
        return self._info(self.api.dataset_info, "dataset", repo, revision, files_metadata)

    def _info(self, call: Callable[..., T], kind: str, repo: str, revision: str | None, files_metadata: bool) -> T:
        try:
            return with_deadline(
                lambda: call(
                    repo,
                    revision=revision,
                    timeout=self.settings.timeout,
                    files_metadata=files_metadata,
                    token=self._token(),
                ),
                self.settings.timeout * 3 + 1,
            )
        except HubError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            # huggingface_hub builds ModelInfo from the answer's JSON: a 2xx answer of another
            # shape ({} without "id", a list, a date that is no date) fails inside it
            if isinstance(exc, ValueError) and type(exc) is not ValueError:  # JSONDecodeError, HFValidationError
                raise translate(exc, self.settings, repo, revision, repo_type=kind) from exc
            raise HubError(
                f"{ref(repo, revision)}: {self.settings.endpoint} does not answer like a Hugging Face Hub "
                f"(its answer is not a {kind} description: {type(exc).__name__})",
                hint="check HF_ENDPOINT (a proxy or login page may be answering instead)",
            ) from exc
        except Exception as exc:
            raise translate(exc, self.settings, repo, revision, repo_type=kind) from exc

    def download(
        self, repo: str, filename: str, sha: str, *, label: str | None = None, repo_type: str = "model"
    ) -> Path:
        """Fetch one file at a commit into the real HF cache; returns snapshots/<sha>/<filename>.
        A dataset file (``repo_type="dataset"``) comes from ``/datasets/{repo}/resolve/...`` into
        ``datasets--ns--name`` (huggingface_hub's ``hf_hub_url`` and ``repo_folder_name``)."""
        import httpx2
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

        s = self.settings
        try:
            # One bounded HEAD first: on a timeout or connection error hf_hub_download would retry
            # for minutes.  HTTP errors are left to hf_hub_download (it caches .no_exist markers).
            try:
                get_hf_file_metadata(
                    hf_hub_url(repo, filename, revision=sha, endpoint=s.endpoint, repo_type=repo_type),
                    token=self._token(),
                    timeout=s.timeout,
                    endpoint=s.endpoint,
                )
            except httpx2.TransportError:
                raise
            except Exception:  # noqa: S110 - re-raised, translated, by hf_hub_download below
                pass
            path = with_deadline(
                lambda: hf_hub_download(
                    repo,
                    filename,
                    revision=sha,
                    repo_type=repo_type,
                    cache_dir=str(s.cache_dir),
                    endpoint=s.endpoint,
                    token=self._token(),
                    etag_timeout=s.timeout,
                ),
                s.timeout * 3 + 1,
            )
        except HubError:
            raise
        except Exception as exc:
            raise translate(exc, s, repo, label or sha, filename=filename, repo_type=repo_type) from exc
        return Path(path)
