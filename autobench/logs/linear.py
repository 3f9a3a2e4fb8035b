"""Every regular expression the parser runs on log text, and the check that each is linear.

Python's ``re`` backtracks: a pattern with an unbounded repeat can take quadratic or worse
time on a hostile line (issue #27: ``'1%|' * 2666`` took 93 s through the old tqdm pattern,
64 KB of spaces after ``pid=1`` 45 s through the old record splitter).  Lines of up to
16 MiB are read, so the parser keeps one rule, checked here on each pattern's parse tree:

* **no unbounded repeat** (``*``, ``+``, ``{n,}``), lazy, greedy or possessive, and no
  backreference.  Every repeat has a finite maximum, so a match attempt at one position
  explores at most a number of paths fixed by the pattern alone; ``search`` makes at most
  one attempt per position, so the time is linear in the text's length.  A literal
  alternation (the byte prefilter) is the special case with no repeat at all.

What a bound cuts off is documented where the pattern lives (a captured number has at most
20 digits, a process name at most 120 characters, an exception's text at most 4096
characters -- more than any report keeps).  Everything else on a line is done with string
methods (``find``, ``split``, ``startswith``), which are linear.

``benchmarks/logs_adversarial.py`` feeds each pattern adversarial lines of 1 to 16 MB and
prints the time per MB; ``tests/logs/test_logs_linear.py`` runs :func:`unbounded` on every
pattern of :func:`patterns`.
"""

from __future__ import annotations

import re
from re import _constants as _sre  # type: ignore[attr-defined]
from re import _parser as _sre_parse  # type: ignore[attr-defined]
from typing import Any

_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT}


def _walk(items: Any, out: list[str]) -> None:
    for op, av in items:
        if op in _REPEATS:
            lo, hi, sub = av
            if hi == _sre.MAXREPEAT:
                out.append(f"unbounded repeat {{{lo},}}")
            _walk(sub, out)
        elif op == _sre.SUBPATTERN:
            _walk(av[-1], out)
        elif op == _sre.BRANCH:
            for branch in av[1]:
                _walk(branch, out)
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            _walk(av[1], out)
        elif op == _sre.ATOMIC_GROUP:
            _walk(av, out)
        elif op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
            out.append("backreference")


def unbounded(pattern: re.Pattern[Any]) -> list[str]:
    """What in ``pattern`` could make its time grow faster than the text (empty: nothing)."""
    out: list[str] = []
    _walk(_sre_parse.parse(pattern.pattern, pattern.flags), out)
    return out


# Patterns the parser only runs with ``match`` at one position (a line's or a segment's start,
# or a candidate "(" in lines._cuts): one attempt, a bounded number of steps.
ANCHORED = frozenset(
    {
        "lines._PROC",
        "lines._HEADER",
        "lines._UVICORN",
        "lines._GLOG",
        "parse._DEBUG_B",
        "rootcause._EXC",
        "rootcause._FRAME",
        "rootcause._CARETS",
        "unwrap._DOCKER_TS",
        "unwrap._CI_TS",
        "unwrap._KUBECTL",
        "unwrap._COMPOSE_BRACKET",
        "unwrap._JOURNALD",
        "unwrap._COMPOSE",
        "unwrap._COLUMN",
        "unwrap._SLURM",
        "unwrap._PROC_HEAD",
        "unwrap._QUOTE",
    }
)


def patterns() -> dict[str, re.Pattern[Any]]:
    """Every pattern the parser runs on log text, by ``module.name``."""
    from autobench.logs import facts, lines, parse, rootcause, unwrap

    found: dict[str, re.Pattern[Any]] = {}
    for module in (facts, lines, parse, rootcause, unwrap):
        short = module.__name__.rsplit(".", 1)[-1]
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{short}.{name}"] = value
    for i, fact in enumerate(facts.BOOT_PATTERNS):
        found[f"facts.BOOT_PATTERNS[{i}] ({fact.needle})"] = fact.regex
    for key, rx in facts._SPEC_FIELDS.items():
        found[f"facts._SPEC_FIELDS[{key}]"] = rx
    for name, rx in rootcause._CLASSES:
        found[f"rootcause._CLASSES[{name}]"] = rx
    # the byte prefilter as the parser builds it, with every needle it can hold
    needles = set(facts.SPEC_NEEDLES) | {p.needle for p in facts.BOOT_PATTERNS} | set(rootcause.NEEDLES)
    found["parse._trigger(all needles)"] = parse._trigger(frozenset(needles | {"assert"}))
    return found
