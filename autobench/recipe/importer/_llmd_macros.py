"""llm-d-benchmark's own pod command and environment: the checkout's
``config/templates/jinja/_macros.j2`` rendered, never a copy of it.

``build_vllm_command(mode)`` writes the modelservice pod's ``/bin/bash -c`` script and
``build_ms_env_vars(mode)`` its container env (read at llm-d/llm-d-benchmark 8bc9f1dd).  The importer
(``_llmd``) and the conformance oracle (``benchmarks/import_conformance.py``) both call
:func:`render`, so the macros are the one source of truth for what the pod runs; what each side
still does on its own is the merge of the scenario over defaults.yaml and the reading of the
rendered script.

The environment is set up as ``llmdbenchmark/parser/render_plans.py`` ``_get_jinja_env`` sets its
own (``trim_blocks``, ``lstrip_blocks``, no trailing newline, the compact ``tojson`` filter, the
``raise`` global), but sandboxed: the file is input, read from the checkout the user names.  Its
filters that only the other macros use (``toyaml``, ``b64pad``, ``b64encode``, ``model_id_label``)
refuse when called, so a future ``build_vllm_command`` that needs one is a located refusal, not a
guess.  The file is bounded (1 MiB) and so is what it renders (1 MiB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autobench.errors import RecipeError

#: Where llm-d-benchmark keeps its macros, relative to the checkout.
MACROS = ("config", "templates", "jinja", "_macros.j2")
MAX_BYTES = 1024 * 1024
#: The macros autobench renders, each with its mode argument.
CALLS = ("build_vllm_command", "build_ms_env_vars")


def macros_file(defaults_file: Path) -> Path:
    """``_macros.j2`` of the checkout whose ``config/templates/values/defaults.yaml`` this is."""
    return defaults_file.parent.parent.joinpath(*MACROS[2:])


def _tojson(value: Any) -> str:
    """``render_plans.py`` ``_tojson_filter``: compact JSON, ``null`` for None."""
    return "null" if value is None else json.dumps(value, separators=(",", ":"))


def _is_empty(value: Any) -> bool:
    """``render_plans.py`` ``_is_empty_filter``: None, a blank string, an empty mapping or list."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (dict, list)) and not value


def _default_if_empty(value: Any, default: Any) -> Any:
    return default if _is_empty(value) else value


def render(macros: Path, values: dict[str, Any], call: str, mode: str) -> str:
    """``{{ call(mode) }}`` rendered from ``macros`` with the merged stack ``values``; every failure
    (the file missing or unreadable, its syntax, a sandboxed access, its own ``raise``) is one
    RecipeError located in the macros file."""
    from jinja2 import TemplateError, TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    if call not in CALLS or mode not in ("decode", "prefill"):
        raise ValueError(f"not a macro autobench renders: {call}({mode})")
    where = f"{macros}:1:1"
    try:
        if macros.stat().st_size > MAX_BYTES:
            raise RecipeError(f"{macros.name} is over 1 MiB", location=where, hint="check the checkout")
        text = macros.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError(
            f"llm-d-benchmark's {'/'.join(MACROS)} does not read ({type(exc).__name__})",
            location=where,
            hint="import the scenario from a whole llm-d-benchmark checkout (its macros write the pod's command)",
        ) from exc

    def refuse(message: Any = "") -> str:
        raise RecipeError(f"{macros.name}: {message}", location=where, hint="check the scenario's values")

    def unsupported(name: str) -> Any:
        def filt(*_args: Any, **_kw: Any) -> str:
            raise RecipeError(
                f"{macros.name}: {call}({mode!r}) uses the {name} filter, which autobench's import does not render",
                location=where,
                hint="render the stack's manifests (llm-d-benchmark's standup), then import the Deployment",
            )

        return filt

    env = SandboxedEnvironment(autoescape=False, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False)
    env.filters["tojson"] = _tojson
    env.filters["is_empty"] = _is_empty
    env.filters["default_if_empty"] = _default_if_empty
    for name in ("toyaml", "b64pad", "b64encode", "model_id_label"):
        env.filters[name] = unsupported(name)
    env.globals["raise"] = refuse
    model = values.get("model")
    label = model.get("shortName") if isinstance(model, dict) else None
    scope = {"model_id_label": str(label or ""), **values}
    try:
        macro = getattr(env.from_string(text).make_module(scope), call, None)
        if macro is None:
            raise RecipeError(
                f"{macros.name} defines no {call} macro", location=where, hint="check the llm-d-benchmark checkout"
            )
        out = str(macro(mode))
    except TemplateSyntaxError as exc:
        raise RecipeError(
            f"{macros.name}: {exc.message}", location=f"{macros}:{exc.lineno or 1}:1", hint="check the checkout"
        ) from exc
    except (TemplateError, ArithmeticError, TypeError, ValueError, LookupError, RecursionError) as exc:
        raise RecipeError(
            f"{macros.name}: {call}({mode!r}) does not render with this stack's values "
            f"({type(exc).__name__}: {str(exc)[:200]})",
            location=where,
            hint="check the scenario's values",
        ) from exc
    if len(out) > MAX_BYTES:
        raise RecipeError(
            f"{macros.name}: {call}({mode!r}) renders over 1 MiB",
            location=where,
            hint="a pod's command and env are a few KB: check the macros and the scenario's values",
        )
    return out
