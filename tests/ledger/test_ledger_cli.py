"""The CLI commands (record, ledger list/show/export/verify, history, compare) run
in-process through ``autobench.cli.main`` against real SQLite files."""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from autobench.cli import main
from autobench.ledger import open_ledger
from autobench.ledger.seed import build

REPO = Path(__file__).resolve().parents[2]
DFLASH = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
BASE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml"
DRAFT = "z-lab/Qwen3.5-122B-A10B-DFlash"

VLLM_RESULT = {  # the shape `vllm bench serve --save-result` writes (fields we read)
    "completed": 385,
    "failed": 0,
    "duration": 915.2,
    "num_prompts": 500,
    "max_concurrency": 8,
    "output_throughput": 107.43,
    "total_token_throughput": 223.09,
    "median_ttft_ms": 681.0,
    "p99_ttft_ms": 2400.5,
    "median_tpot_ms": 67.5,
}

SERVER_LOG = """\
INFO 06-23 10:00:02 [api_server.py:1043] vLLM API server version 0.23.1
INFO 06-23 10:00:05 [gpu_model_runner.py:1329] Model loading took 63.71 GiB and 463.12 seconds
INFO 06-23 10:00:06 [kv_cache_utils.py:716] GPU KV cache size: 800,129 tokens
INFO 06-23 10:00:06 [kv_cache_utils.py:720] Maximum concurrency for 262,144 tokens per request: 3.05x
ERROR 06-23 10:00:07 [core.py:586] EngineCore failed to start.
ERROR 06-23 10:00:07 [core.py:586] Traceback (most recent call last):
ERROR 06-23 10:00:07 [core.py:586]   File "/usr/lib/python3/vllm/v1/core/kv_cache_utils.py", line 1077, in get_kv_cache_groups
ERROR 06-23 10:00:07 [core.py:586]     assert page_size_bytes == max_page_size
ERROR 06-23 10:00:07 [core.py:586] AssertionError
"""


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    return build(tmp_path / "seeded.db")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ record
def test_record_with_metrics_and_json(capsys, db_path, tmp_path):
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps(VLLM_RESULT))
    code, out, err = run(
        capsys,
        "record",
        str(DFLASH),
        "--status",
        "done",
        "--metrics",
        str(metrics),
        "--note",
        "first",
        "--note",
        "second",
        "--started-at",
        "2026-06-24T09:00:00Z",
        "--ledger",
        str(db_path),
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["id"] == 1 and doc["status"] == "DONE" and doc["source"] == "manual"
    assert doc["recipe_name"] == "qwen3-5-122b-a10b-vllm-int4-autoround-dflash"
    assert doc["recipe_digest"].startswith("sha256:") and doc["recipe_snapshot"]["name"] == doc["recipe_name"]
    assert "docker run" in doc["script_snapshot"]  # the compiled script
    assert doc["draft_repo"] == DRAFT and doc["draft_sha"] == "6c7242c934a9870d7c59c05240bdbb2467cc1394"
    assert doc["model_sha"] is None  # the recipe is not pinned to a full sha: unknown
    assert doc["metrics"]["decode_tok_s"] == 107.43 and doc["metrics"]["concurrency"] == 8
    assert doc["metrics"]["spec_acceptance_length"] is None
    assert doc["notes"] == "first\nsecond"


def test_record_with_log_takes_boot_facts_and_root_cause(capsys, db_path, tmp_path):
    log = tmp_path / "server.log"
    log.write_text(SERVER_LOG)
    code, out, err = run(
        capsys,
        "record",
        str(DFLASH),
        "--status",
        "BLOCKED",
        "--log",
        str(log),
        "--draft-sha",
        "6c7242c934a9870d7c59c05240bdbb2467cc1394",
        "--ledger",
        str(db_path),
    )
    assert code == 0, err
    assert out.startswith("recorded run #1-")
    rec = open_ledger(db_path).get(1)
    assert rec.root_cause_category == "kv_page_size"
    assert rec.root_cause_message == (
        "assert page_size_bytes == max_page_size at kv_cache_utils.py:1077 in get_kv_cache_groups"
    )
    assert rec.boot["kv_cache_tokens"] == 800129 and rec.boot["max_concurrency_tokens"] == 262144
    assert rec.engine_version == "0.23.1"


def test_record_with_log_redacts_secret_values_it_quotes(capsys, db_path, tmp_path, monkeypatch):
    # A server that failed on a bad token often quotes it; the ledger must keep the cause, not the token.
    monkeypatch.setenv("HF_TOKEN", "s3cret-value-from-env")
    log = tmp_path / "server.log"
    log.write_text(
        "ERROR 06-23 10:00:07 [core.py:586] EngineCore failed to start.\n"
        "ERROR 06-23 10:00:07 [core.py:586] huggingface_hub.errors.HfHubHTTPError: 401 Client Error: "
        "Unauthorized for token s3cret-value-from-env and hf_abcdefghijklmnopqrstuvwxyz0123456789\n"
    )
    code, _, err = run(
        capsys, "record", str(DFLASH), "--status", "BLOCKED", "--log", str(log), "--ledger", str(db_path)
    )
    assert code == 0, err
    rec = open_ledger(db_path).get(1)
    assert rec.root_cause_category == "hub_access"
    assert "401" in rec.root_cause_message
    raw = db_path.read_bytes()
    for secret in (b"s3cret-value-from-env", b"hf_abcdefghijklmnopqrstuvwxyz0123456789"):
        assert secret not in rec.root_cause_message.encode() and secret not in raw


def test_record_root_cause_forms_and_corrections(capsys, db_path):
    assert (
        run(
            capsys,
            "record",
            str(BASE),
            "--status",
            "FAILED",
            "--root-cause",
            "cuda_oom:CUDA out of memory",
            "--ledger",
            str(db_path),
        )[0]
        == 0
    )
    assert (
        run(
            capsys,
            "record",
            str(BASE),
            "--status",
            "FAILED",
            "--root-cause-category",
            "other",
            "--root-cause-message",
            "it broke",
            "--corrects",
            "#1",
            "--ledger",
            str(db_path),
        )[0]
        == 0
    )
    book = open_ledger(db_path)
    assert (book.get(1).root_cause_category, book.get(1).root_cause_message) == ("cuda_oom", "CUDA out of memory")
    assert book.get(2).corrects == 1


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--status", "GREAT"], 4, "unknown status 'GREAT'"),
        (["--status", "DONE", "--metrics", "{bad}"], 5, "not JSON"),
        (["--status", "DONE", "--metrics", "{shape}"], 5, "not a benchmark result"),
        (["--status", "DONE", "--supersedes", "7"], 4, "no run #7"),
        (["--status", "DONE", "--root-cause", "nocolon"], 2, "not CATEGORY:MESSAGE"),
        (["--status", "DONE", "--model-sha", "abc"], 4, "not a full 40-hex commit sha"),
        (["--status", "DONE", "--draft-sha", "c" * 40], 4, "contradicts the recipe's pinned draft"),
        (["--status", "DONE", "--corrects", "one"], 2, "not a run id"),
        (["--status", "DONE", "--corrects", "²"], 2, "not a run id"),  # isdigit() is true for it
    ],
)
def test_record_bad_input_is_one_line_and_changes_nothing(capsys, seeded, tmp_path, args, code, message):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "shape.json").write_text(json.dumps({"hello": 1}))
    args = [
        a.replace("{bad}", str(tmp_path / "bad.json")).replace("{shape}", str(tmp_path / "shape.json")) for a in args
    ]
    before = _digest(seeded)
    got, out, err = run(capsys, "record", str(DFLASH), *args, "--ledger", str(seeded))
    assert got == code and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert _digest(seeded) == before and open_ledger(seeded).count() == 3


