"""Fixture runs for report tests: the seed's three runs as plain ledger-shaped records."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

BASE = "qwen3-5-122b-a10b-vllm-int4-autoround"
DFLASH = "qwen3-5-122b-a10b-vllm-int4-autoround-dflash"
BAD_DRAFT = "bce6f76cef2027552bed4a8a1bc9c449def48f05"
GOOD_DRAFT = "6c7242c934a9870d7c59c05240bdbb2467cc1394"
ROOT_CAUSE = (
    "AssertionError: page_size_bytes == max_page_size (kv_cache_utils.py:1077) in "
    "get_kv_cache_groups: hybrid GDN + full-attention + DFlash draft KV specs cannot be unified"
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def snapshot(
    name: str, *, spec: bool, baseline: str | None = None, superseded_by: str | None = None, conc: int = 8
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": name,
        "model": {
            "repo": "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC",
            "revision": "main",
            "quantization": {"method": "auto-round", "bits": 4, "variant": "EC"},
        },
        "container": {"image": "vllm/vllm-openai:nightly-aarch64"},
        "engine": {
            "max_model_len": 262144,
            "gpu_memory_utilization": 0.85,
            "max_num_batched_tokens": 32768,
            "max_num_seqs": 8,
            "dtype": "bfloat16",
            "enable_prefix_caching": True,
            "enable_chunked_prefill": True,
            "host": "0.0.0.0",
            "port": 8000,
            "extra_args": [],
        },
        "bench": {
            "dataset": {"kind": "sharegpt"},
            "num_prompts": 500,
            "max_seconds": 900.0,
            "concurrency": conc,
            "max_tokens": 256,
        },
        "meta": {"baseline": baseline, "superseded_by": superseded_by},
    }
    if spec:
        data["speculative"] = {
            "method": "dflash",
            "model": "z-lab/Qwen3.5-122B-A10B-DFlash",
            "revision": GOOD_DRAFT,
            "num_speculative_tokens": 5,
        }
    return data


DFLASH_METRICS: dict[str, Any] = {
    "prefill_tok_s": 115.66,
    "decode_tok_s": 107.43,
    "completed": 385,
    "errors": 0,
    "incomplete": None,
    "duration_s": 915.0,
    "time_cap_hit": True,
    "concurrency": 8,
    "num_prompts": 500,
    "ttft_median_ms": 681.0,
    "tpot_median_ms": 67.5,
    "spec_acceptance_length": 3.25,
    "spec_per_position": [0.78, 0.56, 0.39, 0.29, 0.21],
    "spec_draft_acceptance_rate": 0.44,
}
DFLASH_BOOT: dict[str, Any] = {
    "kv_cache_tokens": 800129,
    "kv_cache_gib": 27.72,
    "max_concurrency": 3.05,
    "model_load_gib": 63.71,
    "model_load_s": 463.0,
    "attention_block_size": 2144,
    "architecture": "DFlashDraftModel",
    "attention_backend": "FLASH_ATTN",
    "linear_kernel": "MarlinLinearKernel",
    "moe_backend": "MARLIN WNA16",
    "vllm_version": "0.23.1",
}


def record(id: int, recipe: str, status: str, started: datetime, **kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": id,
        "recipe_name": recipe,
        "status": status,
        "started_at": started,
        "ended_at": None,
        "model_repo": "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC",
        "model_sha": None,
        "metrics": {},
        "boot": {},
    }
    rec.update(kw)
    return rec


def seed_records() -> list[dict[str, Any]]:
    return [
        record(
            1,
            BASE,
            "DONE",
            utc(2026, 6, 23, 18, 0),
            recipe_snapshot=snapshot(BASE, spec=False),
            metrics={"decode_tok_s": 85.5, "concurrency": 8, "errors": 0},
        ),
        record(
            2,
            DFLASH,
            "BLOCKED",
            utc(2026, 6, 23, 9, 0),
            draft_repo="z-lab/Qwen3.5-122B-A10B-DFlash",
            draft_sha=BAD_DRAFT,
            root_cause_category="assertion",
            root_cause_message=ROOT_CAUSE,
            recipe_snapshot=snapshot(DFLASH, spec=True, baseline=BASE),
        ),
        record(
            3,
            DFLASH,
            "DONE",
            utc(2026, 6, 24, 10, 0),
            draft_repo="z-lab/Qwen3.5-122B-A10B-DFlash",
            draft_sha=GOOD_DRAFT,
            supersedes=2,
            recipe_snapshot=snapshot(DFLASH, spec=True, baseline=BASE, superseded_by="qwen3-6-35b-a3b-vllm-fp8"),
            metrics=dict(DFLASH_METRICS),
            boot=dict(DFLASH_BOOT),
        ),
    ]
