"""Markdown tables: the one writer of the tables in dataset cards, diagnostics and training records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[Any]], *, numeric: bool = False
) -> str:
    """A markdown table of ``rows`` (cells written with ``str``), one line each, no final newline.

    ``numeric`` right-aligns every column but the first (a row's name, then its numbers).

    Example:
        >>> print(markdown_table(["set", "score"], [["STS-B", 85.12]], numeric=True))
        | set | score |
        |---|---:|
        | STS-B | 85.12 |
    """
    rule = "|---|" + ("---:|" if numeric else "---|") * (len(header) - 1)
    return "\n".join([_line(header), rule, *(_line(row) for row in rows)])


def _line(cells: Sequence[Any]) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"
