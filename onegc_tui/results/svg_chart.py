"""Small static SVG charts for the HTML report: lines (step or straight), shaded bands, axes
with ticks, a legend, and stacked horizontal bars. Text goes through :func:`html.escape`; the
output is a string of inline SVG that needs no script, font or file from anywhere."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
Point = tuple[float, float]


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point]
    color: str
    dashed: bool = False
    step: bool = True  # right-continuous steps (a best-so-far) rather than straight segments
    band: Sequence[tuple[float, float, float]] = ()  # (x, lo, hi)
    width: float = 2.0
    markers: bool = False


def _fmt(x: float) -> str:
    return f"{x:.1f}"


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _tick_text(v: float) -> str:
    return f"{v:.3g}"


def line_chart(series: Sequence[Series], *, title: str, x_label: str, y_label: str,
               x_range: tuple[float, float] | None = None, width: int = 560, height: int = 300) -> str:
    """A chart of ``series`` (with their bands); the y range fits the data with a margin."""
    left, right, top, bottom = 64, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points] + [b[0] for s in series for b in s.band]
    ys = [y for s in series for _, y in s.points] + [v for s in series for b in s.band for v in b[1:]]
    ys = [y for y in ys if math.isfinite(y)]
    x0, x1 = x_range if x_range else ((min(xs), max(xs)) if xs else (0.0, 1.0))
    if x1 <= x0:
        x1 = x0 + 1.0
    y0, y1 = (min(ys), max(ys)) if ys else (0.0, 1.0)
    pad = (y1 - y0) * 0.08 or (abs(y0) * 0.05 or 0.5)
    y0, y1 = y0 - pad, y1 + pad

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    named = [s for s in series if s.name]
    full = height + 14 * len(named)  # the legend goes under the plot, never over the lines
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{full}" '
           f'viewBox="0 0 {width} {full}" role="img" aria-label="{html.escape(title)}" class="chart">',
           f'<text x="{left}" y="18" class="t">{html.escape(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#bbb"/>']
    for t in _nice_ticks(y0, y1):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{_fmt(py(t))}" y2="{_fmt(py(t))}" stroke="#e4e4e4"/>'
                   f'<text x="{left - 6}" y="{_fmt(py(t) + 4)}" text-anchor="end" class="k">{_tick_text(t)}</text>')
    for t in _nice_ticks(x0, x1):
        out.append(f'<line x1="{_fmt(px(t))}" x2="{_fmt(px(t))}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#888"/>'
                   f'<text x="{_fmt(px(t))}" y="{top + ph + 16}" text-anchor="middle" class="k">{_tick_text(t)}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle" class="k">{html.escape(x_label)}</text>')
    out.append(f'<text x="14" y="{top + ph / 2}" text-anchor="middle" class="k" '
               f'transform="rotate(-90 14 {top + ph / 2})">{html.escape(y_label)}</text>')
    for s in series:
        band = [b for b in s.band if all(math.isfinite(v) for v in b)]
        if len(band) >= 2:
            upper = " ".join(f"{_fmt(px(x))},{_fmt(py(hi))}" for x, _, hi in band)
            lower = " ".join(f"{_fmt(px(x))},{_fmt(py(lo))}" for x, lo, _ in reversed(band))
            out.append(f'<polygon points="{upper} {lower}" fill="{s.color}" fill-opacity="0.15" stroke="none"/>')
        pts = [(x, y) for x, y in s.points if math.isfinite(y)]
        if not pts:
            continue
        coords: list[Point] = []
        for i, (x, y) in enumerate(pts):
            if s.step and i:
                coords.append((x, pts[i - 1][1]))
            coords.append((x, y))
        if s.step and x_range and coords[-1][0] < x1:
            coords.append((x1, coords[-1][1]))
        path = " ".join(f"{_fmt(px(x))},{_fmt(py(y))}" for x, y in coords)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{s.color}" stroke-width="{s.width}"{dash}/>')
        if s.markers:
            out += [f'<circle cx="{_fmt(px(x))}" cy="{_fmt(py(y))}" r="2.5" fill="{s.color}"/>' for x, y in pts]
    ly = height + 2
    for s in named:
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<line x1="{left + 8}" x2="{left + 28}" y1="{ly + 6}" y2="{ly + 6}" stroke="{s.color}" '
                   f'stroke-width="2"{dash}/><text x="{left + 32}" y="{ly + 10}" class="k">{html.escape(s.name)}</text>')
        ly += 14
    out.append("</svg>")
    return "".join(out)


def stacked_bar(parts: Sequence[tuple[str, float, str]], *, total: float | None = None, width: int = 360,
                height: int = 16) -> str:
    """One horizontal bar split into ``parts`` (label, value, colour), each titled with its value."""
    whole = total if total else sum(v for _, v, _ in parts)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" class="bar">']
    x = 0.0
    for label, v, color in parts:
        w = width * v / whole if whole > 0 else 0.0
        if w > 0:
            out.append(f'<rect x="{_fmt(x)}" y="0" width="{_fmt(w)}" height="{height}" fill="{color}">'
                       f'<title>{html.escape(label)}: {v:.1f} s</title></rect>')
        x += w
    if whole <= 0:
        out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="#eee"/>')
    out.append("</svg>")
    return "".join(out)


__all__ = ["PALETTE", "Series", "line_chart", "stacked_bar"]
