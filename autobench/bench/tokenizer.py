"""The served model's tokenizer: exact prompt lengths instead of a characters / 4 guess.

``tokenizer.json`` is loaded with the ``tokenizers`` library (Rust; no torch, no
transformers).  It comes from a local file or model directory, or from the Hub at a
revision (fetched through ``autobench.hub``: bounded, translated errors, the HF cache
offline), together with ``tokenizer_config.json`` when present: like transformers'
Llama tokenizers, ``add_bos_token`` / ``add_eos_token`` there make encoding add those
tokens when ``tokenizer.json`` itself does not.

Token counts here are what a vLLM server counts for a completions prompt: the text
encoded *with* special tokens (``count``).  Random prompts are built as vLLM's random
dataset builds them (``vllm/benchmarks/datasets``: ``RandomDataset`` and
``gen_prompt_decode_to_target_len``): the special tokens are subtracted from the target,
a run of non-special token ids is taken from a random offset, decoded, re-encoded and
adjusted (truncated, or extended with random ids) up to 10 times.

``TokenizerUnavailable`` is raised when a tokenizer that was asked for cannot be had
(not in the cache offline, the Hub unreachable, no ``tokenizer.json`` in the repo); the
callers fall back to the estimate loudly and record ``"estimated"``.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autobench.errors import BenchError
from autobench.files import read_regular

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: What results and the ledger record when no tokenizer was used.
ESTIMATED = "estimated"
#: tokenizer.json files are a few MiB (a 256k vocabulary is ~35 MiB); larger is not one.
MAX_TOKENIZER_BYTES = 256 * 2**20
#: decode / re-encode / adjust rounds (vLLM's gen_prompt_decode_to_target_len does 10 and keeps
#: the last; here the closest of up to 32 is kept: a byte-level tokenizer can take a few).
MAX_RETRY = 32


class TokenizerUnavailable(Exception):
    """The tokenizer asked for cannot be loaded here (the message says why); fall back."""


class BenchTokenizer:
    """A loaded tokenizer and the id recorded for it (``repo@sha`` or ``path@sha256:...``)."""

    def __init__(self, tok: Tokenizer, ident: str):
        self.tok = tok
        self.id = ident
        added = tok.get_added_tokens_decoder()  # {id: AddedToken}
        self.special_ids = frozenset(i for i, t in added.items() if getattr(t, "special", False))
        self.vocab_size = tok.get_vocab_size(with_added_tokens=False)
        ordinary = [i for i in range(self.vocab_size) if i not in self.special_ids]
        if not ordinary:
            raise BenchError(f"tokenizer {ident} has no ordinary tokens", location=ident)
        # Prompts are drawn from tokens that decode to whole characters: a byte-level token that is
        # part of a UTF-8 sequence decodes to U+FFFD, which re-encodes as several tokens and keeps
        # decode / re-encode from settling (vLLM draws from every non-special token).
        texts = tok.decode_batch([[i] for i in ordinary], skip_special_tokens=False)
        self.allowed = [i for i, t in zip(ordinary, texts, strict=True) if t and "\ufffd" not in t] or ordinary
        probe = "a"
        self.n_special = len(tok.encode(probe, add_special_tokens=True).ids) - len(
            tok.encode(probe, add_special_tokens=False).ids
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens."""
        return list(self.tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: list[int]) -> str:
        return str(self.tok.decode(ids, skip_special_tokens=False))

    def count(self, text: str) -> int:
        """Prompt tokens a server counts for ``text`` (special tokens included, as vLLM's completions)."""
        return len(self.tok.encode(text, add_special_tokens=True).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """``count`` of each text, encoded in parallel batches (ShareGPT has ~94,000 prompts)."""
        out: list[int] = []
        for i in range(0, len(texts), 4096):
            out += [len(e.ids) for e in self.tok.encode_batch(texts[i : i + 4096], add_special_tokens=True)]
        return out

    def prompt_of_length(self, target: int, rng: random.Random) -> tuple[str, int]:
        """A prompt whose server-side count is ``target`` tokens (vLLM's random dataset method).

        Returns (text, tokens the server will count).  The count can miss when decode /
        re-encode does not settle within MAX_RETRY rounds (vLLM warns of the same); the
        closest round is kept.
        """
        inner = max(0, target - self.n_special)
        allowed = self.allowed
        offset = rng.randrange(len(allowed))
        seq = [allowed[(offset + k) % len(allowed)] for k in range(inner)]
        best: tuple[int, str] | None = None
        for _ in range(MAX_RETRY):
            text = self.decode(seq)
            seq = self.encode(text)
            miss = abs(len(seq) - inner)
            if best is None or miss < best[0]:
                best = (miss, text)
            if miss == 0:
                break
            if len(seq) < inner:
                seq += [allowed[rng.randrange(len(allowed))] for _ in range(inner - len(seq))]
            else:
                seq = seq[:inner]
        assert best is not None
        return best[1], self.count(best[1])


def _from_file(path: Path, ident: str, config: Path | None = None) -> BenchTokenizer:
    from tokenizers import Tokenizer

    raw = read_regular(path, what="tokenizer file", limit=MAX_TOKENIZER_BYTES, error=BenchError)
    try:
        tok = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as exc:  # the Rust library raises plain Exception subclasses
        raise BenchError(f"not a tokenizer.json the tokenizers library can read: {exc}", location=str(path)) from exc
    if config is not None:
        _apply_config(tok, config)
    return BenchTokenizer(tok, ident)


def _apply_config(tok: Tokenizer, path: Path) -> None:
    """``add_bos_token`` / ``add_eos_token`` from tokenizer_config.json, when tokenizer.json adds neither."""
    try:
        cfg = json.loads(read_regular(path, what="tokenizer config", limit=16 * 2**20, error=BenchError))
    except (ValueError, RecursionError):
        return  # a broken config is the server's problem too; tokenizer.json stands alone
    if not isinstance(cfg, dict) or not (cfg.get("add_bos_token") or cfg.get("add_eos_token")):
        return
    if len(tok.encode("a", add_special_tokens=True).ids) != len(tok.encode("a", add_special_tokens=False).ids):
        return  # the post-processor already adds them
    from tokenizers.processors import TemplateProcessing

    def token(key: str) -> str | None:
        v = cfg.get(key)
        if isinstance(v, dict):
            v = v.get("content")
        return v if isinstance(v, str) and tok.token_to_id(v) is not None else None

    bos = token("bos_token") if cfg.get("add_bos_token") else None
    eos = token("eos_token") if cfg.get("add_eos_token") else None
    if bos is None and eos is None:
        return
    single = " ".join([*([bos] if bos else []), "$A", *([eos] if eos else [])])
    specials = [(t, tok.token_to_id(t)) for t in (bos, eos) if t]
    tok.post_processor = TemplateProcessing(single=single, special_tokens=specials)


def _file_id(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            h.update(block)
    return f"{path.resolve()}@sha256:{h.hexdigest()[:16]}"


def looks_local(spec: str) -> bool:
    """A path (exists, or starts like one) rather than a Hub repo id ``owner/name``."""
    return os.path.exists(spec) or spec.startswith(("/", "./", "../", "~")) or spec.endswith(".json")


def load_local(spec: str) -> BenchTokenizer:
    """A tokenizer.json file, or a model directory holding one (and maybe tokenizer_config.json)."""
    p = Path(spec).expanduser()
    if p.is_dir():
        f = p / "tokenizer.json"
        if not f.is_file():
            raise BenchError(
                "the directory has no tokenizer.json",
                location=str(p),
                hint="give the model directory that holds tokenizer.json, or the file itself",
            )
        cfg = p / "tokenizer_config.json"
        return _from_file(f, _file_id(f), cfg if cfg.is_file() else None)
    if not p.exists():
        raise BenchError("tokenizer path not found", location=str(p), hint="give a tokenizer.json or a model directory")
    cfg = p.with_name("tokenizer_config.json")
    return _from_file(p, _file_id(p), cfg if cfg.is_file() else None)


def load_hub(repo: str, revision: str | None = None, *, offline: bool | None = None) -> BenchTokenizer:
    """tokenizer.json of ``repo`` at ``revision`` (branch, tag or sha) from the Hub or the HF cache.

    Raises TokenizerUnavailable when it cannot be had here (the message is the Hub error line).
    """
    from autobench.errors import HubError
    from autobench.hub.client import HubSettings
    from autobench.hub.resolve import Resolver, is_sha

    try:
        resolver = Resolver(HubSettings.from_env(offline=offline))
        label = revision or "main"
        sha = label if is_sha(label) else resolver.sha(repo, label)
        path = resolver.file(repo, sha, "tokenizer.json", label=label)
        assert path is not None
        config = resolver.file(repo, sha, "tokenizer_config.json", label=label, required=False)
    except HubError as exc:
        raise TokenizerUnavailable(str(exc)) from exc
    return _from_file(path, f"{repo}@{sha}", config)


def load_tokenizer(spec: str, revision: str | None = None, *, offline: bool | None = None) -> BenchTokenizer:
    """``spec`` is a tokenizer.json, a model directory, or a Hub repo id (at ``revision``)."""
    if looks_local(spec):
        return load_local(spec)
    return load_hub(spec, revision, offline=offline)


@dataclass(frozen=True)
class TokenizerChoice:
    """What a run asks for: a spec (path or repo) and revision, or the estimate."""

    spec: str | None = None
    revision: str | None = None

    def load(self) -> tuple[BenchTokenizer | None, str | None]:
        """(tokenizer, None) or (None, why it fell back to the estimate)."""
        if self.spec is None or self.spec == ESTIMATED:
            return None, None if self.spec == ESTIMATED else "no tokenizer given"
        try:
            return load_tokenizer(self.spec, self.revision), None
        except TokenizerUnavailable as exc:
            return None, str(exc)
