"""Options that reach a command as one typed value.

    SPECS = (opt("--grace", "grace_s", type=Finite(min=0), default=10.0, help="..."), ...)

    @option_group(SPECS, "options", build)   # build(values: dict[str, Any]) -> the typed value
    def command(..., options: RunOptions) -> None: ...

Each :class:`Spec` is what ``click.option`` takes; the command's callback gets, in place of one
parameter per option, ``dest=build({name: value})``.  A new option of the group is one new
spec (and, if it is new, the field ``build`` fills): every command that carries the group takes
it.  ``helps`` gives one command its own wording of an option's help (by parameter name).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Spec:
    """One option as ``click.option(*decls, **attrs)`` declares it."""

    decls: tuple[str, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The parameter name click gives the option (``--ready-timeout`` -> ``ready_timeout``)."""
        name = click.Option(list(self.decls), **self.attrs).name
        assert name is not None
        return name

    def option(self, **changes: Any) -> Callable[[F], F]:
        """The ``click.option`` decorator of the spec, with ``changes`` to its attributes."""
        return click.option(*self.decls, **{**self.attrs, **changes})


def opt(*decls: str, **attrs: Any) -> Spec:
    """A :class:`Spec` written as ``click.option`` is called."""
    return Spec(decls, attrs)


def option_group(
    specs: Sequence[Spec],
    dest: str,
    build: Callable[[dict[str, Any]], object],
    *,
    helps: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """A decorator: the options ``specs`` on the command, their values handed to its callback
    as the one keyword argument ``dest`` = ``build(values)`` (values by parameter name)."""
    names = [spec.name for spec in specs]
    unknown = set(helps or {}) - set(names)
    if unknown:
        raise ValueError(f"help for options not in the group: {sorted(unknown)}")

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def callback(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names}
            kwargs[dest] = build(values)
            return func(*args, **kwargs)

        # the options already declared below this decorator stay; click lists params in reverse
        callback.__click_params__ = list(getattr(func, "__click_params__", []))  # type: ignore[attr-defined]
        for spec, name in reversed(list(zip(specs, names, strict=True))):
            spec.option(**({"help": helps[name]} if helps and name in helps else {}))(callback)
        return callback  # type: ignore[return-value]

    return decorate


__all__ = ["Spec", "opt", "option_group"]
