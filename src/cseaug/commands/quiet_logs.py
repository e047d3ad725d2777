"""Prefect's console without the tracebacks of expected failures (docs/prefect.md).

For an expected failure (a :class:`~cseaug.errors.CseaugError`, a full disk, permission
denied) the CLI's last line already says what failed (:func:`cseaug.cli.main`), so the
commands that run a flow leave Prefect's traceback of it out of the console (Prefect's log
store keeps it; ``--debug`` shows it), and say nothing more once a stop is under way
(:mod:`cseaug.commands.stopping`).
"""

from __future__ import annotations

import logging
import os

from cseaug.commands.stopping import stop_under_way
from cseaug.errors import CseaugError, expected_os_error


def expected_failure(record: logging.LogRecord) -> bool:
    """Whether ``record`` carries an expected failure: one the CLI prints in one line."""
    exc = record.exc_info[1] if record.exc_info else None
    return exc is not None and (isinstance(exc, CseaugError) or expected_os_error(exc))


class WithoutExpectedTraceback(logging.Formatter):
    """A console formatter that leaves out the traceback of an expected failure (the CLI's
    last line says what failed and what to do); every other record is formatted as before."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        if not expected_failure(record):
            return self.inner.format(record)
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            return self.inner.format(record)
        finally:
            record.exc_info, record.exc_text = saved


def silent_while_stopping(_record: logging.LogRecord) -> bool:
    """A console filter: no record once the process is stopping (Prefect's crash reports)."""
    return not stop_under_way()


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
            handler.addFilter(silent_while_stopping)
