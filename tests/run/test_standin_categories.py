"""The vllm serve stand-in's per-category acceptance table and prefix-cache switch (issue 33)."""

from __future__ import annotations

import argparse

import pytest

from autobench.run.standin import category_profiles


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="vllm serve")


def test_categories_from_the_environment_json() -> None:
    got = category_profiles('{"[code]": [0.9, 0.8], "[chat]": [0.5, 0]}', _parser())
    assert got == (("[code]", (0.9, 0.8)), ("[chat]", (0.5, 0.0)))
    assert category_profiles("  ", _parser()) == ()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1]", "not a JSON object"),
        ("{nope", "Expecting property name"),
        ('{"a": [1.5]}', "'a': rates must be a list of numbers in [0, 1]"),
        ('{"a": 0.5}', "'a': rates must be"),
        ('{"a": [true]}', "'a': rates must be"),
    ],
)
def test_bad_categories_are_a_usage_error(text: str, words: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        category_profiles(text, _parser())
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "AUTOBENCH_STANDIN_CATEGORIES: " in err and words in err
