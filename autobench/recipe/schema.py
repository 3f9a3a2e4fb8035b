"""The recipe schema: pydantic models, unknown keys refused.

A recipe is everything needed to reproduce one serving benchmark: the model and
its quantization, the speculative-decoding draft, the container, env and secrets
(by name), the engine options and the bench.  Field names follow vLLM's own
option names (``max_num_seqs`` → ``--max-num-seqs``) so a reader can map them.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from autobench.digits import is_digits
from autobench.recipe import bounds as B
from autobench.recipe.benchrules import RECIPE, Load, LoadRuleError, check_load
from autobench.recipe.workerhosts import NODES, WorkerHostsError, follow_hosts, host_problem, python_problem

REPO_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$"
LOCAL_PATH = r"/[^\x00\n]*"
MODEL_REF = rf"^(?:{REPO_ID[1:-1]}|{LOCAL_PATH})$"
NAME_RE = r"^[a-z0-9][a-z0-9._\-]*$"
# ``[user@]host``: the address part becomes vLLM's ``--master-addr`` value and ssh's destination,
# the user part ssh's login, so neither may start with '-' (``a@--trust-remote-code`` would reach
# vLLM as a flag of its own) nor hold a shell or space character.  A host is a DNS name, an IPv4
# or IPv6 address (bracketed when it starts with ':', with an optional %zone); a user is what
# useradd accepts.
HOST_RE = (
    r"^(?:[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}@)?"
    r"(?:[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\])$"
)

# What git reads as a repository and a revision, never as an option (a value starting with '-',
# `--upload-pack=CMD`, ran a command in the build): a URL (https, http, ssh, git, file) or
# scp-like user@host:path; a ref of git's own ref characters, not starting with '-'.
GIT_URL_RE = r"^(?:(?:https?|ssh|git|file)://[^\s]+|[A-Za-z0-9_][A-Za-z0-9_.-]*@[A-Za-z0-9_.-]+:[^\s-][^\s]*)$"
GIT_REF_RE = r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$"

Scalar = str | int | float | bool


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, strict=True, frozen=True)


#: Quantization methods autobench knows; any other name is a warning (AB060), not an error.
KNOWN_QUANT_METHODS = (
    "auto-round",
    "awq",
    "gptq",
    "fp8",
    "nvfp4",
    "mxfp4",
    "int4",
    "int8",
    "bitsandbytes",
    "gguf",
    "compressed-tensors",
    "modelopt",
    "modelopt_fp4",
    "modelopt_mixed",
    "mixed",
    "none",
)
#: Speculative methods autobench knows; new ones appear monthly, so others are a warning (AB061).
KNOWN_SPEC_METHODS = (
    "dflash",
    "eagle",
    "eagle3",
    "mtp",
    "ngram",
    "draft_model",
    "medusa",
    "mlp_speculator",
    "suffix",
)
METHOD_RE = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"


class QuantComponent(StrictModel):
    """One part of a mixed quantization (e.g. int4 experts + fp8 attention)."""

    method: Annotated[str, Field(pattern=METHOD_RE)]
    bits: Annotated[int, Field(ge=1, le=32)] | None = None
    scope: str | None = Field(None, description='What it covers, e.g. "experts", "attention", "lm_head".')


class Quantization(StrictModel):
    method: Annotated[
        str,
        Field(pattern=METHOD_RE, description="Known: " + ", ".join(KNOWN_QUANT_METHODS) + " (others warn, AB060)."),
    ]
    bits: Annotated[int, Field(ge=1, le=32)] | None = None
    group_size: Annotated[int, Field(ge=-1)] | None = None
    variant: str | None = Field(None, description='Producer variant, e.g. "EC" (error-corrected).')
    components: list[QuantComponent] = Field(
        default_factory=list, description="Mixed quantization: one entry per part (method mixed/modelopt_mixed)."
    )


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
    """The served model: Hub repo (or local directory), revision, name, quantization."""

    repo: Annotated[
        str,
        Field(
            pattern=MODEL_REF,
            description="Hugging Face repo id, owner/name; or an absolute local model directory "
            "(process runtime, or mounted into the container; pinned by a content hash).",
        ),
    ]
    revision: str = Field("main", description="Branch, tag or full 40-hex commit sha (Hub repos only).")
    served_name: str | None = Field(None, description="--served-model-name; defaults to the repo id.")
    tokenizer: Annotated[str, Field(pattern=REPO_ID)] | None = None
    tokenizer_revision: str | None = None
    trust_remote_code: bool = False
    quantization: Quantization | None = None
    architecture: Architecture | None = None


class Speculative(StrictModel):
    """Speculative decoding: compiled into one --speculative-config JSON."""

    method: Annotated[
        str,
        Field(pattern=METHOD_RE, description="Known: " + ", ".join(KNOWN_SPEC_METHODS) + " (others warn, AB061)."),
    ]
    model: Annotated[str, Field(pattern=MODEL_REF)] | None = Field(
        None, description="Draft repo id (or an absolute local directory)."
    )
    revision: str | None = Field(None, description="Draft revision; pin to a full sha.")
    num_speculative_tokens: Annotated[int, Field(ge=1, le=64)] | None = None
    options: dict[str, object] = Field(
        default_factory=dict,
        description="Extra keys merged into --speculative-config (e.g. draft_tensor_parallel_size).",
    )


class Container(StrictModel):
    """The docker container the engine runs in."""

    image: str | None = Field(
        None,
        min_length=1,
        description="Image reference; pin with @sha256:… for reproducibility.  Needed by the docker "
        "runtime (AB076); a recipe run only as a process (`run --runtime process`) may leave it out.",
    )
    name: str | None = Field(None, description="Container name (docker --name).")
    gpus: str | None = "all"
    ipc: str | None = None
    shm_size: str | None = None
    ports: list[str] = Field(default_factory=list, description='Published ports, "HOST:CONTAINER".')
    volumes: list[str] = Field(default_factory=list, description='Bind mounts, "SRC:DST[:ro]".')
    extra_args: list[str] = Field(default_factory=list, description="Extra docker run flags, one per item.")
    vllm_version: Annotated[str, Field(pattern=r"^v?\d+\.\d+(\.\d+)?([.+-].*)?$")] | None = Field(
        None,
        description="The vLLM version the image runs, e.g. 0.23.1 (preflight's rules; else read from the tag).",
    )

    @field_validator("image")
    @classmethod
    def _image_is_a_reference(cls, image: str | None) -> str | None:
        # docker reads a value that is not an image reference as an option (`--volume=/:/host`).
        from autobench.recipe.imageref import parse_image_ref

        if image is not None:
            parse_image_ref(image)  # ImageRefError is a ValueError: pydantic reports it at the key
        return image


class SetupStep(StrictModel):
    """One step run inside the container (or next to the process) before serve, in order."""

    name: str | None = Field(None, description="A label for logs; defaults to the mod's file name.")
    mod: str | None = Field(
        None,
        description="A mod: a script file, or a directory with run.sh (eugr style), relative to the recipe. "
        "Mounted read-only and run with bash; its sha256 goes into the digest, lock file and ledger.",
    )
    run: str | None = Field(None, description="A shell command (bash -c) run before serve.")
    sha256: str | None = Field(
        None,
        description="The mod's content hash. Filled in by the loader; if written, the mod must match it.",
    )

    @model_validator(mode="after")
    def _one_kind(self) -> SetupStep:
        if (self.mod is None) == (self.run is None):
            raise ValueError("a setup step is either `mod: PATH` or `run: COMMAND`, exactly one of them")
        if self.run is not None and self.sha256 is not None:
            raise ValueError("sha256 belongs to a mod step, not a run step")
        return self


class Launch(StrictModel):
    """How the server starts: entrypoint, command, a prefix, setup steps."""

    entrypoint: str | None = Field(
        None,
        description='docker --entrypoint; "" clears the image\'s entrypoint; unset keeps it '
        "(the default assumes the image's entrypoint is `vllm serve`).",
    )
    command: list[str] = Field(
        default_factory=lambda: ["vllm", "serve"],
        description='The serve command before the model, e.g. ["python3", "-m", "vllm.entrypoints.openai.api_server"] '
        'or a wrapper script ["/opt/serve.sh"].',
    )
    model_flag: str | None = Field(
        None, description='Pass the model as this flag (e.g. "--model") instead of a positional argument.'
    )
    prefix: list[str] = Field(
        default_factory=list, description='Words run before the command, e.g. ["taskset", "-c", "0-9"].'
    )
    setup: list[SetupStep] = Field(default_factory=list, description="Steps run in order before serve.")

    @field_validator("command", mode="before")
    @classmethod
    def _split_command(cls, value: Any) -> Any:
        if isinstance(value, str):
            import shlex

            return shlex.split(value)
        return value

    @field_validator("prefix", mode="before")
    @classmethod
    def _split_prefix(cls, value: Any) -> Any:
        if isinstance(value, str):
            import shlex

            return shlex.split(value)
        return value

    @property
    def is_default(self) -> bool:
        return (
            self.entrypoint is None
            and self.command == ["vllm", "serve"]
            and self.model_flag is None
            and not self.prefix
            and not self.setup
        )


class Topology(StrictModel):
    """Where the engine runs: nodes, GPUs per node and the multi-node executor.

    Parallel sizes stay engine options (engine.tensor_parallel_size, pipeline_parallel_size,
    data_parallel_size, enable_expert_parallel); validate checks they fit these nodes."""

    nodes: Annotated[int, Field(ge=1, le=B.MAX_NODES)] = 1
    gpus_per_node: Annotated[int, Field(ge=1, le=B.MAX_GPUS_PER_NODE)] | None = Field(
        None, description="GPUs on each node; required when nodes > 1."
    )
    gpu: str | None = Field(None, description="GPU model, e.g. GB10 or H200 (preflight's KV budget).")
    gpu_memory_gib: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="Memory of one GPU as torch reports it, GiB (preflight's KV budget; overrides gpu)."
    )
    executor: Literal["native", "ray"] = Field(
        "native",
        description="native: vLLM's --nnodes/--node-rank/--master-addr (workers --headless); "
        "ray: a Ray head and workers, vllm serve --distributed-executor-backend ray on the head.",
    )
    hosts: list[Annotated[str, Field(pattern=HOST_RE)]] = Field(
        default_factory=list,
        description="Host names or addresses, head first (or give --hosts to compile).",
    )
    master_port: Annotated[int, Field(ge=1, le=65535)] = Field(
        29500, description="native: --master-port; ray: the head's GCS port is ray_port."
    )
    ray_port: Annotated[int, Field(ge=1, le=65535)] = 6379
    cluster_timeout_s: Annotated[float, Field(gt=0, le=B.MAX_SECONDS)] = Field(
        600, description="How long the driver waits for the cluster to form."
    )


class Build(StrictModel):
    """Build the engine image from source before the run; container.image names the local tag."""

    base_image: Annotated[str, Field(min_length=1, description="The image the build starts from.")]
    vllm_repo: Annotated[str, Field(pattern=GIT_URL_RE)] = Field(
        "https://github.com/vllm-project/vllm.git", description="Git URL of vLLM."
    )
    vllm_ref: Annotated[
        str, Field(min_length=1, pattern=GIT_REF_RE, description="Tag, branch or commit of vLLM to build.")
    ]
    prs: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list, description="Upstream pull requests applied on top of vllm_ref, in order."
    )
    build_args: dict[str, Scalar] = Field(default_factory=dict, description="docker build --build-arg NAME=VALUE.")
    dockerfile: str | None = Field(
        None, description="A Dockerfile relative to the recipe; default: autobench's templates/vllm-build.Dockerfile."
    )

    @field_validator("build_args")
    @classmethod
    def _args_as_strings(cls, args: dict[str, Scalar]) -> dict[str, Scalar]:
        return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in args.items()}


class Engine(StrictModel):
    """vllm serve options; each typed key is the flag of the same name (max_num_seqs -> --max-num-seqs)."""

    host: str = "0.0.0.0"
    port: Annotated[int, Field(ge=1, le=65535)] = 8000
    max_model_len: Annotated[int, Field(ge=1, le=B.MAX_TOKENS)] | Literal["auto"] | None = Field(
        None, description='Context length, or "auto" (vLLM fits it to the KV cache).'
    )
    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: Annotated[int, Field(ge=1, le=B.MAX_TOKENS)] | None = None
    max_num_seqs: Annotated[int, Field(ge=1, le=B.MAX_CONCURRENCY)] | None = None
    dtype: Literal["auto", "half", "float16", "bfloat16", "float", "float32"] | None = None
    kv_cache_dtype: str | None = None
    tensor_parallel_size: Annotated[int, Field(ge=1, le=B.MAX_PARALLEL)] | None = None
    pipeline_parallel_size: Annotated[int, Field(ge=1, le=B.MAX_PARALLEL)] | None = None
    data_parallel_size: Annotated[int, Field(ge=1, le=B.MAX_PARALLEL)] | None = None
    enable_expert_parallel: bool | None = Field(
        None, description="--enable-expert-parallel: experts sharded over TP x DP ranks (EP size = TP x DP)."
    )
    quantization: str | None = Field(None, description="--quantization (must agree with model.quantization).")
    runner: Literal["auto", "generate", "pooling"] | None = Field(
        None, description="--runner; pooling for embedding models."
    )
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    enforce_eager: bool | None = None
    load_format: str | None = None
    attention_backend: str | None = None
    extra_args: list[str] = Field(default_factory=list, description="Extra vllm serve flags, one per item.")


def _grid_axis(whole: bool, low: float, inclusive: bool) -> Any:
    """A grid axis's before-check: one value, or a non-empty list of distinct values, each a
    number (a whole number when ``whole``) above ``low`` (or equal, when ``inclusive``).  One
    problem, one clear error (``grid_axis``: the loader points at the list item and puts the
    key's name in place of ``{key}`` in the hint)."""
    import json

    kind = "a whole number" if whole else "a number"
    bound = f"{low:g} or more" if inclusive else f"more than {low:g}"
    below = f"below the minimum {low:g}" if inclusive else f"not above the minimum {low:g}"

    def fail(message: str, hint: str, index: int | None = None) -> PydanticCustomError:
        return PydanticCustomError("grid_axis", "{message}", {"message": message, "hint": hint, "index": index})

    def one(value: Any, index: int | None) -> None:
        shown = json.dumps(value) if isinstance(value, (str, int, float)) else type(value).__name__
        if isinstance(value, str) and is_digits(value.strip().replace(".", "", 1)):
            raise fail(
                f"{shown} is a quoted string, not {kind}",
                f"write {kind} without quotes (YAML reads anything in quotes as text)",
                index,
            )
        ok_type = isinstance(value, int) if whole else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type:
            raise fail(f"{shown} is not {kind}", f"write {kind}, or a list of them: [1, 4, 16]", index)
        if value < low or (value == low and not inclusive) or value != value:
            raise fail(f"{shown} is {below}", f"set `{{key}}` to {bound}", index)

    def check(value: Any) -> Any:
        if isinstance(value, list):
            if not value:
                raise fail("empty grid: the list has no value to bench", f"give at least one value ({bound})")
            for i, item in enumerate(value):
                one(item, i)
            for i, item in enumerate(value):
                if item in value[:i]:
                    raise fail(f"{item:g} is listed twice", "list each value once (bench.repeat repeats cells)", i)
            return value
        if value is not None:
            one(value, None)
        return value

    return BeforeValidator(check)


#: A grid axis: one value, or a list of them (each one cell of the run; autobench.recipe.grid).
WholeAxis = Annotated[
    Annotated[int, Field(ge=1, le=B.MAX_TOKENS)]
    | Annotated[list[Annotated[int, Field(ge=1, le=B.MAX_TOKENS)]], Field(min_length=1, max_length=B.MAX_AXIS_VALUES)],
    _grid_axis(True, 1, True),
]
ConcurrencyAxis = Annotated[
    Annotated[int, Field(ge=1, le=B.MAX_CONCURRENCY)]
    | Annotated[
        list[Annotated[int, Field(ge=1, le=B.MAX_CONCURRENCY)]], Field(min_length=1, max_length=B.MAX_AXIS_VALUES)
    ],
    _grid_axis(True, 1, True),
]
RateAxis = Annotated[
    Annotated[float, Field(gt=0, le=B.MAX_REQUEST_RATE)]
    | Annotated[
        list[Annotated[float, Field(gt=0, le=B.MAX_REQUEST_RATE)]], Field(min_length=1, max_length=B.MAX_AXIS_VALUES)
    ],
    _grid_axis(False, 0, False),
]
DepthAxis = Annotated[
    Annotated[int, Field(ge=0, le=B.MAX_CONTEXT_TOKENS)]
    | Annotated[
        list[Annotated[int, Field(ge=0, le=B.MAX_CONTEXT_TOKENS)]], Field(min_length=1, max_length=B.MAX_AXIS_VALUES)
    ],
    _grid_axis(True, 0, True),
]


def _category_axis() -> Any:
    """A category axis's before-check: one name, or a non-empty list of distinct names (a whole
    number is taken as its text, as the dataset reader takes a numeric category field)."""

    def fail(message: str, hint: str, index: int | None = None) -> PydanticCustomError:
        return PydanticCustomError("grid_axis", "{message}", {"message": message, "hint": hint, "index": index})

    def one(value: Any, index: int | None) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str) or not value.strip():
            raise fail(
                f"{type(value).__name__ if not isinstance(value, str) else 'an empty string'} is not a category name",
                "write the category as the dataset's category field names it: code, or a list [code, chat]",
                index,
            )
        if len(value) > 200 or any(ord(ch) < 32 for ch in value):
            raise fail("a category name is at most 200 characters, without control characters", "shorten it", index)
        return value

    def check(value: Any) -> Any:
        if isinstance(value, list):
            if not value:
                raise fail("empty grid: the list has no category to bench", "give at least one category")
            names = [one(item, i) for i, item in enumerate(value)]
            for i, name in enumerate(names):
                if name in names[:i]:
                    raise fail(f"{name!r} is listed twice", "list each category once (bench.repeat repeats cells)", i)
            return names
        return one(value, None) if value is not None else None

    return BeforeValidator(check)


