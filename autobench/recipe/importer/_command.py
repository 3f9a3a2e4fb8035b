"""A peer's serve command: placeholders filled (bounded), the shell words read as the source's
launcher runs them, and every flag mapped to a typed recipe field or kept in ``engine.extra_args``.

Launch semantics (docs/import.md, "How each source starts vLLM"): ``VAR=value`` words before the
command are environment, wrapper words (``taskset -c 0-9``, ``numactl ...``) a prefix, shell steps
before the serve command (``pip install x && vllm serve ...``) setup steps; ``vllm serve MODEL``,
``python -m vllm.entrypoints.openai.api_server --model M`` and wrapper scripts (``*.sh``) are
vLLM; any other command is another engine, refused by name.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autobench.recipe.importer._source import MAX_FILLED, MAX_PARALLEL, Imported, Src, json_object, shown
from autobench.recipe.rules import flag_name, norm_flag

# flag -> (section, key, kind); kind: int | float | str | bool | false | len (int or "auto")
TYPED: dict[str, tuple[str, str, str]] = {
    "--tensor-parallel-size": ("engine", "tensor_parallel_size", "int"),
    "--pipeline-parallel-size": ("engine", "pipeline_parallel_size", "int"),
    "--data-parallel-size": ("engine", "data_parallel_size", "int"),
    "--enable-expert-parallel": ("engine", "enable_expert_parallel", "bool"),
    "--no-enable-expert-parallel": ("engine", "enable_expert_parallel", "false"),
    "--max-model-len": ("engine", "max_model_len", "len"),
    "--gpu-memory-utilization": ("engine", "gpu_memory_utilization", "float"),
    "--max-num-seqs": ("engine", "max_num_seqs", "int"),
    "--max-num-batched-tokens": ("engine", "max_num_batched_tokens", "int"),
    "--kv-cache-dtype": ("engine", "kv_cache_dtype", "str"),
    "--load-format": ("engine", "load_format", "str"),
    "--attention-backend": ("engine", "attention_backend", "str"),
    "--quantization": ("engine", "quantization", "str"),
    "--host": ("engine", "host", "str"),
    "--port": ("engine", "port", "int"),
    "--served-model-name": ("model", "served_name", "str"),
    "--revision": ("model", "revision", "str"),
    "--tokenizer": ("model", "tokenizer", "str"),
    "--trust-remote-code": ("model", "trust_remote_code", "bool"),
    "--no-trust-remote-code": ("model", "trust_remote_code", "false"),
    "--enable-prefix-caching": ("engine", "enable_prefix_caching", "bool"),
    "--no-enable-prefix-caching": ("engine", "enable_prefix_caching", "false"),
    "--enable-chunked-prefill": ("engine", "enable_chunked_prefill", "bool"),
    "--no-enable-chunked-prefill": ("engine", "enable_chunked_prefill", "false"),
    "--enforce-eager": ("engine", "enforce_eager", "bool"),
    "--no-enforce-eager": ("engine", "enforce_eager", "false"),
}
#: Values the schema holds as a closed set: anything else stays in extra_args as written.
CLOSED = {"--dtype": ("engine", "dtype", {"auto", "half", "float16", "bfloat16", "float", "float32"})}
CLOSED["--runner"] = ("engine", "runner", {"auto", "generate", "pooling"})
#: vLLM's short aliases (vllm/engine/arg_utils.py) and the long names compile writes.
ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
    "-ep": "--enable-expert-parallel",
    "-O": "--compilation-config",
    "-cc": "--compilation-config",
    "-ac": "--attention-config",
    "-dcp": "--decode-context-parallel-size",
}
#: Flags compile writes per node from the topology (never kept in extra_args).
TOPOLOGY_FLAGS = {"--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"}
#: Flags that hold a secret: the value is never carried; the variable vLLM reads is passed by name.
SECRET_FLAGS = {"--api-key": "VLLM_API_KEY", "--hf-token": "HF_TOKEN"}
BOOL_FLAGS = {f for f, (_s, _k, kind) in TYPED.items() if kind in ("bool", "false")} | {
    "--headless",
    "--enable-auto-tool-choice",
    "--async-scheduling",
    "--no-async-scheduling",
    "--disable-log-requests",
    "--no-enable-log-requests",
    "--enable-log-requests",
    "--disable-custom-all-reduce",
    "--enable-sleep-mode",
    "--enable-lora",
    "--disable-log-stats",
    "--enable-expert-parallel",
    "-ep",
    "--enable-eplb",
    "--enable-dbo",
    "--trust-remote-code",
    "--skip-mm-profiling",
    "--disable-cascade-attn",
    "--enable-prompt-tokens-details",
    "--enable-force-include-usage",
    "--enable-server-load-tracking",
    "--disable-uvicorn-access-log",
    "--disable-fastapi-docs",
    "--enforce-eager",
    "--is-prefill-worker",
    "--is-decode-worker",
}
#: Wrappers a launcher puts before the engine (kept as launch.prefix).
WRAPPERS = {"taskset", "numactl", "nice", "ionice", "stdbuf", "chrt", "nohup", "env"}
#: Commands that start another engine, by the word that names it.
ENGINES = {
    "sglang": "SGLang",
    "sglang.launch_server": "SGLang",
    "llama-server": "llama.cpp",
    "trtllm-serve": "TensorRT-LLM",
    "mpirun": "TensorRT-LLM (mpirun)",
    "atlas": "Atlas",
    "uvicorn": "uvicorn (a Python ASGI app)",
    "text-generation-launcher": "TGI",
    "ollama": "Ollama",
    "lmdeploy": "LMDeploy",
    "tritonserver": "Triton",
}

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def fill(src: Src, keys: tuple[Any, ...], text: str, values: dict[str, Any], *, style: str) -> str:
    """``{name}`` placeholders from ``values``, never longer than MAX_FILLED.  ``eugr``:
    ``str.format`` (a missing name is an error; ``{{ }}`` are literal braces); ``sparkrun``:
    iterative, a missing name left as written (sparkrun's config chain)."""
    rounds = 1 if style == "eugr" else 8
    missing: list[str] = []
    for _ in range(rounds):
        out: list[str] = []
        size = pos = 0
        for m in _PLACEHOLDER.finditer(text):
            if m.group(0) in ("{{", "}}"):
                piece = m.group(0)[0] if style == "eugr" else m.group(0)
            else:
                name = m.group(1)
                if name in values and values[name] is not None:
                    piece = _text(values[name])
                elif style == "eugr":
                    known = ", ".join(sorted(values)) or "none"
                    raise src.fail(
                        keys, f"placeholder {{{name}}} has no default", f"add `{name}:` under defaults (known: {known})"
                    )
                else:
                    piece = m.group(0)
                    missing.append(name)
            size += m.start() - pos + len(piece)
            if size > MAX_FILLED:
                raise src.fail(
                    keys,
                    f"filling the placeholders makes the command longer than {MAX_FILLED // 1024} KiB",
                    "a serve command is a few KB; check the defaults",
                )
            out.append(text[pos : m.start()])
            out.append(piece)
            pos = m.end()
        out.append(text[pos:])
        new = "".join(out)
        if len(new) > MAX_FILLED:
            raise src.fail(keys, f"the command is longer than {MAX_FILLED // 1024} KiB", "check the command")
        if new == text:
            break
        text = new
    return text


@dataclass
class Parsed:
    """A serve command as its launcher runs it."""

    command: list[str]  # ["vllm", "serve"], ["python3", "-m", "vllm.entrypoints..."], ["/x/serve.sh"]
    model: str | None
    model_flag: str | None
    args: list[str]  # every word after the model
    env: dict[str, str] = field(default_factory=dict)  # VAR=value words before the command
    prefix: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)  # shell steps before the serve command
    after: list[str] = field(default_factory=list)  # shell steps after it (not carried)
    refused: tuple[str, str] | None = None  # (what is wrong, how to fix): vLLM itself refuses the command


