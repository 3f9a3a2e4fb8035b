"""The ``autobench`` command line: a thin, lazily loaded click group.

Each command lives in its own module under ``autobench.cli`` and is imported only
when it runs, so ``autobench --help`` and ``compile`` never pay for huggingface_hub,
SQLAlchemy or the bench client.  ``COMMANDS`` maps a command name to ``module:attribute``
and the one-line summary shown by ``--help`` (kept here so help needs no imports).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import click

from autobench import __version__
from autobench.errors import AutobenchError

COMMANDS: dict[str, tuple[str, str]] = {
    "validate": (
        "autobench.cli.recipe_cmds:validate",
        "Check recipes (files or folders) against the schema and the AB rules.",
    ),
    "init": ("autobench.cli.init_cmds:init", "Write a new, valid, commented recipe at PATH from flags or questions."),
    "recipes": (
        "autobench.cli.catalogue_cmds:recipes",
        "List the catalogue: each recipe's model, draft, pins and last run.",
    ),
    "tour": (
        "autobench.cli.tour_cmds:tour",
        "Run a bundled recipe end to end against the synthetic server standing in for vLLM.",
    ),
    "compile": (
        "autobench.cli.recipe_cmds:compile_",
        "Compile RECIPE into a bash script, or Kubernetes manifests with --target k8s (stdout, or -o FILE).",
    ),
    "schema": (
        "autobench.cli.recipe_cmds:schema",
        "Print the JSON Schema of a recipe (for yaml-language-server / editors).",
    ),
    "import": (
        "autobench.cli.import_cmds:import_",
        "Convert peer recipes and deployment files into autobench recipes.",
    ),
    "variants": (
        "autobench.cli.matrix_cmds:variants",
        "List the cells of RECIPE: base and each variant, times each role.",
    ),
    "lock": (
        "autobench.cli.hub_cmds:lock",
        "Pin the model, tokenizer and draft revisions of RECIPES to commit shas, the image to a digest.",
    ),
    "outdated": (
        "autobench.cli.hub_cmds:outdated",
        "Show pins whose branch or image tag has moved upstream, with the config changes.",
    ),
    "hub": ("autobench.cli.hub_cmds:hub", "Inspect Hub repositories (trust facts)."),
    "bench": (
        "autobench.cli.bench_cmds:bench",
        "Benchmark an OpenAI-compatible streaming server (closed loop or Poisson arrivals).",
    ),
    "synthetic-server": (
        "autobench.cli.bench_cmds:synthetic_server",
        "Serve a fake OpenAI-compatible streaming model with known timings (a vllm serve stand-in).",
    ),
    "preflight": (
        "autobench.cli.preflight_cmds:preflight",
        "Predict the KV-cache layout of RECIPE's boot, and whether it fails, from configs alone.",
    ),
    "preflight-report": (
        "autobench.cli.preflight_report_cmds:preflight_report",
        "Compare each run's stored preflight prediction with the boot facts its log printed.",
    ),
    "run": ("autobench.cli.run_cmds:run", "Run a recipe end to end and record the outcome in the ledger."),
    "experiment": (
        "autobench.cli.experiment_cmds:experiment",
        "Plan experiments across boots: factors over recipe keys, one boot per treatment.",
    ),
    "logs": ("autobench.cli.logs_cmds:logs", "Read vLLM server logs: boot facts, runtime stats, root causes."),
    "nodes": (
        "autobench.cli.nodes_cmds:nodes",
        "Show or stop what a multi-node recipe runs on its nodes, and which run holds them.",
    ),
    "k8s": (
        "autobench.cli.k8s_cmds:k8s",
        "Bring a Kubernetes bench Job's result (compile --target k8s) into the ledger.",
    ),
    "record": ("autobench.cli.ledger_cmds:record", "Append a run of RECIPE (a recipe file) to the ledger by hand."),
    "ledger": ("autobench.cli.ledger_cmds:ledger", "List, show, export, verify, push and pull the run ledger."),
    "history": (
        "autobench.cli.ledger_cmds:history",
        "Run history grouped per draft revision, model revision or recipe digest.",
    ),
    "compare": (
        "autobench.cli.ledger_cmds:compare",
        "Compare RUN_A and RUN_B side by side: ratios B/A, then a verdict per cell and metric.",
    ),
    "regress": (
        "autobench.cli.regress_cmds:regress",
        "Exit 1 when CURRENT is slower than BASELINE beyond the threshold and the noise band.",
    ),
    "replay": (
        "autobench.cli.replay_cmds:replay",
        "Print the exact script RUN ran (an id, #id or a row-hash prefix), from the ledger's snapshot.",
    ),
    "report": (
        "autobench.cli.report_cmds:report",
        "Render the page of each RECIPE (a name or a recipe file) from the ledger.",
    ),
}


def _available(name: str) -> bool:
    module = COMMANDS[name][0].split(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if _available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not _available(cmd_name):
            return None
        module_name, attr = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command), COMMANDS[cmd_name][0]
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            raise click.UsageError(_unknown_command(name, self.list_commands(ctx)) or exc.message, ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autobench")
def cli() -> None:
    """Reproducible benchmarks of LLM serving recipes.

    Recipes (YAML) are validated, pinned to exact Hub commits, compiled into
    shell-safe scripts, run, recorded in an append-only ledger and reported.
    """


def _unknown_command(name: str, known: list[str]) -> str | None:
    """``No such command 'valdate'. Did you mean 'validate'?`` (None when ``name`` is no command word)."""
    import difflib

    from autobench.escape import human

    if not name or name.startswith("-"):
        return None
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
    message = f"No such command {human(name)!r}."
    if close:
        message += " Did you mean " + " or ".join(repr(c) for c in close) + "?"
    return message


def _one_line(text: str) -> str:
    from autobench.escape import human

    return human(" ".join(text.split()))


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turn every expected error into one line."""
    try:
        # Without standalone mode click returns ctx.exit(code)'s code (or the command's
        # return value) instead of calling sys.exit: pass an integer through.
        rv = cli.main(args=argv, prog_name="autobench", standalone_mode=False)
    except AutobenchError as exc:
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare group: its help, as --help prints it
        click.echo(exc.ctx.get_help() if exc.ctx is not None else "")
        return 0
    except click.UsageError as exc:  # bad command line: one line, like every other bad input
        command = exc.ctx.command_path if exc.ctx is not None else "autobench"
        click.echo(f"error: {_one_line(exc.format_message())} (hint: see `{command} --help`)", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"error: {_one_line(exc.format_message())}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, and the traceback on request
        if os.environ.get("AUTOBENCH_TRACEBACK"):
            raise
        click.echo(
            f"internal error: {type(exc).__name__}: {_one_line(str(exc))} "
            "(this is a bug in autobench; rerun with AUTOBENCH_TRACEBACK=1 and report it)",
            err=True,
        )
        return 70
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