CategoryAxis = Annotated[
    str | Annotated[list[str], Field(min_length=1, max_length=B.MAX_AXIS_VALUES)],
    _category_axis(),
]
#: A schedule entry: grid axis -> value (one cell of the grid).
ScheduleEntry = dict[str, int | float | str]


#: A field (JSONL key, parquet column) name: printable, no line break.
FIELD_NAME = r"^[^\x00-\x1f\x7f]{1,200}$"
SHA256_RE = r"^[0-9a-f]{64}$"


class DatasetFields(StrictModel):
    """Which field of a JSONL record (a parquet column) holds what: ``prompt`` (a string) or
    ``turns`` (a list of user turns or chat messages), and optionally the category and a
    per-record output cap."""

    prompt: Annotated[str, Field(pattern=FIELD_NAME)] | None = Field(
        None, description="The field holding one single-turn prompt (a string)."
    )
    turns: Annotated[str, Field(pattern=FIELD_NAME)] | None = Field(
        None,
        description="The field holding a conversation: a list of strings (user turns), or of messages "
        "({role|from, content|value}) of which the user's are kept, in order.",
    )
    category: Annotated[str, Field(pattern=FIELD_NAME)] | None = Field(
        None, description="The field naming each prompt's category (a string or a whole number)."
    )
    max_tokens: Annotated[str, Field(pattern=FIELD_NAME)] | None = Field(
        None, description="The field holding each prompt's output cap (a whole number)."
    )

    @model_validator(mode="after")
    def _prompt_or_turns(self) -> DatasetFields:
        if (self.prompt is None) == (self.turns is None):
            raise ValueError("map exactly one of prompt (a string field) or turns (a list field)")
        return self


