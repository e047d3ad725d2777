"""The one line every benchmark ends with, which ``make bench`` (benchmarks/run_all.py) collects.

    RATIO <name> <value>  (<what it compares, and its target>)

A ratio always compares two things measured in the same run (the project's path and its
baseline), so that it stays meaningful on a shared, drifting machine.
"""

from __future__ import annotations

import re

PATTERN = re.compile(r"^RATIO (\S+) (\S+)(?:\s+\((.*)\))?\s*$")
"""A RATIO line: name, value, and the note in parentheses."""


def print_ratio(name: str, value: float, note: str) -> None:
    """Print the RATIO line of ``name``.

    Example:
        >>> print_ratio("mer_vs_jiwer", 3.14159, "mer_pairs speed / jiwer's; higher is better")
        RATIO mer_vs_jiwer 3.142  (mer_pairs speed / jiwer's; higher is better)
    """
    print(f"RATIO {name} {value:.3f}  ({note})", flush=True)
