"""The recipe schema: pydantic models, unknown keys refused.

A recipe is everything needed to reproduce one serving benchmark: the model and
its quantization, the speculative-decoding draft, the container, env and secrets
(by name), the engine options and the bench.  Field names follow vLLM's own
option names (``max_num_seqs`` → ``--max-num-seqs``) so a reader can map them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SHA_RE = re.compile(r"^[0-9a-f]{40}$")
REPO_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$"
NAME_RE = r"^[a-z0-9][a-z0-9._\-]*$"

Scalar = str | int | float | bool


def is_full_sha(revision: str | None) -> bool:
    """True when ``revision`` is a full 40-hex lower-case commit sha."""
    return bool(revision) and SHA_RE.fullmatch(revision) is not None


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class Quantization(StrictModel):
    method: Literal[
        "auto-round",
        "awq",
        "gptq",
        "fp8",
        "nvfp4",
        "mxfp4",
        "int8",
        "bitsandbytes",
        "gguf",
        "compressed-tensors",
        "modelopt",
        "none",
    ]
    bits: Annotated[int, Field(ge=1, le=32)] | None = None
    group_size: Annotated[int, Field(ge=-1)] | None = None
    variant: str | None = Field(None, description='Producer variant, e.g. "EC" (error-corrected).')


class Architecture(StrictModel):
    """Architecture facts as stated by the recipe's source (optional, informative)."""

    architectures: list[str] | None = None
    model_type: str | None = None
    num_layers: Annotated[int, Field(ge=1)] | None = None
    num_kv_heads: Annotated[int, Field(ge=1)] | None = None
    head_dim: Annotated[int, Field(ge=1)] | None = None
    hidden_size: Annotated[int, Field(ge=1)] | None = None
    sliding_window: Annotated[int, Field(ge=1)] | None = None
    params_b: Annotated[float, Field(gt=0)] | None = Field(None, description="Total parameters, billions.")
    active_params_b: Annotated[float, Field(gt=0)] | None = None


class Model(StrictModel):
    repo: Annotated[str, Field(pattern=REPO_ID, description="Hugging Face repo id, owner/name.")]
    revision: str = Field("main", description="Branch, tag or full 40-hex commit sha.")
    served_name: str | None = Field(None, description="--served-model-name; defaults to the repo id.")
    tokenizer: Annotated[str, Field(pattern=REPO_ID)] | None = None
    tokenizer_revision: str | None = None
    trust_remote_code: bool = False
    quantization: Quantization | None = None
    architecture: Architecture | None = None


SpecMethod = Literal[
    "dflash",
    "eagle",
    "eagle3",
    "mtp",
    "ngram",
    "draft_model",
    "medusa",
    "mlp_speculator",
    "suffix",
]


class Speculative(StrictModel):
    method: SpecMethod
    model: Annotated[str, Field(pattern=REPO_ID)] | None = Field(None, description="Draft repo id.")
    revision: str | None = Field(None, description="Draft revision; pin to a full sha.")
    num_speculative_tokens: Annotated[int, Field(ge=1, le=64)] | None = None
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra keys merged into --speculative-config (e.g. draft_tensor_parallel_size).",
    )


class Container(StrictModel):
    image: str = Field(..., min_length=1, description="Image reference; pin with @sha256:… for reproducibility.")
    name: str | None = Field(None, description="Container name (docker --name).")
    gpus: str | None = "all"
    ipc: str | None = None
    shm_size: str | None = None
    ports: list[str] = Field(default_factory=list, description='Published ports, "HOST:CONTAINER".')
    volumes: list[str] = Field(default_factory=list, description='Bind mounts, "SRC:DST[:ro]".')
    extra_args: list[str] = Field(default_factory=list, description="Extra docker run flags, one per item.")

    @field_validator("image")
    @classmethod
    def _image_is_a_reference(cls, image: str) -> str:
        # docker reads a value that is not an image reference as an option (`--volume=/:/host`).
        from autobench.recipe.imageref import parse_image_ref

        parse_image_ref(image)  # ImageRefError is a ValueError: pydantic reports it at the key
        return image


