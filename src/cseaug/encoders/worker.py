"""The diagnostics encoder in a child process, embedding ahead while the build generates.

:class:`EncoderWorker` holds the encoder that
:func:`~cseaug.encoders.loading.encoder_from_config` builds in a fresh interpreter
(``python -m cseaug.encoders.worker``: never a fork of a process running asyncio and Prefect
threads, and unlike *spawn* it does not import the caller's ``__main__``), connected by a
socket pair, so the build's process never imports torch for it. :meth:`~EncoderWorker.prefetch`
hands texts over for the background, :meth:`~EncoderWorker.encode` is served before that
backlog, :meth:`~EncoderWorker.generation_done` switches the child to
``diagnostics.publish_threads``; an error in the child is raised in the parent, same class
and message, by the call that needs the encoder. docs/diagnostics.md ("In a build: the
encoder worker") has the whole behaviour.
"""

from __future__ import annotations

import collections
import logging
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.store import text_key
from cseaug.errors import BackendError

logger = logging.getLogger(__name__)

CHUNK = 256
"""Prefetched texts embedded per call in the child: between chunks it reads new requests."""
CLOSE_WAIT_S = 5.0
"""How long :meth:`EncoderWorker.close` waits for the child before terminating it."""


class EncoderWorker:
    """The ``diagnostics`` encoder in a child process (see the module docstring).

    Args:
        cfg: the ``diagnostics`` section (encoder, runtime, threads, ...).
        cache_dir: the on-disk embedding cache directory, or None (memory only).

    Attributes:
        name: the configured encoder name (``diagnostics.encoder``).
    """

    def __init__(self, cfg: DiagnosticsConfig, cache_dir: str | Path | None) -> None:
        ours, theirs = socket.socketpair()  # not inherited by other children: EOF when we die
        # the child runs the cseaug this process runs, also from a source tree
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the build's output is its own; warnings go to stderr
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,  # Ctrl-C goes to the build, which closes the worker
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._conn.send(("start", cfg, None if cache_dir is None else str(cache_dir)))
        self.name = cfg.encoder
        self._model: dict[str, Any] | None = None  # dimension and precision, once loaded
        self._error: BaseException | None = None
        self._error_raised = False
        self._closed = False
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    def wait_until_loaded(self) -> None:
        """Wait until the child has loaded the model (raises its error, as :meth:`encode`), so
        that a caller can show the wait for the load apart from the embedding's progress."""
        self._loaded()

    @property
    def dimension(self) -> int:
        """The embedding size (waits until the child has loaded the model)."""
        return int(self._loaded()["dimension"])

    @property
    def precision(self) -> str:
        """The number format the model computes in, as the child resolved it (waits until
        the model is loaded)."""
        return str(self._loaded()["precision"])

    def prefetch(self, texts: Sequence[str]) -> None:
        """Have the child embed ``texts`` in the background (in order); returns at once.

        A child that has stopped is not an error here: it is raised by the call that needs
        the encoder (:meth:`encode`).
        """
        if texts:
            with self._lock:
                self._send(("prefetch", list(texts)), quiet=True)

    def generation_done(self) -> None:
        """Tell the child the LLM is done: it may now use ``diagnostics.publish_threads``."""
        with self._lock:
            self._send(("generation_done",), quiet=True)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 embeddings of ``texts``, in order (served before the backlog).

        Raises:
            the child's error, same class and message (e.g. :class:`~cseaug.errors.ConfigError`
            when the model cannot be loaded); :class:`~cseaug.errors.BackendError` when the
            child stopped without one.
        """
        with self._lock:
            self._send(("encode", list(texts)))
            return self._receive_until("vectors")

    def overlap(self) -> dict[str, int]:
        """How the texts asked for through :meth:`encode` were embedded: ``texts`` (distinct),
        ``before_publish`` (before :meth:`generation_done`, or all when it was never called),
        ``after_publish``, and ``waiting``, prefetched texts not embedded yet
        (docs/diagnostics.md, "What was overlapped")."""
        with self._lock:
            self._send(("overlap",))
            return self._receive_until("overlap")

    def close(self) -> None:
        """End the child (it finishes its current chunk, else it is terminated after a few
        seconds); an error nobody asked for is logged at debug level."""
        if self._closed:
            return
        self._closed = True
        try:
            while self._error is None and self._conn.poll(0):
                self._take(self._conn.recv())
        except (EOFError, OSError):
            pass
        self._conn.close()
        try:
            self._process.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._error is not None and not self._error_raised:
            logger.debug("diagnostics encoder worker failed: %s", self._error)

    def __enter__(self) -> EncoderWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _loaded(self) -> dict[str, Any]:
        with self._lock:
            while self._model is None:
                self._receive()
            return self._model

    def _send(self, message: tuple, quiet: bool = False) -> None:
        if self._closed:
            raise BackendError("the diagnostics encoder worker is closed")
        if self._error is not None:
            if quiet:
                return
            self._raise()
        try:
            self._conn.send(message)
        except OSError:
            if not quiet:
                self._receive()  # the child's last words, else why it stopped

    def _receive_until(self, kind: str) -> Any:
        while True:
            got, payload = self._receive()
            if got == kind:
                return payload

    def _receive(self) -> tuple[str, Any]:
        if self._error is not None:
            self._raise()
        try:
            message = self._conn.recv()
        except (EOFError, OSError):
            try:
                code: int | str | None = self._process.wait(CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:
                code = "none yet"
            self._error = BackendError(
                f"the diagnostics encoder worker stopped unexpectedly (exit code {code})"
            )
            self._raise()
        self._take(message)
        if self._error is not None:
            self._raise()
        return message[0], message[1] if len(message) > 1 else None

    def _take(self, message: tuple) -> None:
        if message[0] == "ready":
            self._model = message[1]
        elif message[0] == "failed":
            self._error = _rebuilt(message[1])

    def _raise(self) -> None:
        assert self._error is not None
        self._error_raised = True
        raise self._error


ErrorParts = tuple[type[BaseException], tuple, dict[str, Any]]


def _portable(exc: BaseException) -> ErrorParts:
    """What rebuilds ``exc`` in the parent (class, arguments, attributes), also for classes
    whose ``__init__`` takes other arguments than ``args`` (:class:`MissingExtraError`);
    a :class:`BackendError` with its words when those cannot cross the pipe."""
    parts = (type(exc), exc.args, dict(vars(exc)))
    try:
        pickle.loads(pickle.dumps(parts))
    except Exception:
        return BackendError, (f"diagnostics encoder: {type(exc).__name__}: {exc}",), {}
    return parts


def _rebuilt(parts: ErrorParts) -> BaseException:
    """The child's error again: same class, same message, same attributes."""
    cls, args, state = parts
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def _read_until_eof(conn: Connection, inbox: queue.SimpleQueue) -> None:
    """The child's reader thread: every request into ``inbox``; the parent gone, exit now."""
    while True:
        try:
            inbox.put(conn.recv())
        except (EOFError, OSError):
            os._exit(0)


