"""The command line as documented: docs/cli.md is what tools/cli_reference.py writes from the
click tree, every command shows one summary (its group's listing == its own --help), and every
`autobench ...` command line quoted in README.md and docs/*.md still parses (run in-process with
--help appended, so a removed command or flag fails here)."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from autobench.cli import COMMANDS, cli, main
from autobench.cli.options import summary

REPO = Path(__file__).resolve().parent.parent
WIDE = 1000  # no wrapping: a summary is one line of the help


def _reference_module():
    spec = importlib.util.spec_from_file_location("cli_reference", REPO / "tools" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_cli_md_is_generated_from_the_command_tree():
    ref = _reference_module()
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == ref.render(), (
        "docs/cli.md is stale: run python tools/cli_reference.py"
    )


def test_the_reference_does_not_depend_on_which_command_ran_first():
    """click caches a command's help option on first use; a command invoked on its own (as
    tests do) cached `--help` alone and the page came out stale in the full suite only."""
    from autobench.cli.matrix_cmds import variants

    assert CliRunner().invoke(variants, ["--help"]).exit_code == 0  # caches `--help` without `-h`
    ref = _reference_module()
    assert "-h, --help" in ref.help_text("autobench variants")
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == ref.render()


def test_the_reference_names_every_command_and_every_option():
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for path, command, _ in _reference_module().commands():
        assert f"\n## {path}\n" in page, path
        for param in command.params:
            for opt in param.opts if isinstance(param, click.Option) else ():
                assert opt in page, (path, opt)


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], terminal_width=WIDE, prog_name="autobench")
    assert result.exit_code == 0, result.output
    return result.output


def _listing(help_text: str) -> dict[str, str]:
    """The ``Commands:`` section of a group's help: name -> summary."""
    section = help_text.split("\nCommands:\n", 1)[1]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("  "):
            break
        name, text = line.strip().split(None, 1)
        rows[name] = text.strip()
    return rows


def _own_summary(help_text: str) -> str:
    """The paragraph after the ``Usage:`` line of a command's own help."""
    paragraphs = help_text.split("\n\n")
    assert paragraphs[0].startswith("Usage: autobench"), help_text
    return " ".join(paragraphs[1].split())


def _groups() -> list[list[str]]:
    groups = [[]]
    for name in COMMANDS:
        if isinstance(cli.get_command(click.Context(cli), name), click.Group):
            groups.append([name])
    return groups


@pytest.mark.parametrize("group", _groups(), ids=lambda g: " ".join(["autobench", *g]))
def test_each_command_has_one_summary_in_its_groups_listing_and_its_own_help(group):
    listing = _listing(_help(group))
    assert listing, group
    for name, shown in listing.items():
        assert _own_summary(_help([*group, name])) == shown, (group, name)


def test_the_lazy_table_holds_each_commands_own_summary():
    """`autobench --help` reads the summaries from COMMANDS (no imports); they are the commands'."""
    for name, (target, text) in COMMANDS.items():
        module, attr = target.split(":")
        command = getattr(importlib.import_module(module), attr)
        assert summary(command) == text, name
        assert "\n" not in text and text.endswith("."), name


# ----------------------------------------------------------- command lines in the docs
def _doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if p.name != "cli.md")]


PREFIX = re.compile(r"^(?:\$ )?(?:[A-Z_][A-Z0-9_]*=\S* )*(?:\.venv/bin/|(?:\.venv/bin/)?python3? -m )?autobench(?= |$)")


def _candidates(text: str) -> list[str]:
    """Command lines in fenced blocks (continuations joined) and in inline code."""
    found = []
    for block in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        body = re.sub(r"\\\n\s*", " ", block.group(1))
        for line in body.splitlines():
            found += re.split(r"\s(?:&&|;)\s", line.strip())
    for span in re.finditer(r"(?<!`)`([^`\n]+)`(?!`)", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)):
        found.append(span.group(1).strip())
    return [PREFIX.sub("autobench", c.strip()) for c in found if PREFIX.match(c.strip())]


def _words(line: str) -> list[str]:
    line = re.sub(r"\$\([^)]*\)", "X", line)  # $(uuidgen | tr -d -)
    words = shlex.split(line, comments=True)
    for stop in (">", "|&", "2>"):  # a redirection ends the command
        if stop in words:
            words = words[: words.index(stop)]
    out = []
    for word in words:
        word = word.replace("[", "").replace("]", "")
        if word and word not in ("...", "…"):
            out.append(word)
    return out


def _resolve(words: list[str]) -> tuple[click.Command, int]:
    """The command the words name (and how many words its path takes, autobench included)."""
    command: click.Command = cli
    n = 1
    while isinstance(command, click.Group) and n < len(words):
        sub = command.get_command(click.Context(command), words[n])
        if sub is None:
            break
        command, n = sub, n + 1
    return command, n


def _alternatives(words: list[str]) -> list[list[str]]:
    """A synopsis with ` | ` between alternatives (`ledger list | show ID`, `--draft REPO |
    --model REPO`): one command line per alternative, each with the command path it belongs to."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            parts.append([])
        else:
            parts[-1].append(word)
    first = parts[0]
    _, n = _resolve(first)
    lines = [first]
    for part in parts[1:]:
        prefix = first[:n] if part and part[0].startswith("-") else first[: max(n - 1, 1)]
        lines.append(prefix + part)
    return lines


def _value_taking(command: click.Command, word: str) -> bool:
    name = word.split("=", 1)[0]
    for param in command.params:
        if isinstance(param, click.Option) and name in param.opts and "=" not in word:
            return not param.is_flag and not param.count
    return False


def _doc_command_lines() -> list[tuple[str, list[str]]]:
    seen: dict[tuple[str, ...], str] = {}
    for path in _doc_files():
        for line in _candidates(path.read_text(encoding="utf-8")):
            for words in _alternatives(_words(line)):
                seen.setdefault(tuple(words), f"{path.relative_to(REPO)}: {line}")
    return [(where, list(words)) for words, where in seen.items()]


DOC_LINES = _doc_command_lines()


def test_the_docs_quote_many_command_lines():
    """The extraction itself works: the README's tour alone quotes dozens."""
    assert len(DOC_LINES) > 80
    assert any(words[:2] == ["autobench", "compile"] for _, words in DOC_LINES)


@pytest.mark.parametrize(("where", "words"), DOC_LINES, ids=[" ".join(w)[:80] for _, w in DOC_LINES])
def test_every_documented_command_line_parses(where, words, capsys):
    command, _ = _resolve(words)
    args = words[1:]
    if args and _value_taking(command, args[-1]):
        args.append("VALUE")  # `--api-key-env` quoted alone: give it its value, not --help
    code = main([*args, "--help"])
    out, err = capsys.readouterr()
    assert code == 0, f"{where}\n{err}"
    if "--version" not in args:
        assert out.startswith("Usage: autobench"), f"{where}\n{out}"


@pytest.mark.parametrize(
    "line",
    [
        "autobench compile RECIPE --no-such-flag",
        "autobench ledger lsit",
        "autobench history --draft REPO | --modle REPO",
    ],
)
def test_a_removed_command_or_flag_would_fail(line, capsys):
    """The check above can fail: a misspelt command or flag does not parse."""
    for words in _alternatives(_words(line)):
        code = main([*words[1:], "--help"])
        capsys.readouterr()
        if code != 0:
            return
    pytest.fail(f"{line} parsed")
