"""``autobench record``: a run recorded by hand, from a recipe file plus what the user states.

The recipe gives the name, digest, resolved snapshot, compiled script, model and draft
repos, and the shas when they are pinned to full commits.  ``--metrics`` is read by
``autobench.bench.result.load_result_json`` (our result JSON or ``vllm bench serve``'s),
``--log`` by ``autobench.logs.parse_log``; the row is built by ``autobench.runrow.new_run``,
the same path ``autobench run`` takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autobench.digits import load_json
from autobench.errors import LedgerError, UsageError
from autobench.ledger.models import STATUSES, NewRun

if TYPE_CHECKING:
    from autobench.recipe.loader import LoadedRecipe


@dataclass
class RecordInput:
    recipe_path: str
    status: str
    root_cause: str | None = None  # "CATEGORY:MESSAGE"
    root_cause_category: str | None = None
    root_cause_message: str | None = None
    metrics_file: str | None = None
    log_file: str | None = None
    notes: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    model_sha: str | None = None
    draft_sha: str | None = None
    corrects: int | None = None
    supersedes: int | None = None


def split_root_cause(text: str) -> tuple[str, str]:
    category, sep, message = text.partition(":")
    if not sep or not category.strip() or not message.strip():
        raise UsageError(
            f"--root-cause {text!r} is not CATEGORY:MESSAGE",
            hint="e.g. --root-cause 'assertion:assert page_size_bytes == max_page_size'",
        )
    return category.strip(), message.strip()


def read_metrics(path: str) -> dict[str, Any]:
    """The normalized metrics of a result file (ours or ``vllm bench serve``'s)."""
    from autobench.bench.result import load_result_json

    return load_result_json(path)


def result_times(path: str) -> tuple[str | None, str | None]:
    """(started, ended) of the bench a result file describes, as UTC ISO 8601: ``date`` (written
    when the bench ended, local time, ``%Y%m%d-%H%M%S`` -- ours and ``vllm bench serve``'s) and
    the bench's duration.  (None, None) when the file has no readable date."""
    import datetime as dt

    from autobench.bench.result import MAX_RESULT_BYTES
    from autobench.errors import AutobenchError
    from autobench.files import read_regular

    try:
        raw = load_json(read_regular(path, what="result file", limit=MAX_RESULT_BYTES).decode("utf-8"))
        ended = dt.datetime.strptime(str(raw["date"]), "%Y%m%d-%H%M%S").astimezone(dt.UTC)
    except (AutobenchError, ValueError, KeyError, TypeError):
        return None, None
    duration = raw.get("duration")
    started = ended
    if isinstance(duration, int | float) and 0 <= duration < 7 * 86400:
        started = ended - dt.timedelta(seconds=float(duration))

    def iso(t: dt.datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    return iso(started), iso(ended)


def read_log(path: str) -> dict[str, Any]:
    """The log's facts (``LogReport.to_json_dict()``); ``new_run`` redacts what it keeps."""
    from autobench.logs import parse_log

    return parse_log(Path(path)).to_json_dict()


def compiled_script(loaded: LoadedRecipe) -> str:
    from autobench.compile import compile_recipe

    # check=False: record what was run even if a style rule fails; unsafe findings still refuse.
    return compile_recipe(loaded, check=False)


def build_new_run(spec: RecordInput) -> NewRun:
    from autobench.recipe import load_recipe
    from autobench.recipe.imageref import parse_image_ref
    from autobench.runrow import RootCause, RunFacts, new_run

    if spec.status.strip().upper() not in STATUSES:
        raise LedgerError(f"unknown status {spec.status!r}", hint=f"use one of {', '.join(STATUSES)}")
    loaded = load_recipe(spec.recipe_path)
    category, message = spec.root_cause_category, spec.root_cause_message
    if spec.root_cause:
        if category or message:
            raise UsageError("give --root-cause or --root-cause-category/--root-cause-message, not both")
        category, message = split_root_cause(spec.root_cause)
    image = loaded.recipe.container.image
    try:
        digest = parse_image_ref(image).digest if image is not None else None
    except ValueError:  # an unparsable image is refused by validate; record what is written
        digest = image.split("@", 1)[1] if image is not None and "@sha256:" in image else None
    started_at, ended_at = spec.started_at, spec.ended_at
    if spec.metrics_file and not (started_at and ended_at):  # the result says when its bench ran
        from_result = result_times(spec.metrics_file)
        started_at, ended_at = started_at or from_result[0], ended_at or from_result[1]
    facts = RunFacts(
        status=spec.status,
        source="manual",
        metrics=read_metrics(spec.metrics_file) if spec.metrics_file else {},
        log=read_log(spec.log_file) if spec.log_file else None,
        root_cause=RootCause(category, message) if (category or message) else None,
        notes=spec.notes,
        notes_sep="\n",
        started_at=started_at,
        ended_at=ended_at,
        image=image,
        image_digest=digest,
        model_sha=spec.model_sha,
        draft_sha=spec.draft_sha,
        corrects=spec.corrects,
        supersedes=spec.supersedes,
    )
    return new_run(loaded, compiled_script(loaded), facts)
