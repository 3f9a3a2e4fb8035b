"""Named validation rules beyond the schema.

Each rule has a stable code (``AB0xx``), a default severity and a one-line fix hint.  Codes are
never reused; retired rules keep their number.  ``check(loaded)`` runs every rule over a
:class:`~autobench.recipe.loader.LoadedRecipe` and returns findings ordered by position.
``--strict`` promotes warnings to errors (so an unpinned revision fails CI).

The table ``RULES`` is the single source of the codes; docs/recipes.md lists it and a test
checks that every code a rule emits is in the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import InitVar, dataclass
from typing import Any

from autobench.recipe.facts import output_tokens, server_endpoint, unpinned, world_size
from autobench.recipe.grid import AXES, axis, cells, largest, schedule_problems
from autobench.recipe.imageref import parse_image_ref
from autobench.recipe.loader import LoadedRecipe, Position, format_path
from autobench.recipe.schema import KNOWN_QUANT_METHODS, KNOWN_SPEC_METHODS
from autobench.recipe.sizes import parse_size
from autobench.redaction import WELL_KNOWN_SECRET_NAMES, environment_secrets, find_token, is_secret_name, secret_in


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str
    hint: str


RULES: dict[str, Rule] = {
    r.code: r
    for r in [
        Rule("AB000", "error", "recipe cannot be loaded (YAML or schema)", "fix the key the message names"),
        Rule(
            "AB001",
            "error",
            "speculative method needs num_speculative_tokens",
            "add speculative.num_speculative_tokens (e.g. 5 for dflash)",
        ),
        Rule(
            "AB002",
            "error",
            "speculative method needs a draft model",
            "add speculative.model: owner/draft-repo and its revision",
        ),
        Rule(
            "AB003",
            "warning",
            "draft model given to a method that does not use one",
            "remove speculative.model or change speculative.method",
        ),
        Rule(
            "AB010",
            "warning",
            "model revision is not a full commit sha (unpinned)",
            "run `autobench lock RECIPE` to pin it to a 40-hex commit sha",
        ),
        Rule(
            "AB011",
            "warning",
            "tokenizer revision is not a full commit sha (unpinned)",
            "run `autobench lock RECIPE` to pin it to a 40-hex commit sha",
        ),
        Rule(
            "AB012",
            "warning",
            "draft revision is not a full commit sha (unpinned)",
            "run `autobench lock RECIPE` to pin it to a 40-hex commit sha",
        ),
        Rule(
            "AB014",
            "warning",
            "dataset revision is not a full commit sha (unpinned)",
            "run `autobench lock RECIPE` to pin it to a 40-hex commit sha",
        ),
        Rule(
            "AB013",
            "warning",
            "trust_remote_code on an unpinned revision runs code that can change",
            "pin model.revision (`autobench lock RECIPE`) before trusting remote code",
        ),
        Rule(
            "AB020",
            "warning",
            "engine.max_num_seqs is below bench.concurrency (requests queue in the server)",
            "raise engine.max_num_seqs to at least bench.concurrency",
        ),
        Rule(
            "AB021",
            "error",
            "bench.model differs from the served model name",
            "set bench.model to model.served_name (or delete bench.model)",
        ),
        Rule(
            "AB022",
            "error",
            "no published container port maps to engine.port",
            'publish the engine port, e.g. container.ports: ["8000:8000"]',
        ),
        Rule("AB023", "error", "engine.gpu_memory_utilization outside (0, 1]", "use a fraction such as 0.85"),
        Rule(
            "AB024",
            "error",
            "the output tokens a request asks for exceed engine.max_model_len",
            "lower bench.max_tokens (bench.dataset.output_len for a random dataset) or raise engine.max_model_len",
        ),
        Rule(
            "AB025",
            "error",
            "dataset kind needs a file path or a Hub dataset repo",
            "set bench.dataset.path, or repo and file (or use dataset kind random)",
        ),
        Rule(
            "AB026",
            "warning",
            "random dataset without input/output lengths",
            "set bench.dataset.input_len and output_len",
        ),
        Rule(
            "AB027",
            "warning",
            "bench.max_seconds is not enforced by `vllm bench serve`",
            "use bench.client: autobench for a time cap, or drop max_seconds",
        ),
        Rule(
            "AB028",
            "warning",
            "sampler key not supported by the autobench bench client (ignored)",
            "drop it, or use bench.client: vllm",
        ),
        Rule(
            "AB029",
            "error",
            "the vllm client reads only a local ShareGPT or JSONL file",
            "use client autobench for a Hub dataset, parquet or a field mapping",
        ),
        Rule(
            "AB030",
            "error",
            "a secret value is written in the recipe",
            "delete the value; declare the name under secrets: and export it in your shell",
        ),
        Rule("AB031", "error", "an env variable is also declared as a secret", "keep the name only under secrets:"),
        Rule(
            "AB032",
            "error",
            "a well-known secret name is set as a plain env variable",
            "move the name to secrets: (the value comes from your shell)",
        ),
        Rule(
            "AB033",
            "error",
            "env name is not a valid shell variable name",
            "use letters, digits and underscores, not starting with a digit",
        ),
        Rule(
            "AB034",
            "error",
            "secret name is not a valid shell variable name",
            "use letters, digits and underscores, not starting with a digit",
        ),
        Rule("AB035", "warning", "secret declared twice", "list each secret once"),
        Rule(
            "AB036",
            "error",
            "the vllm client sends no context depth, shared prefix, category selection or conversation",
            "use client autobench (its bench sends them), or drop the key",
        ),
        Rule(
            "AB037",
            "error",
            "the context depth (and shared prefix) plus the output tokens exceed engine.max_model_len",
            "a smaller bench.dataset.depth or shared_prefix.length, or raise engine.max_model_len",
        ),
        Rule(
            "AB040",
            "error",
            "extra_args repeats a flag that a typed field already sets",
            "delete the flag from extra_args and use the typed field",
        ),
        Rule("AB041", "error", "a flag appears more than once in extra_args", "keep one of them"),
        Rule(
            "AB042",
            "error",
            "speculative.options repeats a typed speculative key",
            "set method/model/revision/num_speculative_tokens as typed keys only",
        ),
        Rule("AB050", "warning", "container image uses a floating tag", "pin the image by digest: image@sha256:..."),
        Rule(
            "AB051",
            "info",
            "container image is pinned by tag only",
            "tags can move; pin by digest (image@sha256:...) for exact reproducibility",
        ),
        Rule(
            "AB052",
            "error",
            "container name is not a valid docker name",
            "use letters, digits, '_', '.' and '-', starting with a letter or digit",
        ),
        Rule(
            "AB053",
            "warning",
            "HF_HUB_OFFLINE=1 but no Hugging Face cache is mounted",
            "mount the cache, e.g. ~/.cache/huggingface:/root/.cache/huggingface",
        ),
        Rule(
            "AB054", "warning", "meta.baseline names the recipe itself", "name the recipe this one is measured against"
        ),
        Rule("AB055", "error", "a value contains a NUL character", "remove the \\0 escape"),
        Rule(
            "AB056",
            "error",
            "a word in container.extra_args would be read as the image, not as a flag's value",
            "write the flag and its value as one item, e.g. --network=host; put the image in container.image",
        ),
        Rule(
            "AB057",
            "error",
            "container.shm_size is not a size docker reads",
            "a number and a unit docker reads, e.g. 16g, 512m or 20Gi",
        ),
        Rule(
            "AB060",
            "warning",
            "quantization method autobench does not know",
            "check the spelling; a new method is fine (autobench passes it through)",
        ),
        Rule(
            "AB061",
            "warning",
            "speculative method autobench does not know",
            "check the spelling; a new method is fine (autobench passes it to --speculative-config)",
        ),
        Rule(
            "AB062",
            "error",
            "model.quantization disagrees with the quantization the command passes",
            "make model.quantization.method and engine.quantization (or --quantization) name the same method",
        ),
        Rule(
            "AB063",
            "warning",
            "meta.description states a speculative token count the recipe does not use",
            "fix the description or speculative.num_speculative_tokens",
        ),
        Rule(
            "AB064",
            "error",
            "parallel sizes do not fit the topology",
            "make TP x PP x DP a multiple of topology.nodes and at most nodes x gpus_per_node",
        ),
        Rule(
            "AB065",
            "error",
            "topology.hosts does not name one host per node",
            "list topology.nodes hosts, head first (or give --hosts to compile)",
        ),
        Rule(
            "AB066",
            "error",
            "a multi-node topology needs topology.gpus_per_node",
            "set topology.gpus_per_node (GPUs on each node)",
        ),
        Rule(
            "AB067",
            "error",
            "launch.entrypoint cannot be combined with setup steps",
            "drop launch.entrypoint (setup steps run through bash) or move it into launch.command",
        ),
        Rule(
            "AB068",
            "error",
            "bench endpoint and engine runner disagree (embedding model)",
            "an embedding model: engine.runner pooling, bench.endpoint embeddings, bench.client vllm",
        ),
        Rule(
            "AB069",
            "warning",
            "the engine build names a vLLM branch or tag, not a commit",
            "pin build.vllm_ref to a 40-hex commit (a tag or branch can move between builds)",
        ),
        Rule(
            "AB070",
            "warning",
            "preflight predicts a boot failure (KV-cache layout from the cached configs)",
            "see `autobench preflight RECIPE`: pin another draft revision or vLLM version",
        ),
        Rule(
            "AB071",
            "info",
            "preflight cannot predict this recipe's boot from the cached configs",
            "see `autobench preflight RECIPE` for what is missing",
        ),
        Rule(
            "AB075",
            "error",
            "a local model directory is not mounted into the container",
            'mount it (container.volumes: ["/models/x:/models/x:ro"]) or run with --runtime process',
        ),
        Rule(
            "AB076",
            "error",
            "no container.image: the docker runtime has nothing to run",
            "set container.image (e.g. vllm/vllm-openai:v0.11.0@sha256:...), or run it as a process "
            "(`autobench run --runtime process`; `validate --runtime process`)",
        ),
        Rule(
            "AB080",
            "error",
            "a bench.schedule entry names no cell of the grid",
            "each entry gives one value of every grid axis with several values, each value in its list",
        ),
        Rule(
            "AB081",
            "error",
            "a bench grid (several cells) on a runtime that benches one cell",
            "run it with autobench run (docker, process, slurm, or a multi-node recipe's nodes: one boot, every cell), "
            "or bench one cell here",
        ),
    ]
}

# Methods and what they need (vLLM SpeculativeConfig); methods outside these sets are open (AB061).
NEEDS_NUM_TOKENS = {"dflash", "eagle", "eagle3", "mtp", "draft_model", "ngram", "medusa", "mlp_speculator"}
NEEDS_DRAFT = {"dflash", "eagle", "eagle3", "draft_model", "medusa", "mlp_speculator"}
NO_DRAFT = {"ngram", "suffix"}

SHELL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DOCKER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
FLOATING_TAGS = re.compile(r"^(latest|nightly.*|main|master|edge|dev.*)$")

# The vllm serve flags typed fields emit (see autobench.compile.argv) -> the field that owns each.
# Names are compared after normalisation (`_` and `-` alike, `--flag=value` split): see norm_flag.
TYPED_ENGINE_FLAGS: dict[str, str] = {
    "--model": "model.repo",
    "--revision": "model.revision",
    "--served-model-name": "model.served_name",
    "--tokenizer": "model.tokenizer",
    "--tokenizer-revision": "model.tokenizer_revision",
    "--trust-remote-code": "model.trust_remote_code",
    "--no-trust-remote-code": "model.trust_remote_code",
    "--host": "engine.host",
    "--port": "engine.port",
    "--max-model-len": "engine.max_model_len",
    "--gpu-memory-utilization": "engine.gpu_memory_utilization",
    "--max-num-batched-tokens": "engine.max_num_batched_tokens",
    "--max-num-seqs": "engine.max_num_seqs",
    "--dtype": "engine.dtype",
    "--kv-cache-dtype": "engine.kv_cache_dtype",
    "--tensor-parallel-size": "engine.tensor_parallel_size",
    "-tp": "engine.tensor_parallel_size",
    "--pipeline-parallel-size": "engine.pipeline_parallel_size",
    "-pp": "engine.pipeline_parallel_size",
    "--data-parallel-size": "engine.data_parallel_size",
    "-dp": "engine.data_parallel_size",
    "--enable-expert-parallel": "engine.enable_expert_parallel",
    "--no-enable-expert-parallel": "engine.enable_expert_parallel",
    "-ep": "engine.enable_expert_parallel",
    "--quantization": "engine.quantization",
    "-q": "engine.quantization",
    "--runner": "engine.runner",
    "--load-format": "engine.load_format",
    "--attention-backend": "engine.attention_backend",
    "--speculative-config": "speculative",
    "--enable-prefix-caching": "engine.enable_prefix_caching",
    "--no-enable-prefix-caching": "engine.enable_prefix_caching",
    "--enable-chunked-prefill": "engine.enable_chunked_prefill",
    "--no-enable-chunked-prefill": "engine.enable_chunked_prefill",
    "--enforce-eager": "engine.enforce_eager",
    "--no-enforce-eager": "engine.enforce_eager",
    "--nnodes": "topology.nodes",
    "--node-rank": "topology (compile sets each node's rank)",
    "--master-addr": "topology.hosts",
    "--master-port": "topology.master_port",
    "--headless": "topology (compile sets it on worker nodes)",
    "--distributed-executor-backend": "topology.executor",
}
TYPED_DOCKER_FLAGS: dict[str, str] = {
    "--name": "container.name",
    "--gpus": "container.gpus",
    "--ipc": "container.ipc",
    "--shm-size": "container.shm_size",
    "-d": "(autobench runs the container detached)",
    "--detach": "(autobench runs the container detached)",
    "--entrypoint": "launch.entrypoint",
}
REPEATABLE_DOCKER_FLAGS = {
    "-p",
    "--publish",
    "-v",
    "--volume",
    "-e",
    "--env",
    "--mount",
    "--device",
    "--cap-add",
    "--security-opt",
    "--ulimit",
    "--label",
    "-l",
    "--add-host",
    "--env-file",
    "--group-add",
    "--tmpfs",
}
# docker run flags that take no value: a plain word right after one of them is where docker's
# option parsing stops, i.e. it becomes the image (docker run --help).
DOCKER_BOOL_FLAGS = {
    "-d",
    "--detach",
    "--disable-content-trust",
    "--init",
    "-i",
    "--interactive",
    "--no-healthcheck",
    "--oom-kill-disable",
    "--privileged",
    "-P",
    "--publish-all",
    "-q",
    "--quiet",
    "--read-only",
    "--rm",
    "--sig-proxy",
    "-t",
    "--tty",
    "--help",
    "--use-api-socket",
}
REPEATABLE_ENGINE_FLAGS = {"--middleware", "--allowed-origins", "--lora-modules", "--api-key"}


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    message: str
    hint: str
    location: Position | None = None
    key: str = ""
    #: The secrets to redact (default: ``environment_secrets()`` read now); ``check`` reads the
    #: environment once for all its findings.
    secrets: InitVar[Mapping[str, str] | None] = None

    def __post_init__(self, secrets: Mapping[str, str] | None) -> None:
        # A message may quote the value it refuses: never a secret (redacted once, here, so the
        # text line and the JSON form agree).
        from autobench.redaction import environment_secrets, redact

        if secrets is None:
            secrets = environment_secrets()
        object.__setattr__(self, "message", redact(self.message, secrets))
        object.__setattr__(self, "hint", redact(self.hint, secrets))

    def text(self) -> str:
        from autobench.escape import terminal

        loc = self.location
        where = "" if loc is None else f"{loc.file}: " if loc.line == 0 else f"{loc}: "
        key = f"{self.key}: " if self.key else ""
        return terminal(f"{where}{self.code} {self.severity}: {key}{self.message} (hint: {self.hint})")

    def as_dict(self) -> dict[str, object]:
        loc = self.location
        return {
            "code": self.code,
            "severity": self.severity,
            "file": str(loc.file) if loc else None,
            "line": loc.line if loc else None,
            "col": loc.col if loc else None,
            "key": self.key,
            "message": self.message,
            "hint": self.hint,
        }


class _Ctx:
    def __init__(
        self, loaded: LoadedRecipe, env: Mapping[str, str] | None, runtime: str, redact: Mapping[str, str] | None
    ):
        self.loaded = loaded
        self.runtime = runtime
        self.r = loaded.recipe
        # values that must not be written in the recipe: its secrets and secret-named variables
        self.secret_values = environment_secrets(self.r.secrets, env) if env is not None else {}
        self.redact = environment_secrets() if redact is None else redact  # what the findings are redacted of
        self.out: list[Finding] = []

    def add(
        self, code: str, keys: tuple[Any, ...], message: str, *, hint: str | None = None, severity: str | None = None
    ) -> None:
        rule = RULES[code]
        self.out.append(
            Finding(
                code=code,
                severity=severity or rule.severity,
                message=message,
                hint=hint or rule.hint,
                # a key written nowhere (a default): the file, line 0 (``file: CODE ...``)
                location=self.loaded.value_position(*keys) or Position(self.loaded.path, 0, 0),
                key=format_path(keys),
                secrets=self.redact,
            )
        )


def flag_name(arg: str) -> str | None:
    """ "--max-num-seqs=8" -> "--max-num-seqs"; non-flags -> None."""
    if not arg.startswith("-") or arg == "-" or re.match(r"^-\d", arg):
        return None
    return arg.partition("=")[0]


def norm_flag(name: str) -> str:
    """A flag name as vLLM's parser compares it: "--max_model_len" -> "--max-model-len"."""
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    return name


