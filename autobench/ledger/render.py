"""Ledger results as rows of text cells (the CLI prints them as rich or plain tables)."""

from __future__ import annotations

from autobench.ledger.cells import sweep_summary
from autobench.ledger.models import BOOT_KEYS, CORE_KEYS, METRIC_KEYS, CellRecord, RunRecord
from autobench.ledger.queries import Comparison, History
from autobench.ledger.verdict import Verdicts, cell_label
from autobench.metric_catalogue import flags_text

Table = tuple[list[str], list[list[str]]]


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "/".join(cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell(v)}" for k, v in sorted(value.items()))
    return str(value)


def short(text: str | None, width: int = 60) -> str:
    if not text:
        return "-"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def runs_table(records: list[RunRecord]) -> Table:
    head = ["run", "started", "recipe", "status", "draft sha", "decode tok/s", "conc", "root cause"]
    rows = [
        [
            r.display_id,
            cell(r.started_at),
            r.recipe_name,
            r.status,
            (r.draft_sha or "-")[:12] if r.draft_repo else "",
            cell(r.metrics.get("decode_tok_s")),
            cell(r.metrics.get("concurrency")),
            short(r.root_cause, 50),
        ]
        for r in records
    ]
    return head, rows


def run_lines(r: RunRecord, *, full: bool = False) -> list[str]:
    lines = [f"run {r.display_id}"]
    for key in CORE_KEYS:
        value = getattr(r, key)
        if key in ("recipe_snapshot", "script_snapshot") and value is not None and not full:
            size = len(value.splitlines()) if isinstance(value, str) else len(value)
            kind = "lines" if isinstance(value, str) else "keys"
            lines.append(f"  {key}: ({size} {kind}; --full or --json shows it)")
            continue
        if value is None:
            continue
        if key == "recipe_snapshot":
            import json

            value = json.dumps(value, indent=2, sort_keys=True)
        if isinstance(value, str) and "\n" in value:
            lines.append(f"  {key}:")
            lines.extend(f"    {line}" for line in value.splitlines())
        else:
            lines.append(f"  {key}: {cell(value)}")
    for title, keys, values in (("metrics", METRIC_KEYS, r.metrics), ("boot", BOOT_KEYS, r.boot)):
        known = [(k, values.get(k)) for k in keys if values.get(k) is not None and k != "flags"]
        lines.append(f"  {title}:" + ("" if known else " (none recorded)"))
        lines.extend(f"    {k}: {cell(v)}" for k, v in known)
    lines.extend(flag_lines(r.metrics.get("flags"), "  "))
    lines.append(f"  prev_hash: {r.prev_hash}")
    lines.append(f"  row_hash: {r.row_hash}")
    return lines


#: The figures ``ledger show`` gives each cell of a grid run (the rest: ``--json``).
CELL_FIGURES: tuple[tuple[str, str], ...] = (
    ("total_tok_s", "tok/s"),
    ("ttft_median_ms", "TTFT median ms"),
    ("tpot_median_ms", "TPOT median ms"),
    ("completed", "completed"),
    ("errors", "errors"),
)


def flag_lines(flags: object, indent: str = "") -> list[str]:
    """A result's quality flags, one line each with why and what it means for the figures
    (``autobench.metric_catalogue.FLAGS``); [] when none was raised."""
    if not isinstance(flags, dict) or not flags:
        return []
    out = [f"{indent}flags: the figures above are not to be taken at face value"]
    out += [f"{indent}  {flags_text({name: why}, meaning=True)}" for name, why in flags.items()]
    return out


def cell_lines(cells: list[CellRecord]) -> list[str]:
    """The cells of a grid run, one line each in run order: its parameters, then its figures."""
    if not cells:
        return []
    sweep = sweep_summary(cells)
    if sweep is None:
        lines = [f"  cells: {len(cells)}"]
    else:  # the row's figures are the headline cell's (docs/ledger.md); the totals cover every cell
        lines = [
            f"  cells: {len(cells)}; the metrics above are the {sweep.headline_text()}",
            f"  {sweep.totals_text()}",
        ]
    for c in cells:
        params = " ".join(f"{k}={cell(v)}" for k, v in c.params.items()) or "one cell"
        figures = ", ".join(
            f"{label} {cell(c.metrics[k])}" for k, label in CELL_FIGURES if c.metrics.get(k) is not None
        )
        flagged = flags_text(c.metrics.get("flags"))
        tail = f"; FLAGS: {flagged}" if flagged else ""
        lines.append(f"    {c.index + 1}. {params}: {figures or '(no metrics recorded)'}{tail}")
    return lines


def history_table(h: History, *, short_keys: bool = False) -> Table:
    head = [h.group_label, "runs", "DONE", "BLOCKED", "FAILED", "ABORTED", "first seen", "last seen", "best decode"]
    rows = []
    for g in h.groups:
        rows.append(
            [
                (g.key[:12] if short_keys and len(g.key) == 40 else g.key) if g.key else "(unknown)",
                str(g.runs),
                *(str(g.by_status[s]) for s in ("DONE", "BLOCKED", "FAILED", "ABORTED")),
                cell(g.first_seen),
                cell(g.last_seen),
                cell(g.best_decode_tok_s),
            ]
        )
    return head, rows


