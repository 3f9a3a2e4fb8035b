"""Every read of a dataset is bounded, on every path through the reader (autobench.files):
``/proc/self/pagemap`` is a "regular file" of size 0 that never ends and holds few newlines, so
the over-long-line skip is where the bound must hold.  Before, ``bench --dataset
/proc/self/pagemap --dataset-kind jsonl`` read past 3.9 GB."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from autobench import files
from autobench.bench import datasets, records
from autobench.bench.datasets import load_dataset
from autobench.errors import BenchError

LIMIT = 4 * 2**20
RECORD = 64 * 2**10


class _Counting(io.RawIOBase):
    """A file that counts what is read from it and fails the test far past the limit (so a
    regression ends quickly instead of reading the whole pagemap)."""

    def __init__(self, raw: Any):
        self.raw = raw
        self.read_total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.raw.readinto(b)
        self.read_total += n or 0
        assert self.read_total <= 4 * LIMIT, f"read {self.read_total} bytes with a {LIMIT}-byte limit"
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


@pytest.fixture
def counted(monkeypatch: Any) -> list[_Counting]:
    opened: list[_Counting] = []

    class _Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def fdopen(fd: int, mode: str = "rb", *a: Any, **k: Any) -> Any:
            f = _Counting(os.fdopen(fd, "rb", buffering=0))
            opened.append(f)
            return io.BufferedReader(f)

    monkeypatch.setattr(files, "os", _Os())
    for module in (datasets, records):  # records reads the file, datasets checks each prompt
        monkeypatch.setattr(module, "MAX_DATASET_BYTES", LIMIT)
        monkeypatch.setattr(module, "MAX_RECORD_BYTES", RECORD)
    return opened


@pytest.mark.skipif(not Path("/proc/self/pagemap").exists(), reason="Linux /proc only")
def test_an_endless_file_without_line_breaks_stops_at_the_limit(counted):
    with pytest.raises(BenchError) as info:
        load_dataset(kind="jsonl", path="/proc/self/pagemap", num_prompts=1)
    assert "over the 4 MiB limit" in str(info.value)
    assert counted[0].read_total <= LIMIT + RECORD + 1


def test_a_file_of_one_endless_line_stops_at_the_limit_too(tmp_path, counted):
    p = tmp_path / "one-line.jsonl"
    with open(p, "wb") as f:
        f.write(b"x" * (LIMIT * 2))  # no newline: the whole file is one over-long line
    with pytest.raises(BenchError, match="over the 4 MiB limit"):
        # the size check (8 MiB > 4 MiB) refuses it first
        load_dataset(kind="jsonl", path=str(p), num_prompts=1)
    assert counted == [] or counted[0].read_total == 0


@pytest.mark.parametrize(
    ("content", "lines"),
    [
        (b"a\nb\n", [(1, b"a\n"), (2, b"b\n")]),
        (b"a\nb", [(1, b"a\n"), (2, b"b")]),
        (b"x" * 20 + b"\nok\n", [(1, None), (2, b"ok\n")]),
        (b"x" * 10 + b"\n", [(1, b"x" * 10 + b"\n")]),
        (b"x" * 11, [(1, None)]),
        (b"", []),
    ],
)
def test_read_lines_table(tmp_path, content, lines):
    p = tmp_path / "f"
    p.write_bytes(content)
    assert list(files.read_lines(p, what="f", limit=100, max_line=10)) == lines


def test_read_lines_refuses_a_file_over_the_limit_from_its_size(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 50 + b"\n")
    it = files.read_lines(p, what="f", limit=40, max_line=10)
    with pytest.raises(files.AutobenchError, match="over the 40 bytes limit"):
        list(it)
