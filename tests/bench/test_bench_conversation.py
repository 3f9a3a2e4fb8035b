"""Multi-turn conversations (issue 33): turns in order, the answers appended, per-turn TTFT.

The synthetic server counts a prompt's words as its tokens (chat: every message's content
joined) and answers ``max_tokens`` words (`` t0 t1 ...``), so each turn's prompt tokens are
known exactly: the user turns so far plus one whole answer per earlier turn.
"""

from __future__ import annotations

from typing import Any

import pytest

from autobench.bench.client import BenchConfig, run_bench
from autobench.bench.conversation import Conversation, TextSink, conversations, planned_requests
from autobench.bench.datasets import Dataset, Prompt
from autobench.bench.record import RequestRecord
from autobench.errors import BenchError

ANSWER = 5  # tokens (words) per answer


def _conv(i: int, n_turns: int) -> Prompt:
    turns = [f"conversation {i} turn {k} " + "w " * (k + 1) for k in range(n_turns)]
    return Prompt(turns[0], len(turns[0].split()), ANSWER, turns=tuple(turns[1:]))


def _expected_prompt_tokens(p: Prompt) -> int:
    turns = [p.text, *p.turns]
    return sum(sum(len(t.split()) for t in turns[: k + 1]) + k * ANSWER for k in range(len(turns)))


def _run(url: str, prompts: list[Prompt], **kw: Any) -> dict[str, Any]:
    cfg = BenchConfig(
        base_url=url, model="m", num_prompts=len(prompts), max_tokens=ANSWER, multi_turn=True, read_timeout=10.0, **kw
    )
    return run_bench(cfg, dataset=Dataset("jsonl", "c.jsonl", prompts, [], len(prompts))).to_json_dict()


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_each_turn_carries_the_turns_and_answers_before_it(synth: Any, endpoint: str) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.2)
    prompts = [_conv(i, 3) for i in range(6)] + [_conv(6, 1)]  # one conversation of a single turn
    d = _run(srv.base_url, prompts, endpoint=endpoint, concurrency=3)
    assert d["completed"] == 19 and d["failed"] == 0 and d["not_dispatched"] == 0
    assert d["total_input_tokens"] == sum(_expected_prompt_tokens(p) for p in prompts)
    assert d["total_output_tokens"] == 19 * ANSWER
    mt = d["multi_turn"]
    assert (mt["conversations"], mt["conversations_completed"], mt["turns_planned"], mt["turns_sent"]) == (7, 7, 19, 19)
    assert {k: v["completed"] for k, v in mt["ttft_by_turn_ms"].items()} == {"1": 7, "2": 6, "3": 6}
    assert all(v["median"] > 0 for v in mt["ttft_by_turn_ms"].values())
    # a later turn starts with the earlier turn's whole prompt: the prefix cache sees it
    assert d["prefix_cache_hits"] > 0


def test_at_most_concurrency_conversations_in_flight(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.2)
    d = _run(srv.base_url, [_conv(i, 2) for i in range(5)], concurrency=2)
    assert d["completed"] == 10 and d["max_concurrency"] == 2
    assert srv.server.counters.requests == 10


def test_a_failed_turn_ends_its_conversation(synth: Any) -> None:
    # requests 3 and 7 fail (fault_hit at rate 1/4); one at a time, 4 conversations of 3 turns:
    # requests 0-2 conversation 0, 3 = conversation 1's first turn (fails), 4-6 conversation 2,
    # 7 = conversation 3's first turn (fails)
    srv = synth(ttft_ms=1, itl_ms=0.2, error_rate=0.25)
    d = _run(srv.base_url, [_conv(i, 3) for i in range(4)], concurrency=1)
    assert (d["completed"], d["failed"], d["not_dispatched"]) == (6, 2, 4)
    mt = d["multi_turn"]
    assert (mt["conversations_completed"], mt["turns_sent"], mt["turns_planned"]) == (2, 8, 12)


def test_multi_turn_is_a_closed_loop() -> None:
    with pytest.raises(BenchError, match="a multi-turn dataset sends each conversation's next turn"):
        BenchConfig(base_url="http://x", model="m", multi_turn=True, request_rate=2.0).check()


def test_conversation_history() -> None:
    conv = conversations([Prompt("hi", 1, 4, turns=("and?", "bye"))])[0]
    assert conv.messages() == [{"role": "user", "content": "hi"}]
    conv.answers += ["A1", "A2"]
    assert conv.messages() == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "and?"},
        {"role": "assistant", "content": "A2"},
        {"role": "user", "content": "bye"},
    ]
    assert conv.text() == "hi\n\nA1\n\nand?\n\nA2\n\nbye"
    assert planned_requests([conv.prompt, Prompt("x", 1, 1)]) == 4
    assert isinstance(conv, Conversation)


