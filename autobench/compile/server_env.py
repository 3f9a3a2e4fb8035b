"""How a recipe's environment reaches the server in a compiled shell script.

The recipe names two kinds of variables: ``env:`` (plain values, written into the script) and
``secrets:`` (names only: the value comes from the environment the script runs in, never from
the script).  Every target carries both:

- docker (``compile --target full``, the cluster's node scripts): ``docker run --env NAME``
  for a secret (docker copies the caller's value) and ``--env NAME=VALUE`` for a plain one
  (``autobench.compile.argv.docker_lines``);
- the process runtime's ``server.sh`` and the Slurm job: :func:`export_lines`, one
  ``export NAME=VALUE`` per plain variable (the value a shell word of the one quoting path;
  the names are shell names, rule AB033), the secrets already in the environment;
- Kubernetes: ``env:`` entries, the secrets as ``secretKeyRef`` (``autobench.compile.k8s``).

A container runtime may still shadow what the job exports with the image's own values; the
Slurm modes name the variables to it (:func:`slurm_env_body`, :func:`pyxis_env_option`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from autobench.compile.quoting import Word, shell_word

if TYPE_CHECKING:
    from autobench.recipe.schema import Recipe

#: Apptainer sets ``NAME`` inside the container from a host variable ``APPTAINERENV_NAME``.
APPTAINER_PREFIX = "APPTAINERENV_"


def export_lines(env: Mapping[str, object]) -> list[str]:
    """``export NAME=VALUE`` for each plain variable, in the recipe's order."""
    return [f"export {name}={shell_word(str(value))}" for name, value in env.items()]


def server_env_names(recipe: Recipe) -> list[str]:
    """Every variable the server must see: the secrets (by name), then the plain ``env:``."""
    return [*recipe.secrets, *(name for name in recipe.env if name not in recipe.secrets)]


def slurm_env_body(recipe: Recipe, mode: str) -> list[str]:
    """The lines of the Slurm job's ``serve_env`` function (run in the server's own subshell,
    before ``exec``): the recipe's plain env exported, so it reaches the server and not the
    bench.  ``srun`` steps get it too (they are started with ``--export=ALL``: "all of the
    user's environment will be loaded", https://slurm.schedmd.com/srun.html#OPT_export).

    - ``none``: the server is a child of this shell; the exports are enough.
    - ``docker``: nothing here: ``docker run`` carries ``--env NAME=VALUE`` / ``--env SECRET``.
    - ``pyxis``: the exports, and :func:`pyxis_env_option` names them to pyxis.
    - ``apptainer``: the exports, and ``APPTAINERENV_NAME="${NAME}"`` for every variable, secrets
      included (by name: the value is read from the job's environment when the step starts).
      Apptainer passes most host variables into the container, but "an environment variable set
      on the host will not override a variable of the same name that has been set inside the
      container image", none pass with ``--cleanenv``, and ``PATH`` / ``LD_LIBRARY_PATH`` are
      reset; ``APPTAINERENV_`` / ``--env`` variables are injected last, "so they can override or
      modify any previous values" (Apptainer user guide, "Environment and Metadata":
      https://apptainer.org/docs/user/main/environment_and_metadata.html).  A value on
      apptainer's own command line (``--env NAME=VALUE``) would put a secret in the argv.
    """
    if mode == "docker":
        return []
    lines = export_lines(recipe.env)
    if mode == "apptainer":
        lines += [f'export {APPTAINER_PREFIX}{name}="${{{name}}}"' for name in server_env_names(recipe)]
    return lines


def pyxis_env_option(recipe: Recipe) -> list[Word]:
    """``--container-env=NAME,...`` for ``srun --container-image``: pyxis sets "all exported host
    environment variables ... in the container after the entrypoint is run, but their existing
    values in the image take precedence; the variables specified with this flag are preserved
    from the host and set before the entrypoint runs" (pyxis's srun --help,
    https://github.com/NVIDIA/pyxis/wiki/Usage; pyxis's tests/env.bats: an exported CUDA_VERSION
    loses to the image's until it is named in --container-env).  Names only: the values stay in
    the job's environment.  Empty when the recipe names no variable."""
    names = server_env_names(recipe)
    return [Word("--container-env=" + ",".join(names))] if names else []
