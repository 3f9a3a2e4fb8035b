"""The ONE shell-quoting path.  Every recipe value that reaches a compiled script goes through
:func:`shell_word` (arguments) or :func:`comment_text` (header comments).

A :class:`Word` is one argv element.  ``home=True`` marks a path written as ``~/rest``: in the
script it becomes ``"${HOME}"`` followed by the quoted rest (the only expansion a script ever
performs on a recipe value); as a Python argv it is joined onto the given home directory.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


@dataclass(frozen=True)
class Word:
    value: str
    home: bool = False  # value is relative to $HOME ("~/" stripped)

    def argv(self, home: str) -> str:
        if not self.home:
            return self.value
        return home.rstrip("/") + "/" + self.value if self.value else home


def path_word(value: str) -> Word:
    """A path that may start with ``~/`` (or be ``~``): expanded against $HOME at run time."""
    if value == "~":
        return Word("", home=True)
    if value.startswith("~/"):
        return Word(value[2:], home=True)
    return Word(value)


def shell_word(word: Word | str) -> str:
    """One argv element as a bash word that expands to exactly that string."""
    if isinstance(word, str):
        word = Word(word)
    if "\x00" in word.value:
        raise ValueError("a shell argument cannot contain a NUL character")
    if word.home:
        return '"${HOME}"' + (shlex.quote("/" + word.value) if word.value else "")
    return shlex.quote(word.value)


def comment_text(value: object) -> str:
    """A value for a ``#`` comment line: plain if harmless, else JSON-escaped (one ASCII line)."""
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=True)


def command_text(lines: list[list[Word]], indent: str = "  ") -> str:
    """Render a command (a list of lines, each a list of words) with backslash continuations."""
    rendered = [" ".join(shell_word(w) for w in line) for line in lines if line]
    return (" \\\n" + indent).join(rendered)
