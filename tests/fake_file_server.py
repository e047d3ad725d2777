"""A scriptable static-file HTTP server on 127.0.0.1, for the download tests.

Each path serves bytes the test puts there, with behaviour chosen per file: honour HTTP
``Range`` or ignore it (answer 200 with the whole body), drop the connection after a
number of body bytes, or go silent for ``stall_s`` after them (each once), answer 503 a
number of times first, or redirect. Every
request is recorded with its ``Range`` header and the number of body bytes sent, so tests
can assert what a client asked for and what it got.

A test writes ``with FakeFileServer() as server: server.add("a.txt", b"hello",
drop_after=2)``; a GET of ``server.url("a.txt")`` then gets 2 bytes and the connection closes.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ServedFile:
    """What one path serves and how."""

    body: bytes
    ranges: bool = True
    drop_after: int | None = None
    stall_after: int | None = None
    stall_s: float = 1.0
    fail_first: int = 0
    redirect_to: str | None = None


@dataclass(frozen=True)
class Request:
    """One request received: path, ``Range`` header (None if absent), status, bytes sent."""

    path: str
    range: str | None
    status: int
    sent: int


class FakeFileServer:
    """Serve :class:`ServedFile` objects by path from a background thread."""

    def __init__(self) -> None:
        self.files: dict[str, ServedFile] = {}
        self.requests: list[Request] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits up to one interval
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def add(self, path: str, body: bytes, **behaviour) -> ServedFile:
        served = ServedFile(body, **behaviour)
        self.files[path] = served
        return served

    def sent_for(self, path: str) -> list[Request]:
        return [request for request in self.requests if request.path == path]

    def __enter__(self) -> FakeFileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _handler_for(server: FakeFileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            path = self.path.lstrip("/")
            served = server.files.get(path)
            header = self.headers.get("Range")
            if served is None:
                self._answer(path, header, 404)
            elif served.redirect_to:
                self._answer(path, header, 302, {"Location": served.redirect_to})
            elif served.fail_first:
                served.fail_first -= 1
                self._answer(path, header, 503)
            else:
                self._serve(path, served, header)

        def _serve(self, path: str, served: ServedFile, header: str | None) -> None:
            body, start = served.body, 0
            match = re.fullmatch(r"bytes=(\d+)-", header or "")
            headers = {}
            status = 200
            if served.ranges and match:
                start = int(match.group(1))
                if start >= len(body):
                    self._answer(path, header, 416, {"Content-Range": f"bytes */{len(body)}"})
                    return
                status = 206
                headers["Content-Range"] = f"bytes {start}-{len(body) - 1}/{len(body)}"
            chunk = body[start:]
            headers["Content-Length"] = str(len(chunk))
            stall = 0.0
            if served.drop_after is not None:
                chunk, served.drop_after = chunk[: served.drop_after], None
                self.close_connection = True
            elif served.stall_after is not None:
                chunk, served.stall_after, stall = chunk[: served.stall_after], None, served.stall_s
                self.close_connection = True
            self._answer(path, header, status, headers, chunk)
            time.sleep(stall)  # the client's read times out meanwhile

        def _answer(self, path, header, status, headers=None, body=b"") -> None:
            server.requests.append(Request(path, header, status, len(body)))
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if "Content-Length" not in (headers or {}):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

    return Handler
