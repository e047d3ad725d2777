"""Which OpenAI batches a build has submitted and not read yet, so a resumed build re-attaches.

Tables of the response cache's file: an uploaded input file is recorded as a *pending upload*
before ``batches.create``, then its batch in its place, in one transaction. docs/llm-backends.md,
"The Batch API".

Example:
    >>> ledger = BatchLedger(None)  # in memory: nothing survives the process
    >>> upload = PendingUpload("file-1", ("k1", "k2"), uploaded_at=1700000000.0)
    >>> ledger.pend(upload, "https://api.openai.com/v1")
    >>> ledger.pending_uploads("https://api.openai.com/v1")
    [PendingUpload(input_file_id='file-1', request_keys=('k1', 'k2'), uploaded_at=1700000000.0)]
    >>> ledger.record("batch_1", "https://api.openai.com/v1", upload)
    >>> ledger.pending_uploads("https://api.openai.com/v1")
    []
    >>> ledger.open_batches("https://api.openai.com/v1")
    [('batch_1', ('k1', 'k2'))]
    >>> ledger.remove("batch_1"); ledger.open_batches("https://api.openai.com/v1")
    []
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.llm.cache import CACHE_FILE
from cseaug.sqlite_files import connect, transaction

_SCHEMA = """
CREATE TABLE IF NOT EXISTS openai_batches (
    batch_id TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    request_keys TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS openai_batch_uploads (
    input_file_id TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    request_keys TEXT NOT NULL,
    uploaded_at REAL NOT NULL,
    created_at REAL NOT NULL
);
"""


@dataclass(frozen=True)
class PendingUpload:
    """An uploaded input file whose batch may not exist yet (``uploaded_at``: the API's
    ``created_at``; a batch made from the file cannot be older)."""

    input_file_id: str
    request_keys: tuple[str, ...]
    uploaded_at: float


class BatchLedger:
    """The Batch API tables of the response cache at ``path`` (None: in memory)."""

    def __init__(self, path: str | Path | None) -> None:
        self._conn = connect(None if path is None else Path(path), *CACHE_FILE)
        self._lock = threading.Lock()
        self._conn.executescript(_SCHEMA)

    def _execute(self, sql: str, params: tuple[object, ...]) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def pend(self, upload: PendingUpload, base_url: str) -> None:
        """Remember an uploaded input file before its batch is created."""
        keys = json.dumps(list(upload.request_keys))
        self._execute(
            "INSERT OR REPLACE INTO openai_batch_uploads VALUES (?, ?, ?, ?, ?)",
            (upload.input_file_id, base_url, keys, upload.uploaded_at, time.time()),
        )

    def pending_uploads(self, base_url: str) -> list[PendingUpload]:
        """The uploads at ``base_url`` not known to have become a batch, oldest first."""
        rows = self._execute(
            "SELECT input_file_id, request_keys, uploaded_at FROM openai_batch_uploads "
            "WHERE base_url = ? ORDER BY created_at",
            (base_url,),
        )
        return [PendingUpload(file_id, tuple(json.loads(keys)), at) for file_id, keys, at in rows]

    def record(self, batch_id: str, base_url: str, upload: PendingUpload) -> None:
        """Remember the batch just created from ``upload``, in its place (one transaction)."""
        keys = json.dumps(list(upload.request_keys))
        with self._lock, transaction(self._conn, "IMMEDIATE"):
            self._conn.execute(
                "INSERT OR REPLACE INTO openai_batches VALUES (?, ?, ?, ?)",
                (batch_id, base_url, keys, time.time()),
            )
            self._conn.execute(
                "DELETE FROM openai_batch_uploads WHERE input_file_id = ?", (upload.input_file_id,)
            )

    def drop_upload(self, input_file_id: str) -> None:
        """Forget a pending upload that will never become a batch."""
        self._execute("DELETE FROM openai_batch_uploads WHERE input_file_id = ?", (input_file_id,))

    def open_batches(self, base_url: str) -> list[tuple[str, tuple[str, ...]]]:
        """``(batch id, request keys)`` of the batches at ``base_url`` not read yet, oldest first."""
        rows = self._execute(
            "SELECT batch_id, request_keys FROM openai_batches WHERE base_url = ? "
            "ORDER BY created_at",
            (base_url,),
        )
        return [(batch_id, tuple(json.loads(keys))) for batch_id, keys in rows]

    def remove(self, batch_id: str) -> None:
        """Forget a batch whose requests were handed on."""
        self._execute("DELETE FROM openai_batches WHERE batch_id = ?", (batch_id,))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
