"""Small formatting helpers shared by the doc-table renderers."""

from __future__ import annotations


def table(head: list[str], rows: list[list[str]]) -> str:
    """A markdown table (header, separator, rows), newline-terminated."""
    line = lambda cells: "| " + " | ".join(cells) + " |\n"   # noqa: E731
    return line(head) + "|" + "---|" * len(head) + "\n" + "".join(map(line, rows))


def fixed(v: float | None, digits: int = 3) -> str:
    """`v` with `digits` decimals; "n/a" for a value that is not defined (None)."""
    return "n/a" if v is None else f"{v:.{digits}f}"


def sig(v: float, digits: int = 4) -> str:
    """`v` to `digits` significant digits (0.0 prints as 0)."""
    return f"{v:.{digits}g}"


def thousands(v: float) -> str:
    """`v` rounded to an integer, with thousands separators."""
    return f"{round(v):,}"
