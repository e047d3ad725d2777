"""Progress bars for long work (rich), one place so every stage looks the same.

Bars go to stderr when it is a terminal. Where it is not (a log file, CI, a pipe), a bar
becomes a plain line every :data:`LINE_EVERY_S` seconds, as pip and the Hugging Face
libraries write in logs (``Diagnostics: 1,024/3,000 rows (34%), 20 s``), and one more at
its end once it has written any: a short step writes nothing, a long one is never silent
(issue 22: a first build wrote nothing for 100 s of diagnostics). ``CSEAUG_PROGRESS=1``
draws bars anyway; ``CSEAUG_PROGRESS=0`` switches bars and lines off.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Literal

from rich.console import Console
from rich.filesize import decimal
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

LINE_EVERY_S = 10.0
"""Seconds between two progress lines where stderr is not a terminal."""


def progress_mode() -> Literal["bars", "lines", "off"]:
    """How progress is shown (see the module docstring)."""
    setting = os.environ.get("CSEAUG_PROGRESS")
    if setting is not None:
        return "off" if setting in ("0", "false", "no", "") else "bars"
    return "bars" if sys.stderr.isatty() else "lines"


def progress_enabled() -> bool:
    """Whether bars are drawn (see the module docstring)."""
    return progress_mode() == "bars"


class Bar:
    """A handle on one bar: ``advance(n)`` after each finished unit of work."""

    def __init__(self, draw: Callable[[int], None] = lambda n: None) -> None:
        self._draw = draw
        self.completed = 0

    def advance(self, n: int = 1) -> None:
        self.completed += n
        self._draw(n)


@contextmanager
def progress_bar(description: str, total: int | None, unit: str = "items") -> Iterator[Bar]:
    """A rich progress bar on stderr for ``total`` units of work (None: unknown total).

    With ``unit="bytes"`` the bar shows sizes and the transfer speed (downloads).

    Example:
        >>> with progress_bar("Generating", total=3) as bar:
        ...     for _ in range(3):
        ...         bar.advance()
    """
    mode = progress_mode()
    if mode != "bars":
        bar = Bar()
        with progress_lines(description, total, unit, bar) if mode == "lines" else nullcontext():
            yield bar
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
        task = progress.add_task(description, total=total)
        yield Bar(lambda n: progress.advance(task, n))


def progress_line(description: str, done: int, total: int | None, unit: str, seconds: float) -> str:
    """One line of progress.

    Example:
        >>> progress_line("Diagnostics", 1024, 3000, "rows", 20.4)
        'Diagnostics: 1,024/3,000 rows (34%), 20 s'
        >>> progress_line("Downloading", 2_500_000, None, "bytes", 3.0)
        'Downloading: 2.5 MB, 3 s'
    """
    size = decimal if unit == "bytes" else lambda n: f"{n:,}"
    count = f"{size(done)}/{size(total)}" if total else size(done)
    count += "" if unit == "bytes" else f" {unit}"
    share = f" ({100 * done // total}%)" if total else ""
    return f"{description}: {count}{share}, {seconds:.0f} s"


@contextmanager
def progress_lines(description: str, total: int | None, unit: str, bar: Bar) -> Iterator[None]:
    """Write ``bar``'s progress to stderr every :data:`LINE_EVERY_S` seconds while the block
    runs, and once more when it ends if any line was written."""
    started = time.monotonic()
    stop = threading.Event()
    written = False

    def write() -> None:
        line = progress_line(description, bar.completed, total, unit, time.monotonic() - started)
        sys.stderr.write(line + "\n")  # not print(): a flow with log_prints logs those
        sys.stderr.flush()

    def every_interval() -> None:
        nonlocal written
        while not stop.wait(LINE_EVERY_S):
            write()
            written = True

    writer = threading.Thread(target=every_interval, name="progress-lines", daemon=True)
    writer.start()
    try:
        yield
    finally:
        stop.set()
        writer.join()
    if written:
        write()
