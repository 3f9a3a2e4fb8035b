"""CLI: ``validate``, ``compile``, ``schema`` (thin wrappers over autobench.recipe / compile)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from autobench.cli.options import gpu_request_option, json_option, print_json
from autobench.errors import RecipeError, UsageError


def recipe_files(paths: tuple[str, ...]) -> list[Path]:
    """Files as given; folders expanded to their *.yaml / *.yml files (recursively, sorted)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise UsageError(f"no *.yaml or *.yml files under {path}", hint="pass recipe files or folders")
            out.extend(found)
        else:
            out.append(path)
    return out


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. unpinned revisions) as errors.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--no-preflight", is_flag=True, help="Skip the KV-cache preflight (it runs when the configs are in the HF cache)."
)
@click.option(
    "--profile",
    type=click.Path(),
    default=None,
    metavar="FILE",
    help="A bench profile merged onto each recipe's bench first (as `run --profile`; docs/recipes.md).",
)
@click.option(
    "--runtime",
    type=click.Choice(["docker", "process"]),
    default="docker",
    show_default=True,
    help="Validate for this runtime: process (`run --runtime process`) skips the container rules "
    "(AB022 published port, AB050-AB053, AB075 local model directory not mounted).",
)
@json_option("Same as --format json.")
def validate(
    paths: tuple[str, ...],
    strict: bool,
    fmt: str,
    no_preflight: bool,
    profile: str | None,
    runtime: str,
    as_json: bool,
) -> None:
    """Check recipes (files or folders) against the schema and the AB rules.

    Prints one line per finding, `file:line:col: CODE severity: message (hint: fix)`,
    and exits 2 if any finding is an error.
    """
    from autobench.recipe.validate import ExtraCheck, validate_paths

    extra: ExtraCheck | None = None
    if not no_preflight:
        from autobench.preflight.findings import check as preflight_check

        extra = preflight_check

    fmt = "json" if as_json else fmt
    # the environment's secret values must not be written in a recipe (AB030)
    results = validate_paths(
        recipe_files(paths),
        strict=strict,
        env=os.environ,
        extra=extra,
        profile=Path(profile) if profile else None,
        runtime=runtime,
    )
    # A finding in a parent recipe shows up again through every recipe that extends it:
    # print and count it once.
    findings = list({f.text(): f for _, fs in results for f in fs}.values())
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    if fmt == "json":
        payload = {
            "files": [{"file": str(p), "findings": [f.as_dict() for f in fs]} for p, fs in results],
            "errors": errors,
            "warnings": warnings,
        }
        print_json(payload)
    else:
        for finding in findings:
            click.echo(finding.text())
        if not errors:
            click.echo(f"{len(results)} file(s): 0 errors, {warnings} warning(s)", err=True)
    if errors:  # one line on stderr, exit code 2 (RecipeError)
        raise RecipeError(
            f"{errors} error(s) in {sum(any(f.severity == 'error' for f in fs) for _, fs in results)} "
            f"of {len(results)} recipe file(s)",
            hint="fix the findings above" if fmt == "text" else "see the JSON findings",
        )


