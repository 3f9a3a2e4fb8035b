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


def kubelet_expand(text: str, mapping: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """What the kubelet makes of a container's ``command``/``args``/env ``value`` string: our
    model of Kubernetes ``third_party/forked/golang/expansion/expand.go`` (read at commit
    fde22c3f9aacfd260225a9741de123a41157b7c0): ``$$`` is one ``$``; ``$(NAME)`` is the variable
    (every NAME is looked up, so the names expanded are returned too); an unclosed ``$(`` and a
    ``$`` before anything else stay as written.  ``mapping`` gives values (default: a marker)."""
    out: list[str] = []
    names: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "$" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close == -1:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                names.append(name)
                out.append((mapping or {}).get(name, f"\x00EXPANDED:{name}\x00"))
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out), names
