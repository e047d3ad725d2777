"""Prefect's console without the tracebacks of expected failures (docs/prefect.md).

For an expected failure (a :class:`~cseaug.errors.CseaugError`, a full disk, permission
denied) the CLI's last line already says what failed (:func:`cseaug.cli.main`), so the
commands that run a flow leave Prefect's traceback of it out of the console (Prefect's log
store keeps it; ``--debug`` shows it), and say nothing more once a stop is under way
(:mod:`cseaug.commands.stopping`).
"""

from __future__ import annotations

import copy
import logging
import os

from cseaug.commands.stopping import stop_under_way
from cseaug.errors import CseaugError, expected_os_error


def expected_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an expected failure: one the CLI prints in one line."""
    return isinstance(exc, CseaugError) or expected_os_error(exc)


class WithoutExpectedTraceback(logging.Formatter):
    """A console formatter that leaves out the traceback of an expected failure (the CLI's
    last line says what failed and what to do); every other record is formatted as before."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if not expected_failure(record.exc_info[1] if record.exc_info else None):
            return self.inner.format(record)
        without_traceback = copy.copy(record)  # other handlers still get the traceback
        without_traceback.exc_info = without_traceback.exc_text = None
        return self.inner.format(without_traceback)


def quiet_expected_tracebacks() -> None:
    """Prefect logs the traceback of every failed task and flow on the console; for an
    expected failure, leave it out there (Prefect's own log store keeps it), and say
    nothing once the command is stopping, unless ``--debug`` (``CSEAUG_DEBUG``) asks for
    tracebacks."""
    if os.environ.get("CSEAUG_DEBUG"):
        return
    for handler in logging.getLogger().handlers:
        if not isinstance(handler.formatter, WithoutExpectedTraceback):
            handler.setFormatter(WithoutExpectedTraceback(handler.formatter))
            handler.addFilter(lambda _record: not stop_under_way())
