"""Score `autobench.logs.parse_log` against a set of real excerpts with written expectations.

Two index formats are read:

* the held-out sets (``tests/logs/corpus_r3/index.yaml``): ``booted``, ``cause`` (a substring
  of the first real statement, or null), ``category``, ``generic``, ``facts`` (value only);
* the main corpus (``tests/logs/corpus/index.yaml``): ``cause: CATEGORY@LINE message-start``
  and ``facts: {name: VALUE@LINE}`` (``tests/logs/corpus_index.py``); booted is its ``ready``
  fact.

Prints, per set: booted (ready as expected), cause (the expected substring is in the reported
message, or both say none), category (over excerpts that expect a cause), generic, facts
(each stated fact equal), and one line per miss so a score can be checked by hand.  A log
the parser refuses (exit 7) scores a miss on every count.

    .venv/bin/python benchmarks/logs_score.py [INDEX.yaml ...] [--quiet]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from autobench.errors import AutobenchError  # noqa: E402
from autobench.logs import parse_log  # noqa: E402

DEFAULT = [REPO / "tests" / "logs" / "corpus_r3" / "index.yaml", REPO / "tests" / "logs" / "corpus" / "index.yaml"]


def _expectations(entry: dict[str, Any]) -> dict[str, Any]:
    """One entry of either format as {booted, cause, category, generic, facts}."""
    if "booted" in entry:
        return {
            "booted": bool(entry["booted"]),
            "cause": entry.get("cause"),
            "category": entry.get("category"),
            "generic": bool(entry.get("generic", False)),
            "facts": dict(entry.get("facts") or {}),
        }
    sys.path.insert(0, str(REPO))
    from tests.logs.corpus_index import expected

    want = expected(entry)
    rc = want["root_cause"]
    return {
        "booted": bool(want["facts"].get("ready", False)),
        "cause": rc["message"] if rc else None,
        "category": rc["category"] if rc else None,
        "generic": rc["generic"] if rc else False,
        "facts": want["facts"],
    }


def score(index: Path, quiet: bool = False) -> dict[str, tuple[int, int]]:
    entries = YAML(typ="safe").load(index.read_text(encoding="utf-8"))
    counts = {k: [0, 0] for k in ("booted", "cause", "category", "generic", "facts")}
    misses: list[str] = []
    for name, entry in entries.items():
        want = _expectations(entry)
        try:
            report = parse_log(index.parent / f"{name}.log")
            got = report.to_json_dict()
        except AutobenchError as exc:
            got = None
            misses.append(f"{name}: refused: {exc}")
        rc = got["root_cause"] if got else None
        checks = {
            "booted": got is not None and got["ready"] == want["booted"],
            "cause": got is not None
            and (rc is None if want["cause"] is None else rc is not None and str(want["cause"]) in rc["message"]),
        }
        if want["category"] is not None:
            checks["category"] = rc is not None and rc["category"] == want["category"]
            checks["generic"] = rc is not None and rc["generic"] == want["generic"]
        for key, ok in checks.items():
            counts[key][1] += 1
            counts[key][0] += ok
            if not ok and got is not None:
                shown = (
                    f"ready={got['ready']}"
                    if key == "booted"
                    else f"{rc['category']} generic={rc['generic']} @{rc['line']}: {rc['message'][:110]!r}"
                    if rc
                    else "no cause"
                )
                misses.append(f"{name}: {key}: want {want[key]!r}, got {shown}")
        for fact, value in want["facts"].items():
            counts["facts"][1] += 1
            ok = got is not None and got.get(fact) == value
            counts["facts"][0] += ok
            if not ok and got is not None:
                misses.append(f"{name}: fact {fact}: want {value!r}, got {got.get(fact)!r}")
    print(f"== {index.relative_to(REPO)} ({len(entries)} excerpts)")
    for key, (ok, total) in counts.items():
        pct = f"{100.0 * ok / total:.1f}%" if total else "-"
        print(f"  {key:9s} {ok}/{total}  {pct}")
    if not quiet:
        for line in misses:
            print("  miss  " + line)
    return {k: (v[0], v[1]) for k, v in counts.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", nargs="*", type=Path, default=DEFAULT)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    args = ap.parse_args()
    for index in args.index:
        score(index.resolve(), args.quiet)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
