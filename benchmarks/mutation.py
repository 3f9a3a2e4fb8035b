"""Mutation testing of the modules users trust blindly (issue #21): small deliberate bugs,
one at a time, each run against the tests that exercise its module.

    nice -n 10 .venv/bin/python benchmarks/mutation.py [MODULE ...] [--jobs 1] [--timeout S]
    .venv/bin/python benchmarks/mutation.py autobench/hub/diff.py --list       # the mutants, no run
    .venv/bin/python benchmarks/mutation.py autobench/hub/diff.py --show 12    # one mutant as a diff
    .venv/bin/python benchmarks/mutation.py autobench/hub/diff.py --only 12,40 # run just those

With no MODULE, every module of :data:`TESTS` is run.  A module is named by its path
(``autobench/hub/diff.py`` or ``hub/diff.py``); to add one, give it a row in :data:`TESTS`.

The mutator is our own (standard library ``ast``): comparison boundaries and ``==``/``is``/``in``
swaps, ``and``/``or`` swaps and dropped operands, ``not`` removed, conditions negated, arithmetic
swaps, ``min``/``max`` swaps, constants changed (``0``/``1``, ``n+1``, ``''``, ``True``/``False``),
slice bounds dropped, ``return x`` -> ``return None``, and calls or raises deleted.  Docstrings,
annotations, ``__all__`` and logging calls are never mutated; nor is a line marked
``# pragma: no mutate``.  Each mutant replaces only its node's text, so the rest of the file is
byte for byte the original.

How a mutant reaches every test, including those that start ``python -m autobench`` in a child
process (sometimes with a bare environment, from another directory): the repository is copied to a
temporary folder (one copy per job) beside a small virtualenv whose ``.pth`` puts that copy on
``sys.path`` ahead of the editable install (whose finder comes after the path finder), then the
original site-packages.  The tests run in the copy with ``sys.executable`` set to the copy's
interpreter, so a child sees the mutant whatever its environment; a self-check at start proves it
(a planted exit in the copy's CLI must reach a child run from elsewhere with a bare environment).
The mutated file's ``.pyc`` is removed before each run, so a same-size mutant written within the
same second is never served stale bytecode.

Each mutant runs ``pytest -x -q -p no:cacheprovider`` over its module's test files in a process
forked from this one (pytest and the heavy libraries imported once, autobench never), in its own
process group, killed whole at the end.  A failing run kills the mutant; a run past the timeout
(default three times the unmutated run plus 15 s) counts as killed by timeout.  ``--no-fork`` runs
``python -m pytest`` instead.

Test selection: the unmutated run is measured with coverage, one context per test, so each line
of the module is known by the tests that ran it.  A mutant first runs only the tests that ran its
statement; if they pass, every test file of its row runs, so selection finds kills sooner and never
makes a survivor.  A selected test's kills count only if it passes on the unmutated code without
the rest of its files; otherwise its mutants run again with every file.  ``--no-select`` turns it off.

Equivalent mutants (no test can tell them from the code) are listed with the reason in
``benchmarks/mutation_equivalent.yaml`` (matched by description and line text, so they survive
edits elsewhere in the file); they are not run (``--check-equivalent`` runs them) and are excluded
from the score: ``score = killed / (mutants - equivalent)``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import datetime as dt
import difflib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EQUIVALENT = REPO / "benchmarks" / "mutation_equivalent.yaml"

#: module -> the test files that exercise it, the quickest and most direct first (``-x`` stops at
#: the first failure, so a mutant is usually killed by the first file).  Tests with wall-time
#: bounds (test_bench_empty_chunks, test_bench_client's accuracy run) are left out: on a loaded
#: machine they fail with no mutant, and a flaky failure would count as a kill.
TESTS: dict[str, list[str]] = {
    "autobench/recipe/workerhosts.py": [
        "tests/recipe/test_recipe_worker_hosts.py",
        "tests/bench/test_bench_fleet.py",
        "tests/compile/test_compile_worker_hosts.py",
        "tests/run/test_run_worker_hosts.py",
    ],
    "autobench/recipe/benchrules.py": [
        "tests/recipe/test_recipe_bench_rules.py",
        "tests/recipe/test_recipe_worker_hosts.py",
        "tests/bench/test_bench_fleet.py",
        "tests/bench/test_bench_limits.py",
        "tests/bench/test_bench_conversation.py",
    ],
    "autobench/recipe/importer/_llmd.py": ["tests/recipe/test_recipe_import_llmd.py"],
    "autobench/recipe/importer/_recipes.py": [
        "tests/recipe/test_recipe_import_sources.py",
        "tests/recipe/test_recipe_import.py",
        "tests/recipe/test_recipe_import_hostile.py",
    ],
    "autobench/recipe/importer/_deploy.py": [
        "tests/recipe/test_recipe_import_sources.py",
        "tests/recipe/test_recipe_import.py",
        "tests/recipe/test_recipe_import_hostile.py",
        "tests/recipe/test_recipe_import_placeholders.py",
    ],
    "autobench/compile/argv.py": [
        "tests/compile/test_compile_argv.py",
        "tests/compile/test_compile_script.py",
        "tests/compile/test_compile_fences.py",
        "tests/compile/test_compile_output_len.py",
    ],
    "autobench/compile/quoting.py": [
        "tests/compile/test_compile_quoting.py",
        "tests/compile/test_compile_quoting_property.py",
        "tests/compile/test_compile_script.py",
        "tests/compile/test_compile_fences.py",
    ],
    "autobench/compile/render.py": [
        "tests/compile/test_compile_render.py",
        "tests/compile/test_compile_script.py",
        "tests/compile/test_compile_fences.py",
        "tests/compile/test_compile_output_len.py",
        "tests/compile/test_compile_bench_result.py",
        "tests/compile/test_compile_quoting_property.py",
    ],
    "autobench/hub/fingerprint.py": [
        "tests/hub/test_hub_fingerprint.py",
        "tests/hub/test_hub_fingerprint_diff.py",
        "tests/hub/test_hub_lock.py",
        "tests/hub/test_hub_outdated.py",
    ],
    "autobench/hub/diff.py": [
        "tests/hub/test_hub_fingerprint_diff.py",
        "tests/hub/test_hub_fingerprint.py",
        "tests/hub/test_hub_outdated.py",
    ],
    "autobench/hub/lockfile.py": [
        "tests/hub/test_hub_lockfile_units.py",
        "tests/hub/test_hub_lock.py",
        "tests/hub/test_hub_lock_layout.py",
        "tests/test_recipe_facts.py",
        "tests/hub/test_hub_hostile.py",
    ],
    "autobench/hub/datasets.py": ["tests/hub/test_hub_datasets.py", "tests/hub/test_hub_dataset_bench.py"],
    "autobench/bench/records.py": [
        "tests/bench/test_bench_records.py",
        "tests/bench/test_bench_datasets.py",
        "tests/bench/test_bench_hostile_inputs.py",
        "tests/bench/test_bench_dataset_bounded.py",
    ],
    "autobench/bench/source.py": ["tests/hub/test_hub_dataset_bench.py"],
    "autobench/recipe/importer/_benchy.py": ["tests/recipe/test_recipe_import_benchy.py"],
    "autobench/escape.py": ["tests/test_escape_formats.py", "tests/security/test_echoed_values.py"],
    "autobench/digits.py": ["tests/test_digits_limits.py"],
    "autobench/files.py": [
        "tests/test_bounded_reads.py",
        "tests/recipe/test_recipe_files_policy.py",
        "tests/bench/test_bench_dataset_bounded.py",
    ],
    "autobench/run/collect.py": ["tests/run/test_run_collect_redact.py", "tests/run/test_run_k8s_collect.py"],
    "autobench/recipe/bounds.py": ["tests/recipe/test_recipe_bounds.py"],
    "autobench/redaction.py": [
        "tests/test_redaction.py",
        "tests/test_redaction_urls.py",
        "tests/test_redaction_writers.py",
        "tests/logs/test_logs_cli_secrets.py",
    ],
    "autobench/bench/metrics.py": [
        "tests/bench/test_bench_metrics.py",
        "tests/bench/test_bench_result.py",
    ],
    "autobench/bench/workload.py": ["tests/bench/test_bench_workload.py"],
    "autobench/bench/prefixcache.py": ["tests/bench/test_bench_prefix_cache.py"],
    "autobench/bench/conversation.py": ["tests/bench/test_bench_conversation.py"],
    "autobench/report/categories.py": ["tests/report/test_report_categories.py"],
    "autobench/bench/promscrape.py": [
        "tests/bench/test_bench_prefix_cache.py",
        "tests/bench/test_bench_metrics.py",
    ],
    "autobench/bench/stream.py": [
        "tests/bench/test_bench_stream.py",
        "tests/bench/test_bench_stream_fastpath.py",
        "tests/bench/test_bench_itl_reads.py",
        "tests/bench/test_bench_hostile_inputs.py",
        "tests/bench/test_bench_limits.py",
    ],
    "autobench/logs/rootcause.py": [
        "tests/logs/test_logs_rootcause_units.py",
        "tests/logs/test_logs_causes.py",
        "tests/logs/test_logs_units.py",
        "tests/logs/test_logs_corpus.py",
        "tests/logs/test_logs_blocks.py",
    ],
    "autobench/logs/facts.py": [
        "tests/logs/test_logs_facts.py",
        "tests/logs/test_logs_units.py",
        "tests/logs/test_logs_corpus.py",
        "tests/logs/test_logs_blocks.py",
    ],
    # Not yet scored (issue #15 is changing them); listed so they can be run by name.
    "autobench/ledger/chain.py": [
        "tests/ledger/test_ledger_chain.py",
        "tests/ledger/test_ledger_chain_verify.py",
        "tests/ledger/test_ledger_store.py",
        "tests/ledger/test_ledger_hardening.py",
        "tests/ledger/test_ledger_migrate_v3.py",
        "tests/ledger/test_ledger_sync.py",
    ],
    "autobench/ledger/store.py": [
        "tests/ledger/test_ledger_store_contract.py",
        "tests/ledger/test_ledger_store.py",
        "tests/ledger/test_ledger_hardening.py",
        "tests/ledger/test_ledger_cli.py",
        "tests/ledger/test_ledger_migrate_v3.py",
        "tests/ledger/test_ledger_cells.py",
        "tests/ledger/test_ledger_sync.py",
    ],
    "autobench/ledger/migrations.py": [
        "tests/ledger/test_ledger_migrations.py",
        "tests/ledger/test_ledger_migrate_v3.py",
        "tests/ledger/test_ledger_store.py",
        "tests/ledger/test_ledger_hardening.py",
    ],
    "autobench/bench/closedloop.py": [
        "tests/bench/test_bench_closedloop.py",
        "tests/bench/test_bench_client.py",
        "tests/bench/test_bench_transport.py",
        "tests/bench/test_bench_interrupt.py",
    ],
    "autobench/bench/fleet.py": ["tests/bench/test_bench_fleet.py", "tests/bench/test_bench_fleet_processes.py"],
    "autobench/bench/synthetic.py": [
        "tests/bench/test_bench_synthetic_timers.py",
        "tests/bench/test_bench_synthetic_http.py",
        "tests/bench/test_bench_metrics.py",
        "tests/bench/test_bench_empty_chunks.py",
        "tests/bench/test_bench_categories.py",
        "tests/bench/test_bench_client.py",
    ],
    "autobench/bench/synthetic_http.py": [
        "tests/bench/test_bench_synthetic_timers.py",
        "tests/bench/test_bench_synthetic_http.py",
        "tests/bench/test_bench_stream_caps.py",
        "tests/bench/test_bench_stream_fastpath.py",
        "tests/bench/test_bench_hostile_inputs.py",
        "tests/bench/test_bench_client.py",
    ],
    "autobench/bench/samples_of.py": ["tests/bench/test_bench_result_build.py", "tests/bench/test_bench_client.py"],
    "autobench/samples.py": ["tests/test_samples.py", "tests/ledger/test_ledger_cells.py"],
    "autobench/bench/result.py": [
        "tests/bench/test_bench_result_build.py",
        "tests/bench/test_bench_result.py",
        "tests/compile/test_compile_bench_result.py",
        "tests/test_quality_flags.py",
    ],
    "autobench/compile/server_env.py": [
        "tests/compile/test_compile_slurm_env.py",
        "tests/compile/test_compile_targets_carry.py",
    ],
    "autobench/compile/slurm.py": [
        "tests/compile/test_compile_slurm_env.py",
        "tests/compile/test_compile_targets_carry.py",
        "tests/compile/test_compile_render.py",
        "tests/compile/test_compile_worker_hosts.py",
    ],
    "autobench/compile/slurm_mounts.py": [
        "tests/compile/test_compile_slurm_env.py",
        "tests/compile/test_compile_targets_carry.py",
    ],
    "autobench/recipe/sizes.py": ["tests/recipe/test_recipe_sizes.py", "tests/compile/test_compile_targets_carry.py"],
    "autobench/recipe/rules.py": [
        "tests/recipe/test_recipe_rules_exact.py",
        "tests/recipe/test_recipe_rules.py",
        "tests/recipe/test_recipe_launch.py",
        "tests/recipe/test_recipe_grid.py",
        "tests/recipe/test_recipe_strict_values.py",
        "tests/recipe/test_recipe_loader.py",
        "tests/recipe/test_recipe_cli.py",
    ],
    "autobench/report/model.py": [
        "tests/report/test_report_model.py",
        "tests/report/test_report_pages.py",
        "tests/report/test_report_hostile_ledger.py",
    ],
    "autobench/experiment/design.py": ["tests/experiment/test_experiment_design.py"],
    "autobench/experiment/analysis.py": [
        "tests/experiment/test_experiment_analysis.py",
        "tests/experiment/test_experiment_confirm.py",
        "tests/experiment/test_experiment_page.py",
    ],
    "autobench/experiment/confirm.py": ["tests/experiment/test_experiment_confirm.py"],
    "autobench/experiment/array.py": ["tests/experiment/test_experiment_array.py"],
    # the unit-tier tests only: its job paths run on the real Slurm (integration, not mutated)
    "autobench/run/slurm.py": ["tests/run/test_run_slurm_allocation.py"],
    "autobench/experiment/plan.py": [
        "tests/experiment/test_experiment_plan.py",
        "tests/experiment/test_experiment_design.py",
    ],
    "autobench/experiment/definition.py": ["tests/experiment/test_experiment_design.py"],
    "autobench/experiment/execute.py": [
        "tests/experiment/test_experiment_execute.py",
        "tests/experiment/test_experiment_run.py",
    ],
    "autobench/ledger/sync.py": [
        "tests/ledger/test_ledger_sync.py",
        "tests/ledger/test_ledger_cells.py",
        "tests/ledger/test_ledger_sync_experiments.py",
    ],
    "autobench/cli/option_group.py": [
        "tests/test_cli_run_options.py",
        "tests/test_cli_bench_options.py",
        "tests/test_cli_options.py",
    ],
    "autobench/cli/run_options.py": ["tests/test_cli_run_options.py", "tests/test_cli_reference.py"],
    "autobench/cli/bench_options.py": [
        "tests/test_cli_bench_options.py",
        "tests/recipe/test_recipe_bench_rules.py",
        "tests/bench/test_bench_fleet.py",
        "tests/hub/test_hub_dataset_bench.py",
        "tests/test_cli_reference.py",
    ],
    "autobench/run/progress.py": [
        "tests/run/test_run_boot_progress.py",
        "tests/run/test_run_boot_progress_runtimes.py",
        "tests/run/test_run_progress.py",
    ],
}

#: What ``fork`` mode imports once, so each mutant's pytest starts warm (never autobench itself).
PRELOAD = (
    "pytest",
    "_pytest.python",
    "hypothesis",
    "pydantic",
    "sqlalchemy",
    "sqlmodel",
    "ruamel.yaml",
    "jinja2",
    "click",
    "rich.console",
    "huggingface_hub",
    "httptools",
    "tokenizers",
    "psycopg",
    "jsonschema",
    "markdown_it",
)

_SKIP_DIRS = {".venv", ".git", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
_LOG_OBJECTS = {"log", "logger", "logging", "LOG", "_log", "_logger", "warnings"}


# ---------------------------------------------------------------------------------------------
# The mutator


@dataclasses.dataclass(frozen=True)
class Mutant:
    id: int
    line: int
    col: int  # characters, from 0
    scope: str  # the enclosing class/function ("Change.to_json"), "" at module level
    start: int  # byte offsets into the source
    end: int
    new: bytes
    description: str
    code: str  # the stripped text of ``line``: with ``description``, the key of an equivalence

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.new + source[self.end :]


_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}


def _short(text: str, width: int = 48) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


class _Mutator:
    def __init__(self, source: bytes):
        self.source = source
        self.tree = ast.parse(source)
        self.lines = source.split(b"\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.skip: set[int] = set()  # ids of nodes never mutated (docstrings, annotations...)
        self.out: list[tuple[int, int, int, int, bytes, str, str]] = []
        self.scopes: dict[int, str] = {}
        self._scope(self.tree, "")

    def _scope(self, node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = name
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{name}.{child.name}" if name else child.name
            self.scopes[id(child)] = inner
            self._scope(child, inner)

    # positions -------------------------------------------------------------------------------
    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end].decode("utf-8")

    def add(self, node: ast.AST, new: str, what: str) -> None:
        start, end = self.span(node)
        old = self.source[start:end].decode("utf-8")
        if old == new:
            return
        line: int = node.lineno  # type: ignore[attr-defined]
        col = len(self.lines[line - 1][: node.col_offset].decode("utf-8"))  # type: ignore[attr-defined]
        description = f"{what}: {_short(old)!r} -> {_short(new)!r}"
        self.out.append((line, col, start, end, new.encode("utf-8"), description, self.scopes.get(id(node), "")))

    def replace(self, node: ast.AST, mutated: ast.AST, what: str) -> None:
        self.add(node, ast.unparse(mutated), what)

    # what is never mutated -------------------------------------------------------------------
    def mark(self, node: ast.AST | None) -> None:
        if node is not None:
            for sub in ast.walk(node):
                self.skip.add(id(sub))

    def mark_definition(self, node: ast.AST) -> None:
        """A definition's docstring, decorators and annotations."""
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                self.mark(first)  # docstring
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                self.mark(decorator)  # @dataclass(frozen=True), @lru_cache(maxsize=...): hygiene, not behaviour
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.mark(node.returns)
            for arg in [*node.args.args, *node.args.posonlyargs, *node.args.kwonlyargs]:
                self.mark(arg.annotation)
            for arg in (node.args.vararg, node.args.kwarg):
                if arg is not None:
                    self.mark(arg.annotation)
        if isinstance(node, ast.AnnAssign):
            self.mark(node.annotation)

    def mark_plumbing(self, node: ast.AST) -> None:
        """``__all__``, imports, ``if TYPE_CHECKING`` / ``__main__`` blocks and log calls."""
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                self.mark(node)
        if isinstance(node, ast.ImportFrom | ast.Import):
            self.mark(node)
        if isinstance(node, ast.If) and self.text(node.test) in ("TYPE_CHECKING", '__name__ == "__main__"'):
            self.mark(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            obj = node.func.value
            if isinstance(obj, ast.Name) and obj.id in _LOG_OBJECTS:
                self.mark(node)

    def mark_skipped(self) -> None:
        for node in ast.walk(self.tree):
            self.mark_definition(node)
            self.mark_plumbing(node)
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and self.is_table(node):
                # A data table (names, patterns): its strings are data, not logic; emptying each
                # entry in turn would only pin the table.
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                        self.skip.add(id(sub))
            if isinstance(node, ast.JoinedStr):
                for sub in ast.walk(node):
                    if sub is not node:
                        self.skip.add(id(sub))  # 3.11 positions inside f-strings are unreliable
        for lineno, line in enumerate(self.lines, 1):
            if b"pragma: no mutate" in line:
                for node in ast.walk(self.tree):
                    if getattr(node, "lineno", None) == lineno:
                        self.skip.add(id(node))

    def is_table(self, node: ast.Assign | ast.AnnAssign) -> bool:
        """A module- or class-level assignment of a collection literal (or a call wrapping one,
        or a comprehension over one: ``RULES = {r.code: r for r in [Rule(...), ...]}``)."""
        if node.col_offset != 0 and not any(
            node in getattr(c, "body", []) for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef)
        ):
            return False
        value = node.value
        if isinstance(value, ast.Call) and value.args:
            value = value.args[0]
        if isinstance(value, ast.DictComp | ast.ListComp | ast.SetComp) and len(value.generators) == 1:
            value = value.generators[0].iter
        return isinstance(value, ast.List | ast.Tuple | ast.Set | ast.Dict)

    # the operators ---------------------------------------------------------------------------
    def visit(self) -> None:
        self.mark_skipped()
        for node in ast.walk(self.tree):
            if id(node) in self.skip:
                continue
            method = getattr(self, "on_" + type(node).__name__, None)
            if method is not None:
                method(node)

    def on_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            swap = _CMP_SWAP.get(type(op))
            if swap is not None:
                mutated = copy.deepcopy(node)
                mutated.ops[i] = swap()
                self.replace(node, mutated, "compare")

    def on_BoolOp(self, node: ast.BoolOp) -> None:
        mutated = copy.deepcopy(node)
        mutated.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self.replace(node, mutated, "and/or")
        for i in range(len(node.values)):
            rest = [v for j, v in enumerate(node.values) if j != i]
            kept: ast.AST = rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest)
            self.add(node, "(" + ast.unparse(kept) + ")", "operand dropped")

    def on_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self.add(node, "(" + ast.unparse(node.operand) + ")", "not removed")

    def _negate(self, test: ast.expr) -> None:
        if isinstance(test, ast.Compare | ast.BoolOp) or (
            isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        ):
            return  # their own operators cover them
        if id(test) not in self.skip:
            self.add(test, "not (" + ast.unparse(test) + ")", "condition negated")

    def on_If(self, node: ast.If) -> None:
        self._negate(node.test)

    def on_While(self, node: ast.While) -> None:
        self._negate(node.test)

    def on_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node.test)

    def on_BinOp(self, node: ast.BinOp) -> None:
        swap = _BIN_SWAP.get(type(node.op))
        if swap is None:
            return
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant | ast.JoinedStr):
            return  # printf-style formatting
        mutated = copy.deepcopy(node)
        mutated.op = swap()
        self.replace(node, mutated, "arithmetic")

    def on_AugAssign(self, node: ast.AugAssign) -> None:
        swap = _BIN_SWAP.get(type(node.op))
        if swap is not None:
            mutated = copy.deepcopy(node)
            mutated.op = swap()
            self.replace(node, mutated, "arithmetic")

    def on_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and id(node.func) not in self.skip:
            self.add(node.func, "max" if node.func.id == "min" else "min", "min/max")

    def on_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self.add(node, repr(not value), "constant")
        elif isinstance(value, int):
            for new in (1,) if value == 0 else (0, 2) if value == 1 else (value + 1,):
                self.add(node, repr(new), "constant")
        elif isinstance(value, float):
            self.add(node, repr(value + 1.0), "constant")
        elif isinstance(value, str):
            self.add(node, '""' if value else '"XX"', "constant")
        elif isinstance(value, bytes):
            self.add(node, 'b""' if value else 'b"XX"', "constant")

    def on_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.add(node, '""', "constant")

    def on_Slice(self, node: ast.Slice) -> None:
        for bound in ("lower", "upper"):
            if getattr(node, bound) is not None:
                mutated = copy.deepcopy(node)
                setattr(mutated, bound, None)
                self.add(node, ast.unparse(mutated) or ":", "slice bound dropped")

    def on_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is None or (
            isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, bool))
        ):
            return
        self.add(node, "return None", "return None")

    def on_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call | ast.Await):
            self.add(node, "pass", "statement deleted")

    def on_Raise(self, node: ast.Raise) -> None:
        self.add(node, "pass", "statement deleted")

    def on_Assert(self, node: ast.Assert) -> None:
        self.add(node, "pass", "statement deleted")

    def on_Continue(self, node: ast.Continue) -> None:
        self.add(node, "pass", "statement deleted")

    def on_Break(self, node: ast.Break) -> None:
        self.add(node, "pass", "statement deleted")


