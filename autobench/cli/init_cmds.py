"""``autobench init PATH``: write a new, valid, commented recipe from flags (or questions)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from autobench.errors import UsageError


def _ask(label: str, default: str | None = None) -> str:
    value = click.prompt(label, default=default, show_default=default is not None)
    return str(value).strip()


def _ask_count(label: str, default: int) -> int:
    return int(click.prompt(label, default=default, type=click.IntRange(min=1)))


def _schema_ref(target: Path) -> str | None:
    """The committed JSON Schema relative to the recipe's folder, when the recipe is in a checkout."""
    folder = target.resolve().parent
    for parent in (folder, *folder.parents):
        schema = parent / "schema" / "recipe.schema.json"
        if schema.is_file():
            return os.path.relpath(schema, folder)
    return None


@click.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--model", default=None, metavar="OWNER/NAME", help="The served model's Hub repo id.")
@click.option("--revision", default="main", show_default=True, help="Model revision (`autobench lock` pins it).")
@click.option("--image", default=None, metavar="IMAGE", help="Container image [default: vllm/vllm-openai:latest].")
@click.option("--name", default=None, help="Recipe name [default: the file name without .yaml].")
@click.option("--served-name", default=None, help="--served-model-name [default: the recipe name].")
@click.option(
    "--speculative",
    default=None,
    metavar="METHOD",
    help="Speculative method (dflash, eagle3, mtp, ngram, ...); 'none' for none [default: none].",
)
@click.option("--draft", default=None, metavar="OWNER/NAME", help="Draft model repo id (for dflash, eagle, ...).")
@click.option("--draft-revision", default=None, help="Draft revision [default: main; pin it].")
@click.option("--num-speculative-tokens", type=click.IntRange(1, 64), default=5, show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--max-model-len", type=click.IntRange(min=2), default=8192, show_default=True)
@click.option("--concurrency", type=click.IntRange(min=1), default=None, help="Bench concurrency [default: 8].")
@click.option("--num-prompts", type=click.IntRange(min=1), default=None, help="Bench requests [default: 200].")
@click.option("--input-len", type=click.IntRange(min=1), default=1024, show_default=True, help="Prompt tokens.")
@click.option("--output-len", type=click.IntRange(min=1), default=256, show_default=True, help="Output tokens.")
@click.option(
    "--no-input",
    is_flag=True,
    help="Never ask: fail on a missing --model instead (the default when stdin is not a terminal).",
)
def init(
    path: str,
    model: str | None,
    revision: str,
    image: str | None,
    name: str | None,
    served_name: str | None,
    speculative: str | None,
    draft: str | None,
    draft_revision: str | None,
    num_speculative_tokens: int,
    port: int,
    max_model_len: int,
    concurrency: int | None,
    num_prompts: int | None,
    input_len: int,
    output_len: int,
    no_input: bool,
) -> None:
    """Write a new, valid, commented recipe at PATH from flags or questions.

    Values come from the options; on a terminal autobench asks for the model, image,
    speculative method, draft and bench size that were not given.  An existing PATH is
    never overwritten.
    """
    from autobench.escape import human
    from autobench.recipe.new import SPEC_NEEDS_DRAFT, NewRecipe, check_answers, default_name, recipe_text

    target = Path(path)
    if target.exists() or target.is_symlink():
        raise UsageError(
            f"{human(path)} already exists; autobench init never overwrites a file",
            hint="choose another path, or edit the existing recipe",
        )
    if not target.parent.is_dir():
        raise UsageError(f"folder {human(str(target.parent))} does not exist", hint="create it first (mkdir -p)")
    ask = not no_input and sys.stdin.isatty()
    if model is None:
        if not ask:
            raise UsageError("--model is required", hint="e.g. autobench init recipes/x.yaml --model Qwen/Qwen3-8B")
        model = _ask("Model (Hub repo id, owner/name)")
    if image is None:
        image = _ask("Container image", "vllm/vllm-openai:latest") if ask else "vllm/vllm-openai:latest"
    if speculative is None and ask:
        speculative = _ask("Speculative method (none, dflash, eagle3, mtp, ngram, ...)", "none")
    if speculative is not None and speculative.lower() in ("", "none"):
        speculative = None
    if speculative in SPEC_NEEDS_DRAFT and draft is None and ask:
        draft = _ask("Draft model (owner/name)")
        if draft_revision is None:
            draft_revision = _ask("Draft revision (pin a commit sha)", "main")
    if concurrency is None:
        concurrency = _ask_count("Bench concurrency", 8) if ask else 8
    if num_prompts is None:
        num_prompts = _ask_count("Bench requests", 200) if ask else 200
    stem = target.name.removesuffix(".yaml").removesuffix(".yml")
    answers = NewRecipe(
        name=name or (default_name(stem) if stem else default_name(model)),
        model=model,
        image=image,
        revision=revision,
        served_name=served_name,
        speculative=speculative,
        draft=draft,
        draft_revision=draft_revision,
        num_speculative_tokens=num_speculative_tokens,
        port=port,
        max_model_len=max_model_len,
        concurrency=max(1, concurrency),
        num_prompts=max(1, num_prompts),
        input_len=input_len,
        output_len=output_len,
        schema_ref=_schema_ref(target),
    )
    check_answers(answers)
    text = recipe_text(answers)
    try:
        with open(target, "x", encoding="utf-8") as fh:  # "x": never overwrite, even in a race
            fh.write(text)
    except FileExistsError:
        raise UsageError(f"{human(path)} already exists; autobench init never overwrites a file") from None
    except OSError as exc:
        raise UsageError(f"cannot write {human(path)}: {exc.strerror}") from None
    click.echo(human(f"wrote {path}  (next: autobench validate {path}; autobench lock {path})"))
