"""What went wrong with one HTTP request to an OpenAI-wire server: one line, and whether to retry.

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
    """The network-level cause anywhere in the chain of ``exc``, or None (the aiohttp transport
    reports a refused connection as a connect timeout).

    Example:
        >>> connection_cause(ConnectionResetError())
        'connection reset by the server'
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
    """A one-line reason for a failed request (goes to rejects and error messages)."""
    if isinstance(exc, openai.APIStatusError):
        detail = exc.body.get("message") if isinstance(exc.body, dict) else None
        return f"HTTP {exc.status_code}: {detail or exc.message}"
    if (cause := connection_cause(exc)) is not None:
        return cause
    if isinstance(exc, openai.APIConnectionError):
        origin = exc.__cause__
        return f"connection error ({origin})" if origin else "connection error"
    return f"{type(exc).__name__}: {exc}"


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a request that got no answer in time (not a refused connection).

    Example:
        >>> timed_out(TimeoutError()), timed_out(ConnectionRefusedError())
        (True, False)
    """
    return connection_cause(exc) == "request timed out"


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an error response, None for any other failure."""
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def hurts_endpoint(exc: BaseException) -> bool:
    """Whether a failure says the endpoint itself is unwell: no connection, a timeout, a 5xx
    (429 and other 4xx are the server answering)."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    return (status_of(exc) or 0) >= 500


def is_retryable(exc: BaseException) -> bool:
    """Timeouts, connection errors and HTTP 408, 429 and 5xx are worth retrying."""
    return hurts_endpoint(exc) or status_of(exc) in (408, 429)
