"""Verdicts (autobench.ledger.verdict): the bootstrap band and the rules, on seeded samples.

"Identical servers read no change or inconclusive in at least 19 of 20 seeded trials" is a
test, not a timing: each trial draws two runs' requests from one distribution with its own
seed and judges every metric of the cell."""

from __future__ import annotations

import random

import pytest

from autobench.bench.metrics import percentile
from autobench.ledger.verdict import (
    FASTER,
    HIGHER_IS_BETTER,
    INCONCLUSIVE,
    NO_CHANGE,
    SLOWER,
    CellData,
    Requests,
    judge_cells,
    requests_of,
    t_quantile,
    verdict_of,
)

METRICS = tuple(HIGHER_IS_BETTER)


def requests(seed: int, n: int = 400, slower: float = 1.0, concurrency: int = 8) -> CellData:
    """One run's cell: n requests of a server whose every delay is ``slower`` times longer."""
    r = random.Random(seed)
    ttft = [slower * r.lognormvariate(3.0, 0.3) for _ in range(n)]
    tpot = [slower * r.lognormvariate(2.0, 0.1) for _ in range(n)]
    completion = [r.randint(60, 200) for _ in range(n)]
    prompt = [r.randint(100, 300) for _ in range(n)]
    e2el = [t + p * (c - 1) for t, p, c in zip(ttft, tpot, completion, strict=True)]
    itl = [slower * r.lognormvariate(2.0, 0.2) for _ in range(n * 10)]
    metrics: dict[str, float] = {}
    for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        metrics[f"{name}_median_ms"] = percentile(values, 50)
        metrics[f"{name}_p99_ms"] = percentile(values, 99)
    seconds = sum(e2el) / 1000 / concurrency  # a closed loop keeps `concurrency` requests in flight
    metrics["decode_tok_s"] = sum(completion) / seconds
    metrics["prefill_tok_s"] = sum(prompt) / seconds
    metrics["total_tok_s"] = (sum(completion) + sum(prompt)) / seconds
    return CellData({"concurrency": concurrency}, [metrics], Requests(ttft, tpot, itl, e2el, prompt, completion))


def repeats(seed: int, k: int = 3, slower: float = 1.0, noise: float = 0.02) -> CellData:
    """One run's cell: k repeats whose metrics wander by ``noise`` (relative) around one server's."""
    r = random.Random(seed)
    reps: list[dict[str, float]] = []
    for i in range(k):
        reps.append(
            {
                "repeat": i,
                "decode_tok_s": 1000 / slower * r.gauss(1, noise),
                "ttft_median_ms": 40 * slower * r.gauss(1, noise),
                "tpot_median_ms": 8 * slower * r.gauss(1, noise),
            }
        )
    return CellData({"concurrency": 8}, reps)


def loud(verdicts) -> list[tuple[str, str]]:
    return [(m.metric, m.verdict) for _, m in verdicts.rows() if m.verdict in (FASTER, SLOWER)]


def test_identical_servers_from_requests_read_no_change_or_inconclusive():
    quiet = 0
    for trial in range(20):
        v = judge_cells([requests(1000 + trial)], [requests(2000 + trial)], threshold=0.05, seed=trial)
        assert len(list(v.rows())) == len(METRICS) - 1  # goodput: not measured here
        quiet += not loud(v)
    assert quiet >= 19


@pytest.mark.parametrize("k", [2, 3, 5])
def test_identical_servers_from_repeats_read_no_change_or_inconclusive(k):
    # 5 % noise per repeat, the threshold 5 %: a percentile bootstrap of the repeats' medians
    # passed 10 of these 20 trials with two repeats a side and 18 with three; the t interval 19 and 20
    quiet = 0
    for trial in range(20):
        a, b = repeats(3000 + trial, k=k, noise=0.05), repeats(4000 + trial, k=k, noise=0.05)
        v = judge_cells([a], [b], threshold=0.05, seed=trial)
        assert {m.method for _, m in v.rows()} == {"repeats"}
        quiet += not loud(v)
    assert quiet >= 19


def test_a_server_ten_percent_slower_reads_slower_with_a_band_excluding_one():
    v = judge_cells([requests(1)], [requests(2, slower=1.1)], threshold=0.05, seed=0)
    by = {m.metric: m for _, m in v.rows()}
    decode = by["decode_tok_s"]
    assert decode.verdict == SLOWER and decode.method == "requests"
    assert decode.band is not None and decode.band[1] < 1.0 < 1 / decode.band[1] and decode.ratio < 0.95
    for metric in ("tpot_median_ms", "itl_median_ms"):
        assert by[metric].verdict == SLOWER and by[metric].band[0] > 1.0
    p99 = by["ttft_p99_ms"]  # 4 requests above it: too few for a band, and never a regression
    assert p99.band is None and p99.method == "few" and p99.verdict == INCONCLUSIVE and not p99.regressed(0.05)
    assert decode.regressed(0.05)
    # The other way round it is faster, never a regression.
    back = {m.metric: m for _, m in judge_cells([requests(2, slower=1.1)], [requests(1)], threshold=0.05).rows()}
    assert back["decode_tok_s"].verdict == FASTER and not back["decode_tok_s"].regressed(0.05)