def mutants(source: bytes) -> list[Mutant]:
    """Every mutant of ``source`` that compiles, one per distinct resulting source, by position."""
    m = _Mutator(source)
    m.visit()
    seen: set[bytes] = {source}
    out: list[Mutant] = []
    for line, col, start, end, new, description, scope in sorted(m.out, key=lambda x: (x[2], x[3], x[5])):
        mutated = source[:start] + new + source[end:]
        if mutated in seen:
            continue
        try:
            compile(mutated, "<mutant>", "exec", dont_inherit=True)
        except SyntaxError:
            continue
        seen.add(mutated)
        code = m.lines[line - 1].decode("utf-8").strip()
        out.append(Mutant(len(out) + 1, line, col, scope, start, end, new, description, code))
    return out


def statement_lines(source: bytes) -> Callable[[Mutant], range]:
    """The lines a mutant's statement runs on, as coverage records them: a simple statement's
    lines, or a compound statement's header (``if``/``while`` test, ``for`` iterable, ``def``
    defaults) when the mutant is there."""
    tree = ast.parse(source)
    starts = [0]
    for line in source.split(b"\n"):
        starts.append(starts[-1] + len(line) + 1)

    def at(node: ast.AST, end: bool = False) -> int:
        if end:
            return starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        return starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]

    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]

    def lines(m: Mutant) -> range:
        inside = [n for n in statements if at(n) <= m.start and m.end <= at(n, end=True)]
        if not inside:
            return range(m.line, m.line + 1)
        stmt = min(inside, key=lambda n: at(n, end=True) - at(n))
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body and m.start < at(body[0]):
            return range(stmt.lineno, max(stmt.lineno, body[0].lineno - 1) + 1)
        return range(stmt.lineno, stmt.end_lineno + 1)  # type: ignore[operator]

    return lines


