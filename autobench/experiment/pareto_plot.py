"""The Pareto plot of one bench cell of an experiment, as SVG text (no plotting library).

Output tok/s per GPU (up) against a latency (right; lower is better, TPOT or TTFT as chosen):
every treatment a point, the Pareto front joined and drawn in colour, the best treatment under
the SLOs ringed.  Every point is a link (``<a href>``) to its run's row on its recipe's report
page, with a tooltip (``<title>``) naming the treatment, its run and its figures; the front's
points are labelled with their treatment ids.  Both axes start at zero, like the report's plots.

Deterministic: the same points give the same bytes (fixed size, fixed number formats, points in
treatment order).  Every text passes through ``autobench.escape.xml``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from autobench.escape import xml

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 72, 24, 36, 52
OTHER, FRONT, BEST = "#9e9e9e", "#1f77b4", "#d62728"


@dataclass(frozen=True)
class PlotPoint:
    """One treatment in the plot: its id, x (the latency), y (output tok/s per GPU), the link to
    its run (None: no page to link) and the tooltip."""

    treatment: str
    x: float
    y: float
    href: str | None
    title: str
    on_front: bool = False
    best: bool = False


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Ticks from 0 to at least ``top`` at a step of 1, 2 or 5 x 10^n (about ``count`` of them)."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 12) for i in range(n + 1)]


def _tick_text(value: float) -> str:
    return f"{value:,.6g}"


def _num(value: float) -> str:
    return f"{value:.1f}"


def svg(points: Sequence[PlotPoint], *, title: str, x_label: str, y_label: str) -> str:
    """The plot as an SVG document (see the module docstring)."""
    xs = nice_ticks(max((p.x for p in points), default=0.0) * 1.05)
    ys = nice_ticks(max((p.y for p in points), default=0.0) * 1.1)
    x_top, y_top = xs[-1], ys[-1]
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + inner_w * x / x_top

    def py(y: float) -> float:
        return TOP + inner_h * (1 - y / y_top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        f"<title>{xml(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.1f}" y="20" text-anchor="middle" font-size="13">{xml(title)}</text>',
    ]
    for t in xs:
        out.append(f'<line x1="{_num(px(t))}" y1="{TOP}" x2="{_num(px(t))}" y2="{TOP + inner_h}" stroke="#eeeeee"/>')
        out.append(f'<text x="{_num(px(t))}" y="{TOP + inner_h + 16}" text-anchor="middle">{xml(_tick_text(t))}</text>')
    for t in ys:
        out.append(f'<line x1="{LEFT}" y1="{_num(py(t))}" x2="{LEFT + inner_w}" y2="{_num(py(t))}" stroke="#eeeeee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{_num(py(t) + 4)}" text-anchor="end">{xml(_tick_text(t))}</text>')
    out.append(
        f'<path d="M{LEFT},{TOP} V{TOP + inner_h} H{LEFT + inner_w}" fill="none" stroke="#333333" class="axes"/>'
    )
    out.append(
        f'<text x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">{xml(x_label)} '
        "(lower is better)</text>"
    )
    out.append(
        f'<text x="16" y="{TOP + inner_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + inner_h / 2:.1f})">{xml(y_label)}</text>'
    )
    front = sorted((p for p in points if p.on_front), key=lambda p: (p.x, -p.y))
    if len(front) > 1:
        joined = " ".join(f"{_num(px(p.x))},{_num(py(p.y))}" for p in front)
        out.append(f'<polyline points="{joined}" fill="none" stroke="{FRONT}" stroke-width="1.5" class="front"/>')
    for p in points:
        colour = FRONT if p.on_front else OTHER
        cx, cy = _num(px(p.x)), _num(py(p.y))
        shape = [f"<title>{xml(p.title)}</title>"]
        if p.best:
            shape.append(f'<circle cx="{cx}" cy="{cy}" r="8" fill="none" stroke="{BEST}" stroke-width="2"/>')
        shape.append(f'<circle cx="{cx}" cy="{cy}" r="{5 if p.on_front else 4}" fill="{colour}"/>')
        if p.on_front or p.best:
            shape.append(f'<text x="{_num(px(p.x) + 9)}" y="{_num(py(p.y) - 7)}">{xml(p.treatment)}</text>')
        body = "".join(shape)
        kind = "point front" if p.on_front else "point"
        if p.href is None:
            out.append(f'<g class="{kind}" data-treatment="{xml(p.treatment)}">{body}</g>')
        else:
            out.append(f'<a href="{xml(p.href)}" class="{kind}" data-treatment="{xml(p.treatment)}">{body}</a>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
