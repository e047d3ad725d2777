"""SQLite files that threads and processes share: one opener, one transaction helper.

The response cache, the Batch API ledger and the embedding store are SQLite files that two
builds (or Dask/Ray workers) may open at the same moment.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random

LOCK_WAIT_S = 60.0
"""How long a statement waits for another connection's lock before it fails."""


def connect(path: Path | None) -> sqlite3.Connection:
    """An autocommit connection to the database at ``path`` (None: in memory), in WAL mode,
    that threads share.

    Two connections that switch a new file to WAL at once both hold a read lock and ask for
    the write lock; SQLite answers one of them "database is locked" at once, without calling
    the busy handler (it would wait forever), so the switch is retried here.
    """
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        path or ":memory:", timeout=LOCK_WAIT_S, isolation_level=None, check_same_thread=False
    )
    if path is not None:
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