def show(mutant: Mutant, source: bytes, name: str) -> str:
    before = source.decode("utf-8").splitlines(keepends=True)
    after = mutant.apply(source).decode("utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, name, f"{name} (mutant {mutant.id})", n=1))


# ---------------------------------------------------------------------------------------------
# Equivalent mutants


@dataclasses.dataclass
class Equivalent:
    module: str
    line: int
    code: str
    mutant: str
    reason: str
    col: int | None = None  # only where one line has two mutants with the same description
    scope: str | None = None  # only where two lines of one text have mutants with the same description
    used: bool = False


def load_equivalents(path: Path) -> list[Equivalent]:
    if not path.is_file():
        return []
    from ruamel.yaml import YAML

    data = YAML(typ="safe").load(path.read_text()) or {}
    out = []
    for module, entries in data.items():
        for e in entries or []:
            col = e.get("col")
            out.append(
                Equivalent(
                    module,
                    int(e.get("line", 0)),
                    str(e["code"]).strip(),
                    str(e["mutant"]),
                    str(e["reason"]),
                    None if col is None else int(col),
                    e.get("scope"),
                )
            )
    return out


def equivalent_for(module: str, m: Mutant, equivalents: list[Equivalent]) -> Equivalent | None:
    for e in equivalents:
        if (
            e.module == module
            and e.mutant == m.description
            and e.code == m.code
            and e.col in (None, m.col)
            and e.scope in (None, m.scope)
        ):
            e.used = True
            return e
    return None


# ---------------------------------------------------------------------------------------------
# Where the tests run


class Slot:
    """A copy of the repository with its own interpreter, one mutant at a time."""

    def __init__(self, root: Path):
        self.root = root
        self.repo = root / "repo"
        self.venv = root / "venv"
        shutil.copytree(REPO, self.repo, ignore=self._ignore, symlinks=True)
        venv.EnvBuilder(with_pip=False, symlinks=True).create(self.venv)
        self.python = self.venv / "bin" / "python"
        purelib = subprocess.run(
            [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        ours = sysconfig_purelib()
        # The copy first (ahead of the editable install's finder), then the project's own venv.
        Path(purelib, "_autobench_mutation_a.pth").write_text(f"{self.repo}\n")
        Path(purelib, "_autobench_mutation_b.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
        # The project's tools (shellcheck, lint-imports...) beside the copy's interpreter, as in .venv/bin.
        ours_bin = Path(sys.executable).parent
        for tool in ours_bin.iterdir():
            target = self.venv / "bin" / tool.name
            if not target.exists() and not tool.name.startswith(("python", "activate", "Activate", "autobench")):
                target.symlink_to(tool)
        script = self.venv / "bin" / "autobench"
        script.write_text(f"#!{self.python}\nimport sys\nfrom autobench.cli import main\nsys.exit(main())\n")
        script.chmod(0o755)

    @staticmethod
    def _ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _SKIP_DIRS or n.endswith(".egg-info")}

    def write(self, module: str, source: bytes) -> None:
        shutil.rmtree(self.repo / ".hypothesis", ignore_errors=True)  # no example found in an earlier run replays
        path = self.repo / module
        path.write_bytes(source)
        for pyc in (path.parent / "__pycache__").glob(path.stem + ".*.pyc"):
            pyc.unlink()

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(self.repo)
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env.pop("PYTHONHOME", None)
        env["AUTOBENCH_HYPOTHESIS"] = "full"  # every property with its own example count (tests/conftest.py)
        return env

    def self_check(self) -> None:
        """A change in the copy must reach a child started elsewhere with a bare environment."""
        cli = self.repo / "autobench" / "cli" / "__init__.py"
        original = cli.read_bytes()
        self.write("autobench/cli/__init__.py", original + b"\nraise SystemExit(97)\n")
        try:
            with tempfile.TemporaryDirectory() as elsewhere:
                for env in (self.env(), {"PATH": "/usr/bin:/bin"}):
                    rc = subprocess.run(
                        [str(self.python), "-m", "autobench", "--help"], cwd=elsewhere, env=env, capture_output=True
                    ).returncode
                    if rc != 97:
                        raise SystemExit(f"self-check failed: a child process does not see the copy (rc {rc})")
        finally:
            self.write("autobench/cli/__init__.py", original)


def sysconfig_purelib() -> str:
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def pytest_args(tests: list[str], first_failure: bool = True) -> list[str]:
    # Hypothesis searches the same examples in every run (a fixed seed; no example database, see
    # Slot.write): a property test that finds a new example in one mutant's run must not fail the
    # next mutant's for it, nor the unmutated run differ from a mutant's by luck.
    return [
        *tests,
        *(["-x"] if first_failure else []),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--hypothesis-seed=0",
        "-m",
        "",  # both tiers: with the unit tier alone, mutants only the integration tests kill would survive
    ]


class Probe:
    """What a forked pytest run reports back in a JSON file: the tests in the order they ran, the
    ones that failed and, when asked, which tests ran each line of the module under test (coverage
    with one dynamic context per test, switched by a small pytest plugin)."""

    def __init__(self, out: Path, measure: Path | None = None):
        self.out = out
        self.coverage = measure  # the module file (in the slot) to measure, or None
        self.order: list[str] = []
        self.failed: list[str] = []
        self._cov: object = None

    def plugin(self) -> object:
        import pytest

        probe = self
        if self.coverage is not None:
            import coverage

            cov = coverage.Coverage(data_file=None, include=[str(self.coverage)], config_file=False)
            cov.start()
            self._cov = cov

        class _Plugin:
            @pytest.hookimpl(hookwrapper=True)
            def pytest_runtest_protocol(self, item: pytest.Item, nextitem: object) -> object:
                probe.order.append(item.nodeid)
                if probe._cov is not None:
                    probe._cov.switch_context(item.nodeid)  # type: ignore[attr-defined]
                yield
                if probe._cov is not None:
                    probe._cov.switch_context("")  # type: ignore[attr-defined]

            def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
                if report.failed and report.nodeid not in probe.failed:
                    probe.failed.append(report.nodeid)

        return _Plugin()

    def save(self) -> None:
        lines: dict[int, list[str]] = {}
        if self._cov is not None:
            cov = self._cov
            cov.stop()  # type: ignore[attr-defined]
            data = cov.get_data()  # type: ignore[attr-defined]
            for name in data.measured_files():
                for line, contexts in data.contexts_by_lineno(name).items():
                    lines.setdefault(line, []).extend(c for c in contexts if c)
        self.out.write_text(json.dumps({"order": self.order, "failed": self.failed, "lines": lines}))

    @staticmethod
    def load(path: Path) -> dict[str, object]:
        try:
            return json.loads(path.read_text())  # type: ignore[no-any-return]
        except (OSError, ValueError):
            return {"order": [], "failed": [], "lines": {}}


class Runner:
    """Runs pytest in a slot: forked from this process (warm) or as a fresh interpreter."""

    def __init__(self, fork: bool):
        self.fork = fork
        if fork:
            for name in PRELOAD:
                with contextlib.suppress(ImportError):
                    __import__(name)
            assert "autobench" not in sys.modules, "the harness must never import autobench itself"

    def start(
        self, slot: Slot, tests: list[str], log: Path, probe: Probe | None = None, first_failure: bool = True
    ) -> int:
        if not self.fork:
            if probe is not None and probe.coverage is not None:
                raise SystemExit("coverage by test needs the forked runner (drop --no-fork or pass --no-select)")
            proc = subprocess.Popen(
                [str(slot.python), "-m", "pytest", *pytest_args(tests, first_failure)],
                cwd=slot.repo,
                env=slot.env(),
                stdin=subprocess.DEVNULL,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            return proc.pid
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid:
            return pid
        rc = 3
        try:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.chdir(slot.repo)
            os.environ.clear()
            os.environ.update(slot.env())
            sys.executable = str(slot.python)
            sys.path.insert(0, str(slot.repo))
            import pytest
            from hypothesis import settings

            settings.register_profile("autobench-mutation", database=None, deadline=None)
            settings.load_profile("autobench-mutation")
            plugins = [] if probe is None else [probe.plugin()]
            rc = int(pytest.main(pytest_args(tests, first_failure), plugins=plugins))
            if probe is not None:
                probe.save()
        except BaseException:  # noqa: BLE001 - the child must always exit here
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(rc)


def _wait(pid: int) -> int | None:
    """The exit code of a finished child, or None while it runs."""
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        return None
    return os.waitstatus_to_exitcode(status)


#: Process groups of the pytest runs under way, killed whole if the harness is stopped.
_STARTED: set[int] = set()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def _kill_group(pid: int) -> None:
    _STARTED.discard(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_once(
    runner: Runner,
    slot: Slot,
    tests: list[str],
    log: Path,
    timeout: float | None,
    probe: Probe | None = None,
    first_failure: bool = True,
) -> tuple[int | None, float]:
    """(exit code or None on timeout, seconds)."""
    t0 = time.monotonic()
    pid = runner.start(slot, tests, log, probe, first_failure)
    _STARTED.add(pid)
    while True:
        rc = _wait(pid)
        if rc is not None:
            _kill_group(pid)
            return rc, time.monotonic() - t0
        if timeout is not None and time.monotonic() - t0 > timeout:
            _kill_group(pid)
            os.waitpid(pid, 0)
            return None, time.monotonic() - t0
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# A module's run


class BaselineFailed(Exception):
    """A module's tests fail with no mutant in: the module is skipped, the rest still run."""


@dataclasses.dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | timeout | survived | equivalent | equivalent-killed
    seconds: float = 0.0
    reason: str = ""


def module_name(arg: str) -> str:
    path = arg.strip()
    if not path.startswith("autobench/"):
        path = "autobench/" + path
    if not path.endswith(".py"):
        path = path.replace(".", "/") + ".py" if "/" not in path[10:] else path + ".py"
    return path


class Selection:
    """Which of the baseline's tests ran a mutant's statement, in the order they ran."""

    def __init__(self, probe: dict[str, object], lines: Callable[[Mutant], range]):
        self.order = {t: i for i, t in enumerate(probe["order"])}  # type: ignore[arg-type]
        self.by_line = {int(k): v for k, v in probe["lines"].items()}  # type: ignore[attr-defined]
        self.lines = lines

    def tests_for(self, m: Mutant) -> list[str]:
        chosen = {t for line in self.lines(m) for t in self.by_line.get(line, ())}
        return sorted(chosen, key=lambda t: self.order.get(t, len(self.order)))


def record(module: str, m: Mutant, status: str, seconds: float, equivalents: list[Equivalent]) -> Outcome:
    eq = equivalent_for(module, m, equivalents)
    if eq is not None:
        status = "equivalent-killed" if status != "survived" else "equivalent"
    return Outcome(m, status, seconds, eq.reason if eq else "")


def run_module(
    module: str,
    slots: list[Slot],
    runner: Runner,
    equivalents: list[Equivalent],
    args: argparse.Namespace,
    logdir: Path,
) -> list[Outcome]:
    tests = [t for t in args.tests or TESTS[module] if (slots[0].repo / t).exists()]  # as copied at start
    if not tests:
        raise SystemExit(f"{module}: none of its test files exist; give it a row in TESTS")
    source = (REPO / module).read_bytes()
    todo = mutants(source)
    if args.only:
        todo = [m for m in todo if m.id in args.only]
    outcomes: list[Outcome] = []
    queue: list[Mutant] = []
    for m in todo:
        eq = equivalent_for(module, m, equivalents)
        if eq is not None and not args.check_equivalent:
            outcomes.append(Outcome(m, "equivalent", reason=eq.reason))
        else:
            queue.append(m)
    stem = module.replace("/", "_")
    base_log = logdir / f"{stem}.baseline.log"
    select = runner.fork and not args.no_select
    base_probe = Probe(logdir / f"{stem}.baseline.json", slots[0].repo / module if select else None)
    rc, base = run_once(runner, slots[0], tests, base_log, None, base_probe if select else None)
    if rc != 0:
        tail = base_log.read_text(errors="replace").splitlines()[-40:]
        raise BaselineFailed(
            "\n".join([*tail, f"{module}: its tests fail without any mutant (rc {rc}); the end of the log is above"])
        )
    timeout = args.timeout or 3 * base + 15
    print(
        f"{module}: {len(todo)} mutants, tests {' '.join(tests)} ({base:.1f} s unmutated; timeout {timeout:.0f} s)",
        flush=True,
    )
    chooser = Selection(Probe.load(base_probe.out), statement_lines(source)) if select else None
    free = list(slots)
    # pid -> (slot, mutant, start, the tests run, probe); a mutant whose selected tests pass runs again
    # with every test file, so selection can only find a kill sooner, never invent a survivor.
    running: dict[int, tuple[Slot, Mutant, float, list[str], Probe]] = {}
    killers: dict[str, list[Mutant]] = {}  # selected test that killed -> its mutants
    done = 0

    def launch(slot: Slot, m: Mutant, run: list[str]) -> None:
        probe = Probe(logdir / f"{stem}.{m.id}.json")
        pid = runner.start(slot, run, logdir / f"{stem}.{m.id}.log", probe if runner.fork else None)
        _STARTED.add(pid)
        running[pid] = (slot, m, time.monotonic(), run, probe)

    while queue or running:
        while queue and free:
            slot, m = free.pop(), queue.pop(0)
            slot.write(module, m.apply(source))
            chosen = chooser.tests_for(m) if chooser else []
            launch(slot, m, chosen or tests)
        time.sleep(0.05)
        for pid, (slot, m, t0, run, probe) in list(running.items()):
            rc = _wait(pid)
            elapsed = time.monotonic() - t0
            if rc is None and elapsed <= timeout:
                continue
            _kill_group(pid)
            del running[pid]
            if rc is None:
                os.waitpid(pid, 0)
                status = "timeout"
            elif rc in (4, 5) and run is not tests:
                # pytest found none of the selected tests: the mutant breaks the import of their
                # file (a module-level line), so no node id can be collected; every file decides
                launch(slot, m, tests)
                continue
            elif rc in (4, 5):
                raise SystemExit(f"{module}: pytest usage error (rc {rc}) for mutant {m.id}")
            elif rc == 0 and run is not tests:
                launch(slot, m, tests)  # the selected tests pass: every file decides
                continue
            else:
                status = "killed" if rc else "survived"
                failed = Probe.load(probe.out)["failed"]
                if rc and run is not tests and failed:
                    killers.setdefault(str(failed[0]), []).append(m)  # type: ignore[index]
            outcomes.append(record(module, m, status, elapsed, equivalents))
            slot.write(module, source)
            free.append(slot)
            done += 1
            if args.verbose or outcomes[-1].status == "survived":
                print(
                    f"  [{done}/{len(queue) + len(running) + done}] #{m.id} L{m.line}:{m.col}",
                    f"{m.description}: {outcomes[-1].status}",
                    flush=True,
                )
    if killers:
        # A kill by a selected test counts only if that test passes on the code when run without the
        # rest of its files (a test that needs an earlier test's state would kill every mutant).
        slots[0].write(module, source)
        probe = Probe(logdir / f"{stem}.killers.json")
        run_once(runner, slots[0], list(killers), logdir / f"{stem}.killers.log", None, probe, first_failure=False)
        for nodeid in Probe.load(probe.out)["failed"]:  # type: ignore[union-attr]
            print(f"  {nodeid} fails alone on the unmutated code: its kills are re-run with every file", flush=True)
            for m in killers.get(str(nodeid), []):
                slots[0].write(module, m.apply(source))
                rc, elapsed = run_once(runner, slots[0], tests, logdir / f"{stem}.{m.id}.log", timeout)
                status = "timeout" if rc is None else ("killed" if rc else "survived")
                outcomes[:] = [o for o in outcomes if o.mutant.id != m.id]
                outcomes.append(record(module, m, status, elapsed, equivalents))
            slots[0].write(module, source)
    return sorted(outcomes, key=lambda o: o.mutant.id)


@dataclasses.dataclass
class Row:
    module: str
    mutants: int
    killed: int
    equivalent: int
    survived: int
    date: str

    @property
    def score(self) -> float:
        scored = self.mutants - self.equivalent
        return 100.0 * self.killed / scored if scored else 100.0


def summarize(module: str, outcomes: list[Outcome]) -> Row:
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    equivalent = sum(o.status in ("equivalent", "equivalent-killed") for o in outcomes)
    survived = sum(o.status == "survived" for o in outcomes)
    return Row(module, len(outcomes), killed, equivalent, survived, dt.date.today().isoformat())


def table(rows: list[Row]) -> str:
    lines = [
        "| module | mutants | killed | equivalent | survived | score | date |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.module.removeprefix('autobench/')} | {r.mutants} | {r.killed} | {r.equivalent} | "
            f"{r.survived} | {r.score:.0f} % | {r.date} |"
        )
    return "\n".join(lines)


def _ids(text: str) -> set[int]:
    return {int(x) for x in text.split(",") if x.strip()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("modules", nargs="*", help="module paths (default: every row of TESTS)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1: the machine is shared)")
    ap.add_argument(
        "--timeout", type=float, default=None, help="seconds per mutant (default 3x the unmutated run + 15)"
    )
    ap.add_argument("--tests", nargs="+", help="test files to run instead of the module's row in TESTS")
    ap.add_argument("--only", type=_ids, help="comma-separated mutant ids to run (one module)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--show", type=_ids, help="print these mutants as diffs and exit")
    ap.add_argument("--check-equivalent", action="store_true", help="run the listed equivalent mutants too")
    ap.add_argument("--no-fork", action="store_true", help="a fresh interpreter per mutant instead of a fork")
    ap.add_argument(
        "--no-select",
        action="store_true",
        help="every test file for each mutant (default: first the tests that ran its line, all if they pass)",
    )
    ap.add_argument("--json", type=Path, help="write every mutant's outcome to this file")
    ap.add_argument("--equivalent", type=Path, default=EQUIVALENT, help="the equivalent-mutant list")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every mutant's outcome, not only survivors")
    args = ap.parse_args(argv)

    modules = [module_name(m) for m in args.modules] or list(TESTS)
    for module in modules:
        if not (REPO / module).is_file():
            raise SystemExit(f"{module}: no such module")
        if module not in TESTS and not args.tests:
            raise SystemExit(f"{module}: not in the TESTS table of {Path(__file__).name}; add a row or pass --tests")
    if args.list or args.show:
        for module in modules:
            source = (REPO / module).read_bytes()
            for m in mutants(source):
                if args.show and m.id in args.show:
                    print(show(m, source, module))
                elif args.list:
                    print(f"{module} #{m.id} L{m.line}:{m.col} {m.scope or '-'} {m.description}")
        return 0

    equivalents = load_equivalents(args.equivalent)
    signal.signal(signal.SIGTERM, _stop)
    work = Path(tempfile.mkdtemp(prefix="autobench-mutation-"))
    try:
        slots = [Slot(work / f"slot{i}") for i in range(max(1, args.jobs))]
        slots[0].self_check()
        runner = Runner(fork=not args.no_fork)
        logdir = work / "logs"
        logdir.mkdir()
        rows, survivors, records = [], [], []
        for module in modules:
            t0 = time.monotonic()
            try:
                outcomes = run_module(module, slots, runner, equivalents, args, logdir)
            except BaselineFailed as exc:
                print(exc, "-- skipped", flush=True)
                continue
            rows.append(summarize(module, outcomes))
            print(f"  {module}: {time.monotonic() - t0:.0f} s\n" + table(rows[-1:]).splitlines()[-1], flush=True)
            for o in outcomes:
                records.append(
                    {
                        "module": module,
                        **dataclasses.asdict(o.mutant),
                        "new": o.mutant.new.decode(),
                        "status": o.status,
                        "seconds": round(o.seconds, 2),
                    }
                )
                if o.status in ("survived", "equivalent-killed"):
                    survivors.append((module, o))
        print()
        print(table(rows))
        timeouts = [r["module"] for r in records if r["status"] == "timeout"]
        if timeouts:
            counts = {m: timeouts.count(m) for m in dict.fromkeys(timeouts)}
            print("\nKilled by the timeout: " + ", ".join(f"{m} {n}" for m, n in counts.items()))
        if survivors:
            print("\nSurvivors (a test should kill each, or it goes in mutation_equivalent.yaml with the reason):")
            for module, o in survivors:
                note = (
                    " (listed as equivalent, but a test kills it: remove it from the list)"
                    if o.status == "equivalent-killed"
                    else ""
                )
                where = f"{module}:{o.mutant.line}:{o.mutant.col}"
                print(f"  {where} #{o.mutant.id} {o.mutant.description}{note}\n      {o.mutant.code}")
        stale = [e for e in equivalents if e.module in modules and not e.used and not args.only]
        for e in stale:
            print(f"  stale entry in {args.equivalent.name}: {e.module}:{e.line} {e.mutant} (no such mutant now)")
        if args.json:
            args.json.write_text(
                json.dumps(
                    {"rows": [dataclasses.asdict(r) | {"score": r.score} for r in rows], "mutants": records}, indent=1
                )
            )
    finally:
        for pid in list(_STARTED):
            _kill_group(pid)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
