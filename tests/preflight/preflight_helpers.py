"""Recipe text shared by the preflight tests (a module of its own: every test folder has a conftest)."""

from __future__ import annotations

import preflight_configs as c

SEED_RECIPE = f"""\
name: seed-dflash
model:
  repo: {c.BASE_REPO}
  revision: {c.BASE_SHA}
  served_name: qwen
speculative:
  method: dflash
  model: {c.DRAFT_REPO}
  revision: {{draft}}
  num_speculative_tokens: {{nspec}}
container:
  image: {{image}}
  ports: ["8000:8000"]
engine:
  max_model_len: 262144
  gpu_memory_utilization: 0.85
  max_num_batched_tokens: 32768
  max_num_seqs: 8
  dtype: bfloat16
  enable_prefix_caching: true
  enable_chunked_prefill: true
bench:
  dataset:
    kind: sharegpt
    path: sharegpt.json
"""


def seed_recipe(draft: str = c.DRAFT_OLD, nspec: int = 5, image: str = "vllm/vllm-openai:nightly-aarch64") -> str:
    return SEED_RECIPE.format(draft=draft, nspec=nspec, image=image)
