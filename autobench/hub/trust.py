"""Trust facts about a Hub repo at a commit (pure: computed from model_info and small files).

downloads, likes, gated, whether config.json / a quantization config / a chat template are
present, total weight size (sum of *.safetensors and *.bin sizes) and last modified.
"""

from __future__ import annotations

from datetime import date, time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.digits import load_json
from autobench.errors import AutobenchError
from autobench.files import read_regular

#: A tokenizer_config.json with a long chat template is tens of KB; 16 MiB is far beyond any.
MAX_CONFIG_BYTES = 16 * 2**20

if TYPE_CHECKING:
    from huggingface_hub.hf_api import ModelInfo

QUANT_FILES = ("quantization_config.json", "quantize_config.json", "quant_config.json", "hf_quant_config.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin")


def _iso(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, date | time):  # datetime is a date
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


def chat_template_source(names: set[str], tokenizer_config: dict[str, Any] | None) -> str | None:
    if "chat_template.jinja" in names:
        return "chat_template.jinja"
    if "chat_template.json" in names:
        return "chat_template.json"
    if tokenizer_config and tokenizer_config.get("chat_template"):
        return "tokenizer_config.json"
    return None


def read_tokenizer_config(files: dict[str, Path]) -> dict[str, Any] | None:
    path = files.get("tokenizer_config.json")
    if path is None:
        return None
    try:
        data = load_json(read_regular(path, what="tokenizer config", limit=MAX_CONFIG_BYTES).decode("utf-8"))
    except (AutobenchError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def trust_facts(
    *, info: ModelInfo | None, config: dict[str, Any], files: dict[str, Path], names: set[str] | None = None
) -> dict[str, Any]:
    """Facts from a ModelInfo (online) or, with ``info=None``, from cached files only (offline)."""
    siblings = list(getattr(info, "siblings", None) or [])
    if names is None:
        names = {s.rfilename for s in siblings} | set(files) | {"config.json"}
    weights = [s for s in siblings if s.rfilename.endswith(WEIGHT_SUFFIXES)]
    sizes = [s.size if s.size is not None else getattr(s.lfs, "size", None) for s in weights]
    template = chat_template_source(names, read_tokenizer_config(files))
    quant_file = next((n for n in QUANT_FILES if n in names), None)
    has_quant = (
        bool(config.get("quantization_config"))
        or quant_file is not None
        or any(isinstance(v, dict) and v.get("quantization_config") for v in config.values())
    )
    return {
        "source": "hub" if info is not None else "cache",
        "downloads": getattr(info, "downloads", None),
        "likes": getattr(info, "likes", None),
        "gated": getattr(info, "gated", None) if info is not None else None,
        "private": getattr(info, "private", None) if info is not None else None,
        "has_config": True,
        "has_quantization_config": has_quant,
        "quantization_config_file": quant_file,
        "has_chat_template": template is not None if (info is not None or files) else None,
        "chat_template_source": template,
        "weight_files": len(weights) if info is not None else None,
        "weight_bytes": (sum(sizes) if sizes and None not in sizes else None) if info is not None else None,
        "last_modified": _iso(getattr(info, "last_modified", None)),
    }


def describe_weights(files: int | None, size: int | None) -> str:
    """The weights line of ``hub info``: what was found, or plainly that nothing was."""
    if files is None:
        return "? (the Hub was not asked: offline, from the local cache)"
    if files == 0:
        return "none found (no .safetensors or .bin files at this revision)"
    count = f"{files} file{'' if files == 1 else 's'}"
    return f"{count}, sizes not listed by the Hub" if size is None else f"{human_bytes(size)} in {count}"


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1000
    return f"{n} B"
