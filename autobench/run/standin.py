"""A stand-in for the ``vllm`` executable: ``vllm serve`` answered by the synthetic server (no GPU).

    python -m autobench.run.standin serve MODEL --served-model-name N --host H --port P ...

``autobench tour`` runs a recipe with ``--runtime process --vllm-exec "python -m
autobench.run.standin"``: the process runtime launches this instead of vLLM, with the very
command line it would give vLLM.  It accepts the serve flags autobench's typed recipe fields
compile to (``autobench.recipe.rules.TYPED_ENGINE_FLAGS``) and refuses any other flag the way
vLLM's argparse parser does (``vllm serve: error: unrecognized arguments: ...``, exit 2), so a
recipe whose ``engine.extra_args`` vLLM would reject is refused here too.  Then it serves the
served name on the host and port given, with known timings; a ``--speculative-config`` with
``num_speculative_tokens`` turns on speculative-decoding chunks and vLLM-like acceptance logs.
``$AUTOBENCH_STANDIN_CATEGORIES`` (a JSON object, marker -> acceptance rates) drafts each
prompt category with its own profile; ``--no-enable-prefix-caching`` turns the emulated prefix
cache off.  With a draft ``model`` and ``revision`` it is a world whose best setting is known: the draft's
acceptance rate is a fixed function of the two (``draft_quality``), each verify step costs more
per draft token (``draft_itl_ms``), so ``draft_speed`` names the fastest ``num_speculative_tokens``
an experiment should find.
A model directory holding ``tokenizer.json`` is used to count prompt tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from autobench.digits import is_digits

#: The environment variable naming per-category acceptance profiles (``category_profiles``).
CATEGORIES_ENV = "AUTOBENCH_STANDIN_CATEGORIES"
#: Per-position acceptance the stand-in drafts with (a typical decaying profile).
ACCEPT_PROFILE = (0.8, 0.6, 0.45, 0.33, 0.25, 0.18, 0.13, 0.1)
BASE_ITL_MS = 4.0
#: A draft model's cost per speculative token, as a fraction of a target decode step.
DRAFT_COST = 0.12


def draft_quality(model: str, revision: str) -> float:
    """The synthetic world's acceptance rate of a draft model at a revision: a fixed function
    of the two (0.55 to 0.90), so an experiment over drafts and ``num_speculative_tokens`` has
    an optimum known in advance (``draft_speed``)."""
    import hashlib

    digest = hashlib.sha256(f"{model}@{revision}".encode()).digest()
    return 0.55 + 0.35 * int.from_bytes(digest[:4], "big") / 2**32


def draft_profile(quality: float, k: int) -> tuple[float, ...]:
    """Per-position acceptance of a draft of ``quality`` proposing ``k`` tokens: q, q^2, ..."""
    return tuple(round(quality ** (i + 1), 6) for i in range(k))


def draft_itl_ms(k: int) -> float:
    """The time of one verify step with ``k`` draft tokens: the target's step plus the draft's."""
    return BASE_ITL_MS * (1 + DRAFT_COST * k)


def draft_speed(model: str, revision: str, k: int) -> float:
    """Expected output tokens per ms of one stream: (1 + sum of the profile) per verify step."""
    return (1 + sum(draft_profile(draft_quality(model, revision), k))) / draft_itl_ms(k)


def category_profiles(text: str, parser: argparse.ArgumentParser) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """``$AUTOBENCH_STANDIN_CATEGORIES``: a JSON object, marker -> per-position acceptance rates (a
    prompt containing the marker is drafted with them: ``SyntheticConfig.category_profiles``).  A
    recipe sets it in ``env:``; vLLM has no such thing (its acceptance follows the text itself)."""
    if not text.strip():
        return ()
    try:
        table = json.loads(text)
        if not isinstance(table, dict):
            raise ValueError("not a JSON object")
        out = []
        for marker, rates in table.items():
            if not isinstance(rates, list) or not all(
                isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r <= 1 for r in rates
            ):
                raise ValueError(f"{marker!r}: rates must be a list of numbers in [0, 1]")
            out.append((str(marker), tuple(float(r) for r in rates)))
    except ValueError as exc:
        parser.error(f"{CATEGORIES_ENV}: {exc}")
    return tuple(out)


def _parser() -> argparse.ArgumentParser:
    from autobench.recipe.rules import TYPED_ENGINE_FLAGS

    parser = argparse.ArgumentParser(prog="vllm serve", allow_abbrev=False)
    parser.add_argument("model_tag")
    for flag in sorted(TYPED_ENGINE_FLAGS):
        if flag.startswith("--"):
            parser.add_argument(flag, nargs="?", const=True, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "serve":
        print("usage: vllm serve [model_tag] [options]", file=sys.stderr)
        print("vllm: error: the stand-in only knows the serve subcommand", file=sys.stderr)
        return 2
    parser = _parser()
    ns, unknown = parser.parse_known_args(args[1:])
    if unknown:
        parser.error("unrecognized arguments: " + " ".join(unknown))  # exits 2, as vLLM does
    opts = vars(ns)
    model = str(ns.model_tag)
    spec_tokens = 0
    spec: object = None
    raw_spec = opts.get("speculative_config")
    if isinstance(raw_spec, str):
        try:
            spec = json.loads(raw_spec)
        except ValueError:
            parser.error(f"argument --speculative-config: invalid loads value: {raw_spec!r}")
        spec_tokens = int(spec.get("num_speculative_tokens") or 0) if isinstance(spec, dict) else 0
    profile, itl_ms = (ACCEPT_PROFILE[:spec_tokens] if spec_tokens else ()), BASE_ITL_MS
    if spec_tokens and isinstance(spec, dict) and spec.get("model") and spec.get("revision"):
        # a draft model at a revision: its acceptance and cost follow the synthetic world above
        profile = draft_profile(draft_quality(str(spec["model"]), str(spec["revision"])), spec_tokens)
        itl_ms = draft_itl_ms(spec_tokens)
    tokenizer = Path(model) / "tokenizer.json"
    max_len = opts.get("max_model_len")
    categories = category_profiles(os.environ.get(CATEGORIES_ENV, ""), parser) if spec_tokens else ()

    from autobench.bench.synthetic import SyntheticConfig, run

    config = SyntheticConfig(
        host=str(opts.get("host") or "127.0.0.1"),
        port=int(opts.get("port") or 8000),
        model=str(opts.get("served_model_name") or model),
        ttft_ms=40.0,
        itl_ms=itl_ms,
        accept_profile=profile,
        category_profiles=categories,
        # vLLM V1 caches prefixes unless told not to (--no-enable-prefix-caching)
        prefix_caching=opts.get("no_enable_prefix_caching") is None,
        spec_tokens=spec_tokens or None,
        tokenizer=str(tokenizer) if tokenizer.is_file() else None,
        log_stats_interval=1.0,
        max_model_len=int(max_len) if isinstance(max_len, str) and is_digits(max_len) else 262144,
    )
    print(f"INFO [standin] vllm serve stand-in (synthetic server) for {model} on {config.host}:{config.port}")
    sys.stdout.flush()
    return run(config)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
