"""Which OpenAI batches a build has submitted and not read yet, so a resumed build re-attaches.

A batch submitted to the OpenAI Batch API keeps running (and is paid for) whether or not
the process that submitted it is still alive. :class:`BatchLedger` records each submitted
batch (its id, the endpoint, and the set of request keys it answers: the response cache's
keys, which are also the batches' ``custom_id``) in a table of the response cache's own
SQLite file, the moment the batch is created. A later run that needs the same requests
finds the batch here and polls it for them instead of paying again; an entry is removed once the
batch's answers are in the cache (or the batch ended and its unanswered requests were
handed on).

Example:
    >>> ledger = BatchLedger(None)  # in memory: nothing survives the process
    >>> ledger.record("batch_1", "https://api.openai.com/v1", ["k1", "k2"])
    >>> [(e.batch_id, e.request_keys) for e in ledger.open_batches("https://api.openai.com/v1")]
    [('batch_1', ('k1', 'k2'))]
    >>> ledger.remove("batch_1"); ledger.open_batches("https://api.openai.com/v1")
    []
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS openai_batches (
    batch_id TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    request_keys TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class LedgerEntry:
    """One submitted batch whose answers have not been read yet."""

    batch_id: str
    request_keys: tuple[str, ...]


class BatchLedger:
    """The ``openai_batches`` table of the response cache's database.

    Args:
        path: the SQLite file (the response cache's); None: an in-memory table, for a
            backend without a cache (nothing to re-attach to after the process ends).
    """

    def __init__(self, path: str | Path | None) -> None:
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            ":memory:" if path is None else str(path),
            timeout=60.0,
            isolation_level=None,
            check_same_thread=False,
        )
        self._lock = threading.Lock()
        with self._lock:
            if path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)

    def record(self, batch_id: str, base_url: str, request_keys: Sequence[str]) -> None:
        """Remember a batch just created at ``base_url`` (committed before this returns)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO openai_batches VALUES (?, ?, ?, ?)",
                (batch_id, base_url, json.dumps(list(request_keys)), time.time()),
            )

    def open_batches(self, base_url: str) -> list[LedgerEntry]:
        """The batches submitted at ``base_url`` whose answers were not read yet, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT batch_id, request_keys FROM openai_batches WHERE base_url = ? "
                "ORDER BY created_at",
                (base_url,),
            ).fetchall()
        return [LedgerEntry(batch_id, tuple(json.loads(keys))) for batch_id, keys in rows]

    def remove(self, batch_id: str) -> None:
        """Forget a batch whose answers are read (or whose requests were handed on)."""
        with self._lock:
            self._conn.execute("DELETE FROM openai_batches WHERE batch_id = ?", (batch_id,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
