"""autobench.samples: raw per-request samples -- the encoding round trip, merge, percentiles."""

from __future__ import annotations

import contextlib
import math
import zlib
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autobench import samples as S
from autobench.errors import LedgerError
from autobench.samples import Request, Samples, decode, encode, merge, percentile, percentiles, summary

latency = st.one_of(st.none(), st.floats(min_value=0, max_value=1e6, allow_nan=False), st.just(math.nan))
count = st.one_of(st.none(), st.integers(min_value=0, max_value=2**31 - 1))
requests = st.builds(
    Request,
    status=st.sampled_from(["ok", "error", "incomplete"]),
    ttft_ms=latency,
    tpot_ms=latency,
    e2el_ms=latency,
    itl_ms=st.lists(st.floats(min_value=0, max_value=1e5, allow_nan=False), max_size=20),
    prompt_tokens=count,
    completion_tokens=count,
    error_kind=st.one_of(st.none(), st.sampled_from(["timeout", "http_5xx", "stream_dropped", "ünïcode"])),
    start_s=st.one_of(st.none(), st.floats(min_value=0, max_value=1e5, allow_nan=False)),
    dispatch_ms=st.one_of(st.none(), st.floats(min_value=0, max_value=1e5, allow_nan=False)),
)
samples_st = st.lists(requests, max_size=30).map(Samples.from_requests)


@given(samples_st)
@settings(max_examples=200, deadline=None)
def test_encode_decode_round_trip_is_exact(s: Samples) -> None:
    blob = encode(s)
    assert blob[0] == (2 if any(r.dispatch_ms is not None for r in s.requests()) else 1)
    back = decode(blob)
    assert back == s and len(back) == len(s)
    assert encode(back) == blob  # deterministic: the ledger hashes these bytes
    for i in range(len(s)):
        assert back.request(i) == s.request(i)


@given(st.lists(requests, max_size=20))
@settings(max_examples=100, deadline=None)
def test_rows_read_back_as_built(rows: list[Request]) -> None:
    """Each request reads back as built, to the microsecond."""
    s = Samples.from_requests(rows)
    for i, row in enumerate(rows):
        got = s.request(i)
        assert (got.status, got.error_kind) == (row.status, row.error_kind)
        assert (got.prompt_tokens, got.completion_tokens) == (row.prompt_tokens, row.completion_tokens)
        for name in ("ttft_ms", "tpot_ms", "e2el_ms"):
            want = getattr(row, name)
            if want is None or math.isnan(want):
                assert getattr(got, name) is None
            else:
                assert getattr(got, name) == pytest.approx(want, rel=1e-12, abs=0.0005)
                assert getattr(got, name) * 1000 == pytest.approx(round(getattr(got, name) * 1000), abs=1e-6)
        if row.start_s is None:
            assert got.start_s is None
        else:
            assert got.start_s == pytest.approx(row.start_s, rel=1e-12, abs=5e-7)
        if row.dispatch_ms is None:
            assert got.dispatch_ms is None
        else:
            assert got.dispatch_ms == pytest.approx(row.dispatch_ms, rel=1e-12, abs=0.0005)
        assert got.itl_ms == pytest.approx(list(row.itl_ms), rel=1e-12, abs=0.0005)


@given(st.lists(samples_st, max_size=5))
@settings(max_examples=100, deadline=None)
def test_merge_is_the_union_of_requests(parts: list[Samples]) -> None:
    merged = merge(parts)
    assert len(merged) == sum(len(p) for p in parts)
    assert merged.requests() == [r for p in parts for r in p.requests()]
    assert decode(encode(merged)) == merged
    for metric in S.LATENCIES:
        assert merged.values(metric) == [v for p in parts for v in p.values(metric)]
    if len(parts) >= 2:  # associative
        assert merge([merge(parts[:1]), merge(parts[1:])]) == merged


@given(st.lists(samples_st, min_size=1, max_size=4))
@settings(max_examples=50, deadline=None)
def test_percentiles_of_a_merge_come_from_the_raw_union(parts: list[Samples]) -> None:
    values = [v for p in parts for v in p.values("itl_ms")]
    merged = summary(merge(parts))
    if not values:
        assert merged["itl_p99_ms"] is None
        return
    assert merged["itl_p99_ms"] == percentile(values, 99)
    assert merged["itl_median_ms"] == percentile(values, 50)


