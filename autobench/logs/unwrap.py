"""Unwrap one physical log line: strip what carried or pasted it, keep what vLLM wrote.

A vLLM line reaches us inside layers added by whoever moved it, in any order and
any number:

* transports: docker ``--timestamps`` (``2025-10-15T00:06:46.7Z ``), CI stamps
  (``[2025-03-10T15:07:20Z] ``), journald (``Aug 18 14:15:04 host python3[28059]: ``),
  docker compose (``vllm-1  | `` and ``[vllm] | ``), a bare CI column (``  | ``),
  ``kubectl logs --prefix`` (``[pod/vllm-0/vllm] ``), Slurm ``srun --label``
  (``0: ``);
* paste artefacts: Markdown quote markers (``> ``, ``>> ``), emphasis or inline
  code around the whole line (``**...**``, ``*...*``, ``__...__``, `` `...` ``);
* terminal control sequences (colours, OSC titles/links; also with the ESC mangled into U+FFFD,
  spelled ``ESC`` or ``^[``, or lost, by a paste) and invisible characters (zero-width, no-break
  spaces).

:func:`unwrap` strips them one layer at a time until none is left (at most
:data:`MAX_LAYERS`), so ``> **vllm-1  | 2025-...Z ERROR ...**`` comes out as
``ERROR ...``.  The text is never otherwise changed, and the caller keeps the
physical line number: unwrapping works on one line and never joins or splits lines.
"""

from __future__ import annotations

import re

MAX_LAYERS = 8

# Terminal control sequences, each bounded (ECMA-48): CSI ``ESC [ params intermediates final``
# (colours, cursor moves), OSC ``ESC ] text BEL`` or ``... ESC \`` (window titles, hyperlinks),
# and two-byte ``ESC x`` escapes.  A paste may show the ESC as U+FFFD, as the letters "ESC",
# or in caret notation "^[" (``cat -v``, ``less``).
_ANSI = re.compile(
    r"(?:\x1b|\ufffd|ESC|\^\[)\[[0-?]{0,32}[ -/]{0,4}[@-~]"
    r"|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
)
# A colour code whose ESC a paste dropped: " [36m(RayWorkerVllm pid=5085) [0m" (Ray's worker
# prefix colours).  Only SGR ("...m") codes at the start or after a blank count.
_BARE_SGR = re.compile(r"(?:^|(?<=\s))\[(?:\d{1,3};){0,4}\d{1,3}m ?")
# Characters a terminal or a web page adds that a reader cannot see: zero-width space,
# non-joiner and joiner, word joiner, a byte-order mark inside the text, soft hyphen; and
# no-break spaces, read as spaces.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None) | {
    0xA0: " ",
    0x202F: " ",
}
INVISIBLE_CHARS = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u00a0\u202f"

# docker logs --timestamps / kubectl --timestamps: 2025-10-15T00:06:46.700988901Z
# (also with a space for the T, as log collectors print it: 2026-04-21 10:50:43)
_DOCKER_TS = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,12})?(?:Z|[+-]\d\d:?\d\d)? ")
# CI systems: [2025-03-10T15:07:20Z]
_CI_TS = re.compile(r"\[\d{4}-\d\d-\d\dT[\d:.,]{1,40}(?:Z|[+-]\d\d:?\d\d)?\] ?")
# kubectl logs --prefix: [pod/vllm-7d9f-x2/vllm]
_KUBECTL = re.compile(r"\[pod/[^\]\s/]{1,253}/[^\]\s]{1,253}\] ")
# docker compose with a bracketed service: "[vllm] | "
_COMPOSE_BRACKET = re.compile(r"\[[\w.-]{1,128}\]\s{0,64}\| ")
# journald: "Aug 18 14:15:04 host python3[28059]: " (month in any language)
_JOURNALD = re.compile(r"\S{3,5}\.? {1,2}\d{1,2} \d\d:\d\d:\d\d \S{1,255} [\w.@/-]{1,255}\[\d{1,10}\]: ")
# docker compose: "vllm-1  | " (also "vllm-1 | ")
_COMPOSE = re.compile(r"[A-Za-z0-9][\w.-]{0,128}\s{1,64}\| ")
# a bare CI column: "  | "
_COLUMN = re.compile(r"\s{1,64}\| ")
# Slurm srun --label: "0: " / "12: " (task id)
_SLURM = re.compile(r" {0,3}\d{1,4}: (?=\S)")
# vLLM's process prefix, "(EngineCore_DP0 pid=32)", "(VllmWorker rank=0 pid=9)"
_PROC_HEAD = re.compile(
    r"\([A-Za-z_][\w.()-]{0,120}?(?: [A-Za-z_][\w.:-]{0,40}(?:=[\w.:-]{1,64})?){0,4}? pid=\d{1,10}"
    r"(?:, ip=[\w.:-]{0,64})?\)"
)
# Markdown block quotes: "> ", ">> ", "> > "
_QUOTE = re.compile(r"(?:> ?){1,16}")
# Markdown emphasis or inline code around the whole line: "**...**", "__...__", "*...*",
# "_..._", "`...`" (up to three backticks).  String tests, not a regex with a backreference.
_EMPHASIS_MARKS = ("**", "__", "*", "_")


