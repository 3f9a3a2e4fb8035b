"""A small Hub-compatible HTTP server for tests (stdlib ThreadingHTTPServer on 127.0.0.1:0).

It speaks the routes the real ``huggingface_hub`` client calls (see
/work/shared/reference/hf-hub.md §4, §5, §11) so tests drive the REAL client, unpatched:

    GET  /api/models/{ns}/{name}[/revision/{rev}]       model_info (sha, siblings with sizes, trust facts)
    GET  /api/datasets/{ns}/{name}[/revision/{rev}]     dataset_info (a repo added with repo_type="dataset")
    HEAD|GET /{ns}/{name}/resolve/{rev}/{path}           307 -> /api/resolve-cache/... for branches
    HEAD|GET /datasets/{ns}/{name}/resolve/{rev}/{path}  the same for a dataset repo
    HEAD|GET /api/resolve-cache/{models|datasets}/{ns}/{name}/{sha}/{path}
    GET  /api/agent-harnesses                            harmless answer (telemetry is disabled anyway)

Errors carry ``X-Error-Code`` exactly as the real Hub sends them: RepoNotFound, RevisionNotFound,
EntryNotFound (+ X-Repo-Commit), GatedRepo (401 without a token / 403 with a token not granted).
A bearer token other than ``FakeHub.valid_token`` gets 401 + ``X-Error-Message: Invalid credentials
in Authorization header`` (no error code), as on the real Hub.

Repos are plain data and mutable while the server runs (``hub.move("repo", "main", sha)``), so
a test can move a branch upstream between ``lock`` and ``outdated``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

VALID_TOKEN = "hf_fakehubvalidtoken0123456789abcdef"

# The seed's two draft commits (shas from the seed page).
DRAFT_REPO = "z-lab/Qwen3.5-122B-A10B-DFlash"
DRAFT_OLD = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
DRAFT_NEW = "bce6f76cef2027552bed4a8a1bc9c449def48f05"
BASE_REPO = "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC"
BASE_OLD = "9e1d0c3b2a4f5e6d7c8b9a0f1e2d3c4b5a697887"
BASE_NEW = "a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9"
GATED_REPO = "gated-org/Gated-Model"
NOCONFIG_REPO = "someone/no-config"
NOCONFIG_SHA = "0123456789abcdef0123456789abcdef01234567"
GATED_SHA = "fedcba9876543210fedcba9876543210fedcba98"
# A dataset repo (repo_type dataset) with two commits: the prompts file changed between them.
DATASET_REPO = "bench-org/spec-prompts"
DATASET_OLD = "d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1"
DATASET_NEW = "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2"
DATASET_FILE = "data/prompts.jsonl"
DATASET_V1 = b"".join(
    b'{"question": "Write a haiku about the sea, number %d.", "task": "%s"}\n' % (i, b"chat" if i % 2 else b"code")
    for i in range(12)
)
DATASET_V2 = DATASET_V1 + b'{"question": "One more prompt, added upstream.", "task": "math"}\n'


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def as_json(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


@dataclass
class FakeCommit:
    sha: str
    # path -> bytes (served) or int (an LFS weight file of that size, listed but never served)
    files: dict[str, bytes | int]
    date: str = "2026-06-20T10:00:00.000Z"
    #: Served files listed as LFS files with this sha256 (the real Hub lists a dataset's parquet
    #: files so); a value other than the content's own sha256 is a Hub that lies.
    lfs: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeRepo:
    repo_id: str
    commits: dict[str, FakeCommit]
    refs: dict[str, str]  # branch/tag name -> sha
    gated: bool | str = False
    granted: set[str] = field(default_factory=set)  # tokens whose owners accepted a gated repo's terms
    downloads: int = 0
    likes: int = 0
    repo_type: str = "model"

    @property
    def key(self) -> str:
        """Where the hub keeps it: the repo id, ``datasets/<id>`` for a dataset repo."""
        return self.repo_id if self.repo_type == "model" else f"{self.repo_type}s/{self.repo_id}"

    def resolve(self, rev: str) -> str | None:
        if rev in self.refs:
            return self.refs[rev]
        if rev in self.commits:
            return rev
        return None


@dataclass
class Request:
    method: str
    path: str
    authorization: str | None


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    valid_token: str = VALID_TOKEN
    requests: list[Request] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- data ----------------------------------------------------------------------------------
    def add(self, repo: FakeRepo) -> FakeRepo:
        self.repos[repo.key] = repo
        return repo

    def move(self, repo_id: str, ref: str, sha: str) -> None:
        """Move ``ref`` of ``repo_id`` (``datasets/<id>`` for a dataset repo) to ``sha``."""
        assert sha in self.repos[repo_id].commits
        self.repos[repo_id].refs[ref] = sha

    # -- server --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    # -- plumbing ------------------------------------------------------------------------------
    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        content_type: str = "application/json",
        length: int | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("X-Request-Id", "fake-req-0001")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str | None, message: str, extra: dict[str, str] | None = None) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        headers.update(extra or {})
        self._send(status, as_json({"error": message}), headers)

    def _token(self) -> tuple[bool, bool]:
        """(token sent, token valid)."""
        auth = self.headers.get("Authorization")
        self.fake.requests.append(Request(self.command, self.path, auth))
        if not auth:
            return False, False
        return True, auth == f"Bearer {self.fake.valid_token}"

    def _repo(self, ns: str, name: str, prefix: str = "") -> FakeRepo | None:
        repo = self.fake.repos.get(f"{prefix}{ns}/{name}")
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    # -- routes --------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def _route(self) -> None:
        sent, valid = self._token()
        if sent and not valid:
            self._error(401, None, "Invalid credentials in Authorization header")
            return
        parts = [unquote(p) for p in urlsplit(self.path).path.split("/")[1:]]
        if parts[:2] == ["api", "agent-harnesses"]:
            self._send(200, as_json({"standardEnvVars": [], "harnesses": {}}))
        elif parts[:2] == ["api", "models"] and len(parts) >= 4:
            self._model_info(parts[2], parts[3], parts[4:])
        elif parts[:2] == ["api", "datasets"] and len(parts) >= 4:
            self._model_info(parts[2], parts[3], parts[4:], prefix="datasets/")
        elif parts[:3] == ["api", "resolve-cache", "models"] and len(parts) >= 7:
            self._file(parts[3], parts[4], parts[5], "/".join(parts[6:]), sent, valid, redirect=False)
        elif parts[:3] == ["api", "resolve-cache", "datasets"] and len(parts) >= 7:
            self._file(
                parts[3], parts[4], parts[5], "/".join(parts[6:]), sent, valid, redirect=False, prefix="datasets/"
            )
        elif parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
            self._file(
                parts[1], parts[2], parts[4], "/".join(parts[5:]), sent, valid, redirect=True, prefix="datasets/"
            )
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._file(parts[0], parts[1], parts[3], "/".join(parts[4:]), sent, valid, redirect=True)
        else:
            self._error(404, None, f"no route for {self.path}")

    def _model_info(self, ns: str, name: str, rest: list[str], prefix: str = "") -> None:
        repo = self._repo(ns, name, prefix)
        if repo is None:
            return
        if rest[:1] == ["revision"] and len(rest) >= 2:
            rev = "/".join(rest[1:])  # a quoted "refs%2Fpr%2F1" arrives as one segment
        elif not rest:
            rev = "main"
        else:
            self._error(404, None, f"no route for {self.path}")
            return
        sha = repo.resolve(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return
        commit = repo.commits[sha]
        siblings = []
        for path, content in sorted(commit.files.items()):
            size = content if isinstance(content, int) else len(content)
            entry: dict[str, Any] = {"rfilename": path, "size": size}
            if isinstance(content, int):
                entry["lfs"] = {"size": size, "sha256": hashlib.sha256(path.encode()).hexdigest(), "pointerSize": 134}
            elif path in commit.lfs:
                entry["lfs"] = {"size": size, "sha256": commit.lfs[path], "pointerSize": 134}
            else:
                entry["blobId"] = git_blob_sha1(content)
            siblings.append(entry)
        config = commit.files.get("config.json")
        body = {
            "_id": "fake" + sha[:20],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": ns,
            "sha": sha,
            "lastModified": commit.date,
            "createdAt": "2026-01-01T00:00:00.000Z",
            "private": False,
            "disabled": False,
            "gated": repo.gated,
            "downloads": repo.downloads,
            "likes": repo.likes,
            "tags": ["safetensors"],
            "library_name": "transformers",
            "siblings": siblings,
            "cardData": {},
        }
        if isinstance(config, bytes):
            cfg = json.loads(config)
            body["config"] = {k: cfg[k] for k in ("architectures", "model_type") if k in cfg}
        self._send(200, as_json(body))

    def _file(
        self, ns: str, name: str, rev: str, path: str, sent: bool, valid: bool, *, redirect: bool, prefix: str = ""
    ) -> None:
        repo = self._repo(ns, name, prefix)
        if repo is None:
            return
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if repo.gated and token not in repo.granted:
            status = 403 if sent else 401
            self._error(status, "GatedRepo", f"Access to model {repo.repo_id} is restricted.")
            return
        sha = repo.resolve(rev)
        if sha is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
            return
        content = repo.commits[sha].files.get(path)
        if content is None:
            self._error(404, "EntryNotFound", f'{path} does not exist on "{rev}"', {"X-Repo-Commit": sha})
            return
        if isinstance(content, int):
            self._error(404, None, "weights are not served by the fake Hub")
            return
        if redirect and rev != sha:
            location = f"/api/resolve-cache/{prefix or 'models/'}{ns}/{name}/{sha}/{path}"
            self._send(307, b"", {"Location": location, "X-Repo-Commit": sha})
            return
        self._send(
            200,
            content,
            {"X-Repo-Commit": sha, "ETag": f'"{git_blob_sha1(content)}"'},
            content_type="application/octet-stream",
        )


# -- fixture repos ----------------------------------------------------------------------------


def draft_config(kv_heads: int, layers: int, window: int) -> bytes:
    return as_json(
        {
            "architectures": ["DFlashDraftModel"],
            "model_type": "qwen3",
            "hidden_size": 3072,
            "num_attention_heads": 32,
            "num_key_value_heads": kv_heads,
            "head_dim": 128,
            "num_hidden_layers": layers,
            "sliding_window": window,
            "block_size": 16,
            "torch_dtype": "bfloat16",
        }
    )


def base_config(transformers_version: str) -> bytes:
    layer_types = (["linear_attention"] * 3 + ["full_attention"]) * 12
    return as_json(
        {
            "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            "model_type": "qwen3_5_moe",
            "quantization_config": {"quant_method": "auto-round", "bits": 4, "group_size": 128, "sym": True},
            "text_config": {
                "model_type": "qwen3_5_moe_text",
                "hidden_size": 3072,
                "num_attention_heads": 32,
                "num_key_value_heads": 2,
                "head_dim": 256,
                "num_hidden_layers": 48,
                "layer_types": layer_types,
                "num_experts": 256,
            },
            "transformers_version": transformers_version,
        }
    )


TOKENIZER_CONFIG = as_json(
    {"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}", "eos_token": "<|im_end|>"}
)


def seed_hub() -> FakeHub:
    """The seed's world: base model and DFlash draft with two commits each, plus fault repos."""
    hub = FakeHub()
    weights = {f"model-{i:05d}-of-00015.safetensors": 4_466_000_000 for i in range(1, 16)}
    hub.add(
        FakeRepo(
            BASE_REPO,
            commits={
                BASE_OLD: FakeCommit(
                    BASE_OLD,
                    {"config.json": base_config("4.57.0"), "tokenizer_config.json": TOKENIZER_CONFIG, **weights},
                    date="2026-05-01T09:00:00.000Z",
                ),
                BASE_NEW: FakeCommit(
                    BASE_NEW,
                    {
                        "config.json": base_config("5.0.0"),
                        "tokenizer_config.json": TOKENIZER_CONFIG,
                        "quantization_config.json": as_json({"bits": 4}),
                        **weights,
                    },
                    date="2026-06-01T09:00:00.000Z",
                ),
            },
            refs={"main": BASE_NEW, "v1": BASE_OLD},
            downloads=42785,
            likes=31,
        )
    )
    hub.add(
        FakeRepo(
            DRAFT_REPO,
            commits={
                DRAFT_OLD: FakeCommit(
                    DRAFT_OLD,
                    {"config.json": draft_config(4, 4, 2048), "model.safetensors": 1_550_000_000},
                    date="2026-06-10T12:00:00.000Z",
                ),
                DRAFT_NEW: FakeCommit(
                    DRAFT_NEW,
                    {"config.json": draft_config(8, 6, 4096), "model.safetensors": 1_550_000_000},
                    date="2026-06-22T12:00:00.000Z",
                ),
            },
            refs={"main": DRAFT_NEW},
            downloads=4502,
            likes=17,
        )
    )
    hub.add(
        FakeRepo(
            GATED_REPO,
            commits={GATED_SHA: FakeCommit(GATED_SHA, {"config.json": draft_config(4, 4, 2048)})},
            refs={"main": GATED_SHA},
            gated="manual",
        )
    )
    hub.add(
        FakeRepo(
            NOCONFIG_REPO,
            commits={NOCONFIG_SHA: FakeCommit(NOCONFIG_SHA, {"README.md": b"# no config here\n"})},
            refs={"main": NOCONFIG_SHA},
        )
    )
    return hub


def dataset_repo() -> FakeRepo:
    """The dataset repo: ``main`` at DATASET_OLD; DATASET_NEW (a prompt added) is not on a branch
    until a test moves ``main`` there.  Its JSONL file is listed as an LFS file with its sha256,
    as the real Hub lists a dataset's data files."""
    return FakeRepo(
        DATASET_REPO,
        commits={
            DATASET_OLD: FakeCommit(
                DATASET_OLD,
                {DATASET_FILE: DATASET_V1, "README.md": b"# prompts\n"},
                lfs={DATASET_FILE: hashlib.sha256(DATASET_V1).hexdigest()},
            ),
            DATASET_NEW: FakeCommit(
                DATASET_NEW,
                {DATASET_FILE: DATASET_V2, "README.md": b"# prompts, v2\n"},
                lfs={DATASET_FILE: hashlib.sha256(DATASET_V2).hexdigest()},
            ),
        },
        refs={"main": DATASET_OLD},
        repo_type="dataset",
    )


# -- dead networks ----------------------------------------------------------------------------


@contextmanager
def silent_server() -> Iterator[str]:
    """A port that accepts TCP connections (kernel backlog) but never answers a byte."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def closed_port_url() -> str:
    """A loopback URL nobody listens on (connection refused)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
