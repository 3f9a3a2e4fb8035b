"""SLO goodput (autobench.bench.slo): requests meeting every SLO and their rate, against the
synthetic server (its TTFT and ITL are known, so which requests are good is known); bad
``--slo`` values are one line; the recipe field compiles to both clients' options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.slo import is_good, parse_slo, slo_text
from autobench.cli import main
from autobench.errors import BenchError

REPO = Path(__file__).resolve().parents[2]


def test_goodput_counts_the_requests_meeting_every_slo(synth) -> None:
    srv = synth(ttft_ms=30, itl_ms=2)  # TTFT ~30 ms, TPOT ~2 ms, E2EL ~30 + 7 * 2 ms

    def bench(slo: dict[str, float] | None) -> dict:
        cfg = BenchConfig(
            base_url=srv.base_url, model="m", num_prompts=12, concurrency=4, max_tokens=8, slo=slo, ignore_eos=True
        )
        return run_bench(cfg).to_json_dict()

    d = bench({"ttft": 1000, "tpot": 100, "e2el": 5000})  # every request meets them
    assert d["slo"] == {"ttft": 1000, "tpot": 100, "e2el": 5000}
    assert d["good_requests"] == d["completed"] == 12
    assert d["request_goodput"] == pytest.approx(d["request_throughput"])
    # no request ends within 20 ms: the server alone takes ~44 ms (an E2EL bound, not a TPOT
    # one: a client starved by a loaded machine reads a stream in one go and sees TPOT ~0)
    d = bench({"ttft": 1000, "e2el": 20})
    assert d["good_requests"] == 0 and d["request_goodput"] == 0
    d = bench({"ttft": 5})  # no first token within 5 ms
    assert d["good_requests"] == 0
    d = bench(None)
    assert d["slo"] is None and d["good_requests"] is None and d["request_goodput"] is None


def test_normalized_metrics_carry_goodput_and_client_bound(synth) -> None:
    srv = synth(ttft_ms=5, itl_ms=1)
    cfg = BenchConfig(base_url=srv.base_url, model="m", num_prompts=6, concurrency=2, max_tokens=4, slo={"ttft": 1e4})
    n = run_bench(cfg).normalized()
    assert n["good_requests"] == 6 and n["goodput"] == pytest.approx(6 / n["duration_s"])
    assert n["client_bound"] is False  # a run this short is never judged client-bound


def test_one_request_meeting_the_rules() -> None:
    assert is_good({"ttft": 200, "tpot": 50}, 199.9, None, 10_000)  # one output token: TPOT 0 (vLLM)
    assert not is_good({"ttft": 200, "e2el": 1000}, 100, 10, 1000.5)
    assert is_good({"e2el": 1000}, 999, 999, 1000)  # at the limit meets it
    assert not is_good({"ttft": 1000, "tpot": 0.5}, 30, 2, 44)  # one rule missed is enough


def test_parse_slo() -> None:
    assert parse_slo("ttft=200, TPOT=50,e2el=5000") == {"ttft": 200, "tpot": 50, "e2el": 5000}
    assert slo_text(parse_slo("e2el=5000,ttft=200.5")) == "ttft=200.5,e2el=5000"
    for text, words in (
        ("ttft", "is not KEY=MS"),
        ("latency=3", "is not KEY=MS"),
        ("ttft=fast", "not a positive number of milliseconds"),
        ("ttft=0", "not a positive number"),
        ("ttft=nan", "not a positive number"),
        ("ttft=1,ttft=2", "ttft is given twice"),
        ("", "is not KEY=MS"),
    ):
        with pytest.raises(BenchError, match=words):
            parse_slo(text)


def test_a_bad_slo_is_one_line_before_any_request(capsys) -> None:
    code = main(["bench", "--base-url", "http://127.0.0.1:9", "--model", "m", "--slo", "ttft=soon"])
    out, err = capsys.readouterr()
    assert code == 5 and out == "" and len(err.strip().splitlines()) == 1
    assert "--slo 'ttft=soon': ttft='soon' is not a positive number of milliseconds" in err
    assert "hint: e.g. --slo ttft=200,tpot=50,e2el=5000" in err and "Traceback" not in err


def test_the_recipe_field_compiles_to_both_clients(tmp_path: Path, capsys) -> None:
    base = (REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround.yaml").read_text()
    assert "\nbench:\n" in base
    recipe = tmp_path / "slo.yaml"
    recipe.write_text(base.replace("\nbench:\n", "\nbench:\n  slo: {ttft: 2000, tpot: 80.5}\n", 1))
    assert main(["compile", str(recipe)]) == 0
    assert "--slo ttft=2000,tpot=80.5" in capsys.readouterr().out
    vllm = base.replace("\n  client: autobench\n", "\n  client: vllm\n", 1)
    recipe.write_text(vllm.replace("\nbench:\n", "\nbench:\n  slo: {e2el: 9000}\n", 1))
    assert main(["compile", str(recipe)]) == 0
    assert "--goodput e2el:9000" in capsys.readouterr().out
    recipe.write_text(base.replace("\nbench:\n", "\nbench:\n  slo: {}\n", 1))
    assert main(["validate", str(recipe)]) != 0
    out, err = capsys.readouterr()
    assert "give at least one of ttft, tpot, e2el" in out + err
    schema = json.loads((REPO / "schema" / "recipe.schema.json").read_text())
    assert "Slo" in schema["$defs"]
