"""Resumable downloads into a ``.part`` file over urllib (HTTP(S) and ``file://``): ``Range``
requests, retries of transient errors, the next URL on a permanent one (docs/data.md,
"What a fetch does").

Example:
    >>> from pathlib import Path
    >>> Path("/tmp/cseaug-doctest.txt").write_text("hello")
    5
    >>> got = download(["file:///tmp/cseaug-doctest.txt"], Path("/tmp/cseaug-doctest.part"), label="demo")
    >>> got.size, got.sha256[:12]
    (5, '2cf24dba5fb0')
"""

from __future__ import annotations

import errno
import http.client
import random
import re
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import Message
from importlib.metadata import version
from pathlib import Path

from cseaug.errors import DownloadError
from cseaug.hashing import file_sha256
from cseaug.progress import progress_bar

USER_AGENT = f"cseaug/{version('cseaug')} (+cseaug data fetch)"
CHUNK_BYTES = 1 << 20
TRANSIENT_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})

_UNREACHABLE_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL}
)
_CONTENT_RANGE = re.compile(r"bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one URL is tried: ``attempts`` failures in a row without progress, pauses
    from ``backoff_s`` doubling up to ``max_backoff_s``, a socket timeout of ``timeout_s``."""

    attempts: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 8.0
    timeout_s: float = 30.0

    def pause(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed attempts in a row (with jitter)."""
        ceiling = min(self.max_backoff_s, self.backoff_s * 2 ** (failures - 1))
        return ceiling * random.uniform(0.5, 1.0)


@dataclass(frozen=True)
class Downloaded:
    """A complete part file: where it came from, its sha256 and size, and the offset the last
    request resumed at (0: the whole file came in one piece)."""

    url: str
    sha256: str
    size: int
    resumed_from: int


class UnreachableError(DownloadError):
    """No URL of a download could be connected to (name resolution, refused, unreachable)."""

    def __init__(self, label: str, tried: str) -> None:
        super().__init__(f"cannot connect to any source of {label} ({tried})")


class _Unreachable(Exception):
    """This URL cannot be connected to."""


class _Permanent(Exception):
    """This URL answered something asking again will not change."""


class _Transient(Exception):
    """This attempt failed in a way that may pass; the part file keeps what arrived."""


class _Restart(Exception):
    """The part file cannot be continued from this server: start again from zero."""


def download(
    urls: Sequence[str],
    part: Path,
    *,
    label: str,
    policy: RetryPolicy | None = None,
) -> Downloaded:
    """Download the first of ``urls`` (byte-identical sources) that works into ``part``,
    continuing what it holds; :class:`UnreachableError` when no URL could be connected to,
    else a DownloadError naming each URL and why it failed."""
    policy = policy or RetryPolicy()
    part.parent.mkdir(parents=True, exist_ok=True)
    reasons: list[str] = []
    connected = False
    for url in urls:
        try:
            return _download_from(url, part, label, policy)
        except (_Unreachable, _Permanent) as exc:
            connected = connected or isinstance(exc, _Permanent)
            reasons.append(f"{url}: {exc}")
    if not connected:
        raise UnreachableError(label, "; ".join(reasons))
    raise DownloadError(f"could not download {label}: {'; '.join(reasons)}")


def _download_from(url: str, part: Path, label: str, policy: RetryPolicy) -> Downloaded:
    """One URL, retried on transient errors until ``policy.attempts`` fail without progress."""
    failures = 0
    while True:
        before = _size(part)
        try:
            return _attempt(url, part, label, policy.timeout_s)
        except _Restart:
            part.unlink(missing_ok=True)
            continue
        except _Transient as exc:
            if _size(part) > before:
                failures = 0
                continue
            failures += 1
            if failures >= policy.attempts:
                raise _Permanent(f"{exc} (gave up after {failures} attempts)") from exc
            time.sleep(policy.pause(failures))


def _attempt(url: str, part: Path, label: str, timeout_s: float) -> Downloaded:
    offset = _size(part)
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    response = _open(urllib.request.Request(url, headers=headers), timeout_s, offset)
    if response is None:  # the server says the part file already holds every byte
        return Downloaded(url=url, sha256=file_sha256(part), size=offset, resumed_from=offset)
    with response:
        status = response.status or 200  # file:// answers have no status: a full body
        if offset and status == 206:
            start, total = _content_range(response.headers)
            if start != offset:
                raise _Restart
            mode = "ab"
        else:
            offset, mode = 0, "wb"
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        received = _stream(response, part, mode, label, offset, total)
    size = offset + received
    if total is not None and size < total:
        raise _Transient(f"connection closed after {size:,} of {total:,} bytes")
    return Downloaded(url=url, sha256=file_sha256(part), size=size, resumed_from=offset)


def _open(request: urllib.request.Request, timeout_s: float, offset: int):
    """``urlopen``, with its failures sorted into unreachable / permanent / transient; None
    when the part file of ``offset`` bytes is already complete."""
    try:
        return urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and offset:
            # The part is as long as the file (a run that stopped before renaming it) or
            # longer (the file changed): the caller's checksum decides; start again if longer.
            _, total = _content_range(exc.headers)
            if total == offset:
                return None
            raise _Restart from exc
        if exc.code in TRANSIENT_STATUS:
            raise _Transient(f"HTTP {exc.code} {exc.reason}") from exc
        raise _Permanent(f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, socket.gaierror | ConnectionRefusedError | TimeoutError) or (
            isinstance(reason, OSError) and reason.errno in _UNREACHABLE_ERRNOS
        ):
            raise _Unreachable(_describe(reason)) from exc
        if isinstance(reason, ssl.SSLError):
            raise _Permanent(f"TLS error: {_describe(reason)}") from exc
        if isinstance(reason, FileNotFoundError | PermissionError | IsADirectoryError):
            raise _Permanent(_describe(reason)) from exc  # a file:// mirror lacks the file
        if isinstance(reason, OSError | http.client.HTTPException):
            raise _Transient(_describe(reason)) from exc
        raise _Permanent(_describe(reason)) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise _Transient(_describe(exc)) from exc


def _stream(response, part: Path, mode: str, label: str, offset: int, total: int | None) -> int:
    """Copy the response body into ``part``; returns the bytes received."""
    received = 0
    with part.open(mode) as handle, progress_bar(label, total, unit="bytes") as bar:
        bar.advance(offset)
        try:
            # read1: whatever has arrived, so a timeout or reset loses no received bytes
            while chunk := response.read1(CHUNK_BYTES):
                handle.write(chunk)
                received += len(chunk)
                bar.advance(len(chunk))
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(
                f"connection dropped after {offset + received:,} bytes: {_describe(exc)}"
            ) from exc
    return received


def _describe(error: object) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


def _content_range(headers: Message) -> tuple[int | None, int | None]:
    """(first byte, total size) of a ``Content-Range`` header; None where absent or ``*``."""
    match = _CONTENT_RANGE.match(headers.get("Content-Range") or "")
    if not match:
        return None, None
    first, total = match.groups()
    return (int(first) if first else None), (int(total) if total != "*" else None)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0
