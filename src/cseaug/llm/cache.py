"""A persistent request-level cache: no answer is ever paid for twice.

Every successful answer is stored in SQLite under the sha256 of the canonical JSON of
(backend name, model, sampling parameters, messages, sample_index), see
:func:`request_hash`. :class:`CachedBackend` wraps any backend: it looks every request
up, sends only the misses (each distinct one once, even when a batch repeats it) and
stores each answer the moment it arrives, so a crash, even ``kill -9``, loses at most
the requests that were in flight. A rerun of the same requests sends none of the
answered ones again. Failed answers are not stored: a rerun tries them again.

Streaming backends (:class:`~cseaug.llm.streaming.StreamingBackend`: ``openai``,
``openai-compatible``, ``transformers``) hand each answer to the cache as it arrives;
the others (``vllm``) get their misses in chunks of ``chunk_size`` and each chunk is
stored when it returns.

The database runs in WAL mode with ``synchronous=NORMAL``: a committed answer survives
the death of the process at any point (the operating system holds the write) and
several processes can read and write the same file at once; only a power loss or an
operating-system crash can lose the last few answers, never corrupt the file.

Example:
    >>> from cseaug.llm.base import ChatRequest
    >>> backend = CachedBackend(inner_backend, "storage/cache/llm.sqlite")  # doctest: +SKIP
    >>> backend.count_cached([ChatRequest("k", ({"role": "user", "content": "Hi"},))])  # doctest: +SKIP
    0
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.hashing import json_sha256
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback
from cseaug.llm.streaming import ResponseSink, StreamingBackend

_LOOKUP_CHUNK = 900  # below SQLite's smallest limit on bound parameters (999)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID
"""


def request_hash(identity: dict[str, Any], request: ChatRequest) -> str:
    """The cache key of one request for a backend of the given :meth:`~LLMBackend.identity`.

    The request's own ``key`` is not part of it: two rows asking the same thing share
    one answer.

    Example:
        >>> identity = {"backend": "openai", "model": "m", "sampling": {"temperature": 0}}
        >>> len(request_hash(identity, ChatRequest("k", ({"role": "user", "content": "Hi"},))))
        64
    """
    return json_sha256(
        {"identity": identity, "messages": request.messages, "sample_index": request.sample_index}
    )


@dataclass(frozen=True)
class CachedAnswer:
    """One stored answer."""

    text: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCache:
    """The SQLite file of stored answers, safe to share between threads and processes.

    Args:
        path: the database file; its directory is created if needed.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit (isolation_level=None): every put is its own committed transaction
        self._conn = sqlite3.connect(
            self.path, timeout=60.0, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)

    def get_many(self, hashes: Sequence[str]) -> dict[str, CachedAnswer]:
        """The stored answers among ``hashes`` (absent hashes are simply missing)."""
        found: dict[str, CachedAnswer] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(unique), _LOOKUP_CHUNK):
                chunk = unique[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT hash, text, prompt_tokens, completion_tokens FROM responses WHERE hash IN ({marks})",
                    chunk,
                )
                for digest, text, prompt_tokens, completion_tokens in rows:
                    found[digest] = CachedAnswer(text, prompt_tokens, completion_tokens)
        return found

    def count(self, hashes: Iterable[str]) -> int:
        """How many distinct ``hashes`` have a stored answer."""
        return len(self.get_many(list(hashes)))

    def put(self, digest: str, response: ChatResponse) -> None:
        """Store a successful answer (committed before this returns)."""
        if not response.ok:
            raise ValueError(
                f"refusing to cache the failed answer of {response.key!r}: {response.error}"
            )
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                (
                    digest,
                    response.text,
                    response.prompt_tokens,
                    response.completion_tokens,
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedBackend(LLMBackend):
    """Any backend behind the response cache (same name, model and identity as the inner one).

    Args:
        inner: the backend that answers the misses.
        cache: a :class:`ResponseCache` or the path of its database file.
        chunk_size: misses per call of a non-streaming inner backend; each chunk is
            stored when it returns.

    Example:
        >>> from cseaug.config import LLMConfig
        >>> from cseaug.llm.factory import make_backend
        >>> cfg = LLMConfig(backend="openai-compatible", model="m", base_url="http://127.0.0.1:8000/v1")
        >>> backend = make_backend(cfg, cache_path=Path("storage/cache/llm.sqlite"))  # doctest: +SKIP
        >>> isinstance(backend, CachedBackend)  # doctest: +SKIP
        True
    """

    def __init__(
        self, inner: LLMBackend, cache: ResponseCache | str | Path, chunk_size: int = 1024
    ) -> None:
        super().__init__(inner.model, inner.sampling)
        self.inner = inner
        self.name = inner.name
        self.cache = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
        self.chunk_size = chunk_size

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def check(self) -> None:
        """The inner backend's up-front check (API key, model loading), when it has one."""
        check = getattr(self.inner, "check", None)
        if check is not None:
            check()

    def hashes(self, requests: Sequence[ChatRequest]) -> list[str]:
        """The cache key of each request."""
        identity = self.identity()
        return [request_hash(identity, r) for r in requests]

    def count_cached(self, requests: Sequence[ChatRequest]) -> int:
        """How many of ``requests`` already have a stored answer (for the dry run)."""
        hashes = self.hashes(requests)
        stored = self.cache.get_many(hashes)
        return sum(1 for digest in hashes if digest in stored)

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        hashes = self.hashes(requests)
        stored = self.cache.get_many(hashes)
        responses: list[ChatResponse | None] = [None] * len(requests)
        first_of: dict[str, int] = {}  # hash -> index of the request that will be sent
        for index, (request, digest) in enumerate(zip(requests, hashes, strict=True)):
            hit = stored.get(digest)
            if hit is not None:
                responses[index] = ChatResponse(
                    key=request.key,
                    text=hit.text,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    cached=True,
                )
            else:
                first_of.setdefault(digest, index)
        to_send = list(first_of.values())
        if progress is not None and len(requests) > len(to_send):
            progress(len(requests) - len(to_send))

        def store(position: int, response: ChatResponse) -> None:
            if response.ok:
                self.cache.put(hashes[to_send[position]], response)

        for index, response in zip(
            to_send, self._send([requests[i] for i in to_send], progress, store), strict=True
        ):
            responses[index] = response
        # repeats of a request in the same batch share the one answer that was paid for
        for index, digest in enumerate(hashes):
            if responses[index] is None:
                answer = responses[first_of[digest]]
                assert answer is not None
                responses[index] = ChatResponse(
                    key=requests[index].key,
                    text=answer.text,
                    error=answer.error,
                    prompt_tokens=answer.prompt_tokens,
                    completion_tokens=answer.completion_tokens,
                    cached=answer.ok,
                )
        return [r for r in responses if r is not None]

    def _send(
        self, misses: list[ChatRequest], progress: ProgressCallback | None, store: ResponseSink
    ) -> list[ChatResponse]:
        if not misses:
            return []
        if isinstance(self.inner, StreamingBackend):
            return self.inner.generate(misses, progress, on_response=store)
        answers: list[ChatResponse] = []
        for start in range(0, len(misses), self.chunk_size):
            chunk = self.inner.generate(misses[start : start + self.chunk_size], progress)
            for position, response in enumerate(chunk, start):
                store(position, response)
            answers.extend(chunk)
        return answers

    def close(self) -> None:
        self.inner.close()
        self.cache.close()
