"""The key reference and the rule table of docs/recipes.md, generated from the schema and RULES.

``python -m autobench.recipe.reference`` rewrites the generated blocks of docs/recipes.md in place;
a test fails when the committed page differs from what this module generates.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

KEYS_BEGIN = "<!-- BEGIN generated: recipe keys (python -m autobench.recipe.reference) -->"
KEYS_END = "<!-- END generated: recipe keys -->"
RULES_BEGIN = "<!-- BEGIN generated: rules (python -m autobench.recipe.reference) -->"
RULES_END = "<!-- END generated: rules -->"


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_name(a) for a in args if a is not type(None)]
        return " \\| ".join(parts) + (" \\| null" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    if annotation is typing.Any or annotation is object:  # a JSON value of any kind
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _submodel(annotation: Any) -> type[BaseModel] | None:
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if origin is list:
        return _submodel(typing.get_args(annotation)[0])
    if origin is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _submodel(arg)
            if found is not None:
                return found
    return None


def _default(info: Any) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "(section)"
    if value is None:
        return ""
    return f"`{json.dumps(value)}`"


#: Meanings of keys whose schema field has no description of its own.
FALLBACK: dict[str, str] = {
    "model.tokenizer": "--tokenizer: a different tokenizer repo.",
    "model.tokenizer_revision": "--tokenizer-revision; pin to a full sha.",
    "model.trust_remote_code": "--trust-remote-code (runs the repo's code: pin the revision).",
    "model.quantization": "How the checkpoint is quantized (informative; checked against --quantization).",
    "model.quantization.bits": "Weight bits.",
    "model.quantization.group_size": "Quantization group size (-1: per channel).",
    "model.quantization.components[].method": "This part's method.",
    "model.quantization.components[].bits": "This part's weight bits.",
    "speculative.num_speculative_tokens": "Tokens proposed per step.",
    "container.gpus": "docker --gpus.",
    "container.ipc": "docker --ipc.",
    "container.shm_size": "docker --shm-size (16g, 512m, 20Gi: docker's spellings; "
    "a Kubernetes emptyDir sizeLimit of the same bytes).",
    "topology.nodes": "Number of nodes (machines) one engine spans.",
    "topology.ray_port": "ray: the head's GCS port (ray start --head --port).",
    "engine.host": "--host the server binds.",
    "engine.port": "--port the server listens on (inside the container).",
    "bench.dataset.kind": "sharegpt, random (synthetic lengths), jsonl (one prompt per line) or parquet.",
    "bench.dataset.path": "A local dataset file (sharegpt, jsonl, parquet).",
    "bench.num_prompts": "Requests sent in the measured run.",
    "bench.max_seconds": "Stop sending after this long (autobench client).",
    "bench.max_tokens": "max_tokens of each request.",
    "bench.ignore_eos": "Generate max_tokens even past end-of-sequence.",
    "bench.seed": "Seed of the dataset sample and arrivals.",
    "bench.warmup": "Requests sent before the measured run.",
    "bench.ready_timeout_s": "How long to wait for the server to become ready.",
    "meta.description": "One line for people and report pages.",
    "meta.tags": "Free-form tags.",
    "meta.notes": "Free-form notes.",
    "meta.superseded_by": "What replaced this recipe.",
    "meta.solo_only": "As stated by the source: runs on one node only.",
    "meta.max_nodes": "As stated by the source: most nodes it may use.",
    "meta.mods": "Mods the source applied (informative; launch.setup runs mods).",
}


def _meaning(path: str, description: str) -> str:
    if description:
        return description
    if path in FALLBACK:
        return FALLBACK[path]
    if path.startswith("engine."):
        return "vllm serve --" + path.split(".", 1)[1].replace("_", "-") + "."
    if path.startswith("model.architecture."):
        return "As stated by the source (informative)."
    if path.startswith("bench.sampler."):
        return f"Request {path.rsplit('.', 1)[1]}."
    return ""


def key_rows(model: type[BaseModel] | None = None, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key path, type, default, description) for every key of the recipe, depth first."""
    from autobench.recipe.schema import Recipe

    model = model or Recipe
    rows: list[tuple[str, str, str, str]] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        sub = _submodel(info.annotation)
        description = " ".join((info.description or "").split())
        if not description and sub is not None and sub.__doc__:
            description = " ".join(sub.__doc__.split("\n\n")[0].split())
        rows.append((path, _type_name(info.annotation), _default(info), _meaning(path, description)))
        if sub is not None:
            is_list = typing.get_origin(info.annotation) is list or any(
                typing.get_origin(a) is list for a in typing.get_args(info.annotation)
            )
            rows.extend(key_rows(sub, f"{path}[]." if is_list else f"{path}."))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\\\\|", "\\|") if "\\|" not in text else text


def keys_markdown() -> str:
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for path, kind, default, description in key_rows():
        lines.append(f"| `{path}` | {kind} | {default} | {_cell(description)} |")
    return "\n".join(lines)


def rules_markdown() -> str:
    from autobench.recipe.rules import RULES

    lines = ["| code | severity | rule | fix |", "|---|---|---|---|"]
    for rule in RULES.values():
        lines.append(f"| {rule.code} | {rule.severity} | {_cell(rule.title)} | {_cell(rule.hint)} |")
    return "\n".join(lines)


def _replace(text: str, begin: str, end: str, body: str) -> str:
    start = text.index(begin) + len(begin)
    stop = text.index(end)
    return text[:start] + "\n" + body + "\n" + text[stop:]


def render_page(text: str) -> str:
    """``text`` (docs/recipes.md) with both generated blocks brought up to date."""
    text = _replace(text, KEYS_BEGIN, KEYS_END, keys_markdown())
    return _replace(text, RULES_BEGIN, RULES_END, rules_markdown())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    page = Path(args[0] if args else "docs/recipes.md")
    text = page.read_text(encoding="utf-8")
    new = render_page(text)
    if new != text:
        page.write_text(new, encoding="utf-8")
        print(f"updated {page}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