@given(st.lists(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False), min_size=1, max_size=50), st.floats(0, 100))
@settings(deadline=None)
def test_percentile_is_numpys_linear_method(xs: list[float], q: float) -> None:
    np = pytest.importorskip("numpy")
    assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-9, abs=1e-6)
    assert percentiles(xs, [q, 50]) == [percentile(xs, q), percentile(xs, 50)]


def test_bench_metrics_use_the_one_percentile() -> None:
    from autobench.bench import metrics, record

    assert metrics.percentile is S.percentile
    assert record.OK == S.OK


def test_percentile_of_nothing() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)


def sample() -> Samples:
    return Samples.from_requests(
        [
            Request("ok", 10.0, 2.0, 30.0, [1.0, 3.0], 12, 10, None, 0.0),
            Request("error", None, None, None, (), 12, None, "http_5xx", 0.5),
            Request("ok", 20.0, 4.0, 50.0, [2.0, 5.0, 7.0], 13, 11, None, 1.0),
            Request("incomplete", 15.0, None, 40.0, [4.0], 12, 1, None, 1.5),
        ]
    )


def test_values_and_summary_take_successful_requests() -> None:
    s = sample()
    assert s.values("ttft_ms") == [10.0, 20.0]
    assert s.values("itl_ms") == [1.0, 3.0, 2.0, 5.0, 7.0]
    assert s.values("itl_ms", status=None) == [1.0, 3.0, 2.0, 5.0, 7.0, 4.0]
    assert s.itl(2) == [2.0, 5.0, 7.0] and s.itl(1) == []
    got = summary(s)
    assert (got["completed"], got["errors"], got["incomplete"]) == (2, 1, 1)
    assert got["ttft_median_ms"] == 15.0 and got["ttft_mean_ms"] == 15.0
    assert got["itl_p99_ms"] == percentile([1.0, 3.0, 2.0, 5.0, 7.0], 99)
    assert summary(Samples.empty())["ttft_p99_ms"] is None
    with pytest.raises(ValueError, match="unknown metric"):
        s.values("ttft")


def test_building_refuses_what_cannot_be_stored() -> None:
    with pytest.raises(ValueError, match="finite"):
        Samples.from_requests([Request("ok", ttft_ms=math.inf)])
    with pytest.raises(ValueError, match="finite"):
        Samples.from_requests([Request("ok", itl_ms=[math.nan])])
    with pytest.raises(ValueError, match="32-bit"):
        Samples.from_requests([Request("ok", prompt_tokens=2**40)])
    with pytest.raises(ValueError, match="short non-empty"):
        Samples.from_requests([Request("")])
    with pytest.raises(ValueError, match="entries"):
        Samples(**{**vars_of(sample()), "status": ("ok",)})
    with pytest.raises(ValueError, match="typecode"):
        Samples(**{**vars_of(sample()), "ttft_ms": array("f", sample().ttft_ms)})


def vars_of(s: Samples) -> dict[str, object]:
    return {name: getattr(s, name) for name in s.__dataclass_fields__}


def test_times_are_kept_to_the_microsecond() -> None:
    s = Samples.from_requests(
        [Request("ok", ttft_ms=12.3456789, itl_ms=[0.0004, 0.0006, 1e6 + 0.123456], start_s=1.23456789)]
    )
    assert s.ttft_ms[0] == 12.346 and s.itl(0) == [0.0, 0.001, 1000000.123] and s.start_s[0] == 1.234568
    assert decode(encode(s)) == s
    with pytest.raises(ValueError, match="too large"):
        Samples.from_requests([Request("ok", e2el_ms=1e300)])


def test_nan_is_one_nan() -> None:
    neg = -math.nan
    a = Samples.from_requests([Request("ok", ttft_ms=neg)])
    b = Samples.from_requests([Request("ok", ttft_ms=None)])
    assert a == b and encode(a) == encode(b) and hash(a) == hash(b)


