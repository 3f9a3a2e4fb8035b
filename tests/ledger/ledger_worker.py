"""A real separate process appending runs (used by the concurrency and SIGKILL tests).

python ledger_worker.py DB TAG COUNT     (COUNT 0 = forever)
"""

from __future__ import annotations

import sys

from autobench.ledger import NewRun, open_ledger


def main() -> None:
    path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open_ledger(path, create=False) as book:
        i = 0
        while count == 0 or i < count:
            book.append(
                NewRun(
                    recipe_name=f"r-{tag}",
                    model_repo="org/model",
                    status="DONE",
                    notes=f"{tag}:{i}",
                    metrics={"decode_tok_s": float(i)},
                )
            )
            i += 1
            if count == 0 and i == 1:
                print("started", flush=True)


if __name__ == "__main__":
    main()
