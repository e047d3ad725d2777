"""Several OpenAI-compatible endpoints behind one backend: balance, take out, try again.

A request goes to the endpoint in service with the fewest requests in flight; one failing
``llm.failover.failures`` times in a row is out of service for a cool-down, then tried by one
request. docs/llm-backends.md, "Several endpoints".

Example:
    >>> pool = EndpointPool(["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"])
    >>> ticket = pool.place([0, 0], limits=[64, 64])
    >>> ticket.index
    0
    >>> pool.place([1, 0], limits=[64, 64]).index
    1
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from cseaug.config import FailoverConfig
from cseaug.llm.http_errors import describe_error, hurts_endpoint, status_of, timed_out
from cseaug.llm.limiter import ConcurrencyLimit
from cseaug.llm.wire import read_body

logger = logging.getLogger(__name__)


@dataclass
class _Health:
    """What the pool knows about one endpoint."""

    url: str
    cooldown_s: float
    failures: int = 0  # in a row, while in service
    out_until: float | None = None  # None: in service
    epoch: int = 0  # taken out this many times: results of older requests are stale
    trying: bool = False  # a request is trying the endpoint after its cool-down


@dataclass(frozen=True)
class Ticket:
    """One request's place: the endpoint, and the state it was placed in."""

    index: int
    epoch: int
    trial: bool = False


class EndpointPool:
    """The health of several endpoints and the choice of one per request (thread-safe)."""

    def __init__(
        self,
        urls: Sequence[str],
        failover: FailoverConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failover = failover or FailoverConfig()
        self._health = [_Health(url, self.failover.cooldown_s) for url in urls]
        self._clock = clock
        self._lock = threading.Lock()

    def in_service(self) -> list[str]:
        with self._lock:
            return [h.url for h in self._health if h.out_until is None]

    def place(self, in_flight: Sequence[int], limits: Sequence[int]) -> Ticket | float | None:
        """A :class:`Ticket` for the next request, given each endpoint's requests in flight and
        limit; else the seconds to wait for a cool-down's end (None: for a finished request)."""
        with self._lock:
            now = self._clock()
            free = [i for i, n in enumerate(in_flight) if n < limits[i]]
            serving = [i for i in free if self._health[i].out_until is None]
            for i in free:
                health = self._health[i]
                if health.out_until is not None and health.out_until <= now and not health.trying:
                    health.trying = True
                    return Ticket(i, health.epoch, trial=True)
            if serving:
                best = min(serving, key=in_flight.__getitem__)
                return Ticket(best, self._health[best].epoch)
            out = [h.out_until for h in self._health if h.out_until is not None]
            if len(out) < len(self._health):  # some in service, all busy: wait for a slot
                due = [t - now for t in out if t > now]
                return min(due) if due else None
            if not free:
                return None
            # nothing in service: the endpoint due back first answers with the real failure
            first = min(free, key=lambda i: self._health[i].out_until or 0.0)
            return Ticket(first, self._health[first].epoch)

    def finished(self, ticket: Ticket, failure: BaseException | None) -> None:
        """Record how a placed request ended (``failure``: None for an HTTP answer)."""
        with self._lock:
            health = self._health[ticket.index]
            if ticket.trial:
                health.trying = False
            if ticket.epoch != health.epoch:
                return  # sent before the endpoint was taken out: says nothing new
            if failure is None or (status_of(failure) and not hurts_endpoint(failure)):
                if health.out_until is not None:
                    logger.warning("LLM endpoint %s answers again: back in service", health.url)
                health.failures = 0
                health.out_until = None
                health.cooldown_s = self.failover.cooldown_s
                return
            if not hurts_endpoint(failure):
                return  # cancelled, or not the endpoint's doing
            if health.out_until is not None:
                if ticket.trial:
                    self._take_out(health, failure)
                return
            health.failures += 1
            if health.failures >= self.failover.failures:
                self._take_out(health, failure)

    def _take_out(self, health: _Health, failure: BaseException) -> None:
        health.epoch += 1
        health.failures = 0
        health.out_until = self._clock() + health.cooldown_s
        serving = sum(1 for h in self._health if h.out_until is None)
        logger.warning(
            "LLM endpoint %s out of service for %.0f s (%s); %d of %d endpoints in service",
            health.url,
            health.cooldown_s,
            describe_error(failure),
            serving,
            len(self._health),
        )
        health.cooldown_s = min(2 * health.cooldown_s, self.failover.max_cooldown_s)


class PooledClient:
    """One ``generate()`` call's clients, one per endpoint of ``pool``, each with as many
    requests in flight as its limit (kept between calls) allows."""

    def __init__(
        self,
        pool: EndpointPool,
        clients: Sequence[openai.AsyncOpenAI],
        limits: Sequence[ConcurrencyLimit],
    ) -> None:
        self.pool = pool
        self.clients = list(clients)
        self.limits = list(limits)
        self.in_flight = [0] * len(self.clients)
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def capacity(self) -> int:
        return sum(limit.high for limit in self.limits)

    async def post(
        self, path: str, body: dict[str, Any], deadline_s: float, max_bytes: int
    ) -> bytes:
        """The raw body of ``POST path`` on the endpoint the pool chooses, within ``deadline_s``
        up to its last byte (else ``openai.APITimeoutError``)."""
        ticket = await self._place()
        self.in_flight[ticket.index] += 1
        failure: BaseException | None = None
        client = self.clients[ticket.index]
        sent = time.monotonic()
        try:
            async with asyncio.timeout(deadline_s):
                response = await client.post(path, body=body, cast_to=httpx2.Response, stream=True)
                try:
                    return await read_body(response, max_bytes)
                except httpx2.TransportError as exc:  # as the client reports it while sending
                    raise openai.APIConnectionError(request=response.request) from exc
                finally:
                    await response.aclose()
        except TimeoutError as exc:
            request = httpx2.Request("POST", client.base_url.join(path.lstrip("/")))
            failure = openai.APITimeoutError(request=request)
            raise failure from exc
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.in_flight[ticket.index] -= 1
            self.pool.finished(ticket, failure)
            if failure is None:
                self.limits[ticket.index].record(time.monotonic() - sent)
            elif timed_out(failure) or status_of(failure) == 429:
                self.limits[ticket.index].record(None)  # overloaded
            self._wake()

    async def _place(self) -> Ticket:
        while True:
            placed = self.pool.place(self.in_flight, [limit.limit for limit in self.limits])
            if isinstance(placed, Ticket):
                return placed
            # wait for a freed slot (one waiter woken per slot, not all of them) or a cool-down's end
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, placed)

    def _wake(self) -> None:
        """Wake a waiter per free slot: a limit may have grown."""
        free = sum(
            max(0, lim.limit - n) for lim, n in zip(self.limits, self.in_flight, strict=True)
        )
        while self._waiting and free:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a waiter whose wait timed out is cancelled: skip it
                waiter.set_result(None)
                free -= 1

    async def close(self) -> None:
        await asyncio.gather(*(client.close() for client in self.clients))