def _flags(args: list[str]) -> Iterator[tuple[int, str]]:
    for i, arg in enumerate(args):
        name = flag_name(arg)
        if name:
            yield i, norm_flag(name)


# --------------------------------------------------------------------------- the rules


def _speculative(c: _Ctx) -> None:
    spec = c.r.speculative
    if spec is None:
        return
    if spec.method not in KNOWN_SPEC_METHODS:
        c.add(
            "AB061",
            ("speculative", "method"),
            f"speculative method {spec.method!r} is not one autobench knows",
            hint="known: " + ", ".join(KNOWN_SPEC_METHODS) + "; a new method is passed through as written",
        )
    if spec.method in NEEDS_NUM_TOKENS and spec.num_speculative_tokens is None:
        c.add(
            "AB001",
            ("speculative", "method"),
            f"{spec.method} needs num_speculative_tokens (vLLM refuses to start without it)",
        )
    if spec.method in NEEDS_DRAFT and not spec.model:
        c.add("AB002", ("speculative", "method"), f"{spec.method} needs a draft model")
    if spec.method in NO_DRAFT and spec.model:
        c.add("AB003", ("speculative", "model"), f"method {spec.method} does not use a draft model")
    typed = {"method", "model", "revision", "num_speculative_tokens"}
    for key in spec.options:
        if key in typed:
            c.add("AB042", ("speculative", "options", key), f"repeats speculative.{key}")


