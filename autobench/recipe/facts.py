"""Facts of a recipe that several packages need, each worked out here once (pure, no I/O).

    server_endpoint(recipe, runtime) -> Endpoint   # where a client on this machine reaches the server
    pins(recipe) -> list[Pin]                      # the Hub references and whether each is a full sha
    unpinned(recipe) -> list[Pin]
    image_digest(recipe) -> str | None             # the digest container.image is pinned to
    passed_secrets(recipe) -> tuple[str, ...]      # the secret names the recipe hands to the server
    output_tokens(recipe) -> int                   # max_tokens each request asks for
    node_gpus(recipe) -> int                       # GPUs each node needs (a Slurm job requests them)
    parse_port_spec("127.0.0.1:9001:8000/tcp") -> PortSpec | None

The rules (AB010-AB012, AB022), compile (the script's BASE_URL, ``--frozen``), run (the
plan's URLs, the unpinned refusal, the ledger's shas) and hub (what ``lock`` pins) all ask
these functions, so they cannot disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeGuard

from autobench.digits import is_digits
from autobench.errors import RecipeError

if TYPE_CHECKING:
    from autobench.recipe.schema import Engine, Recipe

#: A full commit sha: 40 lower-case hex digits (the one pattern; ``is_full_sha`` uses it).
SHA_RE = re.compile(r"^[0-9a-f]{40}$")

#: Hosts a server binds to that mean "every interface": a local client dials loopback.
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", "[::]", "*", ""})


def is_full_sha(revision: str | None) -> TypeGuard[str]:
    """True when ``revision`` is a full 40-hex lower-case commit sha."""
    return bool(revision) and SHA_RE.fullmatch(revision or "") is not None


def is_local_model(ref: str) -> bool:
    """True for a local model directory (an absolute path) rather than a Hub repo id."""
    return ref.startswith("/")


def output_tokens(recipe: Recipe) -> int:
    """The output tokens each bench request asks for: a random dataset's ``output_len`` when
    set (that is what it means, as ``--random-output-len`` does for ``vllm bench serve``),
    otherwise ``bench.max_tokens``.  A grid of output lengths: the largest."""
    b = recipe.bench
    if b.dataset.kind == "random" and b.dataset.output_len is not None:
        out = b.dataset.output_len
        return int(max(out) if isinstance(out, list) else out)
    return int(b.max_tokens)


# --------------------------------------------------------------------------- pins
@dataclass(frozen=True)
class Pin:
    """One Hub reference of a recipe: what it names and whether it is pinned to a commit."""

    kind: Literal["model", "tokenizer", "draft", "dataset"]
    repo: str
    revision: str | None  # as written (None: the default branch)
    repo_key: tuple[str, ...]  # where the repo is written, e.g. ("speculative", "model")
    rev_key: tuple[str, ...]  # where the revision is (or would be) written

    @property
    def repo_type(self) -> Literal["model", "dataset"]:
        """huggingface_hub's ``repo_type`` of the reference (a dataset is a repo of its own kind)."""
        return "dataset" if self.kind == "dataset" else "model"

    @property
    def full_sha(self) -> bool:
        return is_full_sha(self.revision)

    @property
    def key(self) -> str:
        return ".".join(self.rev_key)

    @property
    def ref(self) -> str:
        return f"{self.repo}@{self.revision or 'main'}"


def pins(recipe: Recipe) -> list[Pin]:
    """The recipe's Hub references: the model (unless a local directory), the tokenizer (when
    one or its revision is given; it defaults to the model repo), the draft (unless local), the
    bench's dataset when it is a Hub dataset repo (``bench.dataset.repo``)."""
    m = recipe.model
    out: list[Pin] = []
    if not is_local_model(m.repo):
        out.append(Pin("model", m.repo, m.revision, ("model", "repo"), ("model", "revision")))
    if m.tokenizer or m.tokenizer_revision:
        repo_key = ("model", "tokenizer") if m.tokenizer else ("model", "repo")
        rev_key = ("model", "tokenizer_revision")
        out.append(Pin("tokenizer", m.tokenizer or m.repo, m.tokenizer_revision, repo_key, rev_key))
    spec = recipe.speculative
    if spec is not None and spec.model and not is_local_model(spec.model):
        out.append(Pin("draft", spec.model, spec.revision, ("speculative", "model"), ("speculative", "revision")))
    d = recipe.bench.dataset
    if d.repo is not None:
        out.append(Pin("dataset", d.repo, d.revision, ("bench", "dataset", "repo"), ("bench", "dataset", "revision")))
    return out


def unpinned(recipe: Recipe) -> list[Pin]:
    """The references that are not pinned to a full 40-hex sha."""
    return [p for p in pins(recipe) if not p.full_sha]


def pinned_sha(recipe: Recipe, kind: str) -> str | None:
    """The full sha the ``kind`` reference is pinned to, or None (unpinned or absent)."""
    return next((p.revision for p in pins(recipe) if p.kind == kind and p.full_sha), None)


# --------------------------------------------------------------------------- secrets
def passed_secrets(recipe: Recipe) -> tuple[str, ...]:
    """The secret names the recipe hands to the server (by name: ``--env NAME``), in order."""
    return tuple(dict.fromkeys(recipe.secrets))


