"""The report view-model: plain data built from ledger runs, nothing rendered yet.

Pure functions only -- no database, no files.  ``runs_from_records`` turns ledger
records into :class:`Run` values; :func:`build_recipe_view` and
:func:`build_index_view` turn those into what the templates print.

Rules the views enforce (docs/reports.md has the long form):

* Every figure is a :class:`Fig` -- a value *and* the id of the run it came from.
  A missing value stays ``None`` (printed "—"), never 0.
* "Latest" means the last run by start time (ties: ledger order).
* Speedup = decode tok/s of this recipe's latest DONE run / decode tok/s of the
  baseline recipe's latest DONE run *at the same concurrency*.  When it cannot be
  computed honestly it is refused with a stated reason instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from autobench import metric_catalogue as catalogue
from autobench.digits import load_json

DONE = "DONE"


# --------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class Run:
    """One ledger run, reduced to what a report reads."""

    id: Any
    recipe: str
    status: str
    started_at: datetime | date | None = None
    ended_at: datetime | date | None = None
    model_repo: str | None = None
    model_sha: str | None = None
    draft_repo: str | None = None
    draft_sha: str | None = None
    image: str | None = None
    engine_version: str | None = None
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    root_cause_detail: str | None = None
    notes: str | None = None
    corrects: Any = None
    supersedes: Any = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    boot: Mapping[str, Any] = field(default_factory=dict)
    snapshot: Mapping[str, Any] = field(default_factory=dict)  # the resolved recipe
    #: The cells the run benched (ledger cells: index, params, metrics, samples); () for a
    #: run recorded before cells, or when the caller did not load them.
    cells: Sequence[Any] = ()

    def metric(self, key: str) -> Any:
        return _present(self.metrics.get(key))

    def snap(self, *keys: str) -> Any:
        node: Any = self.snapshot
        for key in keys:
            if not isinstance(node, Mapping):
                return None
            node = node.get(key)
        return _present(node)

    @property
    def concurrency(self) -> int | None:
        """Concurrency the bench ran at: the measured value, else the recipe's."""
        value = self.metric("concurrency")
        if value is None:
            value = self.snap("bench", "concurrency")
        if isinstance(value, list):  # a grid: one concurrency per cell (see the run's cells)
            value = value[0] if len(value) == 1 else None
        return None if value is None or isinstance(value, bool) else int(value)

    @property
    def day(self) -> date | None:
        moment = self.started_at
        return moment.date() if isinstance(moment, datetime) else moment