def _pins(c: _Ctx) -> None:
    m = c.r.model
    for pin in unpinned(c.r):  # autobench.recipe.facts: the one list of Hub references
        if pin.kind == "model":
            c.add("AB010", pin.rev_key, f"model revision {pin.revision!r} is not a full commit sha")
            if m.trust_remote_code:
                c.add("AB013", ("model", "trust_remote_code"), f"true with model revision {pin.revision!r}")
        elif pin.kind == "tokenizer":
            key = pin.rev_key if pin.revision else ("model", "tokenizer")
            c.add("AB011", key, f"tokenizer revision {pin.revision or '(none, i.e. main)'!r} is not a full commit sha")
        elif pin.kind == "draft":
            key = pin.rev_key if pin.revision else pin.repo_key
            c.add("AB012", key, f"draft revision {pin.revision or '(none, i.e. main)'!r} is not a full commit sha")
        else:
            key = pin.rev_key if pin.revision else pin.repo_key
            c.add("AB014", key, f"dataset revision {pin.revision or '(none, i.e. main)'!r} is not a full commit sha")


def _engine_vs_bench(c: _Ctx) -> None:
    e, b = c.r.engine, c.r.bench
    conc = largest(b.concurrency)
    if e.max_num_seqs is not None and e.max_num_seqs < conc:
        c.add("AB020", ("engine", "max_num_seqs"), f"{e.max_num_seqs} < bench.concurrency {conc}")
    if b.model is not None and b.model != c.r.served_name:
        c.add("AB021", ("bench", "model"), f"{b.model!r} != served name {c.r.served_name!r}")
    if e.gpu_memory_utilization is not None and not 0 < e.gpu_memory_utilization <= 1:
        c.add(
            "AB023",
            ("engine", "gpu_memory_utilization"),
            f"{e.gpu_memory_utilization} is outside (0, 1]",
        )
    wanted = output_tokens(c.r)
    if isinstance(e.max_model_len, int) and wanted > e.max_model_len:
        where: tuple[str, ...] = (
            ("bench", "max_tokens") if wanted == b.max_tokens else ("bench", "dataset", "output_len")
        )
        c.add("AB024", where, f"{wanted} output tokens > max_model_len {e.max_model_len}")
    d = b.dataset
    if d.kind != "random" and not d.path and not d.repo:
        c.add("AB025", ("bench", "dataset"), f"dataset kind {d.kind} needs a path or a repo")
    if b.client == "vllm" and (d.repo or d.fields or d.kind == "parquet"):
        what = "a Hub dataset repo" if d.repo else "a field mapping" if d.fields else "a parquet file"
        c.add("AB029", ("bench", "dataset"), f"client vllm does not read {what}")
    _workloads(c)
    if d.kind == "random" and (d.input_len is None or d.output_len is None):
        c.add("AB026", ("bench", "dataset"), "random dataset needs input_len and output_len")
    if b.client == "autobench" and b.sampler is not None:
        for key in ("min_p", "frequency_penalty", "repetition_penalty"):
            if getattr(b.sampler, key) is not None:
                c.add("AB028", ("bench", "sampler", key), "autobench's client does not send it")
    if b.client == "vllm" and b.max_seconds is not None:
        c.add("AB027", ("bench", "max_seconds"), "vllm bench serve has no time cap; max_seconds is ignored")


