"""What a run stored of itself, given back as it was: the compiled script (``replay``)."""

from __future__ import annotations

from autobench.errors import LedgerError
from autobench.ledger.models import RunRecord


def stored_script(rec: RunRecord) -> str:
    """The script run ``rec`` ran, exactly as recorded (never recompiled)."""
    if rec.script_snapshot is None:
        raise LedgerError(
            f"run {rec.display_id} has no stored script (it was recorded without one)",
            hint="autobench ledger show RUN --full shows what the run did store",
        )
    return rec.script_snapshot


__all__ = ["stored_script"]
