"""A persistent request-level cache in SQLite: no answer is ever paid for twice.

docs/llm-backends.md, "The response cache".
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any

from cseaug.errors import ConfigError
from cseaug.hashing import json_sha256
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback, ResponseSink
from cseaug.sqlite_files import DamagedFileError, connect, transaction

logger = logging.getLogger(__name__)

CACHE_FILE = ("the LLM response cache", "answers not in the new cache are asked again")
"""The cache file's name and what a rerun without it does again (:func:`connect`)."""

_LOOKUP_CHUNK = 900  # below SQLite's smallest limit on bound parameters (999)
_MIGRATION_PAGE = 10_000  # answers given their digests per step when an old cache is opened
LEASE_S = 60.0  # how long a claim holds without renewal; renewed every third of that
POLL_S = 0.25  # how often a process waiting for another's claimed prompts looks for answers

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    hash TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created_at REAL NOT NULL,
    spent_by TEXT,
    digest TEXT,
    model TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS responses_spent_by ON responses (spent_by);
CREATE TABLE IF NOT EXISTS failures (
    hash TEXT PRIMARY KEY, error TEXT NOT NULL, attempts INTEGER NOT NULL, failed_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (
    hash TEXT PRIMARY KEY, owner TEXT NOT NULL, lease_until REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS calls (
    spent_by TEXT, started_at REAL NOT NULL, seconds REAL NOT NULL,
    sent INTEGER NOT NULL, failed INTEGER NOT NULL
);
"""


KEY_ENV = "CSEAUG_CACHE_KEY"  # the key of the answers' digests, instead of the key file
SCHEMA_VERSION = 1  # the file's user_version; 0: a cseaug before versions were recorded


def digest_key() -> bytes:
    """The key of the answers' digests: ``$CSEAUG_CACHE_KEY``, else the file
    ``$XDG_CONFIG_HOME/cseaug/cache-key`` made on first use, outside the cache
    (docs/security.md, "The response cache")."""
    if os.environ.get(KEY_ENV):
        return os.environ[KEY_ENV].encode()
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    path = home / "cseaug" / "cache-key"
    try:
        if not path.exists():  # written aside, then linked: a racing process reads it whole
            path.parent.mkdir(parents=True, exist_ok=True)
            fresh = path.with_name(f".cache-key.{uuid.uuid4().hex}")
            with open(os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
                file.write(os.urandom(32).hex())
            with suppress(FileExistsError):
                os.link(fresh, path)
            fresh.unlink()
        return path.read_bytes().strip()
    except OSError as exc:
        raise ConfigError(
            f"the response cache's key file {path} cannot be made or read ({exc.strerror}): "
            f"set {KEY_ENV} to a secret of your own (docs/security.md)"
        ) from exc


def answer_digest(
    key: bytes, digest: str, text: str, prompt_tokens: int, completion_tokens: int
) -> str:
    """What a stored answer must hash to: the HMAC-SHA256, under ``key``, of its request hash
    and its answer."""
    answer = json.dumps([digest, text, prompt_tokens, completion_tokens], ensure_ascii=False)
    return hmac.new(key, answer.encode("utf-8"), "sha256").hexdigest()


def _owner_is_dead(owner: str) -> bool:
    """Whether ``owner`` is a process of this host that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def request_hash(identity: dict[str, Any], request: ChatRequest) -> str:
    """The cache key of one request for a backend of the given :meth:`~LLMBackend.identity`
    (not the request's own ``key``: two rows asking the same thing share one answer). It must
    never change: every stored answer would be asked again.

    Example:
        >>> identity = {"backend": "openai", "model": "m", "sampling": {"temperature": 0}}
        >>> request_hash(identity, ChatRequest("k", ({"role": "user", "content": "Hi"},)))[:16]
        'feaebda2b56f5355'
    """
    key = {"identity": identity, "messages": request.messages, "sample_index": request.sample_index}
    if request.stop:  # the keys of requests without stop sequences stay those of before
        key["stop"] = request.stop
    return json_sha256(key)


class ResponseCache:
    """The SQLite file of stored answers, shared by threads and processes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._key = digest_key()
        self._conn = connect(self.path, *CACHE_FILE)
        self._lock = threading.Lock()
        # One write transaction: processes opening a file of an earlier version at once
        # (Dask/Ray workers) upgrade it one after the other, the later ones find it done.
        with transaction(self._conn, "IMMEDIATE"):
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(responses)")}
            if columns and version == 0:
                self._upgrade(columns)
            elif columns and (version != SCHEMA_VERSION or "digest" not in columns):
                raise DamagedFileError(
                    f"the LLM response cache {self.path} is not one this cseaug wrote "
                    f"(schema version {version}, columns {sorted(columns)}): edited, or "
                    f"written by a newer cseaug; set it aside with `mv {self.path} "
                    f"{self.path}.damaged` and rerun: answers not in the new cache are "
                    "asked again"
                )
            if version != SCHEMA_VERSION:  # a new file, or one just upgraded
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._conn.executescript(_SCHEMA)

    def _upgrade(self, columns: set[str]) -> None:
        """Bring a file of version 0 (no ``spent_by``, ``digest`` or ``model``, or plain sha256
        digests) to this one, in a write transaction: answers without a digest or with a
        matching plain one are trusted once and given keyed digests; the others are asked again."""
        for column in ("spent_by", "digest", "model"):  # answers stored before: null
            if column not in columns:
                self._conn.execute(f"ALTER TABLE responses ADD COLUMN {column} TEXT")
        trusted, after = 0, ""
        while rows := self._conn.execute(  # a page at a time: a cache may be large
            "SELECT hash, text, prompt_tokens, completion_tokens, digest FROM responses "
            "WHERE hash > ? ORDER BY hash LIMIT ?",
            (after, _MIGRATION_PAGE),
        ).fetchall():
            keep = [r[:4] for r in rows if r[4] in (None, json_sha256(list(r[:4])))]
            self._conn.executemany(
                "UPDATE responses SET digest = ? WHERE hash = ?",
                [(answer_digest(self._key, *row), row[0]) for row in keep],
            )
            trusted, after = trusted + len(keep), rows[-1][0]
        if trusted:
            logger.warning(
                "response cache %s: a file of an earlier cseaug (no schema version): its %d "
                "stored answers are trusted as they are and given keyed digests; if it is "
                "not that old (edited?), set it aside and rerun",
                self.path,
                trusted,
            )

    def lookup(self, hashes: Sequence[str]) -> tuple[dict[str, ChatResponse], set[str]]:
        """The stored answers among ``hashes`` that match their digest, by hash, and the hashes
        of those that do not."""
        found: dict[str, ChatResponse] = {}
        mismatched: set[str] = set()
        with self._lock:
            rows = list(
                self._rows(
                    "SELECT hash, text, prompt_tokens, completion_tokens, digest, model FROM responses "
                    "WHERE hash IN ({marks})",
                    list(dict.fromkeys(hashes)),
                )
            )
        for digest, text, prompt_tokens, completion_tokens, stored, model in rows:
            if stored != answer_digest(self._key, digest, text, prompt_tokens, completion_tokens):
                mismatched.add(digest)
                continue
            found[digest] = ChatResponse(
                digest,
                text,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cached=True,
                model=model,
            )
        return found, mismatched

    def _rows(self, query: str, hashes: Sequence[str], *extra: Any) -> Iterator[Any]:
        """The rows of ``query`` for ``hashes`` a chunk at a time (``{marks}``: a chunk's
        placeholders, then ``extra``'s); call with ``self._lock`` held."""
        for start in range(0, len(hashes), _LOOKUP_CHUNK):
            chunk = hashes[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            yield from self._conn.execute(query.format(marks=marks), [*chunk, *extra])

    def put(self, digest: str, response: ChatResponse, spent_by: str | None = None) -> None:
        """Store a successful answer paid for by ``spent_by`` and drop its failure record (one
        commit; the claim stays: :meth:`leased`)."""
        if not response.ok:
            raise ValueError(
                f"refusing to cache the failed answer of {response.key!r}: {response.error}"
            )
        answer = (response.text, response.prompt_tokens, response.completion_tokens)
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (hash, text, prompt_tokens, completion_tokens, "
                "created_at, spent_by, digest, model) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    digest,
                    *answer,
                    time.time(),
                    spent_by,
                    answer_digest(self._key, digest, *answer),  # type: ignore[arg-type]
                    response.model,
                ),
            )
            self._conn.execute("DELETE FROM failures WHERE hash = ?", (digest,))

    def fail(self, digest: str, error: str) -> None:
        """Remember that the request ``digest`` failed (and release its claim)."""
        with self._lock, transaction(self._conn):
            self._conn.execute(
                "INSERT INTO failures VALUES (?, ?, 1, ?) ON CONFLICT(hash) DO UPDATE SET "
                "error = excluded.error, attempts = attempts + 1, failed_at = excluded.failed_at",
                (digest, error, time.time()),
            )
            self._conn.execute("DELETE FROM claims WHERE hash = ?", (digest,))

    def failed_before(self, hashes: Sequence[str]) -> set[str]:
        """Those of ``hashes`` whose last attempt failed."""
        with self._lock:
            rows = self._rows("SELECT hash FROM failures WHERE hash IN ({marks})", hashes)
            return {digest for (digest,) in rows}

    def claim(self, hashes: Sequence[str], owner: str, lease_s: float = LEASE_S) -> set[str]:
        """Claim what nobody else holds among ``hashes`` (or holds with an expired lease, or
        is a dead process of this host); every hash ``owner`` now holds."""
        now = time.time()
        with self._lock, transaction(self._conn, "IMMEDIATE"):
            self._conn.executemany(
                "INSERT OR IGNORE INTO claims VALUES (?, ?, ?)",
                [(digest, owner, now + lease_s) for digest in hashes],
            )
            held = list(
                self._rows(
                    "SELECT hash, owner, lease_until FROM claims WHERE hash IN ({marks})", hashes
                )
            )
            dead = {o for _, o, _ in held if o != owner and _owner_is_dead(o)}
            take = [d for d, o, until in held if o != owner and (until < now or o in dead)]
            self._conn.executemany(
                "UPDATE claims SET owner = ?, lease_until = ? WHERE hash = ?",
                [(owner, now + lease_s, digest) for digest in take],
            )
        return {d for d, o, _ in held if o == owner} | set(take)

    def claimed_by_others(self, hashes: Sequence[str], owner: str) -> set[str]:
        """Those of ``hashes`` that another owner holds now (lease still running)."""
        query = (
            "SELECT hash FROM claims WHERE hash IN ({marks}) AND owner != ? AND lease_until >= ?"
        )
        with self._lock:
            return {digest for (digest,) in self._rows(query, hashes, owner, time.time())}

    @contextmanager
    def leased(self, owner: str) -> Iterator[None]:
        """Renew ``owner``'s claims while the block runs; drop them after it."""
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(LEASE_S / 3):
                with self._lock:
                    self._conn.execute(
                        "UPDATE claims SET lease_until = ? WHERE owner = ?",
                        (time.time() + LEASE_S, owner),
                    )

        renewer = threading.Thread(target=renew, name="cseaug-cache-lease", daemon=True)
        renewer.start()
        try:
            yield
        finally:
            stop.set()
            renewer.join()
            with self._lock:
                self._conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))

    def record_call(
        self, spent_by: str | None, started_at: float, seconds: float, sent: int, failed: int
    ) -> None:
        """Record one call that sent requests (its time is generate time)."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO calls VALUES (?, ?, ?, ?, ?)",
                (spent_by, started_at, seconds, sent, failed),
            )

    def spending(self, spent_by: str) -> dict[str, Any]:
        """What ``spent_by`` paid for over all its attempts: answers stored, their tokens,
        requests sent and failed, generate seconds."""
        with self._lock:
            answers, prompt, completion = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), "
                "COALESCE(SUM(completion_tokens), 0) FROM responses WHERE spent_by = ?",
                (spent_by,),
            ).fetchone()
            sent, failed, seconds = self._conn.execute(
                "SELECT COALESCE(SUM(sent), 0), COALESCE(SUM(failed), 0), "
                "COALESCE(SUM(seconds), 0) FROM calls WHERE spent_by = ?",
                (spent_by,),
            ).fetchone()
        return {
            "answers": int(answers),
            "prompt_tokens": int(prompt),
            "completion_tokens": int(completion),
            "requests": int(sent),
            "failed": int(failed),
            "generate_seconds": round(float(seconds), 3),
        }

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def build_spending(cache_path: Path | None, spent_by: str) -> dict[str, Any]:
    """:meth:`ResponseCache.spending` of ``spent_by`` ({} without a cache file)."""
    if cache_path is None or not Path(cache_path).is_file():
        return {}
    with closing(ResponseCache(cache_path)) as cache:
        return cache.spending(spent_by)


class CachedBackend(LLMBackend):
    """Any backend behind the response cache (same name and identity): ``inner`` answers the
    misses, each stored as it is handed out and paid for by ``spent_by`` (a build's run id)."""

    def __init__(self, inner: LLMBackend, cache: str | Path, spent_by: str | None = None) -> None:
        super().__init__(inner.model, inner.sampling, inner.model_revision)
        self.inner = inner
        self.name = inner.name
        self.cache = ResponseCache(cache)
        self.spent_by = spent_by
        # host:pid:random: a process of the same host sees when it died
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def in_flight_limit(self) -> int | None:
        return self.inner.in_flight_limit()

    def check(self) -> None:
        self.inner.check()

    def hashes(self, requests: Sequence[ChatRequest]) -> list[str]:
        identity = self.identity()
        return [request_hash(identity, r) for r in requests]

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        positions: dict[str, list[int]] = {}  # hash -> the index of each of its requests
        for index, digest in enumerate(self.hashes(requests)):
            positions.setdefault(digest, []).append(index)
        done: set[str] = set()  # the hashes answered

        def answered(digest: str, answer: ChatResponse) -> None:
            done.add(digest)
            for index in positions[digest]:
                repeat = index != positions[digest][0]  # a later copy shares the answer paid for
                copy = dataclasses.replace(
                    answer,
                    key=requests[index].key,
                    cached=answer.cached or (repeat and answer.ok),
                    retried=answer.retried and not repeat,
                )
                deliver(index, copy)

        pending = list(positions)
        with self.cache.leased(self.owner):
            while pending:
                pending = self._take_stored(pending, positions, progress, answered)
                mine = self.cache.claim(pending, self.owner)
                to_send = [digest for digest in pending if digest in mine]
                misses = [requests[positions[digest][0]] for digest in to_send]
                self._send_claimed(to_send, misses, progress, answered)
                if progress is not None and to_send:
                    progress(sum(len(positions[digest]) - 1 for digest in to_send))  # the repeats
                pending = [digest for digest in pending if digest not in done]
                if pending:
                    self._wait_for_others(pending)

    def _take_stored(
        self,
        pending: list[str],
        positions: dict[str, list[int]],
        progress: ProgressCallback | None,
        answered: Callable[[str, ChatResponse], None],
    ) -> list[str]:
        """Hand what the cache holds among ``pending`` to ``answered``; the rest (answers that
        fail their digest check among them: asked again)."""
        stored, mismatched = self.cache.lookup(pending)
        if mismatched:
            self.usage.cache_mismatched += len(mismatched)
            logger.warning(
                "%d stored answer(s) in the response cache %s do not match their digest "
                "(edited, damaged, or digested under another %s: docs/security.md): asking again",
                len(mismatched),
                self.cache.path,
                KEY_ENV,
            )
        for digest, hit in stored.items():
            answered(digest, hit)
        if progress is not None and stored:
            progress(sum(len(positions[digest]) for digest in stored))
        return [digest for digest in pending if digest not in stored]

    def _send_claimed(
        self,
        to_send: list[str],
        misses: list[ChatRequest],
        progress: ProgressCallback | None,
        answered: Callable[[str, ChatResponse], None],
    ) -> None:
        """Send ``misses`` (of the claimed hashes ``to_send``), storing each answer and handing
        it to ``answered`` as it arrives."""
        if not to_send:
            return
        retried = self.cache.failed_before(to_send)
        started, clock = time.time(), time.perf_counter()

        def store(position: int, response: ChatResponse) -> None:
            digest = to_send[position]
            response.retried = digest in retried
            if response.ok:
                self.cache.put(digest, response, self.spent_by)
            else:
                self.cache.fail(digest, response.error or "failed")
            answered(digest, response)

        sent = self.inner.generate(misses, progress, on_response=store)
        failed = sum(1 for r in sent if not r.ok)
        self.cache.record_call(
            self.spent_by, started, time.perf_counter() - clock, len(sent), failed
        )

    def _wait_for_others(self, pending: list[str]) -> None:
        """Wait while other owners hold every one of ``pending`` and none has an answer yet."""
        logger.info(
            "waiting for %d prompt(s) another run is asking right now (cache %s); their "
            "answers are read from the cache, not paid again",
            len(pending),
            self.cache.path,
        )
        while self.cache.claimed_by_others(pending, self.owner) == set(pending):
            if self.cache.lookup(pending)[0]:
                return
            time.sleep(POLL_S)

    def close(self) -> None:
        self.inner.close()
        self.cache.close()
