"""Prefect's console without the tracebacks of expected failures (docs/prefect.md).

For an expected failure (a :class:`~cseaug.errors.CseaugError`, a full disk, permission
denied) the CLI's last line already says what failed (:func:`cseaug.cli.main`), so the
commands that run a flow leave Prefect's traceback of it out of the console, and its message
too, which Prefect repeats in each task's and flow's failure lines (Prefect's log store keeps
both; ``--debug`` shows them), and say nothing more once a stop is under way
(:mod:`cseaug.commands.stopping`).
"""

from __future__ import annotations

import copy
import logging
import os
import re

from cseaug.commands.stopping import stop_under_way
from cseaug.errors import CseaugError, expected_os_error


def expected_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an expected failure: one the CLI prints in one line."""
    return isinstance(exc, CseaugError) or expected_os_error(exc)


class WithoutExpectedTraceback(logging.Formatter):
    """A console formatter that leaves out the traceback and the message of an expected
    failure (the CLI's last line says what failed and what to do), in the record that
    carries it and in every later one that quotes it (Prefect's ``Finished in state
    Failed(...)``); every other record is formatted as before."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()
        self.failures: dict[str, str] = {}  # the start of an expected failure's message -> its type

    def format(self, record: logging.LogRecord) -> str:
        exc = record.exc_info[1] if record.exc_info else None
        if expected_failure(exc):
            # the message's first words, up to what a repr() escapes
            start = re.split(r"[\n'\"\\]", str(exc))[0][:60]
            if len(start) >= 8:  # long enough not to be found by chance
                self.failures[start] = type(exc).__name__
        message = record.getMessage()
        told = next((f for f in self.failures if f in message), None)
        if told is None and not expected_failure(exc):
            return self.inner.format(record)
        shortened = copy.copy(record)  # other handlers still get the traceback and message
        shortened.exc_info = shortened.exc_text = None
        if told is not None:
            name = self.failures[told]
            cut = message.rfind(name, 0, message.index(told))
            cut = message.index(told) if cut < 0 else cut + len(name)
            kept = message[:cut]  # closed as the quote and brackets it opens
            end = "'" * (kept.count("'") % 2) + ")" * (kept.count("(") - kept.count(")"))
            shortened.msg, shortened.args = f"{kept} (the error below){end}", ()
        return self.inner.format(shortened)


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
