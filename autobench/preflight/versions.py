"""vLLM's KV-cache layout rules, as data keyed by version range, each citing where it was read.

A rule set says how one range of vLLM releases (a) sizes the attention block of a hybrid model,
(b) unifies unequal page sizes, (c) groups layers and (d) counts the blocks a request needs.
``rules_for(version)`` picks the set; a version newer than the newest set uses the newest and
says so; an older one, or an unparsable one, cannot be predicted (``PreflightError``).

Sources (read, never copied; the functions the arithmetic mirrors):

- ``vllm/v1/core/kv_cache_utils.py``: ``unify_kv_cache_spec_page_size`` (scale the block size of
  smaller pages by max/page, then ``assert new_spec.page_size_bytes == max_page_size``; raise
  ``NotImplementedError`` when the page does not divide the maximum), ``_get_kv_cache_groups_uniform_page_size``
  (group size = the smallest layer count of a spec, or the largest when within a slack factor),
  ``get_max_concurrency_for_kv_cache_config`` (blocks per request = the sum over groups of each
  spec's ``max_memory_usage_bytes`` / page) and ``_report_kv_cache_config`` (the logged
  "GPU KV cache size" and "Maximum concurrency" lines).
- ``vllm/v1/kv_cache_interface.py``: ``AttentionSpec.page_size_bytes`` (2 x block x KV heads x head
  size x dtype), ``FullAttentionSpec.max_memory_usage_bytes`` (cdiv(max_model_len, block) pages),
  ``SlidingWindowSpec.max_memory_usage_bytes`` (cdiv(window - 1 + max_num_batched_tokens, block) + 1),
  ``MambaSpec.max_memory_usage_bytes`` (align mode: 2 + num_speculative_blocks pages; none: 1 + ...).
- The attention block size of hybrid models: ``HybridAttentionMambaModelConfig.verify_and_update_config``
  in ``vllm/model_executor/models/config.py`` (logs from ``config.py``), later
  ``_align_hybrid_block_size`` in ``vllm/platforms/interface.py`` (logs from ``interface.py``):
  block = 16 * cdiv(mamba page, 16 * attention page per token), then "Padding mamba page size by x%".
- ``vllm/model_executor/layers/mamba/mamba_utils.py``: ``MambaStateShapeCalculator`` (conv state
  (kernel - 1 + num_speculative_tokens) x conv dim / TP; Gated DeltaNet recurrent state V/TP x dv x dk;
  Mamba2 state heads/TP x head dim x state size).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autobench.errors import PreflightError

Version = tuple[int, int, int]


@dataclass(frozen=True)
class RuleSet:
    name: str
    since: Version  # first release the set describes
    until: Version | None  # first release it no longer describes (None: open-ended)
    hybrid: bool  # are the hybrid (mamba + attention) and draft unification rules encoded?
    block_align: int  # the "a" in block = a * cdiv(M, a * P)
    mamba_pad_to_max: bool  # unify pads a mamba page up to the largest page (else: scale + assert)
    refuse_dflash_mixed: bool  # a DFlash draft mixing sliding and full layers is refused at config time
    group_slack: float  # group size = largest layer count when max < min * slack
    align_source: str
    unify_source: str
    citations: tuple[str, ...]


RULE_SETS: tuple[RuleSet, ...] = (
    RuleSet(
        name="0.8-0.21 (plain attention only)",
        since=(0, 8, 0),
        until=(0, 22, 0),
        hybrid=False,
        block_align=16,
        mamba_pad_to_max=False,
        refuse_dflash_mixed=False,
        group_slack=1.25,
        align_source="(not encoded for this range)",
        unify_source="vllm/v1/core/kv_cache_utils.py:_get_kv_cache_config_uniform_type",
        citations=(
            "V1 engine, one attention type: one KV cache group, num_blocks = memory // (page x layers) "
            "(kv_cache_utils.py, get_num_blocks / _get_kv_cache_config_uniform_type); corpus boots 002, 003, 050",
        ),
    ),
    RuleSet(
        name="0.22-0.24",
        since=(0, 22, 0),
        until=(0, 25, 0),
        hybrid=True,
        block_align=16,
        mamba_pad_to_max=False,
        refuse_dflash_mixed=False,
        group_slack=1.25,
        align_source="vllm/platforms/interface.py:_align_hybrid_block_size "
        "(earlier vllm/model_executor/models/config.py:HybridAttentionMambaModelConfig.verify_and_update_config)",
        unify_source="vllm/v1/core/kv_cache_utils.py:unify_kv_cache_spec_page_size "
        "(assert new_spec.page_size_bytes == max_page_size)",
        citations=(
            "vLLM 0.22.0 and 0.23.1 boots of the seed (assert in unify_kv_cache_spec_page_size, "
            "kv_cache_utils.py:1077 via get_kv_cache_groups)",
            "vllm/v1/core/kv_cache_utils.py:unify_kv_cache_spec_page_size, _get_kv_cache_groups_uniform_page_size, "
            "get_max_concurrency_for_kv_cache_config",
            "vllm/v1/kv_cache_interface.py:MambaSpec.max_memory_usage_bytes",
        ),
    ),
    RuleSet(
        name="0.25-0.32",
        since=(0, 25, 0),
        until=(0, 33, 0),
        hybrid=True,
        block_align=16,
        mamba_pad_to_max=False,
        refuse_dflash_mixed=True,
        group_slack=1.5,
        align_source="vllm/platforms/interface.py:_align_hybrid_block_size",
        unify_source="vllm/v1/core/kv_cache_utils.py:unify_kv_cache_spec_page_size "
        "(assert new_spec.page_size_bytes == max_page_size)",
        citations=(
            "0.25 refuses DFlash drafts mixing sliding-window and full-attention layers "
            "(issue 20's reading of the 0.25 sources; the check's function is not re-verified here)",
            "group-size slack 1.5 'accommodating speculative decoding drafters' "
            "(kv_cache_utils.py:_get_kv_cache_groups_uniform_page_size)",
        ),
    ),
    RuleSet(
        name="0.33+",
        since=(0, 33, 0),
        until=None,
        hybrid=True,
        block_align=16,
        mamba_pad_to_max=True,
        refuse_dflash_mixed=True,
        group_slack=1.5,
        align_source="vllm/platforms/interface.py:_align_hybrid_block_size",
        unify_source="vllm/v1/core/kv_cache_utils.py:unify_kv_cache_spec_page_size "
        "(mamba pages padded to the largest page: page_size_padded)",
        citations=(
            "unify_kv_cache_spec_page_size docstring: 'Mamba layers, whose page size comes from state shapes "
            "and is independent of block size ... pad their physical page to the maximum instead'",
        ),
    ),
)

NEWEST = RULE_SETS[-1]
KNOWN_RANGE = "0.8.0 and later (hybrid and draft unification rules: 0.22.0 and later)"

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> Version:
    m = _VERSION.match(text.strip())
    if not m:
        raise PreflightError(
            f"cannot predict: {text!r} is not a vLLM version",
            hint="pass --vllm-version X.Y.Z (e.g. 0.23.1)",
        )
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def fmt(version: Version) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class Chosen:
    rules: RuleSet
    version: Version
    note: str | None  # set when the rules are the nearest, not the version's own


def rules_for(version: Version) -> Chosen:
    """The rule set describing ``version``; the newest for a newer version (said in ``note``)."""
    for rules in RULE_SETS:
        if rules.since <= version and (rules.until is None or version < rules.until):
            note = None
            if rules is NEWEST and version[:2] > (0, 33):
                note = (
                    f"vLLM {fmt(version)} is newer than the newest encoded rules ({NEWEST.name}); using those, nearest"
                )
            return Chosen(rules, version, note)
    raise PreflightError(
        f"cannot predict: no KV-cache rules are encoded for vLLM {fmt(version)} (known: {KNOWN_RANGE})",
        hint="pass --vllm-version of the image you run, or skip preflight with `run --force`",
    )