def _workloads(c: _Ctx) -> None:
    """Context depth, shared prefixes, categories and conversations (autobench.bench.workload):
    only autobench's client sends them, and a context must fit the server's max_model_len."""
    b, e = c.r.bench, c.r.engine
    d = b.dataset
    if b.client == "vllm":
        for key in ("depth", "shared_prefix", "category"):
            if getattr(d, key) is not None:
                c.add("AB036", ("bench", "dataset", key), f"client vllm does not send bench.dataset.{key}")
        if d.multi_turn:
            c.add("AB036", ("bench", "dataset", "multi_turn"), "client vllm sends one turn per prompt")
    depth = largest(d.depth) or 0
    prefix = (d.shared_prefix.length or 0) if d.shared_prefix is not None else 0  # no length: the depth's
    if isinstance(e.max_model_len, int) and (depth or prefix):
        need = depth + prefix + output_tokens(c.r)
        if need > e.max_model_len:
            where = ("bench", "dataset", "depth") if depth else ("bench", "dataset", "shared_prefix", "length")
            parts = [f"depth {depth:,}"] * bool(depth) + [f"shared prefix {prefix:,}"] * bool(prefix)
            c.add(
                "AB037",
                where,
                f"{' + '.join(parts)} + {output_tokens(c.r):,} output tokens = {need:,} tokens, before any "
                f"question, over max_model_len {e.max_model_len:,}",
            )


