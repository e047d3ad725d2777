"""Load a sentence encoder by name or path, behind the embedding cache.

:func:`load_encoder` resolves a name or a path (:func:`resolve_model`) to an
:class:`~cseaug.encoders.base.Encoder` of L2-normalised rows, computed in float64 and kept as
float32, wrapped in a :class:`~cseaug.encoders.store.CachedEncoder` (docs/diagnostics.md, "The
encoder and its cache", which shows the use)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cseaug.config import DiagnosticsConfig
from cseaug.devices import free_device_memory, resolve_device
from cseaug.encoders.minilm import MINILM_ID, MINILM_REVISION, model_location
from cseaug.encoders.store import CachedEncoder, EmbeddingStore
from cseaug.errors import ConfigError, require
from cseaug.progress import progress_enabled

DEFAULT_ENCODER = MINILM_ID
"""The project's default sentence encoder (sentence-transformers, mean pooling, 384 dimensions)."""

Pooling = Literal["auto", "sentence_transformers", "cls"]


def resolve_model(
    name: str, pooling: Pooling = "auto", revision: str = MINILM_REVISION
) -> tuple[str, Literal["sentence_transformers", "cls"]]:
    """Where a model name points (:func:`~cseaug.encoders.minilm.model_location`) and how it
    pools: ``auto`` is sentence-transformers' own pooling for a sentence-transformers model,
    else [CLS] of the transformers model.

    Example:
        >>> resolve_model("bert-base-uncased")
        ('bert-base-uncased', 'cls')
    """
    location, is_sentence_transformer = model_location(name, revision)
    if pooling != "auto":
        return location, pooling
    return location, "sentence_transformers" if is_sentence_transformer else "cls"


class TorchEncoder:
    """A sentence-transformers model with its own pooling, or (``cls``) a transformers model
    pooled by the last hidden state of its first token, [CLS], as NGCSE.

    It computes in float64 and rounds the unit rows to float32: a float32 forward pass gives
    last bits that depend on the batch a text shares and on the CPU's instructions (up to
    ~2e-7), while float64's differences (~1e-15) vanish in the rounding, so a text's vector,
    and every ``cs_<view>`` value written into a version, is the same whatever the batch, the
    runner or the machine (docs/diagnostics.md, "The encoder and its cache")."""

    def __init__(
        self,
        location: str,
        *,
        pooling: Literal["sentence_transformers", "cls"],
        device: str,
        batch_size: int,
        max_seq_length: int | None,
    ) -> None:
        cls = pooling == "cls"
        purpose = (
            "[CLS] sentence embeddings"
            if cls
            else "Cosine similarity with a sentence-transformers model"
        )
        st = require("sentence_transformers", "hf", purpose)
        modules = require("sentence_transformers.sentence_transformer.modules", "hf", purpose)
        device = resolve_device(device, "diagnostics.device")
        try:
            if cls:
                transformer = modules.Transformer(location)
                pooled = modules.Pooling(transformer.get_embedding_dimension(), "cls")
                self.model = st.SentenceTransformer(modules=[transformer, pooled], device=device)
            else:
                self.model = st.SentenceTransformer(location, device=device)
        except (OSError, ValueError) as exc:  # ValueError: a folder that holds no model
            kind = "transformers" if cls else "sentence-transformers"
            raise ConfigError(
                f"cannot load the {kind} model {location!r} ({exc}); offline, give a local model "
                "directory (diagnostics.encoder)" + ("" if cls else " or 'all-MiniLM-L6-v2'")
            ) from exc
        self.model.double()
        if max_seq_length:
            self.model.max_seq_length = max_seq_length
        self.name = location
        self.dimension = int(self.model.get_embedding_dimension())
        self.batch_size = batch_size
        self.device = str(self.model.device)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def close(self) -> None:
        """Free the model (and the GPU memory it held)."""
        self.model = None
        free_device_memory(self.device)


def _identity(location: str, pooling: str, max_seq_length: int | None) -> str:
    """What makes two encoders give the same vectors: model files, pooling, truncation, and
    the float64 computation (caches of the float32 encoder before it are not read)."""
    parts = [pooling, location, str(max_seq_length), "float64"]
    root = Path(location)
    if root.is_dir():
        for file in sorted(root.rglob("*")):
            if file.is_file() and file.suffix in {".json", ".safetensors", ".bin", ".txt"}:
                parts.append(f"{file.relative_to(root)}:{file.stat().st_size}")
    return "|".join(parts)


def load_encoder(
    name: str = DEFAULT_ENCODER, *, cache_dir: str | Path | None = None, **settings: Any
) -> CachedEncoder:
    """Load a sentence encoder behind an embedding cache.

    Args:
        name: as the ``diagnostics`` key ``encoder``.
        cache_dir: directory of the on-disk cache (one sqlite file per encoder); None keeps
            embeddings in memory only.
        settings: the other ``diagnostics`` keys of the encoder (``encoder_revision``,
            ``pooling``, ``device``, ``batch_size``, ``max_seq_length``, ``torch_threads``),
            validated as a config's (:class:`~cseaug.config.DiagnosticsConfig`).

    Returns:
        A :class:`CachedEncoder`; ``encode(texts)`` gives L2-normalised float32 rows.
    """
    return encoder_from_config(DiagnosticsConfig(encoder=name, **settings), cache_dir)


def encoder_from_config(
    cfg: DiagnosticsConfig, cache_dir: str | Path | None = None
) -> CachedEncoder:
    """The encoder of a ``diagnostics`` config section; ``cache_dir`` (the build's
    ``<work_dir>/cache/embeddings``) is ignored when ``embedding_cache`` is off."""
    location, how = resolve_model(cfg.encoder, cfg.pooling, cfg.encoder_revision)
    if not progress_enabled():  # no weight-loading bars where cseaug draws none either
        transformers = require("transformers", "hf", "Sentence embeddings")
        transformers.utils.logging.disable_progress_bar()
    if cfg.torch_threads is not None:
        require("torch", "hf", "Sentence embeddings").set_num_threads(cfg.torch_threads)
    backend = TorchEncoder(
        location,
        pooling=how,
        device=cfg.device,
        batch_size=cfg.batch_size,
        max_seq_length=cfg.max_seq_length,
    )
    backend.name = cfg.encoder
    store = None
    if cache_dir is not None and cfg.embedding_cache:
        identity = _identity(location, how, cfg.max_seq_length)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", cfg.encoder).strip("_")[-60:] or "encoder"
        path = Path(cache_dir) / f"{slug}-{how}-{digest}.sqlite"
        store = EmbeddingStore(path, identity, backend.dimension)
    return CachedEncoder(backend, store=store)