@pytest.mark.parametrize(
    ("chat", "body", "text"),
    [
        (
            False,
            b'data: {"choices":[{"text":"Hel"}]}\n\ndata: {"choices":[{"text":"lo"}]}\n\ndata: [DONE]\n\n',
            "Hello",
        ),
        (
            True,
            b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
            b'data: {"choices":[{"delta":{"content":"caf\xc3'
            b'\xa9"}}]}\r\n\r\ndata: {"choices":[],"usage":{"completion_tokens":1}}\n\n'
            b"data: not json\n\n"
            b'data: {"choices":{"0":{"text":"x"}}}\n\ndata: {"choices":[1]}\n\ndata: {"choices":"abc"}\n\n'
            b'data: [1, 2]\n\ndata: {"choices":[{"delta":{"content":7}}]}\n\n',
            "café",
        ),
    ],
)
def test_text_sink_reads_the_answer(chat: bool, body: bytes, text: str) -> None:
    sink = TextSink(RequestRecord(0, 1), chat=chat, allow_missing_usage=True)
    sink.on_head(200)
    for i in range(0, len(body), 7):  # split anywhere, UTF-8 included
        sink.on_body(body[i : i + 7], 1.0)
    assert sink.answer() == text


def test_conversations_from_a_mapped_jsonl_file(synth: Any, tmp_path: Any) -> None:
    import json

    from autobench.bench.records import FieldMap

    path = tmp_path / "chats.jsonl"
    with path.open("w") as f:
        for i in range(4):
            msgs = [
                {"role": "user", "content": f"hello number {i} how are you"},
                {"role": "assistant", "content": "a reference answer the bench does not send"},
                {"role": "user", "content": f"and the follow up {i}"},
            ]
            f.write(json.dumps({"messages": msgs}) + "\n")
    srv = synth(ttft_ms=1, itl_ms=0.2)
    cfg = BenchConfig(
        base_url=srv.base_url,
        model="m",
        endpoint="chat",
        dataset=str(path),
        dataset_kind="jsonl",
        dataset_fields=FieldMap(turns="messages"),
        num_prompts=4,
        max_tokens=ANSWER,
        multi_turn=True,
        tokenizer="estimated",
    )
    d = run_bench(cfg).to_json_dict()
    assert d["completed"] == 8 and d["multi_turn"]["turns_sent"] == 8
    # turn 1: 6 words; turn 2: 6 + the server's answer (5) + 5 words; never the reference answer
    assert d["total_input_tokens"] == 4 * (6 + 6 + ANSWER + 5)


def test_progress_counts_every_turn(synth: Any) -> None:
    srv = synth(ttft_ms=1, itl_ms=0.2)
    seen: list[tuple[int, int]] = []
    prompts = [_conv(i, 3) for i in range(3)]
    cfg = BenchConfig(base_url=srv.base_url, model="m", num_prompts=3, max_tokens=ANSWER, multi_turn=True)
    run_bench(
        cfg,
        progress=lambda done, total, _t, _e: seen.append((done, total)),
        dataset=Dataset("jsonl", "c", prompts, [], 3),
    )
    assert seen[-1] == (9, 9)


def test_without_usage_a_later_turn_counts_its_whole_history(synth: Any) -> None:
    from autobench.bench.datasets import estimate_tokens

    srv = synth(ttft_ms=1, itl_ms=0.2, no_usage=True)
    prompts = [_conv(0, 2)]
    d = _run(srv.base_url, prompts, allow_missing_usage=True)
    answer = " ".join(f" t{i}" for i in range(ANSWER)).replace("  ", " ")  # the synthetic server's words
    conv = Conversation(prompts[0], (prompts[0].text, *prompts[0].turns), [answer])
    assert d["usage_fallback_requests"] == 2
    assert d["total_input_tokens"] == prompts[0].est_tokens + estimate_tokens(conv.text())


def test_ttft_by_turn_counts_completed_turns_only() -> None:
    from autobench.bench.conversation import ttft_by_turn
    from autobench.bench.record import ERROR, OK

    def rec(i: int, status: str, start: float, first: float | None) -> RequestRecord:
        r = RequestRecord(i, 1)
        r.status, r.start, r.first = status, start, first
        return r

    records = [
        rec(0, OK, 0.0, 0.010),
        rec(1, OK, 1.0, 1.030),
        rec(2, ERROR, 1.9, 2.0),  # a token came, then the stream failed: not a completed turn
        rec(3, ERROR, 3.0, None),
        rec(4, OK, 5.0, 5.050),
    ]
    got = ttft_by_turn(records, {0: 1, 1: 2, 2: 2, 3: 1, 4: 2})
    assert list(got) == ["1", "2"]
    assert got["1"]["completed"] == 1 and got["1"]["median"] == pytest.approx(10.0)
    assert got["2"]["completed"] == 2 and got["2"]["mean"] == pytest.approx(40.0)
    assert got["2"]["median"] == pytest.approx(40.0) and got["2"]["p99"] == pytest.approx(49.8)