_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _segments(src: Src, keys: tuple[Any, ...], text: str) -> list[list[str]]:
    """The shell command split into simple commands at ``;``, ``&&``, ``||`` and line ends."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    segments: list[list[str]] = []
    for line in text.split("\n"):
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#"
        current: list[str] = []
        try:
            for token in lex:
                if token in (";", "&&", "||", "&", ";;"):
                    if current:
                        segments.append(current)
                    current = []
                else:
                    current.append(token)
        except ValueError as exc:
            raise src.fail(keys, f"command does not parse as shell words: {exc}", "check the quotes") from exc
        if current:
            segments.append(current)
    return segments


def parse_command(src: Src, keys: tuple[Any, ...], text: str) -> Parsed:
    """``[VAR=v] [wrapper] vllm serve MODEL flags`` (or the ``python -m`` entrypoint, or a
    wrapper script), possibly after shell steps; any other command: another engine, refused."""
    segments = _segments(src, keys, text)
    if not segments:
        raise src.fail(keys, "command is empty", "write the vllm serve command")
    found_at = [(n, _serve(words)) for n, words in enumerate(segments)]
    # `setup.sh && vllm serve ...`: an explicit serve wins over a `*.sh` wrapper before it
    explicit = [(n, p) for n, p in found_at if p is not None and not p.command[0].endswith(".sh")]
    for n, found in explicit or [(n, p) for n, p in found_at if p is not None][:1]:
        if found.refused is not None:
            raise src.fail(keys, *found.refused)
        found.setup = [shlex.join(s) for s in segments[:n]]
        found.after = [shlex.join(s) for s in segments[n + 1 :]]
        return found
    words = segments[-1]
    i = 0
    while i < len(words) and _ENV_WORD.match(words[i]):
        i += 1
    head = words[i:] or words
    engine = _engine_of(head)
    raise src.fail(
        keys,
        f"the command runs {engine}, not vLLM's `vllm serve`",
        "autobench runs vLLM; import a recipe whose command is `vllm serve MODEL ...`",
    )


def _engine_of(words: list[str]) -> str:
    for w in words[:4]:
        base = Path(w).name
        for key, name in ENGINES.items():
            if base == key or base.startswith(key + ".") or (w.startswith(key) and key == "sglang"):
                return name
    shown_word = Path(words[0]).name if words else "nothing"
    if shown_word in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        return f"`python -m {shown(words[2], 40)}`"
    return f"`{shown(shown_word, 40)}`"


def _serve(words: list[str]) -> Parsed | None:
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and _ENV_WORD.match(words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    words = words[i:]
    while words and words[0] == "exec":
        words = words[1:]
    for j in range(len(words) - 1):
        if Path(words[j]).name == "vllm" and words[j + 1] == "serve":
            prefix = words[:j]
            if prefix and Path(prefix[0]).name not in WRAPPERS:
                return None
            model, rest, refused = serve_model(words[j + 2 :])
            return Parsed(words[j : j + 2], model, None, rest, env, prefix, refused=refused)
        if words[j] == "-m" and words[j + 1].startswith("vllm.entrypoints"):
            prefix = [w for w in words[: j - 1]] if j >= 1 else []
            if prefix and Path(prefix[0]).name not in WRAPPERS:
                return None
            return Parsed(words[max(0, j - 1) : j + 2], None, "--model", words[j + 2 :], env, prefix)
    if words and words[0].endswith(".sh"):
        # A wrapper script that starts vLLM itself: its words up to the first flag; the last of
        # them that looks like a Hub repo id is the model.
        head = 1
        while head < len(words) and flag_name(words[head]) is None:
            head += 1
        before = words[:head]
        for k in range(len(before) - 1, 0, -1):
            if re.fullmatch(r"[A-Za-z0-9][\w.\-]*/[A-Za-z0-9][\w.\-]*", before[k]):
                return Parsed(before[:k], before[k], None, before[k + 1 :] + words[head:], env)
        return Parsed(before, None, None, words[head:], env)
    return None


_MODEL_OPTION = re.compile(r"^--model(=.+|$)")


def serve_model(args: list[str]) -> tuple[str | None, list[str], tuple[str, str] | None]:
    """The model of ``vllm serve ARGS`` as vLLM's own parser finds it: (model, the other words,
    why vLLM refuses the command or None).

    vLLM (vllm-project/vllm, read from its files at the commits named): for ``serve``,
    ``vllm/utils/argparse_utils.py`` ``FlexibleArgumentParser.parse_args`` (00da11e3) takes the
    first word matching ``^--model(=.+|$)`` out and puts its value first, as the positional
    ``model_tag`` (``nargs="?"``, ``vllm/entrypoints/openai/cli_args.py`` ``make_arg_parser``,
    00522333); ``--model`` without a value (or followed by a flag) is ``argument --model: expected
    one argument``.  A positional model already there is then a second positional, which argparse
    refuses (``unrecognized arguments``), even when both name the same model.  A later ``--model``
    stays the engine option (``vllm/engine/arg_utils.py`` ``model_group.add_argument("--model",
    ...)``, 99d7eb5d), which ``vllm/entrypoints/cli/serve.py`` ``ServeSubcommand.cmd`` (00a5fdd2)
    overwrites with the positional
    ("If model is specified in CLI (as positional arg), it takes precedence"): vLLM serves the
    first and ignores it, so a different one is refused here (the recipe means one model) and an
    equal one dropped."""
    positional = args[0] if args and flag_name(args[0]) is None else None
    rest = args[1:] if positional is not None else list(args)
    at = next((i for i, w in enumerate(rest) if _MODEL_OPTION.match(w)), None)
    if at is None:
        return positional, rest, None
    if rest[at] == "--model":
        if at + 1 >= len(rest) or rest[at + 1].startswith("-"):
            return (
                positional,
                rest,
                ("--model has no value (vLLM: argument --model: expected one argument)", "write --model MODEL"),
            )
        option, rest = rest[at + 1], rest[:at] + rest[at + 2 :]
    else:
        option, rest = rest[at].partition("=")[2], rest[:at] + rest[at + 1 :]
    if positional is not None:
        even = " (even the same one)" if positional == option else ""
        why = (
            f"the serve command names its model twice, `vllm serve {shown(positional)}` and `--model {shown(option)}`: "
            "vLLM moves --model's value to the positional model and refuses the other as an unrecognized "
            f"argument{even}"
        )
        return positional, rest, (why, _FIX)
    i = 0
    while i < len(rest):
        w = rest[i]
        if not _MODEL_OPTION.match(w):
            i += 1
            continue
        later = rest[i + 1] if w == "--model" and i + 1 < len(rest) else w.partition("=")[2]
        if later != option:
            twice = f"--model is given twice ({shown(option)}, then {shown(later)})"
            twice += ": vLLM serves the first, ignores the other"
            return option, rest, (twice, "delete the --model you do not mean")
        del rest[i : i + (2 if w == "--model" else 1)]
    return option, rest, None


_FIX = "name the model once: `vllm serve MODEL ...` (vLLM's form) or `--model MODEL`, not both"


def flag_key(word: str) -> str:
    """A flag as vLLM compares it: long names, ``_`` as ``-`` before a dot (``--compilation-config.
    cudagraph_mode``: the key after the dot is a JSON key, kept as written)."""
    name = word.partition("=")[0]
    head, dot, tail = name.partition(".")
    head = norm_flag(ALIASES.get(head, head))
    return head + dot + tail


#: vLLM flags that take several words (argparse nargs="+"): the words after them are theirs.
MANY = {"--served-model-name", "--lora-modules", "--allowed-origins", "--middleware", "--api-key"}


def split_flags(args: list[str]) -> list[tuple[str, str | None, str]]:
    """[(flag as vLLM reads it, value or None, flag as written)]; a bare word joins its flag
    (all of them for a flag of several words: its value is the words joined by spaces)."""
    out: list[tuple[str, str | None, str]] = []
    for word in args:
        name = flag_name(word)
        if name is None:
            if out and out[-1][1] is None and out[-1][0] and out[-1][0] not in BOOL_FLAGS:
                flag, _, written = out.pop()
                out.append((flag, word, written))
            elif out and out[-1][0] in MANY and out[-1][1] is not None and "=" not in out[-1][2]:
                flag, value, written = out.pop()
                out.append((flag, f"{value} {word}", written))
            else:
                out.append(("", word, word))  # a stray positional: kept as written
        elif "=" in word:
            out.append((flag_key(name), word.partition("=")[2], name))
        else:
            out.append((flag_key(name), None, name))
    return out


def _typed(kind: str, value: str | None, flag: str, src: Src, keys: tuple[Any, ...]) -> Any:
    if kind == "bool":
        return True if value is None else value.lower() in ("1", "true", "yes", "on")
    if kind == "false":
        return False
    if value is None:
        raise src.fail(keys, f"{flag} needs a value", f"write `{flag} VALUE`")
    if kind == "len" and value == "auto":
        return "auto"
    if kind in ("int", "len"):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 12:
            raise src.fail(keys, f"{flag} {shown(value)}: not a whole number", "fix the value (or its default)")
        number = int(text)
        if flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size") and not (
            1 <= number <= MAX_PARALLEL
        ):
            raise src.fail(keys, f"{flag} {number}: out of range (1 to {MAX_PARALLEL})", "fix the value")
        return number
    if kind == "float":
        try:
            number_f = float(value)
        except ValueError as exc:
            raise src.fail(keys, f"{flag} {shown(value)}: not a number", "fix the value (or its default)") from exc
        if number_f != number_f or number_f in (float("inf"), float("-inf")):
            raise src.fail(keys, f"{flag} {shown(value)}: not a finite number", "fix the value")
        return number_f
    return value


def _secret_flag(
    recipe: dict[str, Any], flag: str, value: str | None, src: Src, keys: tuple[Any, ...], out: Imported
) -> bool:
    """A flag that holds a secret: never carried by value.  ``--api-key``/``--hf-token`` become
    the variable vLLM reads (VLLM_API_KEY, HF_TOKEN), passed by name."""
    from autobench.redaction import find_token

    name = SECRET_FLAGS.get(flag)
    if name is None and value is not None and _secret_flag_name(flag):
        raise src.fail(
            keys,
            f"{flag} carries a secret by value",
            "pass secrets by name: delete the value and list the variable under secrets",
        )
    if name is None:
        if value is not None and find_token(value):
            raise src.fail(keys, f"{flag}: its value looks like a token", "pass secrets by name, never by value")
        return False
    if value is None:
        return False  # --hf-token alone: vLLM reads the stored token
    secrets = recipe.setdefault("secrets", [])
    if name not in secrets:
        secrets.append(name)
    out.notes.append(
        f"{src.line(*keys)}: {flag}'s value not carried; vLLM reads {name}, passed by name (set it in the environment)"
    )
    return True


def _secret_flag_name(flag: str) -> bool:
    """A flag whose value is a credential by its name (``--auth-token``, ``--db-password``)."""
    words = flag.lstrip("-").split(".")[0].split("-")
    return words[-1] in ("password", "passwd", "secret", "token", "apikey") or words[-2:] == ["api", "key"]


def apply_flags(
    recipe: dict[str, Any], flags: list[tuple[str, str | None, str]], src: Src, keys: tuple[Any, ...], out: Imported
) -> None:
    """Map each flag to a typed field or keep it (as written) in engine.extra_args; a flag given
    twice keeps its last value (vLLM's argparse rule)."""
    from autobench.recipe.rules import REPEATABLE_ENGINE_FLAGS

    engine = recipe.setdefault("engine", {})
    extra: list[str] = engine.setdefault("extra_args", [])
    from autobench.redaction import find_token

    for flag, value, written in flags:
        if flag and _secret_flag(recipe, flag, value, src, keys, out):
            continue
        if value is not None and find_token(value):
            raise src.fail(
                keys, f"{written}: a token-shaped value in the command", "pass secrets by name, never by value"
            )
        if flag:
            out.flags.append(flag)
        if flag == "--served-model-name" and value is not None and " " in value.strip():
            first, *rest = value.split()
            recipe.setdefault("model", {})["served_name"] = first
            out.notes.append(
                f"{src.line(*keys)}: not carried: --served-model-name aliases {shown(' '.join(rest))} "
                f"(the recipe serves one name, {shown(first)})"
            )
        elif flag in TYPED:
            section, key, kind = TYPED[flag]
            recipe.setdefault(section, {})[key] = _typed(kind, value, written, src, keys)
        elif flag in CLOSED and value in CLOSED[flag][2]:
            section, key, _values = CLOSED[flag]
            recipe.setdefault(section, {})[key] = value
        elif flag == "--speculative-config":
            spec = json_object(value, src, keys, written)
            typed = {k: spec[k] for k in ("method", "model", "revision", "num_speculative_tokens") if k in spec}
            if "method" not in typed:
                raise src.fail(
                    keys,
                    f"{written} names no method: vLLM infers it from the draft model's config",
                    'write the method in the JSON ("method": "draft_model", "eagle3", "dflash", ...)',
                )
            options = {k: v for k, v in spec.items() if k not in typed}
            recipe["speculative"] = {**typed, **({"options": options} if options else {})}
        elif flag == "--distributed-executor-backend":
            recipe.setdefault("topology", {})["executor"] = "ray" if value == "ray" else "native"
            if value not in ("ray", "mp", None):
                _keep(extra, written, value, flag)
        elif flag in TOPOLOGY_FLAGS:
            out.notes.append(f"{src.line(*keys)}: {written} is written per node by compile (topology)")
        elif flag == "" and value is not None:
            extra.append(value)
        else:
            if flag in ("--model",) and value is not None:
                recipe.setdefault("model", {})["repo"] = value
                continue
            if value is not None and flag.startswith("--") and flag.partition(".")[0] in _JSON_FLAGS:
                value = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            replaced = flag not in REPEATABLE_ENGINE_FLAGS and _replace(extra, flag, written, value)
            if replaced:
                out.notes.append(f"{src.line(*keys)}: {written} given twice; the last value is kept (as vLLM does)")
            else:
                _keep(extra, written, value, flag)
    if not extra:
        del engine["extra_args"]


_JSON_FLAGS = {"--speculative-config", "--kv-transfer-config", "--compilation-config", "--hf-overrides"}


def _keep(extra: list[str], written: str, value: str | None, flag: str) -> None:
    if value is None:
        extra.append(written)
    elif flag in MANY and " " in value.strip():
        extra += [written, *value.split()]
    elif value.startswith("-"):
        extra.append(f"{written}={value}")  # a value that looks like a flag stays glued to its flag
    else:
        extra += [written, value]


def _replace(extra: list[str], flag: str, written: str, value: str | None) -> bool:
    for i, word in enumerate(extra):
        name = flag_name(word)
        if name is None or flag_key(name) != flag:
            continue
        takes = "=" not in word and i + 1 < len(extra) and flag_name(extra[i + 1]) is None
        end = i + (2 if takes else 1)
        new: list[str] = []
        _keep(new, written, value, flag)
        extra[i:end] = new
        return True
    return False


_FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9_.-]*)")


def missing_flags(imported: Imported, compiled: str) -> list[str]:
    """Source flags that do not appear in the compiled text (names as vLLM compares them)."""
    seen = {flag_key(m.group(1).rstrip(".")) for m in _FLAG_IN_TEXT.finditer(compiled)}
    return sorted({f for f in imported.flags if f and f not in seen and f not in TOPOLOGY_FLAGS})
