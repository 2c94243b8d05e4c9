"""Charts as inline SVG, drawn on the server: no chart library, nothing fetched at run
time, and the page's Content-Security-Policy needs no exception. Every label goes
through markupsafe's escape."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

# two series side by side (A, B) and the budget slots P0..P4
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d")


def grouped_bars(
    groups: Sequence[tuple[str, Sequence[float | None]]],
    series: Sequence[str],
    *,
    title: str,
    maximum: float = 1.0,
    percent: bool = True,
) -> Markup:
    """A horizontal bar chart: one row of bars per group (one bar per series), values in
    0..MAXIMUM (None: not measured, drawn as a dash)."""
    bar, gap, label_w, width = 14, 10, 170, 560
    plot = width - label_w - 60
    row_h = bar * len(series) + gap
    height = 34 + row_h * len(groups) + 22
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    ]
    for i, name in enumerate(series):  # the legend
        x = label_w + i * 150
        out.append(
            f'<rect x="{x}" y="6" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>'
            f'<text x="{x + 16}" y="16" class="legend">{escape(name)}</text>'
        )
    for g, (name, values) in enumerate(groups):
        y0 = 30 + g * row_h
        out.append(
            f'<text x="{label_w - 8}" y="{y0 + row_h / 2}" text-anchor="end" '
            f'class="label">{escape(_cut(name, 26))}</text>'
        )
        for s, value in enumerate(values):
            y = y0 + s * bar
            if value is None:
                out.append(f'<text x="{label_w + 4}" y="{y + bar - 3}" class="value">–</text>')
                continue
            w = max(0.0, min(1.0, value / maximum if maximum else 0.0)) * plot
            shown = f"{value:.0%}" if percent else f"{value:g}"
            out.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar - 2}" '
                f'fill="{COLORS[s % len(COLORS)]}"><title>{escape(name)} · '
                f"{escape(series[s])}: {escape(shown)}</title></rect>"
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar - 3}" class="value">'
                f"{escape(shown)}</text>"
            )
    out.append("</svg>")
    return Markup("".join(out))


def budget_bar(slots: Sequence[tuple[str, int]], budget: int, total: int | None = None) -> Markup:
    """One stacked bar of the token budget: each slot's share, then what is left. TOTAL:
    the prompt's tokens (default the slots' sum)."""
    width, height, top = 560, 64, 8
    used = sum(t for _, t in slots) if total is None else total
    scale = width / max(budget, used, 1)
    x = 0.0
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{used} of {budget} tokens</title>"
        f'<rect x="0" y="{top}" width="{width}" height="26" fill="#eee"/>'
    ]
    for i, (name, tokens) in enumerate(slots):
        w = tokens * scale
        share = tokens / budget if budget else 0.0
        out.append(
            f'<rect x="{x:.1f}" y="{top}" width="{w:.1f}" height="26" '
            f'fill="{COLORS[i % len(COLORS)]}"><title>{escape(name)}: {tokens} tokens '
            f"({share:.0%} of the budget)</title></rect>"
        )
        if w > 30:
            out.append(f'<text x="{x + 4:.1f}" y="{top + 17}" class="inbar">{escape(name)}</text>')
        x += w
    out.append(
        f'<text x="0" y="{top + 48}" class="value">{used} of {budget} tokens '
        f"({used / budget if budget else 0:.0%})</text></svg>"
    )
    return Markup("".join(out))


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