@click.command(name="compile")
@click.argument("recipe", type=click.Path())
@click.option(
    "--target",
    type=click.Choice(["full", "serve", "bench", "slurm", "k8s"]),
    default="full",
    show_default=True,
    help="full: serve + wait + bench + teardown; serve: start and wait only; bench: bench only; "
    "slurm: an sbatch script (docs/slurm.md); k8s: Kubernetes manifests (docs/k8s.md).",
)
@click.option(
    "-o", "--output", type=click.Path(), help="Write the script here (mode 755); a folder for a multi-node recipe."
)
@click.option(
    "--frozen",
    is_flag=True,
    help="Refuse any model/tokenizer/draft revision that is not a full sha, and an image without a digest.",
)
@click.option("--partition", default=None, help="slurm: #SBATCH --partition.")
@click.option(
    "--gpus-per-node",
    type=click.IntRange(min=0),
    default=None,
    help="slurm: GPUs per node (default: topology.gpus_per_node, else TP x PP x DP over the nodes; 0: request none).",
)
@gpu_request_option
@click.option("--account", default=None, help="slurm: #SBATCH --account.")
@click.option("--time", "time_limit", default=None, help="slurm: #SBATCH --time (default: boot + bench cap + 5 min).")
@click.option(
    "--container",
    type=click.Choice(["none", "docker", "pyxis", "apptainer"]),
    default="none",
    show_default=True,
    help="slurm: how the node runs the server: none (the serve command on the node), docker, "
    "pyxis (srun --container-image) or apptainer.",
)
@click.option("--run-id", default=None, help="k8s: the autobench.dev/run-id label (default: a new random id).")
@click.option("--namespace", default=None, help="k8s: metadata.namespace of every object.")
@click.option(
    "--secret",
    "secret_name",
    default="autobench-secrets",
    show_default=True,
    help="k8s: the Secret holding the secrets.",
)
@click.option("--hf-cache-pvc", default=None, help="k8s: a PVC for the Hugging Face cache (default: an emptyDir).")
@click.option("--bench-image", default=None, help="k8s: the bench Job's image (default: autobench:VERSION).")
@click.option("--max-nodes", type=click.IntRange(min=1), default=None, help="k8s: refuse recipes needing more nodes.")
@click.option("--cpu", default=None, metavar="QUANTITY", help="k8s: the server pods' CPU request (e.g. 16).")
@click.option("--memory", default=None, metavar="QUANTITY", help="k8s: the server pods' memory request (e.g. 64Gi).")
@click.option(
    "--node-selector",
    multiple=True,
    metavar="KEY=VALUE",
    help="k8s: schedule the server pods on nodes with this label (repeatable).",
)
@click.option(
    "--toleration",
    multiple=True,
    metavar="KEY[=VALUE][:EFFECT]",
    help="k8s: let the server pods run on nodes with this taint (repeatable), e.g. nvidia.com/gpu:NoSchedule.",
)
@click.option(
    "--variant",
    "cell",
    default=None,
    metavar="CELL",
    help="A cell of the recipe's variants/roles: VARIANT, ROLE or VARIANT/ROLE (see `autobench variants`).",
)
@click.option(
    "--hosts",
    default=None,
    metavar="HEAD,WORKER,...",
    help="Multi-node: the hosts, head first (overrides topology.hosts).",
)
@click.option(
    "--remote",
    default=None,
    metavar="CMD",
    help="Multi-node: how the driver reaches a host [default: ssh -o BatchMode=yes; env AUTOBENCH_REMOTE at run time].",
)
@click.option(
    "--profile",
    type=click.Path(dir_okay=False),
    default=None,
    help="A bench profile merged onto the recipe's bench (as `run --profile`; docs/recipes.md).",
)
def compile_(
    recipe: str,
    target: str,
    output: str | None,
    frozen: bool,
    partition: str | None,
    gpus_per_node: int | None,
    gpu_request: str,
    account: str | None,
    time_limit: str | None,
    container: str,
    run_id: str | None,
    namespace: str | None,
    secret_name: str,
    hf_cache_pvc: str | None,
    bench_image: str | None,
    max_nodes: int | None,
    cpu: str | None,
    memory: str | None,
    node_selector: tuple[str, ...],
    toleration: tuple[str, ...],
    cell: str | None,
    hosts: str | None,
    remote: str | None,
    profile: str | None = None,
) -> None:
    """Compile RECIPE into a bash script, or Kubernetes manifests with --target k8s (stdout, or -o FILE).

    A multi-node recipe (topology.nodes > 1) compiles into a folder (-o DIR): node-K.sh per
    node and driver.sh, which starts, waits for, benches and tears down the whole cluster.
    """
    from autobench.compile import check_frozen, compile_recipe
    from autobench.recipe.loader import load_recipe
    from autobench.recipe.rules import check

    loaded = load_recipe(recipe, cell, profile=profile)
    if target == "slurm":
        from autobench.compile.slurm import compile_slurm

        if frozen:
            check_frozen(loaded)
        script = compile_slurm(
            loaded,
            partition=partition,
            account=account,
            time_limit=time_limit,
            container=container,
            gpus_per_node=gpus_per_node,
            gpu_request=gpu_request,
        )
    elif target == "k8s":
        import uuid

        from autobench.compile.k8s import compile_k8s, placement

        if frozen:
            check_frozen(loaded)
        script = compile_k8s(
            loaded,
            run_id=run_id or uuid.uuid4().hex,
            namespace=namespace,
            secret=secret_name,
            hf_cache_pvc=hf_cache_pvc,
            bench_image=bench_image,
            max_nodes=max_nodes,
            where=placement(cpu=cpu, memory=memory, node_selector=node_selector, tolerations=toleration),
        )
    elif loaded.recipe.topology.nodes > 1 or hosts:
        _compile_cluster(loaded, output, frozen, hosts, remote)
        return
    else:
        script = compile_recipe(loaded, target, frozen=frozen)
    for finding in check(loaded):
        if finding.severity == "warning":
            click.echo(finding.text(), err=True)
    if output is None:
        click.echo(script, nl=False)
        return
    _write_atomic(Path(output), script)
    click.echo(f"wrote {output}", err=True)


def _compile_cluster(loaded: object, output: str | None, frozen: bool, hosts: str | None, remote: str | None) -> None:
    from autobench.compile import check_frozen
    from autobench.compile.cluster import compile_cluster
    from autobench.recipe.rules import check

    if frozen:
        check_frozen(loaded)  # type: ignore[arg-type]
    host_list = [h.strip() for h in hosts.split(",")] if hosts else None
    files = compile_cluster(loaded, host_list, remote)  # type: ignore[arg-type]
    if output is None:
        raise UsageError(
            f"a multi-node recipe compiles into {len(files)} scripts: give a folder with -o DIR",
            hint="e.g. autobench compile RECIPE -o cluster/",
        )
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder", hint="give a folder for the node scripts")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {folder}: {exc.strerror or exc}", hint="check the path") from exc
    for finding in check(loaded):  # type: ignore[arg-type]
        if finding.severity == "warning":
            click.echo(finding.text(), err=True)
    for name, text in sorted(files.items()):
        _write_atomic(folder / name, text)
    click.echo(f"wrote {', '.join(sorted(files))} to {folder}", err=True)


def _write_atomic(path: Path, text: str) -> None:
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}", hint="check the folder exists") from exc


@click.command()
def schema() -> None:
    """Print the JSON Schema of a recipe (for yaml-language-server / editors)."""
    from autobench.recipe.schema import schema_json

    sys.stdout.write(schema_json())
