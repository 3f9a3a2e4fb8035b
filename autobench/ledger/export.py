"""Export the ledger: JSONL (one ``RunRecord.to_json_dict()`` per line, ascending id, with
the run's cells under ``"cells"``: index, params, metrics and the samples bytes in base64,
``samples_format`` naming their encoding) or CSV (one row per run, one column per table
column, JSON columns as their text, each text value through ``escape.csv_cell``: no raw control
character, no formula; cells are in the JSONL only)."""

from __future__ import annotations

import base64
import csv
import json
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TextIO

from autobench.digits import load_json
from autobench.errors import LedgerError
from autobench.escape import csv_cell
from autobench.ledger.models import RUNS, StoredRow
from autobench.ledger.rows import record_from_row
from autobench.redaction import environment_secrets, redact, redact_tree

if TYPE_CHECKING:
    from autobench.ledger.store import Ledger

FORMATS = ("jsonl", "csv")
#: run ids -> their stored cell rows (``Ledger.raw_cells``).
CellsOf = Callable[[list[int]], Mapping[int, list[dict[str, object]]]]
CSV_COLUMNS: tuple[str, ...] = tuple(c.name for c in RUNS.columns)


def _cell_json(cell: Mapping[str, object], secrets: Mapping[str, str] | None) -> dict[str, object]:
    """A cell for the JSONL: its params and metrics redacted, its samples bytes as they are
    (base64 only spells numbers; redacting it could only damage it)."""
    blob, params, metrics = cell["samples"], cell["params"], cell["metrics"]
    if not isinstance(params, str) or not isinstance(metrics, str) or not (blob is None or isinstance(blob, bytes)):
        raise LedgerError(f"cell {cell['cell_index']} is not stored as autobench stores cells (JSON text, bytes)")
    return {
        "index": cell["cell_index"],
        "params": redact_tree(load_json(params), secrets),
        "metrics": redact_tree(load_json(metrics), secrets),
        "samples": base64.b64encode(blob).decode("ascii") if blob is not None else None,
        "samples_format": f"autobench.samples/{blob[0]}" if blob else None,
    }


def write_jsonl(
    rows: Iterable[StoredRow],
    out: TextIO,
    secrets: Mapping[str, str] | None = None,
    cells_of: CellsOf | None = None,
) -> int:
    count = 0
    for row in rows:
        record = redact_tree(record_from_row(row).to_json_dict(), secrets)
        rid = row["id"]
        if cells_of is not None and row["cells_digest"] is not None and isinstance(rid, int):
            record["cells"] = [_cell_json(c, secrets) for c in cells_of([rid]).get(rid, [])]
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def write_csv(rows: Iterable[StoredRow], out: TextIO, secrets: Mapping[str, str] | None = None) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    count = 0
    for row in rows:
        values = []
        for key in CSV_COLUMNS:
            value = row[key]
            if isinstance(value, bool):
                value = "true" if value else "false"
            values.append(
                "" if value is None else csv_cell(redact(value, secrets)) if isinstance(value, str) else value
            )
        writer.writerow(values)
        count += 1
    return count


def write(rows: Iterable[StoredRow], out: TextIO, fmt: str, cells_of: CellsOf | None = None) -> int:
    """Write ``rows`` as ``fmt``; every string redacted (``autobench.redaction``: token shapes, and
    the values of secret-named variables of this environment)."""
    secrets = environment_secrets()
    if fmt == "jsonl":
        return write_jsonl(rows, out, secrets, cells_of)
    if fmt == "csv":
        return write_csv(rows, out, secrets)
    raise LedgerError(f"unknown export format {fmt!r}", hint="use jsonl or csv")


def export_to(ledger: Ledger, output: str | None, fmt: str) -> int:
    """Export ``ledger`` to the file ``output`` (written atomically) or to stdout."""
    import os
    import sys
    import tempfile
    from pathlib import Path

    if fmt not in FORMATS:
        raise LedgerError(f"unknown export format {fmt!r}", hint="use jsonl or csv")
    if output is None or output == "-":
        return ledger.export(sys.stdout, fmt)
    target = Path(output)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent if str(target.parent) else ".")
    except OSError as exc:
        raise LedgerError(f"cannot write export: {exc.strerror}", location=output) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            count = ledger.export(out, fmt)
        os.replace(tmp, target)
    except OSError as exc:
        raise LedgerError(f"cannot write export: {exc.strerror}", location=output) from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    return count