def test_record_refuses_a_path_that_is_not_a_ledger(capsys, tmp_path):
    notes = tmp_path / "README.txt"
    notes.write_text("hello\n")
    code, _, err = run(capsys, "record", str(BASE), "--status", "DONE", "--ledger", str(notes))
    assert code == 4 and "not a ledger database" in err and err.count("\n") == 1
    assert notes.read_text() == "hello\n"


def test_ledger_env_var_is_used(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOBENCH_LEDGER", str(tmp_path / "env.db"))
    assert run(capsys, "record", str(BASE), "--status", "DONE")[0] == 0
    assert open_ledger(tmp_path / "env.db").count() == 1


# ------------------------------------------------------------------ ledger list / show / export / verify
def test_list_plain_and_json(capsys, seeded):
    code, out, _ = run(capsys, "ledger", "list", "--ledger", str(seeded))
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:4] == ["run", "started", "recipe", "status"]
    assert lines[1].startswith("#3-") and "107.43" in lines[1]  # newest first
    assert "assertion: assert page_size_bytes" in lines[2]
    code, out, _ = run(capsys, "ledger", "list", "--status", "blocked", "--json", "--ledger", str(seeded))
    assert [r["id"] for r in json.loads(out)] == [2]
    code, out, _ = run(capsys, "ledger", "list", "--limit", "1", "--json", "--ledger", str(seeded))
    assert [r["id"] for r in json.loads(out)] == [3]