#: What autobench wrote before the dispatch delay (format version 1, main at 8a906ad), for
#: _OLD_ROWS: a stored blob must still read, and re-encode to the same bytes (the ledger hashes it).
_V1_BLOB = bytes.fromhex(
    "01789c636260606002626606a6fc6cd6d4a2a2fc22f692ccdcd4fcd212060646b0043b90fc0f04cc501aa41c04ae30"
    "18302081864d0c3c287c07863928fc0909171e338b210476ace1e6455600003383167f"
)
_OLD_ROWS = [
    Request(
        "ok",
        ttft_ms=12.5,
        tpot_ms=3.25,
        e2el_ms=40.0,
        itl_ms=[3.0, 3.5],
        prompt_tokens=7,
        completion_tokens=3,
        start_s=0.25,
    ),
    Request("error", error_kind="timeout", start_s=1.5, itl_ms=[]),
]


def test_a_version_1_blob_still_reads_and_keeps_its_bytes() -> None:
    old = decode(_V1_BLOB)
    assert old.requests() == _OLD_ROWS  # dispatch_ms None: not recorded then
    assert list(map(math.isnan, old.dispatch_ms)) == [True, True]
    assert encode(old) == _V1_BLOB == encode(Samples.from_requests(_OLD_ROWS))


def test_a_dispatch_delay_is_written_as_version_2() -> None:
    rows = [_OLD_ROWS[0]._replace(dispatch_ms=0.125), _OLD_ROWS[1]]
    s = Samples.from_requests(rows)
    blob = encode(s)
    assert blob[0] == 2 == S.FORMAT_VERSION and 2 in S.READ_VERSIONS and 1 in S.READ_VERSIONS
    back = decode(blob)
    assert back == s and back.requests() == rows
    assert back.request(0).dispatch_ms == 0.125 and back.request(1).dispatch_ms is None
    assert back != decode(_V1_BLOB)  # the delay is part of the samples
    merged = merge([back, decode(_V1_BLOB)])
    assert [r.dispatch_ms for r in merged.requests()] == [0.125, None, None, None]
    with pytest.raises(LedgerError):
        decode(bytes([1]) + blob[1:])  # a v2 body read as v1 has bytes left over


def test_unknown_version_is_refused() -> None:
    blob = encode(sample())
    with pytest.raises(LedgerError, match="format version 9") as e:
        decode(bytes([9]) + blob[1:], where="run #3 cell 1")
    assert str(e.value).startswith("run #3 cell 1: ") and "upgrade" in str(e.value)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b"",
        lambda b: b[:1],
        lambda b: b[: len(b) // 2],
        lambda b: b[:-1],
        lambda b: b[:10] + bytes([b[10] ^ 0xFF]) + b[11:],
        lambda b: b + b"x",
        lambda b: b[:1] + zlib.compress(zlib.decompress(b[1:])[:-3]),  # a valid stream, short body
        lambda b: b[:1] + zlib.compress(zlib.decompress(b[1:]) + b"\0"),  # bytes left over
        lambda b: b[:1] + zlib.compress(b"\xff" * 12),  # counts that do not fit
    ],
)
def test_damaged_blobs_raise_one_ledger_error(damage: object) -> None:
    blob = damage(encode(sample()))  # type: ignore[operator]
    with pytest.raises(LedgerError) as e:
        decode(blob)
    assert "\n" not in str(e.value)


@given(st.binary(max_size=200))
@settings(max_examples=200, deadline=None)
def test_any_bytes_decode_or_raise_ledger_error(blob: bytes) -> None:
    for candidate in (blob, bytes([S.FORMAT_VERSION]) + zlib.compress(blob)):
        with contextlib.suppress(LedgerError):
            decode(candidate)


@pytest.mark.integration
def test_samples_is_a_leaf() -> None:
    import subprocess
    import sys

    code = "import sys, autobench.samples; print(sorted(m for m in sys.modules if m.startswith('autobench.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['autobench.errors', 'autobench.samples']"


def test_columns_without_a_dispatch_delay_have_none() -> None:
    s = Samples.of(
        status=["ok", "error"], ttft_ms=[1.0, None], tpot_ms=[None, None], e2el_ms=[2.0, None], itl_ms=[[1.0], []],
        prompt_tokens=[3, None], completion_tokens=[2, None], error_kind=[None, "timeout"], start_s=[0.0, 0.5],
    )  # fmt: skip
    assert [r.dispatch_ms for r in s.requests()] == [None, None] and encode(s)[0] == 1
