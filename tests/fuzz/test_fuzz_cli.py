"""Fuzz: every option of every command, with hostile values.

Parsing a command line (click, with autobench's own parameter types and callbacks) either
succeeds or raises a usage error whose one line, as the CLI prints it, is clean -- never another
exception (which the CLI would report as an internal error).
"""

from __future__ import annotations

import click
from fuzz_strategies import TEXT
from fuzzkit import DERANDOMIZE, assert_clean_line, budget, tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autobench.cli import COMMANDS, LazyGroup, _one_line, cli
from autobench.errors import AutobenchError

VALUES = st.one_of(
    TEXT,
    st.sampled_from(["nan", "inf", "-inf", "1e309", "-0", "0", "1" * 400, "0x10", "1_000", " 1", "1 ", ""]),
    st.integers(-(2**80), 2**80).map(str),
    st.floats().map(str),
)


def _commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    found = []
    for name in LazyGroup.list_commands(cli, ctx):  # type: ignore[arg-type]
        cmd = cli.get_command(ctx, name)
        if cmd is None:
            continue
        found.append((name, cmd))
        if isinstance(cmd, click.Group):
            found += [(f"{name} {sub}", cmd.commands[sub]) for sub in cmd.commands]
    return found


COMMAND_LIST = _commands()


def test_every_command_is_fuzzed():
    assert {name for name, _ in COMMAND_LIST} >= set(COMMANDS)


@st.composite
def command_lines(draw):
    name, cmd = draw(st.sampled_from(COMMAND_LIST))
    args: list[str] = []
    params = [p for p in cmd.params if isinstance(p, click.Option)]
    for opt in draw(st.lists(st.sampled_from(params), max_size=4)) if params else []:
        flag = draw(st.sampled_from(opt.opts))
        if opt.is_flag or opt.count:
            args.append(flag)
        else:
            args += [flag] + [draw(VALUES) for _ in range(max(opt.nargs, 1))]
    positional = [p for p in cmd.params if isinstance(p, click.Argument)]
    for _ in positional:
        args.append(draw(VALUES))
    return name, cmd, args


@settings(max_examples=budget(300), deadline=None, suppress_health_check=list(HealthCheck), derandomize=DERANDOMIZE)
@given(command_lines())
def test_any_command_line_parses_or_is_one_clean_usage_line(case):
    name, cmd, args = case
    tried("cli: option parsing")
    try:
        cmd.make_context(name, list(args))
    except click.exceptions.Exit:
        pass
    except click.ClickException as exc:
        assert_clean_line(_one_line(exc.format_message()))
    except AutobenchError as exc:
        assert_clean_line(str(exc))
