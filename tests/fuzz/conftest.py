"""The fuzz suite's session hook: write the per-property case counts (see fuzzkit)."""

from __future__ import annotations

import json
import os


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("AUTOBENCH_FUZZ_REPORT")
    if path:
        from fuzzkit import CASES

        with open(path, "w", encoding="utf-8") as fh:
            json.dump(dict(CASES), fh, indent=2, sort_keys=True)
