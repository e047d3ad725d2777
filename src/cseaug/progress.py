"""Progress bars for long work (rich), one place so every stage looks the same.

Bars go to stderr and switch themselves off when stderr is not a terminal (CI logs,
Prefect workers) unless ``CSEAUG_PROGRESS=1``; ``CSEAUG_PROGRESS=0`` switches them off.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


def progress_enabled() -> bool:
    """Whether bars are drawn (see the module docstring)."""
    setting = os.environ.get("CSEAUG_PROGRESS")
    if setting is not None:
        return setting not in ("0", "false", "no", "")
    return sys.stderr.isatty()


class Bar:
    """A handle on one bar: ``advance(n)`` after each finished unit of work."""

    def __init__(self, progress: Progress | None, task_id: int | None) -> None:
        self._progress = progress
        self._task_id = task_id
        self.completed = 0

    def advance(self, n: int = 1) -> None:
        self.completed += n
        if self._progress is not None and self._task_id is not None:
            self._progress.advance(self._task_id, n)


@contextmanager
def progress_bar(description: str, total: int | None, unit: str = "items") -> Iterator[Bar]:
    """A rich progress bar on stderr for ``total`` units of work (None: unknown total).

    With ``unit="bytes"`` the bar shows sizes and the transfer speed (downloads).

    Example:
        >>> with progress_bar("Generating", total=3) as bar:
        ...     for _ in range(3):
        ...         bar.advance()
    """
    if not progress_enabled():
        yield Bar(None, None)
        return
    counts = (
        [DownloadColumn(), TransferSpeedColumn()]
        if unit == "bytes"
        else [MofNCompleteColumn(), TextColumn(unit)]
    )
    columns = [
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        *counts,
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=Console(stderr=True), transient=False) as progress:
        yield Bar(progress, progress.add_task(description, total=total))
