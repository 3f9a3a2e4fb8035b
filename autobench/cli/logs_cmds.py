"""``autobench logs``: read vLLM server logs."""

from __future__ import annotations

from typing import Any

import click

from autobench.cli.options import Group, json_option, print_json, print_table

_LABELS = [
    ("vllm_version", "vLLM version", ""),
    ("architecture", "architecture", ""),
    ("max_model_len", "max model len", ""),
    ("model_load_gib", "model load", " GiB"),
    ("model_load_s", "model load time", " s"),
    ("weights_load_s", "weights load time", " s"),
    ("torch_compile_s", "torch.compile", " s"),
    ("kv_cache_tokens", "KV cache", " tokens"),
    ("kv_cache_gib", "KV cache memory", " GiB"),
    ("num_gpu_blocks", "GPU blocks", ""),
    ("num_cpu_blocks", "CPU blocks", ""),
    ("max_concurrency", "max concurrency", "x"),
    ("attention_block_size", "attention block size", " tokens"),
    ("mamba_padding_pct", "mamba page padding", "%"),
    ("attention_backend", "attention backend", ""),
    ("linear_kernel", "linear kernel", ""),
    ("moe_backend", "MoE backend", ""),
    ("cuda_graph_s", "CUDA graph capture", " s"),
    ("engine_init_s", "engine init", " s"),
]


def _rows(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    lines = data["lines"]
    rows = []
    for key, label, unit in _LABELS:
        value = data.get(key)
        if value is None:
            continue
        text = f"{value:,}{unit}" if isinstance(value, int) else f"{value}{unit}"
        if key == "kv_cache_tokens" and data.get("kv_cache_device"):
            text = f"{text} ({data['kv_cache_device']})"
        if key == "max_concurrency" and data.get("max_concurrency_tokens"):
            text = f"{text} at {data['max_concurrency_tokens']:,} tokens/request"
        rows.append((label, text, str(lines.get(key, ""))))
    rows.append(("ready", "yes" if data["ready"] else "no", str(lines.get("ready", ""))))
    rc = data.get("root_cause")
    if rc:
        where = f" at {rc['location']}" if rc.get("location") else ""
        note = " (generic: the log does not state the cause)" if rc.get("generic") else ""
        rows.append(("root cause", f"[{rc['category']}] {rc['message']}{where}{note}", str(rc["line"])))
        if rc.get("detail"):
            rows.append(("detail", rc["detail"], ""))
        from autobench.logs.rootcause import hint

        if hint(rc.get("category")):
            rows.append(("hint", hint(rc.get("category")) or "", ""))
    st = data.get("stats")
    if st:
        rows.append(
            (
                "engine stats",
                f"{st['samples']} samples, generation max {st['gen_tps_max']} tok/s, "
                f"KV usage max {st['kv_usage_pct_max']}%",
                f"{st['first_line']}-{st['last_line']}",
            )
        )
    sd = data.get("spec_decode")
    if sd:
        rate = sd["acceptance_rate_pct"]
        rows.append(
            (
                "spec decode",
                f"{sd['samples']} samples, accepted/drafted {rate}%, "
                f"mean acceptance length {sd['mean_acceptance_length_last']}",
                f"{sd['first_line']}-{sd['last_line']}",
            )
        )
    return rows


@click.group(cls=Group)
def logs() -> None:
    """Read vLLM server logs: boot facts, runtime stats, root causes."""


@logs.command("parse")
@click.argument("file", type=click.Path(dir_okay=True, path_type=str))
@json_option("Print the flat JSON report.")
def parse(file: str, as_json: bool) -> None:
    """Parse a vLLM server log FILE and print what it states."""
    from autobench.logs import parse_log
    from autobench.redaction import environment_secrets, redact_tree

    # a log read from disk may hold what the server echoed; nothing we print may
    data = redact_tree(parse_log(file).to_json_dict(), environment_secrets())
    if as_json:
        print_json(data, sort_keys=True)
        return
    print_table(
        ("fact", "value", "line"),
        _rows(data),
        title=file,
        plain_title=False,
        plain_row=lambda row: f"{row[0]}: {row[1]}" + (f"  (line {row[2]})" if row[2] else ""),
    )
