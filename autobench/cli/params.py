"""Click parameter types shared by the commands.

``Finite``: a float option that refuses ``nan`` and ``inf`` (Python's ``float()`` reads
both, and a range check cannot catch NaN: every comparison with it is false).  Every
float option of autobench uses it, so no non-finite value reaches a request body,
a timer or a result.
"""

from __future__ import annotations

import math
from typing import Any

import click


class Finite(click.FloatRange):
    """A finite float, optionally within a range (the arguments of ``click.FloatRange``)."""

    name = "finite float"

    def _describe_range(self) -> str:
        """No range in the help when there is none (click printed ``[x<=None]``)."""
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, float)):
            try:
                f = float(value)
            except ValueError:
                f = 0.0  # not a number at all: FloatRange says so
            if not math.isfinite(f):
                self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(value, param, ctx)
