"""A stop request ends a command within seconds, in one line (docs/prefect.md, "Stopping a
build"; issue 21, item 11).

The ``cseaug`` script (:func:`cseaug.cli.run`) turns SIGINT and SIGTERM into
:class:`StopRequested`, a :class:`KeyboardInterrupt` raised in the main thread, so whatever
cleans up after Ctrl-C does so after SIGTERM too. The commands that run a flow run it inside
:func:`one_line_on_stop`; while a flow runs, Prefect's own SIGTERM handler raises its
``TerminationSignal`` first, reports the crash, then hands the signal back to the handler
installed here. From the first stop on, Prefect's console says nothing more
(:func:`stop_under_way`, :mod:`cseaug.commands.quiet_logs`). Other commands end as typer
ends them on Ctrl-C: exit status 130, no traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import typer
from rich.console import Console

from cseaug.secrets import scrub

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that ask a command to stop."""

_stopping = threading.Event()


class StopRequested(KeyboardInterrupt):
    """A stop signal arrived (see the module docstring).

    Args:
        signum: the signal's number.
        kept: what the command keeps for a rerun, in words (None: nothing to say).
    """

    def __init__(self, signum: int, kept: str | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.kept = kept

    @property
    def exit_status(self) -> int:
        """128 plus the signal's number, as a shell reports a process the signal ended."""
        return 128 + self.signum

    def line(self) -> str:
        """The one line the command ends with."""
        name = signal.Signals(self.signum).name
        return f"stopped ({name}): {self.kept or 'nothing to resume'}"


def as_stop(interrupt: KeyboardInterrupt, kept: str | None = None) -> StopRequested:
    """``interrupt`` as a :class:`StopRequested` that says what was ``kept`` (a plain
    KeyboardInterrupt is Python's own SIGINT)."""
    signum = interrupt.signum if isinstance(interrupt, StopRequested) else signal.SIGINT
    return StopRequested(signum, kept)


@contextmanager
def one_line_on_stop(kept: Callable[[], str | None]) -> Iterator[None]:
    """End a stopped command with its one line and exit status (the module docstring);
    ``kept()`` says what it kept for a rerun. ``--debug`` (``CSEAUG_DEBUG``) prints the
    traceback first."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        stop = as_stop(interrupt, kept())
        console = Console(stderr=True)
        if os.environ.get("CSEAUG_DEBUG"):
            console.print(
                scrub(traceback.format_exc()), highlight=False, soft_wrap=True, markup=False
            )
        console.print(scrub(stop.line()), highlight=False, soft_wrap=True, markup=False)
        raise typer.Exit(stop.exit_status) from None


def _request_stop(signum: int, _frame: FrameType | None) -> None:
    _stopping.set()
    raise StopRequested(signum)


def install_stop_handlers() -> None:
    """Raise :class:`StopRequested` in the main thread on every signal of :data:`STOP_SIGNALS`."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _request_stop)


def stop_under_way() -> bool:
    """Whether this process is stopping: a stop signal arrived, or the exception being
    handled in this thread is an interruption (Ctrl-C, or Prefect's ``TerminationSignal``
    while its handler holds SIGTERM). Once true, it stays true. Asked by the console's
    log filter (:mod:`cseaug.commands.quiet_logs`), so only while a flow runs."""
    if not _stopping.is_set():
        # Prefect's termination signals, read where a running flow has loaded them (this
        # module stays below the Prefect glue: tests/test_architecture.py)
        prefect_signals = getattr(sys.modules.get("prefect.exceptions"), "ExternalSignal", ())
        if isinstance(sys.exc_info()[1], (KeyboardInterrupt, prefect_signals)):
            _stopping.set()
    return _stopping.is_set()