def _set_threads(threads: int) -> None:
    """Threads of the torch encoder (ONNX Runtime keeps those its session started with)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


class _Child:
    """The child's side: the encoder, the prefetched backlog and what was embedded when."""

    def __init__(self, conn: Connection, encoder: Any, cfg: DiagnosticsConfig) -> None:
        self.conn, self.encoder, self.cfg = conn, encoder, cfg
        self.backlog: collections.deque[str] = collections.deque()
        self.ready: dict[bytes, int] = {}  # text key -> order in which it became ready
        self.handover: int | None = None  # len(ready) when generation was done
        self.asked: set[bytes] = set()  # texts of encode requests

    def step(self, inbox: queue.SimpleQueue) -> None:
        """Handle the next request, or, when none waits, embed the next chunk of the backlog
        (with neither: wait for a request)."""
        if not self.backlog:
            self.handle(inbox.get())
            return
        try:
            message = inbox.get_nowait()
        except queue.Empty:
            chunk = [self.backlog.popleft() for _ in range(min(CHUNK, len(self.backlog)))]
            todo = [t for t in chunk if text_key(t) not in self.ready]
            if todo:
                self.embed(todo)
            return
        self.handle(message)

    def handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "prefetch":
            self.backlog.extend(message[1])
        elif kind == "generation_done":
            if self.handover is None:
                self.handover = len(self.ready)
            threads = self.cfg.publish_threads
            if threads is not None:
                _set_threads(len(os.sched_getaffinity(0)) if threads == "all" else threads)
        elif kind == "encode":
            texts = message[1]
            self.asked.update(text_key(t) for t in texts)
            self.conn.send(("vectors", self.embed(texts)))
        elif kind == "overlap":
            handover = len(self.ready) if self.handover is None else self.handover
            before = sum(1 for key in self.asked if self.ready[key] < handover)
            counts = {
                "texts": len(self.asked),
                "before_publish": before,
                "after_publish": len(self.asked) - before,
                "waiting": len({text_key(t) for t in self.backlog} - self.ready.keys()),
            }
            self.conn.send(("overlap", counts))

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = self.encoder.encode(texts)
        for text in texts:
            self.ready.setdefault(text_key(text), len(self.ready))
        return vectors


def serve(conn: Connection) -> None:
    """The child process: load the encoder, say so (or send the error), then serve requests."""
    from cseaug.encoders.loading import encoder_from_config

    _, cfg, cache_dir = conn.recv()
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_read_until_eof, args=(conn, inbox), daemon=True).start()
    try:
        encoder = encoder_from_config(cfg, cache_dir)
    except BaseException as exc:
        conn.send(("failed", _portable(exc)))
        return
    conn.send(("ready", {"dimension": encoder.dimension, "precision": encoder.precision}))
    child = _Child(conn, encoder, cfg)
    try:
        while True:
            child.step(inbox)
    except BaseException as exc:
        conn.send(("failed", _portable(exc)))


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
