"""A new recipe's text from a few answers (``autobench init``): valid on the first try, commented.

    NewRecipe(name=..., model=..., image=..., ...)   # the answers
    check_answers(answers)                            # each value against the schema's own patterns
    recipe_text(answers) -> str                       # commented YAML

Every value is checked here with the patterns the schema uses (repo ids, recipe names, image
references, speculative methods), so a bad answer is refused with one line naming the option
before anything is written.  Strings that YAML could read as something else are written quoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from autobench.errors import UsageError
from autobench.recipe.imageref import ImageRefError, parse_image_ref
from autobench.recipe.schema import METHOD_RE, MODEL_REF, NAME_RE

#: What ``--speculative`` offers, and the draft / token count each method needs (see rules.py).
SPEC_NEEDS_DRAFT = frozenset({"dflash", "eagle", "eagle3", "draft_model", "medusa", "mlp_speculator"})
SPEC_NO_DRAFT = frozenset({"ngram", "suffix"})
SPEC_NO_TOKENS = frozenset({"suffix"})

_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./@:+\-]*$")
_YAML_WORDS = re.compile(r"^(?:y|n|yes|no|on|off|true|false|null|~)$", re.IGNORECASE)


@dataclass
class NewRecipe:
    name: str
    model: str
    image: str = "vllm/vllm-openai:latest"
    revision: str = "main"
    served_name: str | None = None
    speculative: str | None = None  # a method, or None for no speculative decoding
    draft: str | None = None
    draft_revision: str | None = None
    num_speculative_tokens: int = 5
    port: int = 8000
    max_model_len: int = 8192
    concurrency: int = 8
    num_prompts: int = 200
    input_len: int = 1024
    output_len: int = 256
    max_seconds: float = 900
    secrets: tuple[str, ...] = ("HF_TOKEN",)
    schema_ref: str | None = None  # where the JSON Schema is, for editors (relative to the recipe)


def default_name(model: str) -> str:
    """A recipe name from a repo id: ``Qwen/Qwen3-8B`` -> ``qwen3-8b``."""
    tail = model.rstrip("/").rsplit("/", 1)[-1].lower()
    name = re.sub(r"[^a-z0-9._\-]+", "-", tail).strip("-._")
    return name or "recipe"


def _bad(option: str, value: object, why: str, hint: str) -> UsageError:
    from autobench.escape import human

    return UsageError(f"{option} {human(repr(value))} {why}", hint=hint)


def check_answers(a: NewRecipe) -> None:
    """Refuse a value the recipe schema or rules would refuse, naming the option and the fix."""
    if not re.fullmatch(MODEL_REF, a.model):
        raise _bad(
            "--model", a.model, "is not a Hub repo id", "give owner/name, e.g. Qwen/Qwen3-8B (or an absolute directory)"
        )
    if not re.fullmatch(NAME_RE, a.name):
        raise _bad(
            "--name",
            a.name,
            "is not a recipe name",
            "use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit",
        )
    try:
        parse_image_ref(a.image)
    except ImageRefError as exc:
        raise _bad("--image", a.image, f"is not an image reference ({exc})", "e.g. vllm/vllm-openai:v0.11.0") from None
    if not a.revision.strip() or any(c.isspace() for c in a.revision):
        raise _bad("--revision", a.revision, "is not a revision", "give a branch, tag or 40-hex commit sha")
    if a.served_name is not None and not _PLAIN.match(a.served_name):
        raise _bad("--served-name", a.served_name, "is not a plain name", "use letters, digits, '.', '_', '-', '/'")
    method = a.speculative
    if method is not None:
        if not re.fullmatch(METHOD_RE, method):
            raise _bad("--speculative", method, "is not a method name", "e.g. dflash, eagle3, mtp, ngram")
        if method in SPEC_NEEDS_DRAFT and not a.draft:
            raise UsageError(
                f"--speculative {method} needs a draft model", hint="add --draft owner/name (and --draft-revision)"
            )
        if method in SPEC_NO_DRAFT and a.draft:
            raise UsageError(f"--speculative {method} uses no draft model", hint="drop --draft")
    elif a.draft:
        raise UsageError("--draft without --speculative", hint="add --speculative METHOD, e.g. dflash or eagle3")
    if a.draft is not None and not re.fullmatch(MODEL_REF, a.draft):
        raise _bad("--draft", a.draft, "is not a Hub repo id", "give owner/name, e.g. z-lab/Qwen3-8B-DFlash")
    if a.draft_revision is not None and (not a.draft_revision.strip() or any(c.isspace() for c in a.draft_revision)):
        raise _bad("--draft-revision", a.draft_revision, "is not a revision", "give a branch, tag or commit sha")
    if a.output_len >= a.max_model_len:
        raise UsageError(
            f"--output-len {a.output_len} does not fit in --max-model-len {a.max_model_len}",
            hint="raise --max-model-len or lower --output-len",
        )
    if a.input_len + a.output_len > a.max_model_len:
        raise UsageError(
            f"--input-len {a.input_len} + --output-len {a.output_len} > --max-model-len {a.max_model_len}",
            hint="raise --max-model-len or shorten the prompts",
        )


def _s(value: str) -> str:
    """A YAML scalar for a string: plain when it cannot be read as anything else, else quoted."""
    if _PLAIN.match(value) and not _YAML_WORDS.match(value) and not re.fullmatch(r"[0-9.eE+\-_:]+", value):
        return value
    return json.dumps(value)


def recipe_text(a: NewRecipe) -> str:
    """The commented YAML of a new recipe (call :func:`check_answers` first)."""
    served = a.served_name or a.name
    lines = [f"# yaml-language-server: $schema={a.schema_ref}", "#"] if a.schema_ref else []
    lines += [
        f"# {a.name}: written by `autobench init`.  Check it with `autobench validate`,",
        "# pin every revision with `autobench lock`, then `autobench run --dry-run` to see the commands.",
        "# Every key is described in docs/recipes.md (key reference).",
        f"name: {_s(a.name)}",
        "",
        "model:",
        f"  repo: {_s(a.model)}",
        "  # A branch until `autobench lock` replaces it with the commit sha it points at.",
        f"  revision: {_s(a.revision)}",
        f"  served_name: {_s(served)}",
    ]
    if a.speculative:
        lines += [
            "",
            "# Speculative decoding, compiled into one --speculative-config JSON.",
            "speculative:",
            f"  method: {_s(a.speculative)}",
        ]
        if a.draft:
            lines.append(f"  model: {_s(a.draft)}")
            lines.append("  # Pin the draft to a commit: a moved draft can change the KV layout and fail at boot.")
            lines.append(f"  revision: {_s(a.draft_revision or 'main')}")
        if a.speculative not in SPEC_NO_TOKENS:
            lines.append(f"  num_speculative_tokens: {a.num_speculative_tokens}")
    lines += [
        "",
        "container:",
        "  # `autobench lock` pins the tag to its digest (image@sha256:...).",
        f"  image: {_s(a.image)}",
        "  gpus: all",
        "  ipc: host",
        f'  ports: ["{a.port}:{a.port}"]',
        "  volumes:",
        "    - ~/.cache/huggingface:/root/.cache/huggingface",
        "",
        "# Secrets are passed by name (docker --env NAME); never write their values here.",
        "secrets: [" + ", ".join(a.secrets) + "]",
        "",
        "engine:",
        "  host: 0.0.0.0",
        f"  port: {a.port}",
        f"  max_model_len: {a.max_model_len}",
        "  gpu_memory_utilization: 0.85",
        "  # At least bench.concurrency, so every client request is served at once.",
        f"  max_num_seqs: {max(a.concurrency, 1)}",
        "",
        "bench:",
        "  # Random prompts need no dataset file; use kind: sharegpt with a path for real conversations.",
        f"  dataset: {{kind: random, input_len: {a.input_len}, output_len: {a.output_len}}}",
        f"  num_prompts: {a.num_prompts}",
        f"  concurrency: {a.concurrency}",
        f"  max_tokens: {a.output_len}",
        f"  max_seconds: {a.max_seconds:g}",
        "",
        "meta:",
        f"  description: {_s(_describe(a))}",
        "  tags: []",
        "",
    ]
    return "\n".join(lines)


def _describe(a: NewRecipe) -> str:
    text = f"{a.model} on {a.image}, conc {a.concurrency}"
    if a.speculative:
        text += f", {a.speculative}" + (f" draft {a.draft}" if a.draft else "")
    return text


__all__ = ["NewRecipe", "check_answers", "default_name", "recipe_text"]
