"""Help texts say what the commands do (issue #31): no `[x<=None]` range for an unbounded
number; regress and compare name the bands their output names."""

from __future__ import annotations

from autobench.cli import main


def test_bench_help_shows_no_empty_range(capsys) -> None:
    assert main(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--temperature" in out and "None]" not in out


def test_regress_and_compare_help_name_the_t_interval_and_the_bootstrap(capsys) -> None:
    for command in ("regress", "compare"):
        assert main([command, "--help"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert "t interval over the repeats" in out and "bootstrap over the per-request samples" in out, command