def _present(value: Any) -> Any:
    """``None`` for values that mean "not measured" (None, NaN, empty string/list)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str | list | tuple | dict) and len(value) == 0:
        return None
    return value


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        value = load_json(value) if value.strip() else {}
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    return dict(value) if isinstance(value, Mapping) else {}


def _as_datetime(value: Any) -> datetime | date | None:
    """A stored time; a bare date stays a date (the ledger never invents a time of day)."""
    if value is None or isinstance(value, date):  # datetime is a date too
        return value
    text = str(value).strip()
    if not text:
        return None
    if len(text) == 10:
        return date.fromisoformat(text)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _attr(record: Any, *names: str) -> Any:
    for name in names:
        if isinstance(record, Mapping):
            if name in record:
                return record[name]
        elif hasattr(record, name):
            return getattr(record, name)
    return None


def run_from_record(record: Any) -> Run:
    """Adapt a ledger ``RunRecord`` (or a plain dict with the same keys) to a :class:`Run`."""
    status = _attr(record, "status")
    status = getattr(status, "value", status)
    return Run(
        id=_attr(record, "id"),
        recipe=str(_attr(record, "recipe_name", "recipe")),
        status=str(status).upper(),
        started_at=_as_datetime(_attr(record, "started_at")),
        ended_at=_as_datetime(_attr(record, "ended_at")),
        model_repo=_attr(record, "model_repo"),
        model_sha=_present(_attr(record, "model_sha")),
        draft_repo=_present(_attr(record, "draft_repo")),
        draft_sha=_present(_attr(record, "draft_sha")),
        image=_present(_attr(record, "image")),
        engine_version=_present(_attr(record, "engine_version", "vllm_version")),
        root_cause_category=_present(_attr(record, "root_cause_category")),
        root_cause_message=_present(_attr(record, "root_cause_message")),
        root_cause_detail=_present(_attr(record, "root_cause_detail")),
        notes=_present(_attr(record, "notes", "note")),
        corrects=_attr(record, "corrects"),
        supersedes=_attr(record, "supersedes"),
        metrics=_as_mapping(_attr(record, "metrics")),
        boot=_as_mapping(_attr(record, "boot")),
        snapshot=_as_mapping(_attr(record, "recipe_snapshot", "snapshot")),
    )


def runs_from_records(records: Iterable[Any]) -> list[Run]:
    return [run_from_record(r) for r in records]


def chronological(runs: Iterable[Run]) -> list[Run]:
    """Oldest first; runs without a start time keep ledger order, before dated ones."""
    indexed = list(enumerate(runs))
    indexed.sort(key=lambda p: (_sortable(p[1].started_at), p[0]))
    return [run for _, run in indexed]


def _sortable(moment: datetime | date | None) -> str:
    # Compare dates, naive and aware datetimes alike by their ISO text (UTC in the ledger); ""
    # (no start time) sorts before any of them.
    if isinstance(moment, datetime):
        return moment.replace(tzinfo=None).isoformat()
    return moment.isoformat() if moment else ""


def latest(runs: Sequence[Run], status: str | None = None) -> Run | None:
    chosen = [r for r in chronological(runs) if status is None or r.status == status]
    return chosen[-1] if chosen else None


def run_flags(run: Run | None) -> list[tuple[str, str, str]]:
    """A run's quality flags (``autobench.metric_catalogue.FLAGS``): (name, why, meaning)."""
    raised = run.metrics.get("flags") if run is not None else None
    if not isinstance(raised, Mapping):
        return []
    known = catalogue.FLAG_BY_NAME
    order = list(known)
    names = sorted(raised, key=lambda n: (order.index(n) if n in order else len(order), str(n)))
    return [(str(n), str(raised[n]), known[n].meaning if n in known else "") for n in names]


# ------------------------------------------------------------------------ figures
@dataclass(frozen=True)
class Fig:
    """A figure and where it came from.  ``value`` None means "not measured"."""

    value: Any
    run_id: Any

    @property
    def missing(self) -> bool:
        return self.value is None


def fig(run: Run | None, value: Any) -> Fig:
    return Fig(_present(value), run.id if run else None)


#: (key, label, unit) of the result table: the stored metrics the catalogue shows
#: (``autobench.metric_catalogue``), in its order.
METRIC_ORDER: tuple[tuple[str, str, str], ...] = tuple(
    (m.key, m.label, m.unit) for m in catalogue.METRICS if m.stored and m.shown
)

BOOT_ORDER: tuple[tuple[str, str, str], ...] = (
    ("model_load_gib", "model weights", "GiB"),
    ("model_load_s", "model load time", "s"),
    ("weights_load_s", "weights load time", "s"),
    ("kv_cache_gib", "KV cache", "GiB"),
    ("kv_cache_tokens", "KV cache tokens", "tokens"),
    ("max_concurrency", "max concurrency", "×"),
    ("max_concurrency_tokens", "… at a request length of", "tokens"),
    ("max_model_len", "max model len", "tokens"),
    ("cuda_graph_gib", "CUDA graph pool", "GiB"),
    ("cuda_graph_s", "CUDA graph capture time", "s"),
    ("torch_compile_s", "torch.compile time", "s"),
    ("engine_init_s", "engine init time", "s"),
    ("attention_block_size", "attention block size", "tokens"),
    ("mamba_padding_pct", "mamba page padding", "%"),
    ("architecture", "resolved architecture", ""),
    ("attention_backend", "attention backend", ""),
    ("linear_kernel", "linear kernel", ""),
    ("moe_backend", "MoE backend", ""),
    ("vllm_version", "vLLM version", ""),
)


@dataclass(frozen=True)
class Row:
    label: str
    fig: Fig
    unit: str
    key: str


# ------------------------------------------------------------------------ speedup
@dataclass(frozen=True)
class Speedup:
    baseline: str | None  # baseline recipe name; None = no baseline declared
    ratio: float | None = None
    this: Fig | None = None  # decode tok/s of this recipe's latest DONE
    base: Fig | None = None  # decode tok/s of the baseline's DONE at the same concurrency
    concurrency: int | None = None
    refused: str | None = None  # reason, when no honest ratio exists

    @property
    def ok(self) -> bool:
        return self.ratio is not None


