"""A loopback fake Hub serving the preflight configs (the real huggingface_hub client talks to it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "hub"))

import preflight_configs as c  # noqa: E402
from fakehub import FakeCommit, FakeHub, FakeRepo  # noqa: E402


def _repo(repo_id: str, sha: str, files: dict[str, bytes | int], refs: dict[str, str] | None = None) -> FakeRepo:
    return FakeRepo(repo_id, commits={sha: FakeCommit(sha, files)}, refs=refs or {"main": sha})


def preflight_hub() -> FakeHub:
    hub = FakeHub()
    shards = {f"model-{i:05d}-of-00015.safetensors": c.BASE_SHARD_BYTES for i in range(1, 16)}
    hub.add(
        _repo(
            c.BASE_REPO,
            c.BASE_SHA,
            {
                "config.json": c.dump(c.qwen35_122b()),
                "model.safetensors.index.json": c.dump(c.index(15 * c.BASE_SHARD_BYTES, 15)),
                **shards,
            },
        )
    )
    hub.add(
        FakeRepo(
            c.DRAFT_REPO,
            commits={
                c.DRAFT_OLD: FakeCommit(
                    c.DRAFT_OLD, {"config.json": c.dump(c.dflash_draft(4, 4, 2048)), "model.safetensors": c.DRAFT_BYTES}
                ),
                c.DRAFT_NEW: FakeCommit(
                    c.DRAFT_NEW, {"config.json": c.dump(c.dflash_draft(8, 6, 4096)), "model.safetensors": c.DRAFT_BYTES}
                ),
            },
            refs={"main": c.DRAFT_NEW},
        )
    )
    hub.add(
        _repo(
            c.NEMOTRON_REPO,
            c.NEMOTRON_SHA,
            {"config.json": c.dump(c.nemotron_h_8b()), "model.safetensors": 16_200_000_000},
        )
    )
    hub.add(_repo(c.LLAMA_REPO, c.LLAMA_SHA, {"config.json": c.dump(c.llama()), "model.safetensors": 16_060_000_000}))
    hub.add(_repo(c.OTHER_VOCAB_DRAFT, c.FILLER_SHA, {"config.json": c.dump(c.dflash_draft(4, 4, 2048, vocab=151936))}))
    mixed = ["sliding_attention", "full_attention"] * 2
    hub.add(_repo(c.MIXED_DRAFT, c.FILLER_SHA, {"config.json": c.dump(c.dflash_draft(4, 4, 2048, layer_types=mixed))}))
    hub.add(
        _repo(
            c.UNCOVERED_REPO,
            c.FILLER_SHA,
            {"config.json": c.dump({"architectures": ["RwkvForCausalLM"], "num_hidden_layers": 24})},
        )
    )
    nofield = c.qwen35_122b()
    del nofield["text_config"]["linear_num_value_heads"]
    hub.add(_repo(c.NOFIELD_REPO, c.FILLER_SHA, {"config.json": c.dump(nofield)}))
    return hub


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch):
    fake = preflight_hub().start()
    monkeypatch.setenv("HF_ENDPOINT", fake.url)
    monkeypatch.setenv("AUTOBENCH_HUB_TIMEOUT", "2")
    yield fake
    fake.stop()


@pytest.fixture
def write_recipe(tmp_path: Path):
    def write(text: str, name: str = "r.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