#: Runtimes whose compiled job benches exactly one cell (the bench runs inside their script).
ONE_CELL_RUNTIMES = frozenset({"k8s"})
#: ``autobench run`` of a multi-node recipe (autobench.run.cluster): the driver brings the nodes
#: up once and autobench benches every cell of the grid on that boot (a compiled driver.sh run
#: by hand, checked as "docker", benches one cell); a Slurm job benches every cell in turn.
MULTI_NODE_GRID_RUNTIMES = frozenset({"cluster", "slurm"})
#: Runtimes that run the image under docker: the container rules (DOCKER_ONLY) apply.
DOCKER_RUNTIMES = frozenset({"docker", "cluster"})


def _grid(c: _Ctx) -> None:
    problems = schedule_problems(c.r)
    for i, entry_axis, what, fix in problems:
        keys: tuple[Any, ...] = ("bench", "schedule", i) + ((entry_axis,) if entry_axis else ())
        c.add("AB080", keys, f"schedule entry {i + 1} {what}", hint=fix)
    if problems:
        return  # no cells to count (grid.cells refuses such a schedule)
    multi_node_one_cell = c.r.topology.nodes > 1 and c.runtime not in MULTI_NODE_GRID_RUNTIMES
    if (c.runtime in ONE_CELL_RUNTIMES or multi_node_one_cell) and len(cells(c.r)) > 1:
        where = next(
            (path for name, path in AXES if isinstance(axis(c.r, name), list)),
            ("bench", "repeat") if c.r.bench.repeat > 1 else ("bench", "schedule"),
        )
        how = f"{c.r.topology.nodes} nodes" if c.r.topology.nodes > 1 else f"the {c.runtime} runtime"
        c.add("AB081", where, f"{len(cells(c.r))} bench cells, but {how} benches one cell per job")


def _ports(c: _Ctx) -> None:
    if c.r.topology.nodes > 1:  # multi-node: the nodes run on the hosts' network
        return
    endpoint = server_endpoint(c.r)  # the same answer compile and run use
    if not endpoint.reachable:
        ctr, e = c.r.container, c.r.engine
        keys = ("container", "ports") if ctr.ports else ("engine", "port")
        why = endpoint.why.removeprefix("engine.port ") if keys == ("engine", "port") else endpoint.why
        c.add("AB022", keys, why, hint=f'publish it: container.ports: ["{e.port}:{e.port}"]')  # its label once


