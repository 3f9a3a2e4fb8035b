"""One ``--ledger`` and one ``--json`` across the CLI; exit codes come back through click."""

from __future__ import annotations

import ast
import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import click

from autobench.cli import COMMANDS, main
from autobench.cli.options import JSON_HELP, LEDGER_HELP

CLI_DIR = Path(__file__).resolve().parent.parent / "autobench" / "cli"


def _commands() -> Iterator[tuple[str, click.Command]]:
    for name, (target, _summary) in COMMANDS.items():
        module, attr = target.split(":")
        command = getattr(importlib.import_module(module), attr)
        stack = [(name, command)]
        while stack:
            path, cmd = stack.pop()
            yield path, cmd
            if isinstance(cmd, click.Group):
                stack += [(f"{path} {sub}", c) for sub, c in cmd.commands.items()]


def _option(cmd: click.Command, flag: str) -> click.Option | None:
    return next((p for p in cmd.params if isinstance(p, click.Option) and flag in p.opts), None)


def test_every_ledger_option_is_the_shared_one() -> None:
    seen = []
    for path, cmd in _commands():
        opt = _option(cmd, "--ledger")
        if opt is None:
            continue
        seen.append(path)
        assert (opt.name, opt.envvar, opt.help, opt.metavar) == (
            "ledger_url",
            "AUTOBENCH_LEDGER",
            LEDGER_HELP,
            "PATH|URL",
        ), path
    assert {"run", "record", "report", "ledger list", "history", "compare"} <= set(seen)


def test_every_json_option_is_the_shared_flag() -> None:
    seen = []
    for path, cmd in _commands():
        opt = _option(cmd, "--json")
        if opt is None:
            continue
        seen.append(path)
        assert opt.name == "as_json" and opt.is_flag and opt.help, path
    assert len(seen) >= 10 and JSON_HELP


def test_no_command_raises_system_exit() -> None:
    """Exit codes travel through click (ctx.exit / AutobenchError), never SystemExit."""
    for source in CLI_DIR.glob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                assert not (isinstance(called, ast.Name) and called.id == "SystemExit"), f"{source}:{node.lineno}"


def test_ledger_envvar_reaches_every_ledger_command(tmp_path, monkeypatch, capsys) -> None:
    db = tmp_path / "from-env.db"
    monkeypatch.setenv("AUTOBENCH_LEDGER", str(db))
    repo = Path(__file__).resolve().parent.parent
    recipe = repo / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
    assert main(["record", str(recipe), "--status", "DONE"]) == 0
    assert db.exists()
    capsys.readouterr()
    assert main(["ledger", "list", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert (
        main(
            [
                "report",
                "--no-plots",
                "--json",
                "-o",
                str(tmp_path / "docs"),
                "--recipes",
                str(repo / "recipes"),
                "--index",
            ]
        )
        == 0
    )


def test_plain_table_pads_columns(capsys) -> None:
    """Not a terminal (captured): plain columns, the title first."""
    from autobench.cli.options import print_table

    print_table(["a", "long head"], [["xyz", "1"], ["q", "22"]], title="t")
    assert capsys.readouterr().out == "t\na    long head\nxyz  1\nq    22\n"


def test_json_and_ledger_are_declared_only_in_options() -> None:
    import re

    declared = re.compile(r'option\(\s*"--(json|ledger)"')
    for source in CLI_DIR.glob("*.py"):
        if source.name != "options.py":
            assert not declared.search(source.read_text(encoding="utf-8")), source