def compute_speedup(this_done: Run | None, baseline: str | None, baseline_runs: Sequence[Run]) -> Speedup:
    """The decode speedup of ``this_done`` over ``baseline``, or a refusal with its reason."""
    if not baseline:
        return Speedup(None, refused="no baseline declared (set meta.baseline in the recipe)")
    if this_done is None:
        return Speedup(baseline, refused="this recipe has no DONE run")
    this = fig(this_done, this_done.metric("decode_tok_s"))
    conc = this_done.concurrency
    if this.missing:
        return Speedup(baseline, this=this, concurrency=conc, refused=f"decode tok/s is missing in run {this_done.id}")
    done = [r for r in chronological(baseline_runs) if r.status == DONE]
    if not done:
        why = "has no runs" if not baseline_runs else "has no DONE run"
        return Speedup(baseline, this=this, concurrency=conc, refused=f"baseline {baseline} {why}")
    if conc is None:
        return Speedup(baseline, this=this, refused=f"the concurrency of run {this_done.id} is unknown")
    same = [r for r in done if r.concurrency == conc]
    if not same:
        levels = sorted({r.concurrency for r in done if r.concurrency is not None})
        seen = f"concurrency {', '.join(str(c) for c in levels)}" if levels else "an unknown concurrency"
        return Speedup(
            baseline,
            this=this,
            concurrency=conc,
            refused=f"baseline {baseline} has DONE runs only at {seen}, not at {conc}",
        )
    base_run = same[-1]
    base = fig(base_run, base_run.metric("decode_tok_s"))
    if not base.value:  # missing (None) or zero
        what = "missing" if base.missing else "zero"
        return Speedup(
            baseline,
            this=this,
            base=base,
            concurrency=conc,
            refused=f"decode tok/s is {what} in baseline run {base_run.id}",
        )
    return Speedup(baseline, ratio=float(this.value) / float(base.value), this=this, base=base, concurrency=conc)


# ---------------------------------------------------------------------- page view
@dataclass(frozen=True)
class StackItem:
    label: str
    value: Any


@dataclass(frozen=True)
class HistoryRow:
    run: Run
    root_cause: str | None
    decode: Fig
    concurrency: Any
    links: str | None  # "corrects run 2", "supersedes run 1"

    @property
    def flags(self) -> str | None:
        """The run's quality flags by name ("burst_stream, few_samples"); None without any."""
        return ", ".join(name for name, _, _ in run_flags(self.run)) or None


@dataclass(frozen=True)
class LevelRow:
    """Latest DONE result at one concurrency level."""

    concurrency: int | None
    decode: Fig
    prefill: Fig
    ttft: Fig
    tpot: Fig


@dataclass(frozen=True)
class RecipeView:
    name: str
    runs: list[Run]  # chronological
    latest: Run | None
    latest_done: Run | None
    stack_run: Run | None  # the run whose revisions/image the stack shows (None: no runs)
    stack_source: str | None  # where the rest of the stack comes from: "run" snapshot | "file" | None
    stack: list[StackItem]
    result: list[Row]
    speedup: Speedup
    acceptance_length: Fig
    acceptance_rate: Fig
    acceptance_per_position: list[Fig]
    num_speculative_tokens: Any
    boot: list[Row]
    history: list[HistoryRow]
    levels: list[LevelRow]
    superseded_by: list[str]  # the chain, nearest first
    plots: list[tuple[str, str]] = field(default_factory=list)  # (title, file name)
    #: Results by cell of the latest DONE run that benched a grid (autobench.report.cells).
    cells: Any = None
    cell_plots: list[tuple[str, str]] = field(default_factory=list)  # (title, file name), drawn
    #: Acceptance and speed-up by category, of the latest DONE run whose grid had a category axis
    #: (autobench.report.categories); [] when none.
    categories: list[Any] = field(default_factory=list)

    @property
    def has_runs(self) -> bool:
        return bool(self.runs)

    @property
    def sweep(self) -> Any:
        """The latest DONE run's sweep summary (its headline cell and the totals over every cell;
        ``autobench.ledger.cells.SweepSummary``); None for a run of one cell."""
        done = self.latest_done
        if done is None or len(done.cells) < 2:
            return None
        from autobench.ledger.cells import sweep_summary
        from autobench.ledger.models import NewCell

        def value(cell: Any, name: str) -> Any:  # a ledger CellRecord, or a plain mapping
            found = cell.get(name) if isinstance(cell, Mapping) else getattr(cell, name, None)
            return found if isinstance(found, Mapping) else {}

        return sweep_summary([NewCell(dict(value(c, "params")), dict(value(c, "metrics"))) for c in done.cells])

    @property
    def flags(self) -> list[tuple[str, str, str]]:
        """The quality flags of the latest DONE run's figures: (name, why, what it means)."""
        return run_flags(self.latest_done)

    def figure(self, key: str) -> Fig:
        """Metric ``key`` of the latest DONE run (missing when there is none)."""
        done = self.latest_done
        return fig(done, done.metric(key) if done else None)


