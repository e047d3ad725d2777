"""The diagnostics encoder in a child process (:class:`~cseaug.worker_process.WorkerProcess`),
embedding ahead while the build generates, so that the build's process never imports torch for
it: :meth:`~EncoderWorker.prefetch` hands texts over for the background,
:meth:`~EncoderWorker.encode` is served before that backlog, and an error in the child is
raised in the parent, same class and message, by the call that needs the encoder.
docs/diagnostics.md ("In a build: the encoder worker") has the whole behaviour, the threads
it embeds with among it.
"""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.base import Encoder
from cseaug.encoders.store import text_key
from cseaug.errors import BackendError
from cseaug.worker_process import WorkerProcess, when_idle

logger = logging.getLogger(__name__)

CHUNK = 256
"""Prefetched texts embedded at once in the child: between chunks it serves requests."""
CLOSE_WAIT_S = 5.0
"""How long :meth:`EncoderWorker.close` waits for the child before killing it."""


class EncoderWorker:
    """The ``diagnostics`` encoder in a child process (see the module docstring).

    Args:
        cfg: the ``diagnostics`` section (encoder, threads, ...).
        cache_dir: the on-disk embedding cache directory, or None (memory only).

    Attributes:
        name: the configured encoder name (``diagnostics.encoder``).
    """

    def __init__(self, cfg: DiagnosticsConfig, cache_dir: str | Path | None) -> None:
        self._process = WorkerProcess()
        self._model = self._process.submit(
            _start, cfg, None if cache_dir is None else str(cache_dir)
        )
        self.name = cfg.encoder
        self._closed = False
        self._error_raised = False

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    def wait_until_loaded(self) -> None:
        """Wait until the child has loaded the model (raises its error, as :meth:`encode`), so
        that a caller can show the wait for the load apart from the embedding's progress."""
        self._result(self._model)

    @property
    def dimension(self) -> int:
        """The embedding size (waits until the child has loaded the model)."""
        return int(self._result(self._model)["dimension"])

    def prefetch(self, texts: Sequence[str]) -> None:
        """Have the child embed ``texts`` in the background (in order); returns at once. A
        child that failed is not an error here: the call that needs the encoder raises it."""
        if texts and not self._closed:
            self._process.submit(_call, _Child.prefetch, list(texts))

    def generation_done(self) -> None:
        """Tell the child the LLM is done: it may now use ``diagnostics.publish_threads``."""
        if not self._closed:
            self._process.submit(_call, _Child.generation_done)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 embeddings of ``texts``, in order (served before the backlog).

        Raises:
            the child's error, same class and message (e.g. :class:`~cseaug.errors.ConfigError`
            when the model cannot be loaded); :class:`~cseaug.errors.BackendError` when the
            child stopped without one.
        """
        self.wait_until_loaded()
        return self._result(self._process.submit(_call, _Child.encode, list(texts)))

    def overlap(self) -> dict[str, int]:
        """How the texts asked for through :meth:`encode` were embedded: ``texts`` (distinct),
        ``before_publish`` (before :meth:`generation_done`, or all when it was never called),
        ``after_publish``, and ``waiting``, prefetched texts not embedded yet
        (docs/diagnostics.md, "What was overlapped")."""
        self.wait_until_loaded()
        return self._result(self._process.submit(_call, _Child.overlap))

    def close(self) -> None:
        """End the child (at once, killed when it has not ended after a few seconds); an
        error nobody asked for is logged at debug level."""
        if self._closed:
            return
        self._closed = True
        self._process.close(CLOSE_WAIT_S)
        if self._model.done() and self._model.exception() and not self._error_raised:
            logger.debug("diagnostics encoder worker failed: %s", self._model.exception())

    def __enter__(self) -> EncoderWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _result(self, future: Future[Any]) -> Any:
        if self._closed:
            raise BackendError("the diagnostics encoder worker is closed")
        try:
            return future.result()
        except BaseException:
            self._error_raised = True
            raise


class _Child:
    """The child's side: the encoder, the prefetched backlog and what was embedded when. Every
    call runs on the child's one thread (torch's thread setting is that thread's); between
    calls, :meth:`embed_next_chunk` works through the backlog, so a request waits for one
    chunk at most."""

    def __init__(self, encoder: Encoder, cfg: DiagnosticsConfig) -> None:
        self.encoder, self.cfg = encoder, cfg
        self.backlog: collections.deque[str] = collections.deque()
        self.ready: dict[bytes, int] = {}  # text key -> order in which it became ready
        self.handover: int | None = None  # len(ready) when generation was done
        self.asked: set[bytes] = set()  # texts of encode requests
        import torch  # loaded with the encoder, whose loading applied torch_threads

        self.background_threads = torch.get_num_threads()

    def prefetch(self, texts: list[str]) -> None:
        self.backlog.extend(texts)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.asked.update(text_key(t) for t in texts)
        self.use_threads(waited_on=True)
        try:
            return self.embed(texts)
        finally:
            self.use_threads(waited_on=self.handover is not None)

    def generation_done(self) -> None:
        if self.handover is None:
            self.handover = len(self.ready)
        self.use_threads(waited_on=True)

    def use_threads(self, waited_on: bool) -> None:
        """``publish_threads`` when someone waits on the embedding, else the count the encoder
        was loaded with (``torch_threads``, or torch's own when that is None)."""
        import torch

        threads = (self.cfg.publish_threads if waited_on else None) or self.background_threads
        torch.set_num_threads(len(os.sched_getaffinity(0)) if threads == "all" else threads)

    def overlap(self) -> dict[str, int]:
        handover = len(self.ready) if self.handover is None else self.handover
        before = sum(1 for key in self.asked if self.ready[key] < handover)
        return {
            "texts": len(self.asked),
            "before_publish": before,
            "after_publish": len(self.asked) - before,
            "waiting": len({text_key(t) for t in self.backlog} - self.ready.keys()),
        }

    def embed_next_chunk(self) -> bool:
        """Embed the next :data:`CHUNK` texts of the backlog; whether there were any."""
        chunk = [self.backlog.popleft() for _ in range(min(CHUNK, len(self.backlog)))]
        todo = [t for t in chunk if text_key(t) not in self.ready]
        if todo:
            self.embed(todo)
        return bool(chunk)

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.encoder.encode(texts)
        for text in texts:
            self.ready.setdefault(text_key(text), len(self.ready))
        return vectors


_CHILD: _Child | None = None
"""The child process's side (set by :func:`_start` once the model is loaded)."""


def _start(cfg: DiagnosticsConfig, cache_dir: str | None) -> dict[str, Any]:
    """Load the encoder; its dimension, or its error."""
    from cseaug.encoders.loading import encoder_from_config

    global _CHILD
    _CHILD = _Child(encoder_from_config(cfg, cache_dir), cfg)
    when_idle(_CHILD.embed_next_chunk)
    return {"dimension": _CHILD.encoder.dimension}


def _call(method: Callable[..., Any], *args: Any) -> Any:
    """A ``method`` of :class:`_Child` on the child's side; nothing where the model failed to
    load (the parent waits for a result only once it is loaded: the load's error is raised)."""
    return None if _CHILD is None else method(_CHILD, *args)