# --------------------------------------------------------------------------- the endpoint
@dataclass(frozen=True)
class PortSpec:
    """One ``docker -p`` spec: ``[ip:][host:]container[/proto]``."""

    ip: str | None
    host_port: int | None  # None: docker picks a random host port
    container_port: int
    proto: str = "tcp"


def parse_port_spec(spec: str) -> PortSpec | None:
    """A ``-p`` spec, or None when it is not one autobench understands (e.g. a port range)."""
    text, _, proto = spec.strip().partition("/")
    ip: str | None = None
    if text.startswith("["):  # [v6-address]:host:container
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            return None
        ip, rest = text[1:end], text[end + 2 :].split(":")
        if len(rest) != 2:
            return None
        host, ctr = rest
    else:
        parts = text.split(":")
        if len(parts) == 1:
            host, ctr = "", parts[0]
        elif len(parts) == 2:
            host, ctr = parts
        elif len(parts) == 3:
            ip, host, ctr = parts
        else:
            return None
    if not is_digits(ctr) or (host and not is_digits(host)):
        return None
    return PortSpec(ip or None, int(host) if host else None, int(ctr), proto or "tcp")


def uses_host_network(extra_args: list[str]) -> bool:
    """``--network host`` (or ``--net=host``...) among docker's extra arguments."""
    for i, arg in enumerate(extra_args):
        if arg in ("--network=host", "--net=host"):
            return True
        if arg in ("--network", "--net") and i + 1 < len(extra_args) and extra_args[i + 1] == "host":
            return True
    return False


def client_host(host: str | None) -> str:
    """Where a client on this machine reaches a server bound (or published) on ``host``."""
    host = host or ""
    if host in WILDCARD_HOSTS:
        return "127.0.0.1"
    if ":" in host and not host.startswith("["):
        return f"[{host}]"
    return host


@dataclass(frozen=True)
class Endpoint:
    """Where a client on the machine that runs the server reaches it."""

    how: Literal["process", "host-network", "published", "unpublished"]
    host: str
    port: int
    why: str = ""  # for "unpublished": what is wrong

    @property
    def reachable(self) -> bool:
        return self.how != "unpublished"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def server_endpoint(recipe: Recipe, runtime: str = "docker") -> Endpoint:
    """The server's endpoint: engine.host/port for a process or under ``--network host``; the
    host side of the ``container.ports`` spec that publishes engine.port (tcp) otherwise.
    ``unpublished`` (not reachable) when no spec publishes it at a fixed host port."""
    e, c = recipe.engine, recipe.container
    if runtime == "process":
        return Endpoint("process", client_host(e.host), e.port)
    if uses_host_network(c.extra_args):
        return Endpoint("host-network", client_host(e.host), e.port)
    random_port = False
    for text in c.ports:
        spec = parse_port_spec(text)
        if spec is None or spec.proto != "tcp" or spec.container_port != e.port:
            continue
        if spec.host_port is None:
            random_port = True
            continue
        return Endpoint("published", client_host(spec.ip), spec.host_port)
    shown = ", ".join(c.ports) or "none"
    why = (
        f"engine.port {e.port} is published on a random host port (container.ports: {shown})"
        if random_port
        else f"engine.port {e.port} is not published (container.ports: {shown})"
    )
    return Endpoint("unpublished", "127.0.0.1", e.port, why)


def world_size(engine: Engine) -> int:
    """GPUs one engine uses: TP x PP x DP."""
    return (engine.tensor_parallel_size or 1) * (engine.pipeline_parallel_size or 1) * (engine.data_parallel_size or 1)


def node_gpus(recipe: Recipe) -> int:
    """GPUs each node needs: ``topology.gpus_per_node``, else the engine's world (TP x PP x DP)
    split over ``topology.nodes`` (at least 1: vLLM serves on a GPU)."""
    t = recipe.topology
    if t.gpus_per_node is not None:
        return int(t.gpus_per_node)
    return max(1, -(-world_size(recipe.engine) // t.nodes))


__all__ = [
    "SHA_RE",
    "Endpoint",
    "Pin",
    "PortSpec",
    "client_host",
    "is_full_sha",
    "container_image",
    "is_local_model",
    "node_gpus",
    "parse_port_spec",
    "passed_secrets",
    "pinned_sha",
    "pins",
    "server_endpoint",
    "unpinned",
    "world_size",
    "uses_host_network",
]


# --------------------------------------------------------------------------- the image
def image_digest(recipe: Recipe) -> str | None:
    """The digest ``container.image`` is pinned to (``name[:tag]@sha256:…``), or None (a tag only).
    compile ``--frozen``, run's local-image check and the ledger's ``image_digest`` ask this."""
    from autobench.recipe.imageref import parse_image_ref

    image = recipe.container.image
    return parse_image_ref(image).digest if image is not None else None


def container_image(recipe: Recipe) -> str:
    """``container.image``, for what runs a container (docker, Slurm's pyxis/apptainer, a
    cluster node); a recipe without one (process-only) is one RecipeError (AB076's words)."""
    image = recipe.container.image
    if image is None:
        raise RecipeError(
            f"recipe {recipe.name}: container.image is not set; the docker runtime needs an image",
            hint="set container.image, or run it as a process: `autobench run --runtime process`",
        )
    return image
