"""What went wrong with one HTTP request to an OpenAI-wire server, in one line.

The aiohttp transport reports a refused connection as a connect timeout; :func:`describe_error`
walks the exception chain and names the real cause.

Example:
    >>> describe_error(ConnectionRefusedError(111, "Connect call failed"))
    'connection refused'
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import openai

_DROPPED = ("ServerDisconnectedError", "RemoteProtocolError", "ClientPayloadError", "ReadError")
"""Exception names (aiohttp, httpx, httpcore) of a connection the server closed mid-answer."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def connection_cause(exc: BaseException) -> str | None:
    """The network-level cause of ``exc`` (anywhere in its chain), or None when there is none.

    Example:
        >>> connection_cause(ConnectionResetError())
        'connection reset by the server'
        >>> connection_cause(ValueError("x")) is None
        True
    """
    for link in _chain(exc):
        if isinstance(link, ConnectionRefusedError):
            return "connection refused"
        if isinstance(link, socket.gaierror):
            return "host not found"
        if isinstance(link, ConnectionResetError):
            return "connection reset by the server"
        if type(link).__name__ in _DROPPED:
            return "connection dropped by the server"
    for link in _chain(exc):
        if isinstance(link, (TimeoutError, asyncio.TimeoutError, openai.APITimeoutError)):
            return "request timed out"
    return None


def describe_error(exc: BaseException) -> str:
    """A one-line reason for a failed request (goes to rejects and error messages).

    Example:
        >>> describe_error(TimeoutError())
        'request timed out'
    """
    if isinstance(exc, openai.APIStatusError):
        detail = exc.body.get("message") if isinstance(exc.body, dict) else None
        return f"HTTP {exc.status_code}: {detail or exc.message}"
    cause = connection_cause(exc)
    if cause is not None:
        return cause
    if isinstance(exc, openai.APIConnectionError):
        origin = exc.__cause__
        return f"connection error ({origin})" if origin else "connection error"
    return f"{type(exc).__name__}: {exc}"


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a request that got no answer in time (not a refused connection
    reported as a connect timeout).

    Example:
        >>> timed_out(TimeoutError()), timed_out(ConnectionRefusedError())
        (True, False)
    """
    return connection_cause(exc) == "request timed out"


def is_retryable(exc: BaseException) -> bool:
    """Timeouts, connection errors and HTTP 408, 429 and 5xx are worth retrying."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 429) or exc.status_code >= 500
    return False
