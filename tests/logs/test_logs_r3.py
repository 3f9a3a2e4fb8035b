"""Issue #30: the round-3 held-out set (tests/logs/corpus_r3, real excerpts collected before
the parser changed) and the mechanisms it exercises -- state dumps are never a cause, death
notices outrank wrappers, readiness bound to vLLM's own server and to evidence of serving,
encodings, control characters, and the new categories."""

from __future__ import annotations

import codecs
import io

import pytest

from autobench.logs import CATEGORIES, parse_log
from autobench.logs.rootcause import HINTS
from tests.logs.corpus_index import CORPUS, R3, load_r3_index

R3_INDEX = load_r3_index()


@pytest.mark.parametrize("name", sorted(R3_INDEX))
def test_held_out_excerpt_reads_as_expected(name: str) -> None:
    entry = R3_INDEX[name]
    got = parse_log(R3 / f"{name}.log").to_json_dict()
    assert got["ready"] == entry["booted"]
    rc = got["root_cause"]
    if entry.get("cause") is None:
        assert rc is None
    else:
        assert rc is not None and str(entry["cause"]) in rc["message"], rc
        assert (rc["category"], rc["generic"]) == (entry["category"], bool(entry.get("generic", False)))
    for fact, value in (entry.get("facts") or {}).items():
        assert got[fact] == value, fact
    assert got["encoding"] == {"utf-16": "utf-16-le", "utf-16-be": "utf-16-be"}.get(
        entry.get("encoding", "utf-8"), entry.get("encoding", "utf-8")
    )


# Each category issue #30 added (or moved excerpts into), with the real excerpts that show it:
# the round-3 set (r3-*) and the main corpus (NNN_*).
CATEGORY_EXCERPTS: dict[str, list[str]] = {
    "gpu_fault": [
        "r3-02_v1-enginedead-interleaved-illegal-memory-access",
        "r3-03_v1-mtp-device-side-assert",
        "151_gpu-fault-worker-tp-prefix-v010",
        "152_gpu-fault-watchdog-after-input-dump",
    ],
    "collective_timeout": [
        "r3-04_v1-compose-rpc-sample-tokens-timeout",
        "r3-05_v1-nested-prefix-shm-broadcast-timeout",
        "r3-06_v1-qwen3-next-shm-broadcast-timeout",
        "r3-07_v0-ci-column-worker-died-nccl-watchdog",
        "r3-08_v0-stats-then-ray-ansi-nccl-watchdog",
        "r3-09_v0-ray-nccl-watchdog-one-line",
    ],
    "hub_unavailable": [
        "r3-18_v1-ray-hf-429-rate-limit",
        "r3-20_v1-hub-connect-timeout-retrying",
        "r3-21_v0-modelscope-hub-connect-timeout",
    ],
    "toolchain_missing": [
        "r3-15_v0-python-h-missing-triton-build",
        "r3-16_v1-uvicorn-wrapped-could-not-find-nvcc-utf16",
        "r3-17_v1-nightly-nvcc-not-found",
    ],
    "engine_died": [
        "r3-01_v1-spec-worker-died-then-input-dump",
        "r3-10_v1-dp-enginecore-died-swift-rollout",
        "r3-11_v1-enginecore-died-one-line-utf8-bom",
        "r3-12_v1-stern-prefix-llmd-enginedead",
        "r3-13_v1-compose-worker-died-enginecore-fatal",
        "r3-29_v1-served-then-enginecore-hit-exception-cut",
    ],
    "missing_kernel": ["r3-14_v1-triton-device-kernel-image-invalid"],
    "other": ["r3-25_kserve-model-server-zero-division", "r3-28_v0-hpu-mqllmengine-dead-then-multimodal-valueerror"],
}


@pytest.mark.parametrize(("category", "name"), [(c, n) for c, ns in CATEGORY_EXCERPTS.items() for n in ns])
def test_each_category_is_read_from_its_real_excerpts(category: str, name: str) -> None:
    path = (R3 if name.startswith("r3-") else CORPUS) / f"{name}.log"
    rc = parse_log(path).root_cause
    assert rc is not None and rc.category == category, rc
    assert category in CATEGORIES and HINTS[category]


def test_state_dumps_are_never_a_cause() -> None:
    dumps = [n for n, e in R3_INDEX.items() if "dump" in n and e.get("cause") is None]
    assert len(dumps) == 4
    for name in dumps:
        assert parse_log(R3 / f"{name}.log").root_cause is None, name
    # the death notice before the dump is the statement, not the dump after it
    rc = parse_log(R3 / "r3-01_v1-spec-worker-died-then-input-dump.log").root_cause
    assert rc is not None and rc.line == 3 and "speculative_config" not in rc.message