def _stack(run: Run | None, recipe: Mapping[str, Any]) -> list[StackItem]:
    def get(*keys: str) -> Any:
        node: Any = recipe
        for key in keys:
            node = node.get(key) if isinstance(node, Mapping) else None
        return _present(node)

    quant = get("model", "quantization")
    quant_text = None
    if isinstance(quant, Mapping):
        parts = [quant.get("method")]
        if quant.get("bits"):
            parts.append(f"{quant['bits']}-bit")
        if quant.get("variant"):
            parts.append(str(quant["variant"]))
        quant_text = " ".join(str(p) for p in parts if p)
    spec = get("speculative")
    if run is None and not recipe:
        return []

    def pick(recorded: Any, *keys: str) -> Any:
        """The run's value; else the recipe's, marked as such (the run did not record it)."""
        if run is None:
            return get(*keys)
        if recorded is not None:
            return recorded
        declared = get(*keys)
        return None if declared is None else f"{declared} (from the recipe; not recorded with the run)"

    def revision(recorded: str | None, *keys: str) -> str:
        if recorded:
            return recorded
        declared = get(*keys)
        if run is None:
            return declared or "unknown"
        return f"unknown (the recipe asks for {declared})" if declared else "unknown"

    items = [
        StackItem("model", pick(run.model_repo if run else None, "model", "repo")),
        StackItem("model revision", revision(run.model_sha if run else None, "model", "revision")),
        StackItem("quantization", quant_text),
    ]
    if spec or (run and run.draft_repo):
        items += [
            StackItem("speculative method", get("speculative", "method")),
            StackItem("draft", pick(run.draft_repo if run else None, "speculative", "model")),
            StackItem("draft revision", revision(run.draft_sha if run else None, "speculative", "revision")),
            StackItem("num_speculative_tokens", get("speculative", "num_speculative_tokens")),
        ]
    items.append(StackItem("image", pick(run.image if run else None, "container", "image")))
    if run and run.engine_version:
        items.append(StackItem("engine version", run.engine_version))
    engine = get("engine") or {}
    options = [
        f"{k}={v}"
        for k, v in sorted(engine.items())
        if k not in {"host", "port", "extra_args"} and _present(v) is not None
    ]
    options += [str(a) for a in engine.get("extra_args") or []]
    items.append(StackItem("engine options", ", ".join(options) or None))
    bench = get("bench") or {}
    dataset = bench.get("dataset") or {}

    def ran(key: str, metric: str) -> str | None:
        """The run's own value of a bench setting (the row's metric), else the recipe's; when
        they differ the recipe's is named beside it (a profile or a sweep changed it)."""
        declared = bench.get(key)
        measured = run.metric(metric) if run is not None else None
        if measured is None:
            return f"{key}={declared}" if declared else None
        if isinstance(declared, list):  # a grid: every cell ran (the by-cell table shows each)
            return f"{key}={declared}"
        if declared is None or declared == measured:
            return f"{key}={measured}"
        return f"{key}={measured} (the recipe says {declared})"

    bench_bits = [
        f"dataset={dataset.get('kind')}" if dataset.get("kind") else None,
        ran("num_prompts", "num_prompts"),
        ran("concurrency", "concurrency"),
        f"max_tokens={bench['max_tokens']}" if bench.get("max_tokens") else None,
        f"max_seconds={bench['max_seconds']:g}" if bench.get("max_seconds") else None,
    ]
    items.append(StackItem("bench", ", ".join(b for b in bench_bits if b) or None))
    return items


