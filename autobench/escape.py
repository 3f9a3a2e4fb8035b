"""Text made safe for where it is shown: a terminal, a Markdown page.  The one place for both.

A leaf module (standard library only).  Values that reach a person come from recipes, ledgers,
logs and servers, any of which may hold control characters (an ESC sequence recolours or
rewrites the terminal, a CR overwrites the line before it, a bidi override reorders it) or
markup (``<script>``, a link, a table pipe).  Human output and report pages pass them through
here; JSON output does not need to (JSON escapes control characters itself).

    terminal(text, newlines=False) -> str   control characters shown as escapes: ESC -> \\u001b,
                                            CR -> \\r, U+202E -> \\u202e (JSON's own escapes, so
                                            escaped JSON text stays valid JSON); ``newlines`` keeps
                                            line breaks (and tabs) for multi-line output
    one_line(text) -> str                   whitespace runs collapsed to one space, then escaped
    human(text, secrets=None, newlines=False) -> str
                                            redacted (:mod:`autobench.redaction`: token shapes,
                                            secret-named variables, ``secrets``), then escaped:
                                            what every human-facing line goes through
    markdown(text) -> str                   one value inside a Markdown line: control characters
                                            escaped, ``<`` (and an ``&`` that starts an entity) as
                                            an HTML entity, Markdown punctuation backslash-escaped,
                                            whitespace collapsed: it renders as exactly its text
    markdown_block(text) -> str             the same for text that fills whole lines (notes): line
                                            breaks kept, a line that would start a block (list,
                                            heading, quote) escaped

    kubernetes(text) -> str                 a recipe string inside a container's ``command``,
                                            ``args`` or env ``value``: every ``$`` doubled, so the
                                            kubelet's ``$(NAME)`` expansion gives back exactly the
                                            text and never a variable (a Secret's value)
    csv_cell(text) -> str                   one CSV value: control characters escaped as for a
                                            terminal, and a text a spreadsheet would run as a
                                            formula (``=``, ``+``, ``-``, ``@`` first) prefixed
                                            with ``'`` unless it is a number
    xml(text) -> str                        one value in XML (an SVG's text or a quoted attribute):
                                            control characters escaped as for a terminal (XML 1.0
                                            cannot hold most of them even as references), then
                                            ``& < > " '`` as character references

Shell words have their own single rule in :mod:`autobench.compile.quoting` (``shell_word``).

Control characters are Unicode category Cc (C0, DEL, C1), the line/paragraph separators
U+2028/U+2029 and the bidirectional formatting characters (U+061C, U+200E-U+200F,
U+202A-U+202E, U+2066-U+2069).  Backslashes are not doubled: output is for reading, and a
path or a hint keeps its own backslashes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_CONTROL_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}

# Markdown (CommonMark + GFM): what can start markup inside a line.  `<` becomes an entity (no
# HTML, no autolink), `&` too when it would start an entity reference; `* \ ` [ ] | ~` are
# backslash-escaped; `_` only where it could open or close emphasis (not between two letters or
# digits, where CommonMark never reads it as markup).  An entity renders as the character.
_MD_LT = re.compile(r"<|&(?=#?\w+;)")
_MD_PUNCT = re.compile(r"([\\`*\[\]|~])")
_MD_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# What makes a line a block (list, numbered list, heading, quote, setext underline, fence).
_MD_BLOCK_START = re.compile(r"^(\s*)([-+=#>]|\d+(?=[.)]))")


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\u{ord(ch):04x}"


def terminal(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (see the module docstring)."""
    text = str(text)
    rx = _CONTROL_KEEP_LINES if newlines else _CONTROL
    return rx.sub(_escape_char, text) if rx.search(text) else text


def one_line(text: str) -> str:
    """Whitespace runs (spaces, tabs, line breaks) collapsed to one space, then escaped."""
    return terminal(" ".join(str(text).split()))


def human(text: str, secrets: Mapping[str, str] | None = None, *, newlines: bool = False) -> str:
    """What a person may be shown: secrets redacted (token shapes, secret-named variables of the
    environment, ``secrets``), then control characters escaped."""
    from autobench.redaction import environment_secrets, redact

    known = environment_secrets()
    if secrets:
        known.update(secrets)
    return terminal(redact(str(text), known), newlines=newlines)


def _markdown_inline(text: str) -> str:
    text = _MD_LT.sub(lambda m: "&lt;" if m.group(0) == "<" else "&amp;", text)
    text = _MD_PUNCT.sub(r"\\\1", text)
    return _MD_UNDERSCORE.sub(r"\\_", text)


def _markdown_line(line: str) -> str:
    """A whole line: inline escapes, and a block-starting character at its start escaped."""
    line = _markdown_inline(line)
    m = _MD_BLOCK_START.match(line)
    if m is None:
        return line
    lead, what = m.group(1), m.group(2)
    if what == ">":
        return lead + "&gt;" + line[m.end() :]
    if what[0].isdigit():  # "1." -> "1\."
        return lead + what + "\\" + line[m.end() :]
    return lead + "\\" + what + line[m.end() :]


def markdown(text: str) -> str:
    """One value as inline Markdown (inside a line) that renders as exactly its text."""
    return _markdown_inline(one_line(text))


def markdown_block(text: str) -> str:
    """A multi-line value (notes) as Markdown text: each line escaped like :func:`markdown`,
    line breaks kept (blank lines separate paragraphs)."""
    lines = terminal(str(text), newlines=True).replace("\t", " ").splitlines()
    return "\n".join(_markdown_line(" ".join(line.split())) for line in lines)


def kubernetes(text: str) -> str:
    """``text`` as a literal for a Kubernetes container's ``command``, ``args`` or env ``value``.

    The kubelet expands ``$(NAME)`` there from the container's environment, Secrets included,
    and reads ``$$`` as one ``$`` (Kubernetes ``third_party/forked/golang/expansion/expand.go``,
    ``tryReadVariableName``: ``$$`` -> ``$``; ``$(`` ... ``)`` -> the variable; ``$`` before
    anything else stays).  Doubling every ``$`` therefore gives back exactly ``text``:
    ``$(HF_TOKEN)`` -> ``$$(HF_TOKEN)`` -> the literal ``$(HF_TOKEN)``."""
    return str(text).replace("$", "$$")


_CSV_FORMULA = re.compile(r"[=+\-@]")
_CSV_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(text: str) -> str:
    """One CSV value: control characters shown as escapes (:func:`terminal`: ESC never reaches
    a terminal that ``cat``s the file), and a text a spreadsheet would evaluate (starting with
    ``=``, ``+``, ``-`` or ``@``, OWASP's CSV injection list) prefixed with ``'``, unless it is a
    plain number such as ``-1.5``."""
    text = terminal(str(text))
    if _CSV_FORMULA.match(text) and not _CSV_NUMBER.fullmatch(text):
        return "'" + text
    return text


def xml(text: str) -> str:
    """One value in XML text or a quoted attribute (an SVG plot's label, title or link): control
    characters shown as escapes (:func:`terminal`), then ``&``, ``<``, ``>``, ``"`` and ``'`` as
    character references, so it reads as exactly its text and never as markup."""
    text = terminal(str(text))
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


__all__ = ["csv_cell", "human", "kubernetes", "markdown", "markdown_block", "one_line", "terminal", "xml"]