def test_show(capsys, seeded):
    code, out, _ = run(capsys, "ledger", "show", "3", "--ledger", str(seeded))
    assert code == 0 and "supersedes: 2" in out and "decode_tok_s: 107.43" in out
    assert "spec_per_position: 0.78/0.56/0.39/0.29/0.21" in out and "script_snapshot: (" in out
    code, out, _ = run(capsys, "ledger", "show", "3", "--full", "--ledger", str(seeded))
    assert "--speculative-config" in out
    code, out, _ = run(capsys, "ledger", "show", "#2", "--json", "--ledger", str(seeded))
    assert json.loads(out)["status"] == "BLOCKED"
    code, _, err = run(capsys, "ledger", "show", "99", "--ledger", str(seeded))
    assert code == 4 and "no run #99" in err
    code, _, err = run(capsys, "ledger", "show", "²", "--ledger", str(seeded))  # a digit to isdigit(), not to int()
    assert (
        code == 4 and err == "error: not a run reference: '²' (hint: use a run id (12 or #12) or a row-hash prefix)\n"
    )


def test_missing_ledger_for_queries(capsys, tmp_path):
    code, _, err = run(capsys, "ledger", "list", "--ledger", str(tmp_path / "none.db"))
    assert code == 4 and "no ledger database here" in err
    assert not (tmp_path / "none.db").exists()


def test_export_files(capsys, seeded, tmp_path):
    out_csv = tmp_path / "runs.csv"
    assert run(capsys, "ledger", "export", "-o", str(out_csv), "--ledger", str(seeded))[0] == 0
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["id"] for r in rows] == ["1", "2", "3"] and rows[2]["kv_cache_tokens"] == "800129"
    code, out, _ = run(capsys, "ledger", "export", "--ledger", str(seeded))
    assert [json.loads(x)["status"] for x in out.splitlines()] == ["DONE", "BLOCKED", "DONE"]


def test_verify_ok_and_broken(capsys, seeded):
    code, out, _ = run(capsys, "ledger", "verify", "--ledger", str(seeded))
    assert code == 0 and out.startswith("ledger OK: 3 runs")
    con = sqlite3.connect(seeded)
    con.executescript("DROP TRIGGER runs_no_update; UPDATE runs SET decode_tok_s = 130 WHERE id = 3;")
    con.close()
    code, out, err = run(capsys, "ledger", "verify", "--ledger", str(seeded))
    assert code == 4 and "BROKEN at run #3" in err and err.count("\n") == 1
    code, out, _ = run(capsys, "ledger", "verify", "--json", "--ledger", str(seeded))
    assert code == 4 and json.loads(out)["first_bad_id"] == 3


# ------------------------------------------------------------------ history / compare
def test_history_draft(capsys, seeded):
    code, out, _ = run(capsys, "history", "--draft", DRAFT, "--ledger", str(seeded))
    assert code == 0
    bad = next(line for line in out.splitlines() if line.startswith("bce6f76"))
    good = next(line for line in out.splitlines() if line.startswith("6c7242c"))
    assert bad.split()[1:6] == ["1", "0", "1", "0", "0"] and "2026-06-23" in bad
    assert out.split("root causes:\n")[1] == (
        "  bce6f76cef2027552bed4a8a1bc9c449def48f05: assertion: assert page_size_bytes == max_page_size"
        " at kv_cache_utils.py:1077 in get_kv_cache_groups (#2)\n"
    )
    assert good.split()[1:6] == ["1", "1", "0", "0", "0"] and "107.43" in good
    code, out, _ = run(capsys, "history", "--draft", DRAFT, "--json", "--ledger", str(seeded))
    doc = json.loads(out)
    assert doc["runs"] == 2 and [g["by_status"]["DONE"] for g in doc["groups"]] == [0, 1]


