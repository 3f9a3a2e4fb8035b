"""Prediction against what a boot printed: block size, mamba padding, KV tokens, concurrency.

``compare(prediction, boot, status)`` takes a stored prediction (``Prediction.to_dict()``, as
the ledger keeps it), the boot facts the log parser read (``autobench.logs`` names, as the
ledger keeps them) and the run's status, and returns one row per fact both sides state, each
with whether they agree.  Every real boot thus checks the model.

KV tokens and concurrency are compared through the blocks the logged KV memory buys
("Available KV cache memory", printed to 0.01 GiB: a +-0.005 GiB range), or the logged GPU
block count when the log has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB = 1024**3


@dataclass(frozen=True)
class Row:
    fact: str
    predicted: str
    logged: str
    agrees: bool | None  # None: not comparable (stated for the record)

    def as_dict(self) -> dict[str, Any]:
        return {"fact": self.fact, "predicted": self.predicted, "logged": self.logged, "agrees": self.agrees}


def _tokens(pred: dict[str, Any], blocks: int) -> int:
    max_len = int(pred["max_model_len"])
    if pred.get("kv_tokens_formula") == "blocks":
        return blocks // max(1, int(pred.get("groups") or 1)) * int(pred.get("attention_block_size") or 16)
    return blocks * max_len // int(pred["blocks_per_request"])


def compare(pred: dict[str, Any], boot: dict[str, Any], status: str | None = None) -> list[Row]:
    rows: list[Row] = []
    if boot.get("vllm_version"):
        rows.append(Row("vLLM version", pred["vllm_version"], str(boot["vllm_version"]), None))
    if status in ("DONE", "FAILED", "BLOCKED"):
        booted = status != "BLOCKED"
        rows.append(
            Row(
                "boot",
                "boots" if pred["boots"] else f"fails ({pred['status']})",
                "booted" if booted else "did not boot (BLOCKED)",
                pred["boots"] == booted,
            )
        )
    block = pred.get("attention_block_size")
    if boot.get("attention_block_size") is not None and block:
        rows.append(
            Row(
                "attention block size",
                str(block),
                str(boot["attention_block_size"]),
                block == boot["attention_block_size"],
            )
        )
    padding = pred.get("mamba_padding_pct")
    hybrid = bool(pred.get("mamba_state_bytes"))
    if hybrid and (boot.get("attention_block_size") is not None or boot.get("mamba_padding_pct") is not None):
        # vLLM logs "Padding mamba page size by x%" only when it pads: no line after a block-size line is "none".
        logged = boot.get("mamba_padding_pct")
        if padding is None or logged is None:
            agrees = padding is None and logged is None
        else:
            agrees = abs(padding - logged) < 0.006
        rows.append(
            Row(
                "mamba padding %",
                "none" if padding is None else f"{padding:.2f}",
                "none" if logged is None else f"{logged:.2f}",
                agrees,
            )
        )
    if not pred.get("boots") or not pred.get("blocks_per_request") or not pred.get("memory_per_block"):
        return rows
    per_block = int(pred["memory_per_block"])
    bpr = int(pred["blocks_per_request"])
    blocks: tuple[int, int] | None = None
    source = ""
    if boot.get("num_gpu_blocks") is not None:
        blocks = (int(boot["num_gpu_blocks"]), int(boot["num_gpu_blocks"]))
        source = "logged GPU blocks"
    elif boot.get("kv_cache_gib") is not None:
        gib = float(boot["kv_cache_gib"])
        blocks = (int((gib - 0.005) * GIB // per_block), int((gib + 0.005) * GIB // per_block))
        source = f"{gib:.2f} GiB logged"
    if blocks is not None:
        lo, hi = blocks
        span = f"{lo:,}" if lo == hi else f"{lo:,}..{hi:,}"
        rows.append(Row("KV blocks", f"{span} (from {source})", str(boot.get("num_gpu_blocks") or "-"), None))
        if boot.get("kv_cache_tokens") is not None:
            t_lo, t_hi = _tokens(pred, lo), _tokens(pred, hi)
            got = int(boot["kv_cache_tokens"])
            text = f"{t_lo:,}" if t_lo == t_hi else f"{t_lo:,}..{t_hi:,}"
            rows.append(Row("GPU KV cache tokens", text, f"{got:,}", t_lo <= got <= t_hi))
        if boot.get("max_concurrency") is not None:
            c_lo, c_hi = round(lo / bpr, 2), round(hi / bpr, 2)
            got_c = float(boot["max_concurrency"])
            text = f"{c_lo:.2f}x" if c_lo == c_hi else f"{c_lo:.2f}..{c_hi:.2f}x"
            rows.append(Row("max concurrency", text, f"{got_c:.2f}x", c_lo <= got_c <= c_hi))
    budget = pred.get("budget")
    if budget and boot.get("kv_cache_gib") is not None:
        lo_g, hi_g = budget["available_gib"]
        got_g = float(boot["kv_cache_gib"])
        rows.append(Row("KV memory (budget)", f"{lo_g:.2f}..{hi_g:.2f} GiB", f"{got_g:.2f} GiB", lo_g <= got_g <= hi_g))
    return rows
