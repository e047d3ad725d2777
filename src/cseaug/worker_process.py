"""One child process for work that must not run in the build's interpreter (an encoder that
imports torch, tokenizers beside a GPU loop).

:class:`WorkerProcess` starts a fresh interpreter (``python -m cseaug.worker_process``):
never a fork of a process running asyncio and Prefect threads or holding CUDA, and, unlike
multiprocessing's *spawn*, it does not import the caller's ``__main__`` again, so a script
calling ``run_build`` needs no ``if __name__ == "__main__"`` guard. The child runs in a
session of its own (Ctrl-C reaches the build, which closes it) and exits when its parent
dies (end of file on its socket).

Example:
    >>> with WorkerProcess() as child:  # doctest: +SKIP
    ...     child.submit(pow, 2, 10).result()
    1024
"""

from __future__ import annotations

import collections
import contextlib
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from cseaug.errors import BackendError

ErrorParts = tuple[type[BaseException], tuple, dict[str, Any]]


class WorkerProcess:
    """One child interpreter running submitted functions in order (see the module docstring)."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()  # not inherited by other children: EOF when we die
        # the child runs the cseaug this process runs, also from a source tree
        package_root = str(Path(__file__).resolve().parents[1])
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the build's output is its own; warnings go to stderr
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,
        )
        theirs.close()
        self._socket = ours  # shut down by close(): end of file on both sides
        self._conn = Connection(os.dup(ours.fileno()))
        self._pending: collections.deque[Future[Any]] = collections.deque()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        """Run ``fn(*args)`` in the child after what was submitted before; the future holds its
        result or the child's error, with its class, message and attributes
        (:class:`~cseaug.errors.BackendError` when the child stopped without one)."""
        future: Future[Any] = Future()
        with self._lock:
            try:
                self._conn.send((fn, args))
            except OSError:
                future.set_exception(self._stopped())
                return future
            self._pending.append(future)
        return future

    def close(self, wait_s: float | None = None) -> None:
        """End the child once what was submitted is done; with ``wait_s``, at once (the child
        exits at end of file; it is killed when it has not within ``wait_s`` seconds)."""
        if wait_s is None:
            with self._lock:
                pending = list(self._pending)
            wait(pending)
        with contextlib.suppress(OSError):  # OSError: closed before
            self._socket.shutdown(socket.SHUT_RDWR)  # end of file for the child and our reader
        try:
            self._process.wait(wait_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join()
        self._conn.close()
        self._socket.close()

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> None:
        """The parent's reader thread: each answer settles the oldest pending future."""
        while True:
            try:
                ok, value = self._conn.recv()
            except (EOFError, OSError):
                with self._lock:
                    pending, self._pending = list(self._pending), collections.deque()
                for future in pending:
                    future.set_exception(self._stopped())
                return
            with self._lock:
                future = self._pending.popleft()
            if ok:
                future.set_result(value)
            else:
                future.set_exception(_rebuilt(value))

    def _stopped(self) -> BackendError:
        try:
            code: int | str | None = self._process.wait(1.0)
        except subprocess.TimeoutExpired:
            code = "none yet"
        return BackendError(f"the worker process stopped unexpectedly (exit code {code})")


def _portable(exc: BaseException) -> ErrorParts:
    """What rebuilds ``exc`` in the parent (class, arguments, attributes), also for classes
    whose ``__init__`` takes other arguments than ``args`` (:class:`MissingExtraError`);
    a :class:`~cseaug.errors.BackendError` with its words when those cannot cross."""
    parts = (type(exc), exc.args, dict(vars(exc)))
    try:
        pickle.loads(pickle.dumps(parts))
    except Exception:
        return BackendError, (f"worker process: {type(exc).__name__}: {exc}",), {}
    return parts


def _rebuilt(parts: ErrorParts) -> BaseException:
    """The child's error again: same class, same message, same attributes."""
    cls, args, state = parts
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


def _read_until_eof(conn: Connection, inbox: queue.SimpleQueue) -> None:
    """The child's reader thread: every call into ``inbox``; the parent gone, exit now."""
    while True:
        try:
            inbox.put(conn.recv())
        except (EOFError, OSError):
            os._exit(0)


_IDLE: list[Callable[[], bool]] = []
"""In the child, the work it does while no call waits (:func:`when_idle`)."""


def when_idle(work: Callable[[], bool]) -> None:
    """In the child, have ``work`` called while no call waits, one piece at a time, until it
    returns False (nothing left): a call waits for one piece at most."""
    _IDLE[:] = [work]


def serve(conn: Connection) -> None:
    """The child: run each call in order, between calls the work of :func:`when_idle`, and
    send back ``(True, result)`` or ``(False, parts)`` of a call's error (:func:`_portable`)."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_read_until_eof, args=(conn, inbox), daemon=True).start()
    while True:
        if _IDLE and inbox.empty() and _IDLE[0]():
            continue
        fn, args = inbox.get()
        try:
            answer = (True, fn(*args))
        except BaseException as exc:
            answer = (False, _portable(exc))
        conn.send(answer)


if __name__ == "__main__":  # the module's own copy, whose when_idle the callers set
    from cseaug import worker_process

    worker_process.serve(Connection(int(sys.argv[1])))