def _walk_strings(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every string under ``node`` with its key path, depth first in document order (a stack, not
    recursion: a recipe has a hundred-odd nodes and an experiment checks a thousand recipes)."""
    kinds = (str, dict, list)  # only these can hold a string: numbers, booleans and nulls get no path
    stack: list[tuple[tuple[Any, ...], Any]] = [(path, node)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path, node
        elif isinstance(node, dict):
            stack.extend([((*path, k), v) for k, v in reversed(node.items()) if isinstance(v, kinds)])
        elif isinstance(node, list):
            stack.extend([((*path, i), node[i]) for i in range(len(node) - 1, -1, -1) if isinstance(node[i], kinds)])


def _secrets(c: _Ctx) -> None:
    secrets = c.r.secrets
    for path, value in _walk_strings(c.loaded.data, ()):
        if find_token(value):
            c.add("AB030", path, "looks like a literal token/key value")
        elif c.secret_values and (name := secret_in(value, c.secret_values)) is not None:
            c.add("AB030", path, f"holds the value of the secret variable {name}")
        if "\x00" in value:
            c.add("AB055", path, "contains a NUL character")
    seen: set[str] = set()
    for i, name in enumerate(secrets):
        if not SHELL_NAME.fullmatch(name):
            c.add("AB034", ("secrets", i), f"secret name {name!r} is not a valid shell name")
        if name in seen:
            c.add("AB035", ("secrets", i), f"secret {name} is declared twice")
        seen.add(name)
    for key in c.r.env:
        if not SHELL_NAME.fullmatch(key):
            c.add("AB033", ("env", key), f"env name {key!r} is not a valid shell name")
        if key in secrets:
            c.add("AB031", ("env", key), "declared under secrets: and also given a value in env")
        elif key in WELL_KNOWN_SECRET_NAMES:
            c.add("AB032", ("env", key), "a secret; its value must not be written in the recipe")
        elif is_secret_name(key):
            c.add(
                "AB032",
                ("env", key),
                "looks like a secret name",
                severity="warning",
                hint="if it is a secret, move the name to secrets:; otherwise ignore this warning",
            )
    for base, args in (("engine", c.r.engine.extra_args), ("container", c.r.container.extra_args)):
        for i, arg in enumerate(args):
            given: str | None = None
            if arg in ("-e", "--env") and i + 1 < len(args):
                given = args[i + 1]
            elif arg.startswith(("--env=", "-e=")):
                given = arg.partition("=")[2]
            if given and "=" in given:
                name = given.partition("=")[0]
                if name in WELL_KNOWN_SECRET_NAMES or name in secrets:
                    c.add("AB032", (base, "extra_args", i), f"{name} is given a value in extra_args")


def _duplicates(c: _Ctx) -> None:
    for base, args, typed, repeatable in (
        ("engine", c.r.engine.extra_args, TYPED_ENGINE_FLAGS, REPEATABLE_ENGINE_FLAGS),
        ("container", c.r.container.extra_args, TYPED_DOCKER_FLAGS, REPEATABLE_DOCKER_FLAGS),
    ):
        seen: dict[str, int] = {}
        for i, name in _flags(args):
            if name in typed:
                field = typed[name]
                written = args[i].partition("=")[0]  # as the user wrote it
                if written == name:
                    same = ""
                elif base == "engine":
                    same = f" (vLLM reads it as {name})"
                else:  # docker's parser does not fold _ into -
                    same = f" (docker refuses it as an unknown flag; its name is {name})"
                c.add(
                    "AB040",
                    (base, "extra_args", i),
                    f"{written} in extra_args shadows the typed field {field}{same}",
                    # an owner in parentheses is what autobench does itself: nothing to set
                    hint=f"delete {written} from {base}.extra_args"
                    + (f" {field}" if field.startswith("(") else f" and set {field} instead"),
                )
            elif name in seen and name not in repeatable:
                c.add("AB041", (base, "extra_args", i), f"{name} appears twice in {base}.extra_args")
            seen.setdefault(name, i)


def _takes_value(arg: str, name: str) -> bool:
    """Whether docker reads the next word as this flag's value (``name``: the flag's name)."""
    if "=" in arg:
        return False
    if re.fullmatch(r"-[A-Za-z]{2,}", arg):  # combined short flags such as -it
        return arg[-1] not in "dtiPq"
    return name not in DOCKER_BOOL_FLAGS


def _stray_words(c: _Ctx) -> None:
    args = c.r.container.extra_args
    value_due = False  # the previous word was a flag that takes the next word as its value
    for i, arg in enumerate(args):
        if value_due:  # docker takes this word verbatim, even "--" or "-x"
            value_due = False
        elif arg == "--":
            c.add("AB056", ("container", "extra_args", i), "'--' ends docker's options here")
            return  # what follows is the image and its arguments: one finding says it
        elif (name := flag_name(arg)) is None:
            c.add(
                "AB056",
                ("container", "extra_args", i),
                f"item {i} is not a flag and follows no flag that takes a value",
            )
        else:
            value_due = _takes_value(arg, name)


def _container(c: _Ctx) -> None:
    ctr = c.r.container
    if ctr.shm_size is not None:  # one parser for every target (docker passes it on, k8s converts it)
        try:
            parse_size(ctr.shm_size)
        except ValueError as exc:
            c.add("AB057", ("container", "shm_size"), str(exc))
    if ctr.image is None:  # a process-only recipe (the docker runtime refuses it: AB076)
        c.add("AB076", ("container",), "no image is set; the docker runtime needs container.image")
        return
    ref = parse_image_ref(ctr.image)  # the schema accepted it, so it parses
    build = c.r.build
    if build is not None:  # built here: the image is as fixed as the vLLM ref it is built from
        if not re.fullmatch(r"[0-9a-f]{40}", build.vllm_ref):
            c.add("AB069", ("build", "vllm_ref"), f"{build.vllm_ref!r} is not a full commit sha")
    elif ref.untagged:
        c.add(
            "AB050",
            ("container", "image"),
            f"image {ctr.image!r} is untagged (docker reads it as :latest, which moves over time)",
            hint=f"pin it by digest ({ctr.image}@sha256:...) or name a fixed tag",
        )
    elif not ref.pinned:
        tag = str(ref.tag)  # neither untagged nor pinned: a tag is written
        if FLOATING_TAGS.fullmatch(tag):
            c.add("AB050", ("container", "image"), f"image tag {tag!r} moves over time")
        else:
            c.add("AB051", ("container", "image"), f"image tag {tag!r} is not a digest")
    if ctr.name is not None and not DOCKER_NAME.fullmatch(ctr.name):
        c.add("AB052", ("container", "name"), f"container name {ctr.name!r} is not a valid docker name")
    offline = str(c.r.env.get("HF_HUB_OFFLINE")).lower() in ("1", "true", "yes", "on")
    if offline and not any("huggingface" in v or "/hf" in v.lower() for v in ctr.volumes):
        c.add("AB053", ("env", "HF_HUB_OFFLINE"), "offline mode without a mounted HF cache")


def _local_model(c: _Ctx) -> None:
    from autobench.recipe.facts import is_local_model

    for keys, ref in ((("model", "repo"), c.r.model.repo), (("speculative", "model"), (c.r.speculative or _NO).model)):
        if not ref or not is_local_model(ref):
            continue
        targets = [v.split(":")[1] for v in c.r.container.volumes if v.count(":") >= 1]
        if not any(ref == t.rstrip("/") or ref.startswith(t.rstrip("/") + "/") for t in targets):
            c.add("AB075", keys, f"{ref} is a directory on this machine; the container cannot see it")


class _NoSpec:
    model = None


_NO = _NoSpec()


def _meta(c: _Ctx) -> None:
    if c.r.meta.baseline == c.r.name:  # the name is always set
        c.add("AB054", ("meta", "baseline"), "baseline is the recipe itself")


def _arg_value(args: list[str], flag: str) -> tuple[int, str] | None:
    """(index, value) of ``flag`` in ``args`` (names normalised, ``--flag=value`` split), if given."""
    for i, name in _flags(args):
        if name != flag:
            continue
        if "=" in args[i]:
            return i, args[i].partition("=")[2]
        if i + 1 < len(args) and flag_name(args[i + 1]) is None:
            return i, args[i + 1]
    return None


def _quant_name(name: str) -> str:
    return name.lower().replace("_", "-")


_K_RE = re.compile(r"(?:\bk\s*=\s*(\d+)\b|\b(\d+)\s+(?:speculative|draft|spec)\s+tokens?\b)", re.IGNORECASE)


def _consistency(c: _Ctx) -> None:
    q = c.r.model.quantization
    if q is not None and q.method not in KNOWN_QUANT_METHODS:
        c.add(
            "AB060",
            ("model", "quantization", "method"),
            f"quantization method {q.method!r} is not one autobench knows",
            hint="known: " + ", ".join(KNOWN_QUANT_METHODS) + "; a new method is kept as written",
        )
    for i, part in enumerate(q.components if q is not None else []):
        if part.method not in KNOWN_QUANT_METHODS:
            c.add(
                "AB060",
                ("model", "quantization", "components", i, "method"),
                f"quantization method {part.method!r} is not one autobench knows",
                hint="known: " + ", ".join(KNOWN_QUANT_METHODS) + "; a new method is kept as written",
            )
    passed: tuple[tuple[Any, ...], str] | None = None
    if c.r.engine.quantization is not None:
        passed = (("engine", "quantization"), c.r.engine.quantization)
    else:
        found = _arg_value(c.r.engine.extra_args, "--quantization") or _arg_value(c.r.engine.extra_args, "-q")
        if found is not None:
            passed = (("engine", "extra_args", found[0]), found[1])
    if q is not None and passed is not None and q.method not in ("mixed", "none"):
        said, used = _quant_name(q.method), _quant_name(passed[1])
        if not (said.startswith(used) or used.startswith(said)):  # equal names start with each other
            c.add(
                "AB062",
                passed[0],
                f"the command passes --quantization {passed[1]} but model.quantization.method is {q.method}",
            )
    spec = c.r.speculative
    text = c.r.meta.description
    if spec is not None and spec.num_speculative_tokens is not None and text:
        for m in _K_RE.finditer(text):
            stated = int(m.group(1) or m.group(2))
            if stated != spec.num_speculative_tokens:
                c.add(
                    "AB063",
                    ("meta", "description"),
                    f"the description says {m.group(0).strip()!r} but num_speculative_tokens is "
                    f"{spec.num_speculative_tokens}",
                )
                break


def _topology(c: _Ctx) -> None:
    t, e = c.r.topology, c.r.engine
    world = world_size(e)
    sizes = f"TP {e.tensor_parallel_size or 1} x PP {e.pipeline_parallel_size or 1} x DP {e.data_parallel_size or 1}"
    if t.nodes > 1 and t.gpus_per_node is None:
        c.add("AB066", ("topology", "nodes"), f"{t.nodes} nodes but no gpus_per_node")
    if t.gpus_per_node is not None:
        total = t.nodes * t.gpus_per_node
        if world > total:
            c.add(
                "AB064",
                ("topology", "gpus_per_node"),
                f"{sizes} = {world} GPUs, but {t.nodes} node(s) x {t.gpus_per_node} GPU(s) = {total}",
            )
        elif world < t.nodes:  # (one node: a world is at least 1)
            c.add("AB064", ("topology", "nodes"), f"{sizes} = {world} GPUs leaves some of the {t.nodes} nodes idle")
        elif world % t.nodes:  # (world <= nodes x gpus_per_node and a multiple: each node's share fits)
            c.add(
                "AB064",
                ("topology", "nodes"),
                f"{sizes} = {world} GPUs cannot be split evenly over {t.nodes} nodes",
            )
    elif world % t.nodes:  # (one node: always 0)
        c.add("AB064", ("topology", "nodes"), f"{sizes} = {world} GPUs cannot be split evenly over {t.nodes} nodes")
    if t.hosts and len(t.hosts) != t.nodes:
        c.add("AB065", ("topology", "hosts"), f"{len(t.hosts)} host(s) listed for {t.nodes} node(s)")
    if len(set(t.hosts)) != len(t.hosts):
        c.add("AB065", ("topology", "hosts"), "a host is listed twice", hint="list each node once, head first")


def _launch(c: _Ctx) -> None:
    launch = c.r.launch
    if launch.setup and launch.entrypoint:
        c.add(
            "AB067",
            ("launch", "entrypoint"),
            f"entrypoint {launch.entrypoint!r} with {len(launch.setup)} setup step(s)",
        )
    e, b = c.r.engine, c.r.bench
    if b.endpoint == "embeddings" and b.client != "vllm":
        c.add(
            "AB068",
            ("bench", "endpoint"),
            "embeddings needs bench.client vllm (autobench's client streams completions)",
        )
    # unset and "auto" are one thing to vLLM: the runner follows the model (pooling for an embedder)
    if b.endpoint == "embeddings" and e.runner not in ("pooling", "auto", None):
        c.add("AB068", ("engine", "runner"), f"{e.runner} serves no embeddings endpoint")
    if e.runner == "pooling" and b.endpoint != "embeddings":
        c.add("AB068", ("bench", "endpoint"), f"an embedding model (runner pooling) benched on {b.endpoint}")


CHECKS = (
    _speculative,
    _pins,
    _engine_vs_bench,
    _ports,
    _secrets,
    _duplicates,
    _stray_words,
    _container,
    _meta,
    _consistency,
    _topology,
    _launch,
    _local_model,
    _grid,
)


#: Rules about the container; the process runtime (``vllm serve`` as a child process) skips them.
DOCKER_ONLY = frozenset({"AB022", "AB050", "AB051", "AB052", "AB053", "AB057", "AB075", "AB076"})


def check(
    loaded: LoadedRecipe,
    *,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
    runtime: str = "docker",
    redact: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Every rule's findings for one loaded recipe, ordered by file position.  ``runtime="process"``
    drops the container rules (DOCKER_ONLY): no port to publish, no image, a local model dir is fine.

    With ``env`` (e.g. ``os.environ``), AB030 also refuses any string that holds the value
    of a declared secret or of a secret-named variable set there (``autobench.redaction``).
    ``redact``: the secrets the findings' texts are redacted of (default: ``environment_secrets()``
    read now; a caller checking many recipes reads them once)."""
    ctx = _Ctx(loaded, env, runtime, redact)
    for rule in CHECKS:
        rule(ctx)
    findings = [f for f in ctx.out if runtime in DOCKER_RUNTIMES or f.code not in DOCKER_ONLY]
    if strict:
        findings = [
            Finding(f.code, "error", f.message, f.hint, f.location, f.key) if f.severity == "warning" else f
            for f in findings
        ]
    files = {p: i for i, p in enumerate(loaded.files)}

    def order(f: Finding) -> tuple[int, int, int, str]:
        loc = f.location
        if loc is None:
            return (len(files), 0, 0, f.code)
        return (files.get(loc.file, len(files)), loc.line, loc.col, f.code)

    return sorted(findings, key=order)


def load_error_finding(exc: Exception) -> Finding:
    """A load/schema failure as an AB000 finding (the error's own location, message, hint)."""
    from autobench.errors import AutobenchError

    location = None
    message = str(exc)
    hint = "fix the recipe"
    if isinstance(exc, AutobenchError):
        message = " ".join(exc.message.split())
        hint = exc.hint or hint
        if exc.location:
            location = _parse_location(exc.location)
    return Finding("AB000", "error", message, hint, location)


def _parse_location(text: str) -> Position:
    from pathlib import Path

    m = re.match(r"^(.*):(\d+):(\d+)$", text)
    if m:
        return Position(Path(m.group(1)), int(m.group(2)), int(m.group(3)))
    return Position(Path(text), 0, 0)
