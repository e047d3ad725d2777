"""The embedding cache: an in-memory LRU in front of an optional sqlite file per encoder.

Every encoder :func:`~cseaug.encoders.loading.load_encoder` returns sits behind a
:class:`CachedEncoder`, keyed by a hash of the text, so a repeated anchor is embedded once
per run and, with an :class:`EmbeddingStore`, once across runs.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from cseaug.encoders.base import Encoder
from cseaug.errors import ConfigError
from cseaug.sqlite_files import connect, transaction


def text_key(text: str) -> bytes:
    """The cache key of a text: 16 bytes of BLAKE2b over its UTF-8 bytes."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class EmbeddingStore:
    """Embeddings on disk: one sqlite file per encoder identity, key -> float32 bytes.

    Safe to share between threads of one process (one lock) and between processes (WAL).
    """

    def __init__(self, path: Path, identity: str, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self._lock = threading.Lock()
        self._db = connect(
            path, "the embedding cache", "embeddings not in the new file are computed again"
        )
        with transaction(self._db, "IMMEDIATE"):
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
            )
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)", (identity,))
        stored = self._db.execute("SELECT value FROM meta WHERE name = 'identity'").fetchone()[0]
        if stored != identity:
            raise ConfigError(
                f"embedding cache {path} belongs to another encoder ({stored!r}, not {identity!r}); "
                "delete the file or point the cache elsewhere"
            )

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            # sqlite's default limit on bound parameters is 999 in old builds.
            for start in range(0, len(keys), 900):
                chunk = keys[start : start + 900]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(
                    f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk
                ):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        rows = [(key, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        with self._lock, transaction(self._db):
            self._db.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        """Close the sqlite connection."""
        with self._lock:
            self._db.close()


class CachedEncoder:
    """An encoder behind an LRU of embeddings (and optionally an :class:`EmbeddingStore`).

    Only texts missing from both caches reach the model, each unique text once.

    Args:
        backend: the model (:class:`~cseaug.encoders.loading.TorchEncoder`, or any
            :class:`Encoder`).
        memory_items: embeddings kept in memory (384 floats of MiniLM: 1.5 kB each).
        store: the on-disk cache, or None.
    """

    def __init__(
        self, backend: Encoder, memory_items: int = 50_000, store: EmbeddingStore | None = None
    ) -> None:
        self.backend = backend
        self.name = backend.name
        self.dimension = backend.dimension
        self.memory_items = memory_items
        self.store = store
        self._memory: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = {"memory_hits": 0, "disk_hits": 0, "encoded": 0}

    def _remember(self, key: bytes, vector: np.ndarray) -> None:
        self._memory[key] = vector
        self._memory.move_to_end(key)
        while len(self._memory) > self.memory_items:
            self._memory.popitem(last=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        missing: dict[bytes, list[int]] = {}
        with self._lock:
            for i, key in enumerate(keys):
                vector = self._memory.get(key)
                if vector is None:
                    missing.setdefault(key, []).append(i)
                else:
                    self._memory.move_to_end(key)
                    out[i] = vector
                    self.stats["memory_hits"] += 1
        if missing and self.store is not None:
            for key, vector in self.store.get_many(list(missing)).items():
                out[missing[key]] = vector
                with self._lock:
                    self._remember(key, vector)
                    self.stats["disk_hits"] += len(missing[key])
                del missing[key]
        if missing:
            fresh_keys = list(missing)
            vectors = self.backend.encode([texts[missing[k][0]] for k in fresh_keys])
            with self._lock:
                for key, vector in zip(fresh_keys, vectors, strict=True):
                    out[missing[key]] = vector
                    self._remember(key, vector.copy())
                self.stats["encoded"] += len(fresh_keys)
            if self.store is not None:
                self.store.put_many(zip(fresh_keys, vectors, strict=True))
        return out

    def close(self) -> None:
        """Close the on-disk store and free the model; no encoding after this."""
        if self.store is not None:
            self.store.close()
        self.backend.close()
