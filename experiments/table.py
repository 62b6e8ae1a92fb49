"""Plain-text tables for the terminal and Markdown."""

from __future__ import annotations

from typing import Any, Sequence


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], markdown: bool = False) -> str:
    """Aligned columns; numbers right-aligned. ``markdown=True`` gives a GitHub table."""
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) if rows else False for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)]
        return "| " + " | ".join(parts) + " |" if markdown else "  ".join(parts).rstrip()

    out = [line(headers)]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|" if markdown else "  ".join("-" * w for w in widths))
    out += [line(r) for r in cells]
    return "\n".join(out)