def test_repeats_ten_percent_slower():
    v = judge_cells([repeats(5, k=4)], [repeats(6, k=4, slower=1.1)], threshold=0.05, seed=0)
    assert {m.metric: m.verdict for _, m in v.rows()} == {
        "decode_tok_s": SLOWER,
        "ttft_median_ms": SLOWER,
        "tpot_median_ms": SLOWER,
    }


def test_the_same_seed_gives_the_same_bands_and_another_seed_others():
    def bands(seed: int) -> list:
        return [m.band for _, m in judge_cells([requests(7)], [requests(8)], threshold=0.05, seed=seed).rows()]

    assert bands(3) == bands(3)
    assert bands(3) != bands(4)


def test_t_quantiles_match_the_tables():
    for df, p, t in (
        (1, 0.975, 12.7062),
        (2, 0.975, 4.3027),
        (4, 0.995, 4.6041),
        (30, 0.975, 2.0423),
        (1, 0.9995, 636.619),
    ):
        assert t_quantile(p, df) == pytest.approx(t, rel=1e-4)


@pytest.mark.parametrize(
    ("ratio", "band", "higher", "expected"),
    [
        (1.01, (0.97, 1.04), True, NO_CHANGE),
        (1.02, (1.01, 1.04), True, NO_CHANGE),  # significant but smaller than the threshold
        (0.90, (0.88, 0.92), True, SLOWER),
        (0.90, (0.88, 0.92), False, FASTER),  # a latency that fell
        (1.10, (1.08, 1.12), False, SLOWER),
        (1.10, (1.08, 1.12), True, FASTER),
        (0.97, (0.93, 0.99), True, INCONCLUSIVE),  # outside the noise, but not by the threshold
        (0.90, (0.80, 1.01), True, INCONCLUSIVE),  # beyond the threshold, but inside the noise
        (0.90, None, True, INCONCLUSIVE),
    ],
)
def test_the_rules(ratio, band, higher, expected):
    assert verdict_of(ratio, band, higher, 0.05) == expected


def test_cells_match_without_repeat_and_client_bound_is_marked():
    a = [
        CellData({"concurrency": 1, "repeat": 0}, [{"decode_tok_s": 10.0}]),
        CellData({"concurrency": 4, "repeat": 0}, [{"decode_tok_s": 40.0}]),
    ]
    b = [
        CellData({"concurrency": 4, "repeat": 1}, [{"decode_tok_s": 44.0, "client_bound": True}]),
        CellData({"concurrency": 16, "repeat": 0}, [{"decode_tok_s": 99.0}]),
    ]
    v = judge_cells(a, b, threshold=0.05)
    assert [c.label for c in v.cells] == ["concurrency=4"]
    (cell, m), *_ = v.rows()
    assert cell.client_bound == (False, True) and m.client_bound and m.method == "none"
    assert m.label() == "inconclusive (client-bound)" and m.ratio == pytest.approx(1.1)
    assert v.only_a == [{"concurrency": 1, "repeat": 0}] and v.only_b == [{"concurrency": 16, "repeat": 0}]


def test_requests_of_reads_the_stored_samples_of_every_repeat():
    from autobench.samples import Request, Samples

    first = Samples.from_requests(
        [
            Request("ok", 10.0, 2.0, 30.0, (2.0, 2.5), 5, 3),
            Request("error", None, None, None, (), None, None, "http_500"),
            Request("ok", 12.0, None, 12.0, (), None, 1),  # one token: no TPOT; unknown prompt length
        ]
    )
    second = Samples.from_requests([Request("ok", 11.0, 3.0, 40.0, (3.0,), 7, 2)])
    got = requests_of([first, second])
    assert got.ttft_ms == [10.0, 12.0, 11.0] and got.tpot_ms == [2.0, 3.0] and got.e2el_ms == [30.0, 12.0, 40.0]
    assert got.itl_ms == [2.0, 2.5, 3.0]
    # throughput triples only whole: the request of unknown prompt length is left out
    assert (got.token_e2el_ms, got.prompt_tokens, got.completion_tokens) == ([30.0, 40.0], [5.0, 7.0], [3.0, 2.0])


def test_repeats_with_a_zero_are_judged_on_their_values():
    # an ITL median of 0 (chunks read together): no log, the t interval of the values instead
    a = CellData({}, [{"itl_median_ms": v} for v in (0.0, 1.0, 1.1)])
    b = CellData({}, [{"itl_median_ms": v} for v in (1.0, 1.1, 1.0)])
    (_, m), *_ = judge_cells([a], [b], threshold=0.05).rows()
    assert m.method == "repeats" and m.band is not None and m.band[0] < 1.0 < m.band[1]
    zeros = CellData({}, [{"itl_median_ms": 0.0}, {"itl_median_ms": 0.0}])
    assert not list(judge_cells([zeros], [b], threshold=0.05).rows())  # A is 0: no ratio