def short_root_cause(run: Run, limit: int = 90) -> str | None:
    """``category: message -- detail`` on one line, cut at a word boundary near ``limit``
    characters (the detail says what is wrong when the message only names the error)."""
    if not run.root_cause_category and not run.root_cause_message:
        return None
    message = " ".join((run.root_cause_message or "").split())
    if run.root_cause_detail:
        message = f"{message} -- {' '.join(run.root_cause_detail.split())}"
    text = f"{run.root_cause_category}: {message}" if run.root_cause_category else message
    text = text.rstrip(": ")
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + " …"


def _links(run: Run) -> str | None:
    parts = []
    if run.corrects is not None:
        parts.append(f"corrects run {run.corrects}")
    if run.supersedes is not None:
        parts.append(f"supersedes run {run.supersedes}")
    return "; ".join(parts) or None


def _levels(runs: Sequence[Run]) -> list[LevelRow]:
    by_level: dict[Any, Run] = {}
    for run in chronological(runs):
        if run.status == DONE:
            by_level[run.concurrency] = run
    levels: list[int | None] = sorted(c for c in by_level if c is not None)
    if None in by_level:  # runs of unknown concurrency last
        levels.append(None)
    rows = []
    for conc in levels:
        r = by_level[conc]
        rows.append(
            LevelRow(
                conc,
                fig(r, r.metric("decode_tok_s")),
                fig(r, r.metric("prefill_tok_s")),
                fig(r, r.metric("ttft_median_ms")),
                fig(r, r.metric("tpot_median_ms")),
            )
        )
    return rows


Recipes = Mapping[str, Mapping[str, Any]]  # recipe files (resolved) by recipe name


def recipe_meta(
    name: str, runs_by_recipe: Mapping[str, Sequence[Run]], recipes: Recipes | None = None
) -> tuple[Mapping[str, Any], str | None]:
    """The recipe as known, and from where: the snapshot recorded with the latest DONE run
    (else the latest run), else the recipe file; ``({}, None)`` when neither exists."""
    runs = runs_by_recipe.get(name, ())
    source = latest(runs, DONE) or latest(runs)
    if source is not None and source.snapshot:
        return source.snapshot, "run"
    data = (recipes or {}).get(name)
    return (data, "file") if data else ({}, None)


def supersession_chain(
    name: str, runs_by_recipe: Mapping[str, Sequence[Run]], recipes: Recipes | None = None
) -> list[str]:
    """``meta.superseded_by`` followed through the known recipes, nearest first, cycle-safe."""
    chain: list[str] = []
    seen = {name}
    current = name
    while True:
        meta, _ = recipe_meta(current, runs_by_recipe, recipes)
        nxt = _present((meta.get("meta") or {}).get("superseded_by"))
        if not nxt or nxt in seen:
            return chain
        chain.append(str(nxt))
        seen.add(nxt)
        current = str(nxt)