def _emphasis(text: str) -> str | None:
    """The text inside emphasis or inline code that wraps the whole line, or None."""
    end = text.rstrip()
    marks: tuple[str, ...]
    if text.startswith("`"):
        n = len(text) - len(text.lstrip("`"))
        marks = ("`" * n,) if n <= 3 else ()
    else:
        marks = _EMPHASIS_MARKS
    for mark in marks:
        k = len(mark)
        if (
            len(end) > 2 * k
            and text.startswith(mark)
            and end.endswith(mark)
            and not text[k].isspace()
            and not end[-k - 1].isspace()
        ):
            return end[k:-k]
    return None


def strip_ansi(text: str) -> str:
    """``text`` without terminal control sequences (see :data:`_ANSI`, :data:`_BARE_SGR`)."""
    if "\x1b" in text or "\ufffd[" in text or "ESC[" in text or "^[[" in text:
        text = _ANSI.sub("", text)
    if ("[0m" in text or "[3" in text or "[9" in text or "[1;" in text) and _BARE_SGR.search(text) is not None:
        text = _BARE_SGR.sub("", text)
    return text


def strip_controls(text: str) -> str:
    """``text`` without control sequences and invisible characters: what is matched is what a
    reader of the terminal saw."""
    if not text.isascii():
        text = text.translate(_INVISIBLE)
    return strip_ansi(text)


def _layer(text: str) -> str | None:
    """``text`` without its outermost layer, or None when it has none."""
    c = text[:1]
    if c.isdigit():
        m = _DOCKER_TS.match(text) or _SLURM.match(text)
    elif c == "[":
        m = _CI_TS.match(text) or _KUBECTL.match(text) or _COMPOSE_BRACKET.match(text)
    elif c == ">":
        m = _QUOTE.match(text)
    elif c in "*_`":
        return _emphasis(text)
    elif c == " ":
        head = text[:96]
        m = _COLUMN.match(text) if "| " in head else None
        if m is None and ": " in head:
            m = _SLURM.match(text)
        if m is None and head.lstrip()[:1] == "(" and _PROC_HEAD.match(head.lstrip()):
            return text.lstrip()  # a process prefix pasted with a leading space
        if m is None and head.lstrip()[:1] in ("`", "*"):  # an indented Markdown list item
            return _emphasis(text.lstrip())
    elif c.isalpha():
        head = text[:96]
        m = None
        if "]: " in head:
            m = _JOURNALD.match(text)
        if m is None and "| " in head:
            m = _COMPOSE.match(text)
    else:
        return None
    return text[m.end() :] if m else None


def unwrap(text: str) -> str:
    """``text`` (one line, no newline) without its transport prefixes and paste artefacts."""
    c = text[:1]
    if c == "(" or not c:  # a vLLM process prefix: nothing outside it (the common case)
        return text
    for _ in range(MAX_LAYERS):
        inner = _layer(text)
        if inner is None:
            break
        text = inner
        if text[:1] == "(":
            break
    return text
