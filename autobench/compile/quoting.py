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


# Characters a terminal acts on (ESC sequences, CR, bidi overrides...): a word holding one is
# written in bash's ANSI-C quoting ($'...') with the character's UTF-8 bytes as \xHH escapes,
# so a script shown on a terminal (`compile`, `run --dry-run`) cannot rewrite the screen, and
# bash still expands it to exactly the same bytes.  Line breaks and tabs stay literal (they are
# harmless, and multi-line setup scripts stay readable).
_TERMINAL_CONTROL = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _ansi_c(value: str) -> str:
    out = []
    for ch in value:
        if ch == "\\" or ch == "'":
            out.append("\\" + ch)
        elif _TERMINAL_CONTROL.match(ch) or ch in "\n\t":
            out.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _quote(value: str) -> str:
    return _ansi_c(value) if _TERMINAL_CONTROL.search(value) else shlex.quote(value)


def shell_word(word: Word | str) -> str:
    """One argv element as a bash word that expands to exactly that string."""
    if isinstance(word, str):
        word = Word(word)
    if "\x00" in word.value:
        raise ValueError("a shell argument cannot contain a NUL character")
    if word.home:
        return '"${HOME}"' + (_quote("/" + word.value) if word.value else "")
    return _quote(word.value)


def shell_join(argv: list[str] | tuple[str, ...]) -> str:
    """An argv as one line of bash words (for people: safe to show on a terminal, exact to paste)."""
    return " ".join(shell_word(a) for a in argv)


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
