"""Tools of the reliability tests: a recording proxy, a slow network, a scan of every file a
build wrote, and a plain ``cseaug build`` in a fresh process with a clean environment."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
CSEAUG = Path(sys.executable).with_name("cseaug")

PREFECT_QUIET_VARIABLES = (
    "DO_NOT_TRACK",
    "PREFECT_SERVER_ANALYTICS_ENABLED",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS",
)
"""What the test suite sets for itself and a user's shell does not: taken out of the build's
environment, so that the build shows what the CLI does on its own."""


class RecordingProxy:
    """An HTTP(S) proxy on 127.0.0.1 that forwards nothing and records every request line.

    A process whose ``HTTPS_PROXY`` / ``HTTP_PROXY`` point here (and ``NO_PROXY`` exempts
    loopback) reveals every connection it tries to make to another machine: ``CONNECT
    sens-o-matic.prefect.io:443 HTTP/1.1`` is Prefect's telemetry.
    """

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="recording-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:  # closed
                return
            with conn:
                conn.settimeout(5)
                try:
                    line = conn.makefile("rb").readline().decode("latin-1").strip()
                    self.requests.append(line)
                    conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._socket.close()


class SlowProxy:
    """A TCP proxy on 127.0.0.1 in front of ``target`` (``host:port``) that holds every chunk a
    client sends for ``delay`` seconds before passing it on: a slow uplink, as a build
    uploading to an object store over a user's network sees it (answers come back at once).
    """

    def __init__(self, target: str, delay: float) -> None:
        host, _, port = target.rpartition(":")
        self.target, self.delay = (host, int(port)), delay
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._connect, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()
        # connections still open (a build stopped mid-upload) end here, not as pending tasks
        # asyncio reports when the interpreter exits
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    async def _connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        await asyncio.gather(
            self._pipe(reader, upstream_writer, self.delay),
            self._pipe(upstream_reader, writer, 0.0),
        )

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, delay: float) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await source.read(65536):
                await asyncio.sleep(delay)
                sink.write(chunk)
                await sink.drain()
        sink.close()

    def __enter__(self) -> SlowProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def build_environment(home: Path, proxy: RecordingProxy, **extra: str) -> dict[str, str]:
    """A user's environment: no Prefect quieting of the test suite's, a fresh PREFECT_HOME, every
    connection to another machine through ``proxy``."""
    env = {k: v for k, v in os.environ.items() if k not in PREFECT_QUIET_VARIABLES}
    env = {k: v for k, v in env.items() if not k.startswith("PREFECT_") and k != "CI"}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env[name] = proxy.url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PREFECT_HOME"] = str(home)
    env.update(extra)
    return env


def start_command(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``command`` started as a terminal starts it: its own process group (a signal to the
    group reaches it and its children), its output read as text."""
    return subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run_cseaug(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``cseaug <args>`` in a fresh process, as a user types it."""
    return subprocess.run(
        [str(CSEAUG), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def files_under(root: Path) -> Iterator[Path]:
    yield from (p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


def readable_text(path: Path) -> str:
    """Everything a file holds, as text: a Parquet file's values (its pages may be compressed),
    an SQLite database's rows (a value may straddle pages), any other file's bytes."""
    head = path.read_bytes()[:16]
    if head.startswith(b"SQLite format 3\x00"):
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return "\n".join(connection.iterdump())
        finally:
            connection.close()
    if head.startswith(b"PAR1"):
        return json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False)
    return path.read_bytes().decode("latin-1")


def files_holding(root: Path, needle: str) -> list[str]:
    """The files under ``root`` whose content (see :func:`readable_text`) holds ``needle``."""
    found = []
    for path in files_under(root):
        if needle in readable_text(path) or needle.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found