def history_causes(h: History) -> list[str]:
    """One line per (revision, root cause): ``<revision>: <category>: <message> [(xN, last #id)]``."""
    lines = []
    for g in h.groups:
        for rc in g.root_causes:
            count = f" (x{rc.runs}, last #{rc.last_run})" if rc.runs > 1 else f" (#{rc.last_run})"
            lines.append(f"{g.key or '(unknown)'}: {rc}{count}")
    return lines


#: The widest value cell of ``compare``: a 40-hex sha fits; longer names are cut in the middle
#: (``compare --json`` and ``ledger show`` keep them whole), so two runs fit in ~150 columns.
COMPARE_CELL_WIDTH = 56


def compare_cell(value: object) -> str:
    """One value of ``compare``: numbers in one format (thousands separators; two decimals for a
    non-integral float), text cut in the middle past :data:`COMPARE_CELL_WIDTH`."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, list):
        return "/".join(compare_cell(v) for v in value)
    return middle_cut(cell(value), COMPARE_CELL_WIDTH)


def middle_cut(text: str, width: int) -> str:
    """``text`` at most ``width`` characters: its head and tail kept, the middle replaced by '…'."""
    if len(text) <= width:
        return text
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def compare_table(c: Comparison) -> Table:
    head = ["", f"A {c.a.display_id}", f"B {c.b.display_id}", "B/A"]
    rows = [
        [row.key, compare_cell(row.a), compare_cell(row.b), "" if row.ratio is None else f"{row.ratio:.2f}x"]
        for row in c.rows
    ]
    return head, rows


# ---------------------------------------------------------------- verdicts


def band_text(band: tuple[float, float] | None) -> str:
    """A ratio band as ``0.891..0.939``; ``-`` without one."""
    return "-" if band is None else f"{band[0]:.3f}..{band[1]:.3f}"


def verdict_table(v: Verdicts, a_name: str, b_name: str, *, regress: bool = False) -> Table:
    """``compare``'s verdicts (cell, metric, A, B, B/A, band, verdict) or, with ``regress``,
    ``regress``'s (change instead of B/A, and REGRESSED / ok).  The cell column is left out
    when the runs are one cell each (runs recorded without cells)."""
    with_cell = any(c.params for c in v.cells)
    head = ["cell"] if with_cell else []
    head += ["metric", a_name, b_name, "change" if regress else "B/A", "band (B/A)", "verdict"]
    if regress:
        head.append("")
    rows = []
    for c, m in v.rows():
        row = [c.label] if with_cell else []
        row += [m.metric, compare_cell(m.a), compare_cell(m.b)]
        row.append(f"{m.change:+.1%}" if regress else f"{m.ratio:.3f}x")
        # regress without a band judges by the threshold alone: the verdict says "no band", never
        # "inconclusive" beside REGRESSED
        row += [band_text(m.band), m.label("no band" if regress and m.method == "none" else None)]
        if regress:
            flag = "REGRESSED" if m.regressed(v.threshold) else "ok"
            row.append(f"{flag} (threshold alone)" if m.method == "none" and flag != "ok" else flag)
        rows.append(row)
    return head, rows


def verdict_notes(v: Verdicts, *, regress: bool = False) -> list[str]:
    """What a reader of the verdicts must know: the method, the metrics without a band,
    cells only one run has, the client-bound cells."""
    methods = {m.method for _, m in v.rows()}
    notes = []
    how = []
    if "repeats" in methods:
        how.append("from repeats: a t interval")
    if "requests" in methods:
        how.append(f"from requests: a bootstrap ({v.resamples} resamples, seed {v.seed})")
    if how:
        notes.append(
            f"verdicts: threshold {v.threshold * 100:g}%; bands at {v.level * 100:g}% over each cell's metrics, "
            + "; ".join(how)
            + " (docs/verdicts.md)"
        )
    if "few" in methods:
        notes.append(
            "band '-' with samples: not enough data for that metric's band (a p99 from requests needs 1,000 "
            "requests), so the verdict is inconclusive" + ("; regress does not count it" if regress else "")
        )
    if "none" in methods:
        notes.append(
            "band '-' without samples: a single repeat recorded without per-request samples has no noise band, "
            "so the verdict is inconclusive"
            + ("; regress judges those metrics by the threshold alone" if regress else "")
        )
    for side, cells in (("A", v.only_a), ("B", v.only_b)):
        for params in cells:
            notes.append(f"cell {cell_label(params)} is only in {side}: not compared")
    for c in v.cells:
        for side, flags in zip("AB", c.flags, strict=True):
            shown = {k: w for k, w in flags.items() if k != "client_bound"}
            if shown:
                notes.append(f"cell {c.label}: {side}'s figures are flagged: {flags_text(shown)}")
        if any(c.client_bound):
            who = " and ".join(s for s, bound in zip("AB", c.client_bound, strict=True) if bound)
            notes.append(
                f"cell {c.label}: the bench client was the bottleneck in {who} (client_bound): "
                "its verdicts measure the client as much as the server"
            )
    return notes