def test_history_other_kinds_and_errors(capsys, seeded):
    code, out, _ = run(
        capsys,
        "history",
        "--model",
        "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC",
        "--json",
        "--ledger",
        str(seeded),
    )
    assert json.loads(out)["runs"] == 3
    code, out, _ = run(
        capsys, "history", "--recipe", "qwen3-5-122b-a10b-vllm-int4-autoround", "--json", "--ledger", str(seeded)
    )
    assert json.loads(out)["runs"] == 1
    code, out, err = run(capsys, "history", "--draft", "z-lab/Qwen3.5-122B-A10B-DFlas", "--ledger", str(seeded))
    assert code == 0 and out == "" and f"did you mean {DRAFT}" in err
    code, out, _ = run(capsys, "history", "--ledger", str(seeded))  # no filter: every recipe (issue #31)
    assert code == 0 and "recipe qwen3-5-122b-a10b-vllm-int4-autoround: 1 run\n" in out
    code, _, err = run(capsys, "history", "--draft", DRAFT, "--recipe", "x", "--ledger", str(seeded))
    assert code == 2 and "at most one of" in err


def test_compare_seed_speedup(capsys, seeded):
    # the base against the DFlash run: their pins differ (no draft against a draft), so --anyway
    code, out, err = run(capsys, "compare", "1", "3", "--anyway", "--ledger", str(seeded))
    assert code == 0 and all(line.startswith("warning: ") for line in err.splitlines())
    assert out.splitlines()[:2] == ["pins differ (A vs B):", "  draft_repo: (none) vs " + DRAFT]
    assert "decode speedup (B/A): 1.26x" in out
    decode = next(line for line in out.splitlines() if line.startswith("decode_tok_s"))
    assert decode.split() == ["decode_tok_s", "85.50", "107.43", "1.26x"]  # one number format
    code, out, _ = run(capsys, "compare", "1", "3", "--anyway", "--json", "--ledger", str(seeded))
    assert json.loads(out)["decode_speedup"] == pytest.approx(107.43 / 85.5)


def test_compare_fits_a_terminal_with_a_long_draft_name_and_formats_numbers_alike(capsys, seeded, tmp_path):
    long_draft = "an-organisation-with-a-long-name/Qwen3.5-122B-A10B-DFlash-experimental-speculator-v2"
    recipe = tmp_path / "long-draft.yaml"
    (tmp_path / BASE.name).write_text(BASE.read_text())  # the recipe it extends
    recipe.write_text(DFLASH.read_text().replace("z-lab/Qwen3.5-122B-A10B-DFlash", long_draft))
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps({**VLLM_RESULT, "output_throughput": 299.589, "completed": 11763}))
    args = ["--ledger", str(seeded)]
    code, _, err = run(capsys, "record", str(recipe), "--status", "DONE", "--metrics", str(metrics), *args)
    assert code == 0, err
    code, out, _ = run(capsys, "compare", "3", "4", "--anyway", *args)
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 160
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line.split()}
    assert rows["decode_tok_s"][:2] == ["107.43", "299.59"]
    assert rows["completed"][:2] == ["385", "11,763"]
    draft = rows["draft_repo"][1]
    assert "…" in draft and draft.startswith(long_draft[:20]) and draft.endswith(long_draft[-20:])
    code, out, _ = run(capsys, "compare", "3", "4", "--anyway", "--json", *args)
    assert long_draft in out  # whole in --json


def test_compare_warns_on_concurrency(capsys, seeded, tmp_path):
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps({**VLLM_RESULT, "max_concurrency": 4}))
    assert (
        run(capsys, "record", str(DFLASH), "--status", "DONE", "--metrics", str(metrics), "--ledger", str(seeded))[0]
        == 0
    )
    code, out, err = run(capsys, "compare", "3", "4", "--ledger", str(seeded))
    assert code == 4 and out == "" and "concurrency: 8 vs 4" in err  # a bench parameter: a pin
    code, out, err = run(capsys, "compare", "3", "4", "--anyway", "--ledger", str(seeded))
    assert code == 0 and out.splitlines()[:2] == ["pins differ (A vs B):", "  concurrency: 8 vs 4"]


