"""Wall time of the CLI's fast paths against a bare interpreter start.

    .venv/bin/python benchmarks/cli_startup.py [-n RUNS]

Measures, as separate processes (what a user waits for): `python -c pass`, `autobench --help`,
`autobench validate` and `autobench compile` on the seed DFlash recipe; prints the median,
min and the overhead over bare python.  Also lists which heavy modules each command imported
(none for --help; pydantic + ruamel + jinja2 for compile, nothing else).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "qwen3-5-122b-a10b-vllm-int4-autoround-dflash.yaml"
HEAVY = (
    "pydantic",
    "ruamel.yaml",
    "jinja2",
    "huggingface_hub",
    "sqlalchemy",
    "sqlmodel",
    "httptools",
    "rich",
    "httpx",
    "numpy",
    "matplotlib",
)

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "autobench --help": [sys.executable, "-m", "autobench", "--help"],
    "autobench validate": [sys.executable, "-m", "autobench", "validate", str(RECIPE)],
    "autobench compile": [sys.executable, "-m", "autobench", "compile", str(RECIPE)],
}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=REPO)
    return time.perf_counter() - start


def imported(args: list[str]) -> list[str]:
    code = (
        "import sys\nfrom autobench.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    main({args!r})\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout
    return [m for m in out.strip().splitlines()[-1].split(",") if m] if out.strip() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=15)
    opts = parser.parse_args()
    for argv in CASES.values():  # warm the OS page cache and .pyc files
        timed(argv)
    results = {name: sorted(timed(argv) for _ in range(opts.runs)) for name, argv in CASES.items()}
    bare = statistics.median(results["python -c pass"])
    print(f"{'command':<22}{'median ms':>10}{'min ms':>9}{'over bare ms':>14}")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"{name:<22}{med * 1000:>10.1f}{times[0] * 1000:>9.1f}{(med - bare) * 1000:>14.1f}")
    print(f"({opts.runs} runs each, {sys.version.split()[0]}, {sys.platform})")
    for label, args in (
        ("--help", ["--help"]),
        ("validate", ["validate", str(RECIPE)]),
        ("compile", ["compile", str(RECIPE)]),
    ):
        print(f"heavy modules imported by {label}: {', '.join(imported(args)) or 'none'}")


if __name__ == "__main__":
    main()