def build_recipe_view(
    name: str,
    runs_by_recipe: Mapping[str, Sequence[Run]],
    recipes: Recipes | None = None,
) -> RecipeView:
    """Everything a recipe page shows.

    ``recipes`` maps recipe names to resolved recipe files; a file fills in what the runs
    did not record (stack details, ``meta.baseline``, ``meta.superseded_by``), never a figure.
    """
    runs = chronological(runs_by_recipe.get(name, ()))
    last = latest(runs)
    done = latest(runs, DONE)
    stack_run = done or last
    meta, meta_source = recipe_meta(name, runs_by_recipe, recipes)
    baseline = _present((meta.get("meta") or {}).get("baseline"))  # meta is {} when unknown
    speedup = compute_speedup(done, baseline, runs_by_recipe.get(baseline, ()) if baseline else ())

    # Rows without a figure are left out (the headline sentence still says "—" for its own).
    result = [
        Row(label, fig(done, done.metric(key)), unit, key)
        for key, label, unit in METRIC_ORDER
        if done is not None and done.metric(key) is not None
    ]
    boot = [  # facts the log did not state are left out (the template says when none are)
        Row(label, fig(stack_run, stack_run.boot.get(key)), unit, key)
        for key, label, unit in BOOT_ORDER
        if stack_run is not None and _present(stack_run.boot.get(key)) is not None
    ]
    if stack_run:  # the boot facts of the same run as the stack
        known = {k for k, _, _ in BOOT_ORDER}
        boot += [
            Row(key.replace("_", " "), fig(stack_run, value), "", key)
            for key, value in sorted(stack_run.boot.items())
            if key not in known and _present(value) is not None
        ]

    per_position = (done.metric("spec_per_position") if done else None) or []
    history = [
        HistoryRow(r, short_root_cause(r, limit=400), fig(r, r.metric("decode_tok_s")), r.concurrency, _links(r))
        for r in runs
    ]
    return RecipeView(
        name=name,
        runs=runs,
        latest=last,
        latest_done=done,
        stack_run=stack_run,
        stack_source=meta_source,
        stack=_stack(stack_run, meta),
        result=result,
        speedup=speedup,
        acceptance_length=fig(done, done.metric("spec_acceptance_length") if done else None),
        acceptance_rate=fig(done, done.metric("spec_draft_acceptance_rate") if done else None),
        acceptance_per_position=[fig(done, v) for v in per_position],
        num_speculative_tokens=_present((meta.get("speculative") or {}).get("num_speculative_tokens")),
        boot=boot,
        history=history,
        levels=_levels(runs),
        superseded_by=supersession_chain(name, runs_by_recipe, recipes),
        cells=_cells(runs),
        categories=_categories(runs, runs_by_recipe.get(baseline, ()) if baseline else ()),
    )


def _categories(runs: Sequence[Run], baseline_runs: Sequence[Run]) -> list[Any]:
    """The by-category rows of the latest DONE run that benched categories ([] when none did)."""
    from autobench.report.categories import category_rows

    base = chronological(baseline_runs)
    for run in reversed(list(runs)):
        if run.status == DONE:
            rows = category_rows(run, base)
            if rows:
                return rows
    return []


def _cells(runs: Sequence[Run]) -> Any:
    """The by-cell table of the latest DONE run with two or more cells (None: no such run)."""
    from autobench.report.cells import cell_table

    for run in reversed(list(runs)):
        if run.status == DONE and len(run.cells) >= 2:
            return cell_table(run.id, run.cells)
    return None


# --------------------------------------------------------------------- index view
@dataclass(frozen=True)
class IndexRow:
    name: str
    latest: Run
    latest_done: Run | None
    decode: Fig
    prefill: Fig
    ttft: Fig
    tpot: Fig
    concurrency: Any
    speedup: Speedup
    root_cause: str | None  # short, for a BLOCKED/FAILED latest run

    @property
    def flags(self) -> str | None:
        """The quality flags of the latest DONE run's figures, by name; None without any."""
        return ", ".join(name for name, _, _ in run_flags(self.latest_done)) or None


@dataclass(frozen=True)
class IndexView:
    rows: list[IndexRow]


def group_by_recipe(runs: Iterable[Run]) -> dict[str, list[Run]]:
    grouped: dict[str, list[Run]] = {}
    for run in runs:
        grouped.setdefault(run.recipe, []).append(run)
    return grouped


def build_index_view(runs_by_recipe: Mapping[str, Sequence[Run]], recipes: Recipes | None = None) -> IndexView:
    """One row per recipe that has runs (recipe files only supply baselines)."""
    rows = []
    for name in sorted(runs_by_recipe):
        view = build_recipe_view(name, runs_by_recipe, recipes)
        if view.latest is None:
            continue
        d = view.latest_done
        rows.append(
            IndexRow(
                name=name,
                latest=view.latest,
                latest_done=d,
                decode=fig(d, d.metric("decode_tok_s") if d else None),
                prefill=fig(d, d.metric("prefill_tok_s") if d else None),
                ttft=fig(d, d.metric("ttft_median_ms") if d else None),
                tpot=fig(d, d.metric("tpot_median_ms") if d else None),
                concurrency=d.concurrency if d else None,
                speedup=view.speedup,
                root_cause=short_root_cause(view.latest) if view.latest.status != DONE else None,
            )
        )
    return IndexView(rows)
