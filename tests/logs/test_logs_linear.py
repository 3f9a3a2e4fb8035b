"""Every pattern the parser runs on log text is linear in the text's length by construction
(autobench/logs/linear.py): no unbounded repeat, no backreference.  Behaviour, not time: the
check reads each pattern's parse tree; the time per MB is benchmarks/logs_adversarial.py's."""

from __future__ import annotations

import re

import pytest

from autobench.logs import facts, lines, parse, parse_log, rootcause, unwrap
from autobench.logs.linear import patterns, unbounded
from autobench.logs.lines import is_progress, split_records
from autobench.logs.unwrap import strip_controls
from autobench.logs.unwrap import unwrap as unwrap_line

PATTERNS = patterns()


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_is_linear_by_construction(name: str) -> None:
    assert unbounded(PATTERNS[name]) == [], PATTERNS[name].pattern


def test_the_registry_holds_every_pattern_of_the_parser() -> None:
    for module in (facts, lines, parse, rootcause, unwrap):
        short = module.__name__.rsplit(".", 1)[-1]
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                assert PATTERNS[f"{short}.{name}"] is value
    assert len([n for n in PATTERNS if n.startswith("rootcause._CLASSES")]) == len(rootcause._CLASSES)
    assert len([n for n in PATTERNS if n.startswith("facts.BOOT_PATTERNS")]) == len(facts.BOOT_PATTERNS)


def test_the_checker_finds_what_is_not_linear() -> None:
    # the two patterns issue #27 timed (93 s and 45 s on 8 and 64 KB lines), as they were
    assert (
        unbounded(re.compile(r"\d+%\|.*\|.*(?:it/s|s/it|\?it/s)"))
        == ["unbounded repeat {1,}"] + ["unbounded repeat {0,}"] * 2
    )
    old_split = r"\s*(?<!\()(?=\([A-Za-z_][\w.-]*(?: [A-Za-z_]+=[\w.:-]+)*? pid=\d+\))"
    assert len(unbounded(re.compile(old_split))) == 6
    assert unbounded(re.compile(r"(a)\1")) == ["backreference"]
    assert unbounded(re.compile(r"(?:ab){1,8}c{0,3}")) == []


def test_issue_27_hostile_lines_parse_to_what_they_say() -> None:
    # 8 KB: ERROR ... ValueError: + "1%|" * 2666 (a tqdm-looking run with no rate)
    cubic = "ERROR 01-01 00:00:00 [x.py:1] ValueError: " + "1%|" * 2666
    assert not is_progress(cubic)
    rc = parse_log([cubic]).root_cause
    assert rc is not None and rc.exception == "ValueError" and rc.line == 1
    # 64 KB of spaces around a process id, both ways round
    for spaced in (
        "(EngineCore pid=1)" + " " * 65536 + "x",
        " " * 65536 + "pid=1",
        "pid=1" + " " * 65536 + "(A pid=2) ERROR",
    ):
        recs = split_records(spaced)
        assert sum(len(r.msg) for r in recs) <= len(spaced)
    recs = split_records("(A pid=1) one" + " " * 65536 + "(B pid=2) two")
    assert [(r.proc, r.msg.strip()) for r in recs] == [("A pid=1", "one"), ("B pid=2", "two")]


def test_unterminated_and_endless_control_sequences_are_cut_not_chased() -> None:
    osc = "\x1b]0;" + "t" * 100_000  # an OSC title that never ends
    assert len(strip_controls(osc)) < len(osc)
    assert strip_controls("\x1b[" + "1;" * 50_000 + "m" + "text").endswith("text")
    assert unwrap_line("**" + "*" * 50_000) is not None


def test_anchored_patterns_are_only_ever_matched_at_one_position() -> None:
    """The benchmark times ANCHORED patterns with one match, as the parser runs them: no
    module may search, split or substitute with them."""
    import inspect

    from autobench.logs.linear import ANCHORED

    assert set(PATTERNS) >= ANCHORED
    sources = {m.__name__.rsplit(".", 1)[-1]: inspect.getsource(m) for m in (facts, lines, parse, rootcause, unwrap)}
    for name in ANCHORED:
        module, var = name.split(".")
        for use in ("search", "sub", "split", "findall", "finditer", "fullmatch"):
            assert re.search(rf"(?<!\w){var}\.{use}\(", sources[module]) is None, (name, use)
        assert re.search(rf"(?<!\w){var}\.match", sources[module]), name
