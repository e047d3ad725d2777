"""Progress of long work, the same for every stage: rich bars on stderr when it is a terminal;
elsewhere (a log, CI, a pipe) a line every :data:`LINE_EVERY_S` seconds and one at the end
once any was written. ``CSEAUG_PROGRESS=1`` draws bars anyway, ``CSEAUG_PROGRESS=0`` shows
nothing.
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
    """A handle on one bar: ``advance(n)`` after each finished unit of work; ``tokens``, the
    tokens generated so far; ``note``, shown after the rates (e.g. the requests in flight)."""

    def __init__(self, draw: Callable[[int], None] = lambda n: None) -> None:
        self._draw = draw
        self.completed = 0
        self.tokens = 0
        self.note = ""

    def advance(self, n: int = 1) -> None:
        self.completed += n
        self._draw(n)


@contextmanager
def progress_bar(description: str, total: int | None, unit: str = "items") -> Iterator[Bar]:
    """A progress bar for ``total`` units of work (None: unknown); ``unit="bytes"`` shows sizes
    and the transfer speed.

    Example:
        >>> with progress_bar("Generating", total=3) as bar:
        ...     for _ in range(3):
        ...         bar.advance()
    """
    mode = progress_mode()
    bar = Bar()
    if mode != "bars":
        with progress_lines(description, total, unit, bar) if mode == "lines" else nullcontext():
            yield bar
        return
    counts = (
        [DownloadColumn(), TransferSpeedColumn()]
        if unit == "bytes"
        else [MofNCompleteColumn(), TextColumn(unit), TextColumn("{task.fields[rate]}")]
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
        task = progress.add_task(description, total=total, rate="")

        def draw(n: int) -> None:
            shown = rates(bar.completed, bar.tokens, unit, progress.tasks[0].elapsed)
            progress.update(task, advance=n, rate=", ".join(filter(None, (shown, bar.note))))

        bar._draw = draw
        yield bar


def duration(seconds: float) -> str:
    """A span of time, as precise as a person reads it.

    Example:
        >>> duration(4.25), duration(95), duration(1500), duration(9000)
        ('4.2 s', '95 s', '25.0 min', '2.5 h')
    """
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def rates(done: float, tokens: int, unit: str, seconds: float | None) -> str:
    """Units per second, and tokens per second when any were counted; empty before any.

    Example:
        >>> rates(120, 3712, "requests", 20.0)
        '6.0 requests/s, 186 tokens/s'
    """
    if not seconds or not (done or tokens):
        return ""
    return ", ".join(
        f"{n / seconds:,.{1 if n / seconds < 100 else 0}f} {what}/s"
        for n, what in ((done, unit), (tokens, "tokens"))
        if n or what == unit
    )


def progress_line(
    description: str, done: int, total: int | None, unit: str, seconds: float, tokens: int = 0
) -> str:
    """One line of progress: the count, the time so far, the rate and the time left.

    Example:
        >>> progress_line("Diagnostics", 1024, 3000, "rows", 20.4)
        'Diagnostics: 1,024/3,000 rows (34%), 20 s, 50.2 rows/s, 39 s left'
        >>> progress_line("Generating", 0, 24, "requests", 12.0, tokens=310)
        'Generating: 0/24 requests (0%), 12 s, 0.0 requests/s, 25.8 tokens/s'
        >>> progress_line("Downloading", 2_500_000, None, "bytes", 3.0)
        'Downloading: 2.5 MB, 3 s'
    """
    size = decimal if unit == "bytes" else lambda n: f"{n:,}"
    count = f"{size(done)}/{size(total)}" if total else size(done)
    count += "" if unit == "bytes" else f" {unit}"
    share = f" ({100 * done // total}%)" if total else ""
    line = f"{description}: {count}{share}, {seconds:.0f} s"
    if unit != "bytes" and (speed := rates(done, tokens, unit, seconds)):
        line += f", {speed}"
    if total and done and seconds > 0 and done < total:
        line += f", {duration((total - done) * seconds / done)} left"
    return line


@contextmanager
def progress_lines(description: str, total: int | None, unit: str, bar: Bar) -> Iterator[None]:
    """Write ``bar``'s progress to stderr every :data:`LINE_EVERY_S` seconds while the block
    runs, and once more when it ends if any line was written."""
    started = time.monotonic()
    stop = threading.Event()
    written = False

    def write() -> None:
        seconds = time.monotonic() - started
        line = progress_line(description, bar.completed, total, unit, seconds, bar.tokens)
        line += f", {bar.note}" if bar.note else ""
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
