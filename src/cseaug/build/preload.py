"""Load the diagnostics encoder while the LLM works, and embed the anchors meanwhile (issue 14).

A version's diagnostics need a sentence encoder (NGCSE appendix, "Match Error Rate and Cosine
Similarity"): importing torch and sentence-transformers and loading the model take 10-20 s on
a small CPU machine, and the sampled anchors are embedded again in every cosine-similarity
pass. Both are known when the plan is written, while generation is mostly waiting on the LLM,
so :class:`EncoderPreload` does them in one background thread: the publish step then takes
the loaded encoder (:meth:`EncoderPreload.get`), whose cache already holds the anchors.

The thread only loads and encodes; nothing else touches the encoder until :meth:`get` has
waited for it, so the encoder is never used from two threads at once.

Example:
    >>> preload = EncoderPreload(DiagnosticsConfig(), None, ["A cat sat."])  # doctest: +SKIP
    >>> encoder = preload.get()  # doctest: +SKIP
    >>> preload.close()  # doctest: +SKIP
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Sequence
from pathlib import Path

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.loading import encoder_from_config
from cseaug.encoders.store import CachedEncoder

logger = logging.getLogger(__name__)


class EncoderPreload:
    """The diagnostics encoder, loading in a background thread, then embedding ``anchors``.

    Args:
        cfg: the ``diagnostics`` section.
        cache_dir: the on-disk embedding cache (``<output.root>/cache/embeddings``).
        anchors: texts to embed once the encoder is loaded (the sample's anchors).
    """

    def __init__(
        self, cfg: DiagnosticsConfig, cache_dir: str | Path | None, anchors: Sequence[str]
    ) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="encoder-preload")
        self._future = self._pool.submit(self._load, cfg, cache_dir, list(anchors))
        self._pool.shutdown(wait=False)

    @staticmethod
    def _load(
        cfg: DiagnosticsConfig, cache_dir: str | Path | None, anchors: list[str]
    ) -> CachedEncoder:
        encoder = encoder_from_config(cfg, cache_dir)
        try:
            if anchors:
                encoder.encode(anchors)
        except Exception:
            encoder.close()
            raise
        return encoder

    def get(self) -> CachedEncoder:
        """The loaded encoder (waits for the thread).

        Raises:
            whatever loading the encoder raised (e.g. :class:`~cseaug.errors.ConfigError`).
        """
        return self._future.result()

    def close(self) -> None:
        """Wait for the thread and free the encoder; a loading error is logged, not raised
        (whoever needed the encoder got it from :meth:`get`)."""
        try:
            encoder = self._future.result()
        except Exception as exc:
            logger.debug("encoder preload failed: %s", exc)
            return
        encoder.close()
