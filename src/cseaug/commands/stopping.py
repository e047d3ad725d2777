"""A stop request ends a command within seconds, in one line (docs/prefect.md, "Stopping a
build").

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
from contextlib import contextmanager, suppress
from types import FrameType

import typer
from rich.console import Console

from cseaug.secrets import scrub

_stopping = threading.Event()
_script = threading.Event()  # set by install_stop_handlers: this process is the cseaug script

KEPT_WAIT_S = 3.0
"""How long the stop line waits to learn what was kept (naming the run store hashes the
inputs: a minute for a 50 GB corpus)."""

EXIT_GRACE_S = 3.0
"""How long the stopped script may take to end by itself after its stop line; then its
child processes are terminated (killed a second later) and it exits."""


class StopRequested(KeyboardInterrupt):
    """A stop signal arrived (see the module docstring); ``signum`` is the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def print_traceback(console: Console) -> None:
    """The traceback of the exception being handled, scrubbed of secrets, on ``console``."""
    console.print(scrub(traceback.format_exc()), highlight=False, soft_wrap=True, markup=False)


@contextmanager
def one_line_on_stop(kept: Callable[[], str | None]) -> Iterator[None]:
    """End a stopped command with one line, and the exit status a shell reports for a
    process the signal ended (128 + its number; a plain KeyboardInterrupt is Python's own
    SIGINT); ``kept()`` says what it kept for a rerun. ``--debug`` (``CSEAUG_DEBUG``) prints
    the traceback first."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        signum = interrupt.signum if isinstance(interrupt, StopRequested) else signal.SIGINT
        line = f"stopped ({signal.Signals(signum).name}): {_kept_within(kept)}"
        console = Console(stderr=True)
        if os.environ.get("CSEAUG_DEBUG"):
            print_traceback(console)
        console.print(scrub(line), highlight=False, soft_wrap=True, markup=False)
        if _script.is_set():
            _end_within_grace(128 + signum)
        raise typer.Exit(128 + signum) from None


def _kept_within(kept: Callable[[], str | None]) -> str:
    """``kept()``, or what to say when it has not answered within :data:`KEPT_WAIT_S`."""
    found: list[str | None] = []
    counting = threading.Thread(target=lambda: found.append(kept()), daemon=True)
    counting.start()
    counting.join(KEPT_WAIT_S)
    if not found:
        return (
            f"what was kept was not known within {KEPT_WAIT_S:.0f} s; run the same command "
            "again to resume"
        )
    return found[0] or "nothing to resume"


def _end_within_grace(status: int) -> None:
    """End this process with ``status`` :data:`EXIT_GRACE_S` from now unless it has ended by
    itself, and its child processes with it."""

    def end() -> None:
        import psutil

        children = psutil.Process().children(recursive=True)
        for child in children:
            with suppress(psutil.Error):
                child.terminate()
        for child in psutil.wait_procs(children, timeout=1)[1]:
            with suppress(psutil.Error):
                child.kill()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    timer = threading.Timer(EXIT_GRACE_S, end)
    timer.daemon = True
    timer.start()


def _request_stop(signum: int, _frame: FrameType | None) -> None:
    _stopping.set()
    raise StopRequested(signum)


def install_stop_handlers() -> None:
    """Raise :class:`StopRequested` in the main thread on SIGINT and SIGTERM (the script's)."""
    _script.set()
    for signum in (signal.SIGINT, signal.SIGTERM):
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
