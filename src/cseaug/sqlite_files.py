"""SQLite files that threads and processes share (the response cache, the Batch API ledger, the
embedding store): one opener, whose every statement reports a damaged file or a full disk in
one line (docs/reliability.md), and one transaction helper.
"""

from __future__ import annotations

import errno
import functools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random

from cseaug.errors import CseaugError

LOCK_WAIT_S = 60.0
"""How long a statement waits for another connection's lock before it fails."""


class DamagedFileError(CseaugError):
    """An SQLite file cannot be read as a database (truncated, overwritten, not SQLite)."""


def _reported(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of a cursor, raising a damaged file as :class:`DamagedFileError` and a full
    disk as ``OSError(ENOSPC)`` naming the file (one line each, exit status 2); any other
    SQLite error (a locked database, ...) as it is."""

    @functools.wraps(method)
    def wrapper(self: sqlite3.Cursor, *args: Any) -> Any:
        try:
            return method(self, *args)
        except sqlite3.DatabaseError as exc:
            conn: _Connection = self.connection  # type: ignore[assignment]
            code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code
            if code == sqlite3.SQLITE_FULL:
                raise OSError(errno.ENOSPC, str(exc), str(conn.path)) from exc
            if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
                raise DamagedFileError(
                    f"{conn.name} {conn.path} is damaged ({exc}); it is not deleted: set it "
                    f"aside with `mv {conn.path} {conn.path}.damaged` (with its -wal and -shm "
                    f"files, if any) and rerun: {conn.rerun}"
                ) from exc
            raise

    return wrapper


class _Cursor(sqlite3.Cursor):
    """A cursor whose every call is :func:`_reported`."""


for _name in ("execute", "executemany", "executescript", "fetchone", "fetchmany", "fetchall"):
    setattr(_Cursor, _name, _reported(getattr(sqlite3.Cursor, _name)))
_Cursor.__next__ = _reported(sqlite3.Cursor.__next__)  # type: ignore[method-assign]


class _Connection(sqlite3.Connection):
    """A connection whose statements run on :class:`_Cursor` (``path``, ``name`` and
    ``rerun`` describe its file for the messages)."""

    path: Path | None
    name: str
    rerun: str

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, *args: Any) -> Any:
        return self.cursor().execute(*args)

    def executemany(self, *args: Any) -> Any:
        return self.cursor().executemany(*args)

    def executescript(self, *args: Any) -> Any:
        return self.cursor().executescript(*args)


def connect(path: Path | None, name: str, rerun: str) -> sqlite3.Connection:
    """An autocommit connection to the database at ``path`` (None: in memory), in WAL mode,
    that threads share; ``name`` (``the embedding cache``) and ``rerun`` (what a rerun
    without the file does again) are for the one-line message of a damaged file."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path or ":memory:",
        timeout=LOCK_WAIT_S,
        isolation_level=None,
        check_same_thread=False,
        factory=_Connection,
    )
    conn.path, conn.name, conn.rerun = path, name, rerun
    if path is not None:
        # Two connections switching a new file to WAL at once: SQLite answers one "database is
        # locked" at once, without the busy handler (it would wait forever), so retry here.
        switching = Retrying(
            retry=retry_if_exception(
                lambda error: getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
            ),
            wait=wait_random(0.01, 0.1),
            stop=stop_after_delay(LOCK_WAIT_S),
            reraise=True,
        )
        for attempt in switching:
            with attempt:
                conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection, mode: str = "") -> Iterator[None]:
    """One committed transaction on ``conn`` (``mode``: ``IMMEDIATE`` to take the write lock
    first); call with the lock of ``conn`` held."""
    conn.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # SQLite has rolled back already after e.g. a full disk
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
