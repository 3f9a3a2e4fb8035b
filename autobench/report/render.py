"""Render report views to Markdown with jinja2 (templates/report_*.md.j2).

The environment is strict (an undefined name is an error, not an empty string) and
carries the filters every figure goes through:

* ``num``   -- a number (or a :class:`Fig`) as text; ``None`` prints "—", never 0.
* ``pct``   -- a fraction as a percentage (0.44 -> "44%").
* ``ref``   -- the run a figure came from, as a link to its history row: ``[run 3](#run-3)``.
* ``cell``  -- text made safe for one Markdown table cell.
* ``code``  -- text as inline code, whatever backticks it contains.
* ``block`` -- multi-line text (run notes) as Markdown paragraphs.

**Every value is escaped.**  Ledger values (recipe names, notes, root causes, statuses) are
written by others: the environment's ``finalize`` passes every ``{{ }}`` through
:func:`autobench.escape.markdown`, so ``<script>`` renders as text and ``[x](y)`` as brackets,
unless the value is :class:`~markupsafe.Markup` -- what the filters above return after escaping
their own input.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from autobench.errors import ReportError
from autobench.escape import markdown, markdown_block, terminal
from autobench.metric_catalogue import format_value
from autobench.report.model import Fig, IndexView, RecipeView
from autobench.templates_dir import templates_dir as _templates_dir

if TYPE_CHECKING:
    import jinja2

MISSING = "—"
#: Significant figures of a float figure (the metric catalogue's default, ``Metric.sig``).
SIG = 5
RECIPE_TEMPLATE = "report_recipe.md.j2"
INDEX_TEMPLATE = "report_index.md.j2"


def templates_dir() -> Path:
    return _templates_dir(RECIPE_TEMPLATE, ReportError)


def _value(x: Any) -> Any:
    return x.value if isinstance(x, Fig) else x


def num(x: Any, digits: int = 2) -> str:
    """Format a figure: thousands separators, at most ``digits`` decimals, no trailing zeros."""
    return Markup(_num(x, digits) if not isinstance(_value(x), str) else markdown(_value(x)))


def _num(x: Any, digits: int = 2) -> str:
    x = _value(x)
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x and abs(x) < 10**-digits:  # tiny but not zero: never print it as 0
            return f"{x:.2g}"
        # one number format for every figure: the metric catalogue's significant figures
        return format_value(x, SIG)
    return str(x)


def _fixed(x: float, digits: int) -> str:
    """``x`` to at most ``digits`` decimals, no trailing zeros (percentages)."""
    text = f"{x:,.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def plain(x: Any) -> str:
    """A parameter as written (``input_len=1024``, never ``1,024``)."""
    x = _value(x)
    if x is None:
        return Markup(MISSING)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    return Markup(markdown(str(x)))


def pct(x: Any, digits: int = 1) -> str:
    x = _value(x)
    if x is None:
        return Markup(MISSING)
    return Markup(_fixed(float(x) * 100.0, digits) + "%")


def ratio(x: Any) -> str:
    x = _value(x)
    return Markup(MISSING if x is None else f"{x:.2f}×")


def run_label(run_id: Any) -> str:
    text = str(run_id)
    return Markup(markdown(text[:8] if len(text) > 12 else text))


def anchor(run_id: Any) -> str:
    return Markup(f"run-{run_label(run_id)}")


def ref(x: Any, page: str = "") -> str:
    """``[run 3](#run-3)`` for a Fig or a run id; "" when the figure has no run.

    ``page`` prefixes the link (the index links into ``recipes/<name>.md#run-3``).
    """
    run_id = x.run_id if isinstance(x, Fig) else x
    if run_id is None:
        return Markup("")
    return Markup(f"[run {run_label(run_id)}]({markdown(page)}#{anchor(run_id)})")


def cell(x: Any) -> str:
    if x is None:
        return Markup(MISSING)
    if isinstance(x, Markup):  # already Markdown (a figure with its unit): only the pipes
        return Markup(" ".join(x.split()).replace("|", "\\|") or MISSING)
    text = markdown(str(x))
    return Markup(text or MISSING)


def code(x: Any) -> str:
    if x is None:
        return Markup(MISSING)
    text = terminal(" ".join(str(x).split()))  # a code span shows its text literally: no markup
    if not text:
        return Markup(MISSING)
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def block(x: Any) -> str:
    return Markup(markdown_block(str(x))) if x else Markup("")


def _finalize(value: Any) -> Any:
    """Every ``{{ }}`` value: Markup (filter output) as is, anything else escaped as text."""
    if isinstance(value, Markup):
        return value
    return markdown(str(value))


def day(x: Any) -> str:
    if isinstance(x, datetime):
        return Markup(x.date().isoformat())
    if isinstance(x, date):
        return Markup(x.isoformat())
    return Markup(MISSING if x is None else markdown(str(x)))


def moment(x: Any) -> str:
    """A timestamp to the minute, as stored (the ledger keeps UTC)."""
    if isinstance(x, datetime):
        suffix = " UTC" if x.utcoffset() is not None and not x.utcoffset() else ""
        return Markup(x.strftime("%Y-%m-%d %H:%M") + suffix)
    return day(x)


def unit(x: Any, name: str = "", digits: int = 2) -> str:
    """A figure with its unit: "63.71 GiB", "3.05×"; just "—" when missing."""
    text = num(x, digits)
    if text == MISSING or not name:
        return text
    return Markup(f"{text}{name}" if name == "×" else f"{text} {markdown(name)}")


def cells(x: Any) -> str:
    """A grid point's cells (1-based, in run order): "cell 3", "cells 1, 4"."""
    numbers = [str(int(i)) for i in (x or ())]
    if not numbers:
        return Markup(MISSING)
    return Markup(("cell " if len(numbers) == 1 else "cells ") + ", ".join(numbers))


def short_sha(x: Any) -> str:
    return Markup(MISSING if not x else markdown(str(x)[:7]))


@cache
def environment(directory: str | None = None) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory or str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # Markdown, not HTML: `finalize` escapes every value for Markdown
        finalize=_finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        num=num,
        plain=plain,
        unit=unit,
        pct=pct,
        ratio=ratio,
        ref=ref,
        cell=cell,
        code=code,
        block=block,
        day=day,
        moment=moment,
        short_sha=short_sha,
        run_label=run_label,
        anchor=anchor,
        cells=cells,
    )
    return env


def _render(template: str, **context: Any) -> str:
    import jinja2

    try:
        text = environment(str(templates_dir())).get_template(template).render(**context)
    except jinja2.TemplateNotFound as exc:
        raise ReportError(f"template not found: {exc.name}", location=str(templates_dir())) from exc
    except jinja2.TemplateSyntaxError as exc:
        raise ReportError(
            f"template syntax error: {exc.message}", location=f"{exc.filename or template}:{exc.lineno}"
        ) from exc
    except jinja2.UndefinedError as exc:
        raise ReportError(f"template uses an undefined value: {exc.message}", location=template) from exc
    # One trailing newline, no trailing spaces: stable bytes for the staleness check.
    lines = [line.rstrip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:  # collapse runs of blank lines left by conditional blocks
        if line.startswith("#") and out and out[-1]:
            out.append("")  # a heading always starts a block
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def render_template(template: str, **context: Any) -> str:
    """Any page template of the report's set (``templates/``) with the report's environment: its
    filters, every value escaped for Markdown, stable bytes (an experiment's page uses it)."""
    return _render(template, MISSING=MISSING, **context)


def render_recipe(view: RecipeView) -> str:
    from autobench.report.cells import CELL_COLUMNS

    return _render(RECIPE_TEMPLATE, v=view, MISSING=MISSING, columns=CELL_COLUMNS)


def render_index(view: IndexView, pages: str = "recipes") -> str:
    return _render(INDEX_TEMPLATE, v=view, pages=pages, MISSING=MISSING)
