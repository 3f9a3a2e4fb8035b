"""Budget and bookkeeping of the fuzz suite.

``budget(n)``: examples per property -- ``n`` in the test suite (the whole fuzz suite stays
within about a minute on 2 cores), ``AUTOBENCH_FUZZ_EXAMPLES`` when set (benchmarks/fuzz.py
runs it longer).  ``DERANDOMIZE``: the test suite draws the same cases every run (a CI failure
reproduces); ``AUTOBENCH_FUZZ_RANDOM=1`` draws fresh ones.  ``tried(name)`` counts the cases each property really ran; with
``AUTOBENCH_FUZZ_REPORT=path`` the counts are written there as JSON at the end of the session.
"""

from __future__ import annotations

import os
import re
from collections import Counter

from autobench.redaction import TOKEN

CASES: Counter[str] = Counter()
DERANDOMIZE = not os.environ.get("AUTOBENCH_FUZZ_RANDOM")
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def budget(default: int) -> int:
    raw = os.environ.get("AUTOBENCH_FUZZ_EXAMPLES")
    return int(raw) if raw else default


def tried(name: str) -> None:
    CASES[name] += 1


def assert_clean_line(text: str) -> None:
    """What a person is shown: one line, no raw control character, no token."""
    assert "\n" not in text.strip(), text
    assert not RAW_CONTROL.search(text), repr(text)
    assert not TOKEN.search(text), text