def test_verify_head_and_missing_triggers_through_the_cli(capsys, backend):
    """`ledger verify --head HASH` on both backends: a kept head anchors the chain's end;
    dropped triggers fail verify though the chain still holds (issue 12 item 13)."""
    for _ in range(3):
        assert run(capsys, "record", str(BASE), "--status", "DONE", "--ledger", backend.url)[0] == 0
    code, out, _ = run(capsys, "ledger", "verify", "--json", "--ledger", backend.url)
    kept = json.loads(out)["head_hash"]
    assert code == 0 and json.loads(out)["missing_triggers"] == []
    code, out, _ = run(capsys, "ledger", "verify", "--head", kept, "--ledger", backend.url)
    assert code == 0 and out.startswith("ledger OK: 3 runs") and "the known head is run #3" in out
    code, _, err = run(capsys, "ledger", "verify", "--head", "nothex", "--ledger", backend.url)
    assert code == 4 and "not a chain head" in err
    backend.sql(backend.drop_triggers + "DELETE FROM runs WHERE id = 3;")
    code, out, err = run(capsys, "ledger", "verify", "--head", kept, "--ledger", backend.url)
    assert code == 4 and out == "" and err.count("\n") == 1
    assert "the known head" in err and "removed from its end" in err
    code, out, err = run(capsys, "ledger", "verify", "--json", "--ledger", backend.url)
    doc = json.loads(out)
    assert code == 4 and doc["ok"] is False and "runs_no_update" in doc["missing_triggers"]


def test_record_keeps_the_tokenizer_that_measured_the_prompts(capsys, db_path, tmp_path):
    ours = tmp_path / "result.json"
    tok = "shieldstar/Qwen3.5-122B-A10B-int4-AutoRound-EC@6c7242c934a9870d7c59c05240bdbb2467cc1394"
    ours.write_text(json.dumps({**VLLM_RESULT, "tokenizer_id": tok}))
    code, out, err = run(
        capsys, "record", str(DFLASH), "--status", "DONE", "--metrics", str(ours), "--ledger", str(db_path), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["tokenizer"] == tok
    assert open_ledger(db_path).get(1).tokenizer == tok
    code, out, err = run(capsys, "ledger", "show", "1", "--ledger", str(db_path))
    assert code == 0 and f"tokenizer: {tok}" in out
    assert open_ledger(db_path).verify().ok


@pytest.mark.parametrize(
    ("given", "started", "ended"),
    [
        ([], "2026-06-24T09:44:44Z", "2026-06-24T10:00:00Z"),  # from the result: date - duration, date
        (["--started-at", "2026-06-24T09:00:00Z"], "2026-06-24T09:00:00Z", "2026-06-24T10:00:00Z"),
    ],
)
def test_record_takes_the_run_time_from_the_result_when_not_given(
    capsys, db_path, tmp_path, monkeypatch, given, started, ended
):
    monkeypatch.setenv("TZ", "UTC")  # the result's date is local time, as both clients write it
    import time

    time.tzset()
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps({**VLLM_RESULT, "date": "20260624-100000", "duration": 915.2}))
    code, out, err = run(
        capsys,
        "record",
        str(DFLASH),
        "--status",
        "DONE",
        "--metrics",
        str(metrics),
        *given,
        "--json",
        "--ledger",
        str(db_path),
    )
    assert code == 0, err
    row = json.loads(out)
    assert (row["started_at"], row["ended_at"]) == (started, ended)


def test_record_without_a_date_anywhere_leaves_the_times_empty(capsys, db_path, tmp_path):
    metrics = tmp_path / "result.json"
    metrics.write_text(json.dumps(VLLM_RESULT))
    code, out, _ = run(
        capsys, "record", str(DFLASH), "--status", "DONE", "--metrics", str(metrics), "--json", "--ledger", str(db_path)
    )
    assert code == 0 and json.loads(out)["started_at"] is None