def test_a_death_notice_outranks_the_wrapper_after_it_and_yields_to_a_stated_cause() -> None:
    rc = parse_log(R3 / "r3-13_v1-compose-worker-died-enginecore-fatal.log").root_cause
    assert rc is not None and rc.line == 1 and not rc.generic  # not "EngineCore encountered a fatal error"
    rc = parse_log(R3 / "r3-07_v0-ci-column-worker-died-nccl-watchdog.log").root_cause
    assert rc is not None and rc.line == 3 and rc.category == "collective_timeout"  # the watchdog explains the death


# LMCache's own HTTP server in a vLLM log (LMCache/LMCache#4094), then uvicorn's startup line.
_LMCACHE = [
    "[2026-07-13 10:08:14,255] LMCache INFO: Starting LMCache HTTP server on http://0.0.0.0:8080"
    " (http_server.py:258:lmcache.v1.multiprocess.http_server)",
    "INFO:     Started server process [1902]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
]


def test_a_plug_in_server_startup_is_not_vllm_ready() -> None:
    assert not parse_log(_LMCACHE).ready
    # vLLM's route table after the plug-in's announcement makes the next startup line vLLM's
    vllm = ["INFO 04-17 17:28:57 [launcher.py:26] Available routes are:", "INFO:     Application startup complete."]
    r = parse_log(_LMCACHE + vllm)
    assert r.ready and r.lines["ready"] == 6
    # vLLM's API server process prefix names the server whatever was announced before
    assert parse_log([*_LMCACHE[:3], "(APIServer pid=1) INFO:     Application startup complete."]).ready


def test_the_port_uvicorn_names_binds_an_unprefixed_startup_line() -> None:
    # vLLM announced port 8000 (api_server.py); later a plug-in's own uvicorn starts without
    # announcing itself and names port 8080 right after its startup line: not vLLM's
    vllm = "INFO 04-17 17:28:57 [api_server.py:1081] Starting vLLM API server on http://0.0.0.0:8000"
    plugin = [*_LMCACHE[1:], "INFO:     Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)"]
    assert not parse_log([vllm, *plugin]).ready
    own = [*_LMCACHE[1:], "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"]
    r = parse_log([vllm, *own])
    assert r.ready and r.lines["ready"] == 4
    # vLLM binds its socket itself: uvicorn then names "socket ('0.0.0.0', 8000)"
    sock = [*_LMCACHE[1:], "INFO:     Uvicorn running on socket ('0.0.0.0', 8000) (Press CTRL+C to quit)"]
    assert parse_log([vllm, *sock]).ready
    # no port announced by vLLM: the plug-in's announced port is recognised
    assert not parse_log([_LMCACHE[0], "INFO 01-01 00:00:00 [launcher.py:26] Available routes are:", *plugin]).ready


def test_serving_evidence_makes_a_log_without_the_startup_line_ready() -> None:
    r = parse_log(R3 / "r3-22_v0-lmcache-serving-without-startup-line.log")
    assert r.ready and r.lines["ready"] == 5  # engine stats with a running request, before the POST 200
    idle = "INFO 03-17 08:00:25 metrics.py:453] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%."  # noqa: E501
    assert not parse_log([idle]).ready  # an idle engine has served nothing
    failed = 'INFO:     127.0.0.1:51112 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error'
    assert not parse_log([failed]).ready  # a 500 answered nothing
    ok = 'INFO:     127.0.0.1:44322 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    assert parse_log([ok]).ready


def test_a_clean_shutdown_after_serving_is_no_failure() -> None:
    # a spec-decode server that served (vllm#40756's stats) and was stopped with Ctrl-C: uvicorn's
    # shutdown lines and the interrupt are a stop, not a cause
    lines = [
        "(APIServer pid=1) INFO 05-13 10:46:43 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 141.8 tokens/s, Running: 5 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.4%, Prefix cache hit rate: 0.0%",  # noqa: E501
        "(APIServer pid=1) INFO 05-13 10:46:43 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 3.16, Accepted throughput: 96.91 tokens/s, Drafted throughput: 224.80 tokens/s, Accepted: 97 tokens, Drafted: 225 tokens, Per-position acceptance rate: 0.844, 0.600, 0.378, 0.222, 0.111, Avg Draft acceptance rate: 43.1%",  # noqa: E501
        "(APIServer pid=1) INFO:     Shutting down",
        "(APIServer pid=1) INFO:     Waiting for application shutdown.",
        "(APIServer pid=1) INFO:     Application shutdown complete.",
        "(APIServer pid=1) KeyboardInterrupt",
    ]
    r = parse_log(lines)
    assert r.ready and r.root_cause is None and r.spec_decode is not None