def _repo_file(value: str | None) -> str | None:
    """A path inside a repo: relative, ``/``-separated, no ``..`` or empty part, no control
    character (huggingface_hub refuses the same in ``_validate_relative_filename``)."""
    if value is None:
        return None
    parts = value.split("/")
    if value.startswith("/") or "\\" in value or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{value!r} is not a relative path inside the repo (a/b.parquet: no leading /, no ..)")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("the file name holds a control character")
    return value


class SharedPrefix(StrictModel):
    """Groups of ``prompts`` prompts, in the order sent, each group sharing one prefix of
    ``length`` tokens, or without a length the group's depth context (autobench.bench.workload)."""

    prompts: Annotated[int, Field(ge=1, le=B.MAX_PROMPTS)] = Field(description="Prompts per prefix.")
    length: Annotated[int, Field(ge=1, le=B.MAX_CONTEXT_TOKENS)] | None = Field(
        None,
        description="Prefix length in tokens; omitted: the group shares its depth context (bench.dataset.depth "
        "> 0), as llama-benchy's --enable-prefix-caching reuses a loaded context.",
    )


class Dataset(StrictModel):
    """The prompts the bench sends: a local file, a file of a Hub dataset repo (pinned like a
    model, docs/datasets.md), or random prompts."""

    kind: Literal["sharegpt", "random", "jsonl", "parquet"] = "sharegpt"
    path: str | None = Field(None, description="A local dataset file (sharegpt, jsonl, parquet).")
    repo: Annotated[str, Field(pattern=REPO_ID)] | None = Field(
        None, description="A Hugging Face dataset repo, owner/name (instead of path)."
    )
    file: Annotated[str, Field(min_length=1, max_length=1000)] | None = Field(
        None, description="The file inside the dataset repo, e.g. data/test-00000-of-00001.parquet."
    )
    revision: str | None = Field(
        None, description="The dataset repo's branch, tag or full 40-hex commit sha (`autobench lock` pins it)."
    )
    sha256: Annotated[str, Field(pattern=SHA256_RE)] | None = Field(
        None, description="The file's sha256; a file that does not match is refused (and removed from the cache)."
    )
    fields: DatasetFields | None = Field(
        None, description="jsonl/parquet: which field holds the prompt (or turns), the category, the output cap."
    )
    input_len: WholeAxis | None = Field(None, description="random: prompt tokens; a list is a grid axis.")
    output_len: WholeAxis | None = Field(None, description="random: output tokens; a list is a grid axis.")
    depth: DepthAxis | None = Field(
        None,
        description="Tokens of prior context before each question, counted with the model's tokenizer; "
        "a list is a grid axis: [0, 1024, 4096].",
    )
    shared_prefix: SharedPrefix | None = Field(
        None, description="Every `prompts` prompts (in the order sent) share one prefix of `length` tokens."
    )
    category: CategoryAxis | None = Field(
        None,
        description="Bench only the prompts of this category (fields.category); a list is a grid axis, "
        "each category its own cell (acceptance by category).",
    )
    multi_turn: bool = Field(
        False,
        description="Send each record's turns as one conversation, in order, with the model's answers "
        "appended (fields.turns, or ShareGPT's human turns); per-turn TTFT.",
    )

    @field_validator("file")
    @classmethod
    def _file_in_repo(cls, value: str | None) -> str | None:
        return _repo_file(value)

    @model_validator(mode="after")
    def _shared_context_needs_depth(self) -> Dataset:
        sp, depth = self.shared_prefix, self.depth
        if sp is not None and sp.length is None and not (max(depth) if isinstance(depth, list) else depth):
            raise ValueError(
                "shared_prefix without a length shares each group's depth context: set depth above 0 "
                "(or give shared_prefix.length)"
            )
        return self

    @model_validator(mode="after")
    def _one_source(self) -> Dataset:
        if self.repo is not None and self.path is not None:
            raise ValueError("give either path (a local file) or repo + file (a Hub dataset), not both")
        if self.repo is not None and self.file is None:
            raise ValueError("a dataset repo needs file: the file inside the repo to read")
        if self.repo is None and (self.file is not None or self.revision is not None):
            raise ValueError("file and revision belong to a Hub dataset: add repo: owner/name")
        if self.kind == "random" and (self.repo is not None or self.path is not None or self.sha256 is not None):
            raise ValueError("a random dataset reads no file: drop path/repo/sha256 or pick another kind")
        if self.kind == "random" and self.category is not None:  # the bench refuses it too
            raise _located(
                "random prompts have no category",
                "drop category, or bench a dataset file with a category field (fields.category)",
                at=("category",),
            )
        if self.fields is not None and self.kind not in ("jsonl", "parquet"):
            raise ValueError(f"fields map jsonl or parquet records; a {self.kind} dataset has its own shape")
        return self


