"""The run ledger: an append-only, tamper-evident history of every run.

    from autobench.ledger import open_ledger, NewRun
    with open_ledger("ledger.db") as ledger:        # or a SQLAlchemy URL; None -> $AUTOBENCH_LEDGER -> ./ledger.db
        rec = ledger.append(NewRun(recipe_name=..., model_repo=..., status="DONE", metrics={...}, boot={...},
                                   cells=(NewCell(params={...}, metrics={...}, samples=...), ...)))
        ledger.get(rec.id); ledger.cells(rec.id); ledger.runs(recipe=...); ledger.history(draft=...)
        ledger.compare(a, b)
        ledger.verify().ok

See docs/ledger.md.  Importing this package pulls in SQLAlchemy; CLI modules import it lazily.
"""

from __future__ import annotations

from autobench.ledger.chain import VerifyResult
from autobench.ledger.models import BOOT_KEYS, METRIC_KEYS, SOURCES, STATUSES, CellRecord, NewCell, NewRun, RunRecord
from autobench.ledger.queries import Comparison, History, HistoryGroup
from autobench.ledger.store import Ledger, open_ledger, resolve_location

__all__ = [
    "BOOT_KEYS",
    "METRIC_KEYS",
    "SOURCES",
    "STATUSES",
    "CellRecord",
    "Comparison",
    "History",
    "HistoryGroup",
    "Ledger",
    "NewCell",
    "NewRun",
    "RunRecord",
    "VerifyResult",
    "open_ledger",
    "resolve_location",
]