class Engine(StrictModel):
    host: str = "0.0.0.0"
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    max_model_len: Annotated[int, Field(ge=1)] | None = None
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: Annotated[int, Field(ge=1)] | None = None
    max_num_seqs: Annotated[int, Field(ge=1)] | None = None
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] | None = None
    kv_cache_dtype: str | None = None
    tensor_parallel_size: Annotated[int, Field(ge=1)] | None = None
    pipeline_parallel_size: Annotated[int, Field(ge=1)] | None = None
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    enforce_eager: bool | None = None
    load_format: str | None = None
    attention_backend: str | None = None
    extra_args: list[str] = Field(default_factory=list, description="Extra vllm serve flags, one per item.")


class Dataset(StrictModel):
    kind: Literal["sharegpt", "random", "jsonl"] = "sharegpt"
    path: str | None = None
    input_len: Annotated[int, Field(ge=1)] | None = Field(None, description="random: prompt tokens.")
    output_len: Annotated[int, Field(ge=1)] | None = Field(None, description="random: output tokens.")


class Sampler(StrictModel):
    temperature: Annotated[float, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    top_k: int | None = None
    min_p: Annotated[float, Field(ge=0, le=1)] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: Annotated[float, Field(gt=0)] | None = None


class Bench(StrictModel):
    client: Literal["autobench", "vllm"] = Field(
        "autobench", description="autobench's own client, or `vllm bench serve` inside the container."
    )
    endpoint: Literal["completions", "chat"] = "completions"
    model: str | None = Field(None, description="Model name sent by the client; defaults to served_name.")
    dataset: Dataset = Field(default_factory=Dataset)
    num_prompts: Annotated[int, Field(ge=1)] = 500
    max_seconds: Annotated[float, Field(gt=0)] | None = None
    concurrency: Annotated[int, Field(ge=1)] = 8
    max_tokens: Annotated[int, Field(ge=1)] = 256
    request_rate: Annotated[float, Field(gt=0)] | None = None
    ignore_eos: bool = False
    seed: int = 0
    warmup: Annotated[int, Field(ge=0)] = 0
    sampler: Sampler | None = None
    ready_timeout_s: Annotated[float, Field(gt=0)] = 1800


class Meta(StrictModel):
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    notes: str | None = None
    baseline: str | None = Field(None, description="Name of the recipe this one is measured against.")
    superseded_by: str | None = None
    solo_only: bool | None = None
    max_nodes: Annotated[int, Field(ge=1)] | None = None
    mods: list[str] = Field(default_factory=list)
    source: str | None = Field(None, description="Where the recipe came from.")


class Recipe(StrictModel):
    """One serving + benchmark recipe."""

    name: Annotated[str, Field(pattern=NAME_RE, description="Stable recipe id (defaults to file stem).")]
    extends: str | None = Field(None, description="Path of a recipe this one deep-merges onto.")
    model: Model
    speculative: Speculative | None = None
    container: Container
    env: dict[str, Scalar] = Field(default_factory=dict, description="Plain environment variables.")
    secrets: list[str] = Field(default_factory=list, description="Names of secrets passed by reference (never values).")
    engine: Engine = Field(default_factory=Engine)
    bench: Bench = Field(default_factory=Bench)
    meta: Meta = Field(default_factory=Meta)

    @field_validator("env")
    @classmethod
    def _env_as_strings(cls, env: dict[str, Scalar]) -> dict[str, Scalar]:
        # YAML `FOO: 1` / `FOO: true` mean the strings "1" / "true" in a process env.
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in env.items()}

    @property
    def served_name(self) -> str:
        return self.model.served_name or self.model.repo

    @property
    def bench_model(self) -> str:
        return self.bench.model or self.served_name


def schema_json() -> str:
    """The recipe JSON Schema as deterministic text (committed at schema/recipe.schema.json).

    ``name`` is optional in files (it defaults to the file stem), so it is not listed as required.
    """
    import json

    schema = Recipe.model_json_schema()
    schema["required"] = [k for k in schema.get("required", []) if k != "name"]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/autobench/autobench/schema/recipe.schema.json"
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