def test_a_traceback_through_the_drafter_is_a_draft_model_failure() -> None:
    # the frames of vllm#54526 (a drafter loading an Eagle3 checkpoint) ending in the KeyError that
    # vllm#18906 reports for a draft weight: composed from those two threads to test the rule
    head = "(Worker_TP3 pid=993) ERROR 08-31 08:16:01 [multiproc_executor.py:941] "
    lines = [
        head + "WorkerProc failed to start.",
        head + "Traceback (most recent call last):",
        head
        + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 5445, in load_model',
        head + "    self.drafter.load_model(self.model)",
        head
        + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/spec_decode/llm_base_proposer.py", line 1346, in load_model',
        head + "    self.model = self._get_model()",
        head + "KeyError: 'embed_tokens.weight'",
    ]
    rc = parse_log(lines).root_cause
    assert rc is not None and (rc.category, rc.line, rc.generic) == ("draft_model", 7, False)
    assert rc.location == "llm_base_proposer.py:1346"
    # the same KeyError raised outside the drafter says nothing about a draft
    plain = parse_log(
        [lines[1], head + '  File "/x/vllm/model_executor/models/llama.py", line 9, in load_weights', lines[6]]
    )
    assert plain.root_cause is not None and plain.root_cause.category == "other"


# ---- encodings -------------------------------------------------------------------------

_TEXT = (R3 / "r3-04_v1-compose-rpc-sample-tokens-timeout.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("codec", "bom", "name"),
    [
        ("utf-8", b"", "utf-8"),
        ("utf-8", codecs.BOM_UTF8, "utf-8-sig"),
        ("utf-16-le", codecs.BOM_UTF16_LE, "utf-16-le"),
        ("utf-16-be", codecs.BOM_UTF16_BE, "utf-16-be"),
        ("utf-32-le", codecs.BOM_UTF32_LE, "utf-32-le"),
        ("utf-32-be", codecs.BOM_UTF32_BE, "utf-32-be"),
    ],
)
def test_any_bom_encoding_reads_the_same(tmp_path, codec: str, bom: bytes, name: str) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(bom + _TEXT.encode(codec))
    got = parse_log(path).to_json_dict()
    want = parse_log(R3 / "r3-04_v1-compose-rpc-sample-tokens-timeout.log").to_json_dict()
    assert got.pop("encoding") == name
    want.pop("encoding")
    assert got == want
    # a binary stream is read the same way
    assert parse_log(io.BytesIO(path.read_bytes())).encoding == name


def test_latin1_is_the_fallback_and_utf16_without_bom_is_refused(tmp_path) -> None:
    path = tmp_path / "server.log"
    # an editor's "ANSI" save: a path with an accented letter, then a real cause line
    path.write_bytes("/home/andré/vllm/x.py:1: note\n".encode("latin-1") + _TEXT.encode("ascii"))
    r = parse_log(path)
    assert r.encoding == "latin-1" and r.root_cause is not None and r.root_cause.category == "collective_timeout"
    path.write_bytes(_TEXT.encode("utf-16-le"))  # NUL bytes and no mark: not a text log
    from autobench.errors import LogError

    with pytest.raises(LogError, match="byte-order mark"):
        parse_log(path)


def test_control_sequences_and_invisible_characters_are_stripped_before_matching() -> None:
    line = "(APIServer pid=1) INFO:     Application startup complete."
    for dressed in (
        "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO:     Application startup complete.",
        "\x1b]0;vllm serve\x07(APIServer pid=1) INFO:     Application startup complete.",  # OSC title
        "\x1b]8;;https://x\x1b\\(APIServer pid=1) INFO:     Application startup complete.",  # OSC 8 link
        "^[[0;36m(APIServer pid=1)^[[0;0m INFO:     Application startup complete.",  # caret notation
        " [36m(APIServer pid=1) [0m INFO:     Application startup complete.",  # ESC lost by a paste
        "\u200b(APIServer pid=1) INFO:\u00a0    Application startup complete.",  # zero-width, no-break
        "(APIServer pid=1) INFO:     Application\u00a0startup\u00a0complete.",
    ):
        assert parse_log([dressed]).ready, dressed
    assert parse_log([line]).ready
