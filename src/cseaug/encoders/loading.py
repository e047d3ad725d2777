"""Load a sentence encoder by name or path, behind the embedding cache.

:func:`load_encoder` resolves a name or a path (:func:`resolve_model`) to an
:class:`~cseaug.encoders.base.Encoder` of L2-normalised float32 rows (ONNX Runtime or torch),
wrapped in a :class:`~cseaug.encoders.store.CachedEncoder` (docs/diagnostics.md, "The encoder
and its cache", which shows the use)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from cseaug.config import DiagnosticsConfig
from cseaug.devices import (
    free_device_memory,
    gpu_driver_present,
    resolve_device,
    resolve_precision,
)
from cseaug.encoders.base import Encoder, unit_rows
from cseaug.encoders.minilm import MINILM_ID, MINILM_REVISION, model_location
from cseaug.encoders.onnx import ONNX_FILE, OnnxEncoder, onnx_applicable
from cseaug.encoders.store import CachedEncoder, EmbeddingStore
from cseaug.errors import ConfigError, require
from cseaug.progress import progress_enabled

DEFAULT_ENCODER = MINILM_ID
"""The project's default sentence encoder (sentence-transformers, mean pooling, 384 dimensions)."""

Pooling = Literal["auto", "sentence_transformers", "cls"]
Runtime = Literal["auto", "torch", "onnx"]
EncoderPrecision = Literal["auto", "float32", "bfloat16", "float16"]


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
    pooled by the last hidden state of its first token, [CLS], as NGCSE; rows normalised in
    float32."""

    def __init__(
        self,
        location: str,
        *,
        pooling: Literal["sentence_transformers", "cls"],
        device: str,
        batch_size: int,
        max_seq_length: int | None,
        precision: EncoderPrecision = "float32",
    ) -> None:
        cls = pooling == "cls"
        purpose = (
            "[CLS] sentence embeddings"
            if cls
            else "Cosine similarity with a sentence-transformers model"
        )
        st = require("sentence_transformers", "hf", purpose)
        modules = require("sentence_transformers.sentence_transformer.modules", "hf", purpose)
        self._torch = require("torch", "hf", purpose)
        device = resolve_device(device, "diagnostics.device")
        try:
            if cls:
                transformer = modules.Transformer(location)
                pooled = modules.Pooling(transformer.get_embedding_dimension(), "cls")
                self.model = st.SentenceTransformer(modules=[transformer, pooled], device=device)
            else:
                self.model = st.SentenceTransformer(location, device=device)
        except OSError as exc:
            kind = "transformers" if cls else "sentence-transformers"
            raise ConfigError(
                f"cannot load the {kind} model {location!r} ({exc}); offline, give a local model "
                "directory (diagnostics.encoder)" + ("" if cls else " or 'all-MiniLM-L6-v2'")
            ) from exc
        if max_seq_length:
            self.model.max_seq_length = max_seq_length
        self.name = location
        self.dimension = int(self.model.get_embedding_dimension())
        self.batch_size = batch_size
        self.device = str(self.model.device)
        self.precision = resolve_precision(
            precision, self.device, "diagnostics.precision", purpose="inference"
        )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self.precision == "float32":
            vectors = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)
        torch = self._torch
        with torch.autocast(torch.device(self.device).type, getattr(torch, self.precision)):
            pooled = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_tensor=True,
                show_progress_bar=False,
            )
        return unit_rows(pooled.float().cpu().numpy().reshape(len(texts), self.dimension))

    def close(self) -> None:
        """Free the model (and the GPU memory it held)."""
        self.model = None
        free_device_memory(self.device)


def _identity(location: str, pooling: str, max_seq_length: int | None, precision: str) -> str:
    """What makes two encoders give the same vectors: model files, pooling, truncation,
    precision (float32 adds nothing, so caches written before precisions existed stay valid)."""
    parts = [pooling, location, str(max_seq_length)]
    if precision != "float32":
        parts.append(precision)
    root = Path(location)
    if root.is_dir():
        for file in sorted(root.rglob("*")):
            if file.is_file() and file.suffix in {".json", ".safetensors", ".bin", ".txt"}:
                parts.append(f"{file.relative_to(root)}:{file.stat().st_size}")
    return "|".join(parts)


def use_onnx(
    location: str,
    how: str,
    device: str,
    runtime: Runtime,
    precision: EncoderPrecision = "float32",
) -> bool:
    """Whether ``runtime`` and the model make :func:`load_encoder` use ONNX Runtime, which
    computes in float32: ``auto`` takes it when the precision is float32 (a CPU with native
    bfloat16 embeds faster with torch, docs/performance.md).

    Raises:
        ConfigError: ``onnx`` was asked for a model, device or precision it cannot run.

    Example:
        >>> use_onnx("bert-base-uncased", "cls", "cpu", "auto")
        False
    """
    if runtime == "torch":
        return False
    on_cpu = device == "cpu" or (device == "auto" and not gpu_driver_present())
    able = how == "sentence_transformers" and on_cpu and onnx_applicable(location)
    if runtime == "onnx" and not able:
        raise ConfigError(
            f"diagnostics.runtime=onnx needs the CPU, onnxruntime and a sentence-transformers model "
            f"with {ONNX_FILE} and mean pooling; {location!r} on {device!r} has not all of them "
            "(runtime: auto falls back to torch)"
        )
    if runtime == "onnx":
        if precision not in ("auto", "float32"):
            raise ConfigError(
                f"diagnostics.runtime=onnx computes in float32, not {precision}; set "
                "diagnostics.precision to auto or float32, or runtime to torch"
            )
        return True
    device_kind = "cpu" if on_cpu else "cuda"
    return able and resolve_precision(precision, device_kind, purpose="inference") == "float32"


def load_encoder(
    name: str = DEFAULT_ENCODER,
    *,
    revision: str = MINILM_REVISION,
    pooling: Pooling = "auto",
    device: str = "auto",
    batch_size: int = 64,
    max_seq_length: int | None = None,
    torch_threads: int | None = 1,
    cache_dir: str | Path | None = None,
    runtime: Runtime = "auto",
    precision: EncoderPrecision = "float32",
) -> CachedEncoder:
    """Load a sentence encoder behind an embedding cache.

    Args:
        name, revision, pooling, device, batch_size, max_seq_length, torch_threads, runtime,
            precision: as the ``diagnostics`` keys ``encoder``, ``encoder_revision`` and the
            others of the same names (:class:`~cseaug.config.DiagnosticsConfig`), except that
            ``precision`` is ``float32`` unless asked (only the diagnostics want ``auto``).
        cache_dir: directory of the on-disk cache (one sqlite file per encoder); None keeps
            embeddings in memory only.

    Returns:
        A :class:`CachedEncoder`; ``encode(texts)`` gives L2-normalised float32 rows.
    """
    location, how = resolve_model(name, pooling, revision)
    backend: Encoder
    if use_onnx(location, how, device, runtime, precision):
        how = "onnx"
        backend = OnnxEncoder(
            location, batch_size=batch_size, max_seq_length=max_seq_length, threads=torch_threads
        )
    else:
        if not progress_enabled():  # no weight-loading bars where cseaug draws none either
            transformers = require("transformers", "hf", "Sentence embeddings")
            transformers.utils.logging.disable_progress_bar()
        if torch_threads is not None:
            require("torch", "hf", "Sentence embeddings").set_num_threads(torch_threads)
        backend = TorchEncoder(
            location,
            pooling=how,
            device=device,
            batch_size=batch_size,
            max_seq_length=max_seq_length,
            precision=precision,
        )
    backend.name = name
    store = None
    if cache_dir is not None:
        identity = _identity(location, how, max_seq_length, backend.precision)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[-60:] or "encoder"
        path = Path(cache_dir) / f"{slug}-{how}-{digest}.sqlite"
        store = EmbeddingStore(path, identity, backend.dimension)
    return CachedEncoder(backend, store=store)


def encoder_from_config(
    cfg: DiagnosticsConfig, cache_dir: str | Path | None = None
) -> CachedEncoder:
    """:func:`load_encoder` with the settings of a ``diagnostics`` config section; ``cache_dir``
    (the build's ``<work_dir>/cache/embeddings``) is ignored when ``embedding_cache`` is off."""
    return load_encoder(
        cfg.encoder,
        revision=cfg.encoder_revision,
        pooling=cfg.pooling,
        device=cfg.device,
        batch_size=cfg.batch_size,
        max_seq_length=cfg.max_seq_length,
        torch_threads=cfg.torch_threads,
        cache_dir=cache_dir if cfg.embedding_cache else None,
        runtime=cfg.runtime,
        precision=cfg.precision,
    )