class Sampler(StrictModel):
    """Sampling parameters sent with every request (unset: the server's defaults)."""

    temperature: Annotated[float, Field(ge=0)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    top_k: int | None = None
    min_p: Annotated[float, Field(ge=0, le=1)] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: Annotated[float, Field(gt=0)] | None = None


class Slo(StrictModel):
    """Service-level objectives (ms): the bench counts the requests meeting all of them and their
    rate, goodput (`autobench bench --slo`, `vllm bench serve --goodput`)."""

    ttft: Annotated[float, Field(gt=0)] | None = Field(None, description="Time to first token, ms.")
    tpot: Annotated[float, Field(gt=0)] | None = Field(None, description="Time per output token, ms.")
    e2el: Annotated[float, Field(gt=0)] | None = Field(None, description="End-to-end latency, ms.")

    @model_validator(mode="after")
    def _one_at_least(self) -> Slo:
        if self.ttft is None and self.tpot is None and self.e2el is None:
            raise ValueError("give at least one of ttft, tpot, e2el (milliseconds), or drop slo")
        return self

    def limits(self) -> dict[str, float]:
        return {k: v for k, v in (("ttft", self.ttft), ("tpot", self.tpot), ("e2el", self.e2el)) if v is not None}


def _quoted(value: str) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _located(message: str, hint: str, *, index: int | None = None, at: tuple[str, ...] = ()) -> PydanticCustomError:
    """A schema error in its own words (``grid_axis``: the loader shows message and hint), at the
    list item ``index`` or the key path ``at`` below the model that raises it."""
    return PydanticCustomError("grid_axis", "{message}", {"message": message, "hint": hint, "index": index, "at": at})


def _check_load_generators(bench: Bench, count: int, where: tuple[str, ...] = ()) -> None:
    """``count`` load generators (bench.workers, or one per worker host) must be autobench's own
    client; with it, the bench's settings must agree (autobench.recipe.benchrules: the rules
    ``autobench bench`` follows too).  Each refusal at the key it names, worded without it."""
    hosts = bool(bench.worker_hosts)
    if bench.client != "autobench":
        if count > 1 or hosts:
            gens = f"{count} load generator{'s' if count != 1 else ''}" + (" on other hosts" if hosts else "")
            key = "worker_hosts" if hosts else "workers"
            raise _located(
                f"{gens} need{'s' if count == 1 else ''} client autobench "
                "(vllm bench serve is one process on this machine)",
                f"set bench.client: autobench, or drop bench.{key}",
                at=(*where, key),
            )
        return
    rate = bench.request_rate is not None
    load = Load(
        count, bench.num_prompts, _lowest(bench.concurrency), bench.warmup, rate, bench.dataset.multi_turn, hosts
    )
    try:
        check_load(load, RECIPE)
    except LoadRuleError as exc:
        under = tuple(getattr(RECIPE, exc.key).split(".")[1:])  # bench.dataset.multi_turn -> under bench
        raise _located(exc.message, exc.hint, at=(*where, *under)) from None


def _lowest(axis: int | list[int]) -> int:
    return min(axis) if isinstance(axis, list) else axis


class Bench(StrictModel):
    """The benchmark: client, endpoint, dataset, load."""

    client: Literal["autobench", "vllm"] = Field(
        "autobench", description="autobench's own client, or `vllm bench serve` inside the container."
    )
    endpoint: Literal["completions", "chat", "embeddings"] = Field(
        "completions", description="embeddings: a pooling (embedding) model; needs client vllm."
    )
    model: str | None = Field(None, description="Model name sent by the client; defaults to served_name.")
    dataset: Dataset = Field(default_factory=lambda: Dataset.model_validate({}))
    num_prompts: Annotated[int, Field(ge=1, le=B.MAX_PROMPTS)] = 500
    max_seconds: Annotated[float, Field(gt=0, le=B.MAX_SECONDS)] | None = None
    concurrency: ConcurrencyAxis = Field(
        8, description="Requests in flight at once; a list is a grid axis: [1, 4, 16]."
    )
    max_tokens: Annotated[int, Field(ge=1, le=B.MAX_TOKENS)] = 256
    request_rate: RateAxis | None = Field(
        None, description="Requests per second (Poisson); unset: as fast as concurrency allows; a list is a grid axis."
    )
    repeat: Annotated[int, Field(ge=1, le=B.MAX_REPEAT)] = Field(
        1, description="Bench every cell this many times (rounds: every cell once, then again)."
    )
    workers: Annotated[int, Field(ge=1, le=B.MAX_WORKERS)] = Field(
        1,
        description="Load generator processes of the autobench client, each with its share of the "
        "concurrency or rate and its own event loop; their raw samples merged into one result.",
    )
    worker_hosts: Annotated[list[str], Field(max_length=B.MAX_WORKERS)] | Literal["nodes"] = Field(
        default_factory=list,
        description="Run the load generators on these hosts, one on each, instead of on this machine: "
        "reached with `run --remote` (default ssh) and started there as worker_python -m "
        "autobench.bench.worker; `nodes`: one on each node of a multi-node run (topology.hosts or "
        "--hosts). bench.workers follows their number.",
    )
    worker_python: str = Field(
        "python3", description="The Python with autobench installed on the bench.worker_hosts (shell words)."
    )
    schedule: Annotated[list[ScheduleEntry], Field(max_length=B.MAX_CELLS)] | None = Field(
        None,
        description="The cells in this order instead of the grid's, e.g. [{concurrency: 16}, {concurrency: 1}]; "
        "each entry names a value of every grid axis with several values.",
    )
    ignore_eos: bool = False
    seed: int = 0
    warmup: Annotated[int, Field(ge=0, le=B.MAX_PROMPTS)] = 0
    sampler: Sampler | None = None
    slo: Slo | None = Field(None, description="Service-level objectives (ms) for goodput.")
    ready_timeout_s: Annotated[float, Field(gt=0, le=B.MAX_SECONDS)] = 1800

    @field_validator("worker_hosts", mode="before")
    @classmethod
    def _hosts_are_host_names(cls, hosts: object) -> object:
        if isinstance(hosts, str) and hosts != NODES:
            raise _located(
                f"{_quoted(hosts)} is neither a list of hosts nor nodes",
                "write a list, [user@host, ...], or nodes (one load generator on each node of the run)",
            )
        for index, host in enumerate(hosts if isinstance(hosts, list) else ()):
            problem = host_problem(host) if isinstance(host, str) else None
            if problem is not None:
                raise _located(
                    f"{_quoted(host)} is not a host name: it {problem}",
                    "write [user@]host, e.g. user@10.0.0.2",
                    index=index,
                )
        return hosts

    @field_validator("worker_python")
    @classmethod
    def _python_is_a_command(cls, python: str) -> str:
        problem = python_problem(python)
        if problem is not None:
            raise _located(f"{_quoted(python)} is not a command: it {problem}", "e.g. python3 or /opt/venv/bin/python")
        return python

    @model_validator(mode="after")
    def _load_generators_agree(self) -> Bench:
        """bench.workers follows the hosts, and the load generators and the rest of the bench
        agree (one refusal, at the key it names)."""
        if self.worker_hosts == NODES:  # their number is the recipe's nodes (Recipe checks it)
            return self
        try:
            count = follow_hosts(
                self.workers,
                len(self.worker_hosts),
                workers_name="bench.workers",
                hosts_name="hosts in bench.worker_hosts",
            )
        except WorkerHostsError as exc:
            raise _located(exc.message, exc.hint, at=("workers",)) from None
        _check_load_generators(self, count)
        return self

    def load_generators(self, nodes: int) -> int:
        """How many load generators bench: one on each worker host (``nodes``: one on each of the
        run's ``nodes``), else ``workers`` (validated to agree: autobench.recipe.workerhosts)."""
        hosts = nodes if self.worker_hosts == NODES else len(self.worker_hosts)
        return follow_hosts(self.workers, hosts)

    @model_validator(mode="after")
    def _grid_within_bounds(self) -> Bench:
        def count(value: object) -> int:
            return len(value) if isinstance(value, list) else 1

        axes = [count(self.concurrency), count(self.request_rate)]
        axes += [count(self.dataset.input_len), count(self.dataset.output_len)]
        axes += [count(self.dataset.depth), count(self.dataset.category)]
        total = B.grid_size(axes, len(self.schedule) if self.schedule else None, self.repeat)
        if total > B.MAX_CELLS:
            raise PydanticCustomError(
                "grid_axis",  # worded like an axis's own error (the loader shows message and hint)
                "{message}",
                {
                    "message": f"the grid is {total:,} benches (cells x repeat); a run benches at most {B.MAX_CELLS:,}",
                    "hint": "fewer values per axis, a bench.schedule of the cells you need, or a smaller bench.repeat",
                    "index": None,
                },
            )
        return self


class Meta(StrictModel):
    """Facts for people and reports; none of them changes the compiled commands."""

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
    container: Container = Field(
        default_factory=lambda: Container.model_validate({}),
        description="The docker container; optional for a recipe run only as a process (`--runtime process`).",
    )
    launch: Launch = Field(default_factory=lambda: Launch.model_validate({}))
    topology: Topology = Field(default_factory=lambda: Topology.model_validate({}))
    build: Build | None = None
    cell: str | None = Field(
        None, description="Which cell of the file's variants/roles this is (set by the loader; `compile --variant`)."
    )
    variants: dict[str, dict[str, object]] = Field(
        default_factory=dict,
        description="Named overrides deep-merged onto the recipe, one cell each (`key+: [..]` appends to a list).",
    )
    roles: dict[str, dict[str, object]] = Field(
        default_factory=dict,
        description="Server roles (e.g. prefill, decode) with their own flags and env; crossed with variants.",
    )
    env: dict[str, Scalar] = Field(default_factory=dict, description="Plain environment variables.")
    secrets: list[str] = Field(default_factory=list, description="Names of secrets passed by reference (never values).")
    engine: Engine = Field(default_factory=lambda: Engine.model_validate({}))
    bench: Bench = Field(default_factory=lambda: Bench.model_validate({}))
    meta: Meta = Field(default_factory=lambda: Meta.model_validate({}))

    @model_validator(mode="after")
    def _load_generators_on_the_nodes(self) -> Recipe:
        b = self.bench
        if b.worker_hosts != NODES:
            return self
        nodes = self.topology.nodes
        if nodes < 2:
            raise _located(
                "nodes puts one load generator on each node of a multi-node run; this recipe has one node",
                "list the hosts instead: bench.worker_hosts: [user@host, ...]",
                at=("bench", "worker_hosts"),
            )
        try:
            count = follow_hosts(b.workers, nodes, workers_name="bench.workers", hosts_name="nodes (topology.nodes)")
        except WorkerHostsError as exc:
            raise _located(exc.message, exc.hint, at=("bench", "workers")) from None
        _check_load_generators(b, count, ("bench",))
        return self

    @property
    def load_generators(self) -> int:
        """How many load generators bench this recipe (Bench.load_generators on its nodes)."""
        return self.bench.load_generators(self.topology.nodes)

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


#: Keys added after recipes were first recorded.  When they hold their default they are left out
#: of the resolved data (and so of the digest): an old recipe keeps its digest and its compiled
#: script byte for byte.
LATER_KEYS: tuple[tuple[str, ...], ...] = (
    ("launch",),
    ("topology",),
    ("build",),
    ("cell",),
    ("variants",),
    ("roles",),
    ("engine", "data_parallel_size"),
    ("engine", "enable_expert_parallel"),
    ("engine", "quantization"),
    ("engine", "runner"),
    ("model", "quantization", "components"),
    ("container", "vllm_version"),
    ("topology", "gpu"),
    ("topology", "gpu_memory_gib"),
    ("bench", "repeat"),
    ("bench", "schedule"),
    ("bench", "slo"),
    ("bench", "dataset", "repo"),
    ("bench", "dataset", "file"),
    ("bench", "dataset", "revision"),
    ("bench", "dataset", "sha256"),
    ("bench", "dataset", "fields"),
    ("bench", "dataset", "depth"),
    ("bench", "dataset", "shared_prefix"),
    ("bench", "dataset", "category"),
    ("bench", "dataset", "multi_turn"),
    ("bench", "workers"),
    ("bench", "worker_hosts"),
    ("bench", "worker_python"),
)


@functools.cache  # pure in the path; the value is only compared, never changed
def _default_at(path: tuple[str, ...]) -> Any:
    model: Any = Recipe
    for part in path[:-1]:
        annotation = model.model_fields[part].annotation
        model = next(a for a in (annotation, *getattr(annotation, "__args__", ())) if isinstance(a, type))
    info = model.model_fields[path[-1]]
    value = info.get_default(call_default_factory=True)
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def trim_later_defaults(data: dict[str, object]) -> dict[str, object]:
    """``data`` (a resolved recipe dump) without the LATER_KEYS that hold their default."""
    for path in LATER_KEYS:
        node: Any = data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node and node[path[-1]] == _default_at(path):
            del node[path[-1]]
    return data


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
