"""OpenAI chat completions over HTTP: backends ``openai`` and ``openai-compatible``.

Raw ``POST /chat/completions`` through the official async client (aiohttp transport), whose
bodies :mod:`cseaug.llm.wire` judges; one retry layer (:meth:`OpenAIBackend._attempts`), several
endpoints (:mod:`cseaug.llm.endpoints`), an adaptive limit per endpoint
(:mod:`cseaug.llm.limiter`) and the circuit breaker. docs/llm-backends.md, "The HTTP backends".
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import os
import random
import time
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx2
import openai

from cseaug.config import FailoverConfig, base_url_problem
from cseaug.errors import BackendError, ConfigError
from cseaug.llm.base import (
    CIRCUIT_OPEN,
    MALFORMED,
    PERMANENT,
    TRANSIENT,
    ChatRequest,
    ChatResponse,
    LLMBackend,
    ProgressCallback,
    ResponseSink,
)
from cseaug.llm.breaker import CircuitBreaker
from cseaug.llm.endpoints import EndpointPool, PooledClient
from cseaug.llm.http_errors import describe_error, is_retryable, status_of, timed_out
from cseaug.llm.identity import served_identity
from cseaug.llm.limiter import ConcurrencyLimit
from cseaug.llm.probe import probe_endpoints
from cseaug.llm.sampling import request_sampling
from cseaug.llm.wire import (
    IDENTITY_HEADERS,
    MalformedResponse,
    ResponseGuard,
    body_limit,
    parse_completion,
)
from cseaug.secrets import Scrubber, treat_as_secret

logger = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0  # the longest Retry-After honoured
PLACEHOLDER_API_KEY = "EMPTY"  # for openai-compatible without a key (vllm serve takes any)
OPENAI_BASE_URL = "https://api.openai.com/v1"
_T = TypeVar("_T")
_CLIENT_ERRORS = (openai.OpenAIError, httpx2.HTTPError)


class RateLimitSpent(Exception):
    """The endpoints answered nothing but 429 for ``llm.rate_limit_budget_s``."""


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait (never negative) that ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP
    date) asks for; None without a usable header.

    Example:
        >>> retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0)
        10.0
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, units_per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            return max(float(lowered[name]) / units_per_second, 0.0)
        except (KeyError, ValueError):
            pass
    try:
        when = email.utils.parsedate_to_datetime(lowered.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def retry_delay(
    headers: Mapping[str, str] | None, attempt: int, initial_s: float, max_s: float
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1 = the first): what the
    response's ``headers`` ask (capped at :data:`MAX_RETRY_AFTER_S`) plus up to 10 % jitter (at
    most 1 s), else exponential backoff with full jitter below
    ``min(max_s, initial_s * 2 ** (attempt - 1))``."""
    delay = retry_after_seconds(headers) if headers is not None else None
    if delay is not None:
        delay = min(delay, MAX_RETRY_AFTER_S)
        return delay + random.uniform(0, min(1.0, 0.1 * delay))
    return random.uniform(0, min(max_s, initial_s * 2 ** (attempt - 1)))


def scrubbed(response: ChatResponse, scrub: Scrubber) -> ChatResponse:
    """``response`` with its text and error scrubbed: the server's words may hold the key."""
    if response.text is not None:
        response.text = scrub(response.text)
    if response.error is not None:
        # what UTF-8 cannot encode (a lone surrogate in an error message) becomes ?
        response.error = scrub(response.error).encode("utf-8", "replace").decode("utf-8")
    return response


def run_sync(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from synchronous code (in a worker thread inside a running event loop:
    async Prefect tasks, notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1, thread_name_prefix="cseaug-llm") as pool:
        return pool.submit(asyncio.run, coroutine).result()


class OpenAIBackend(LLMBackend):
    """Chat completions from api.openai.com or any OpenAI-compatible server(s).

    The arguments are the ``llm`` keys of the same names (``concurrency``: ``(min, max)`` per
    endpoint, N meaning ``(1, N)``); ``served``: what an earlier probe reported (not probed
    again); ``retry_initial_s`` and ``retry_max_s`` bound the backoff (:func:`retry_delay`).
    """

    def __init__(
        self,
        model: str,
        sampling: dict[str, Any],
        *,
        name: str = "openai",
        base_url: str | Sequence[str] | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int | tuple[int, int] = 64,
        max_retries: int = 6,
        request_timeout_s: float = 120.0,
        rate_limit_budget_s: float = 600.0,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        failover: FailoverConfig | None = None,
        breaker: CircuitBreaker | None = None,
        model_revision: str | None = None,
        served: dict[str, Any] | None = None,
    ) -> None:
        if name == "openai-compatible" and not base_url:
            raise BackendError(
                "backend 'openai-compatible' needs llm.base_url, e.g. http://127.0.0.1:8000/v1"
            )
        if isinstance(base_url, str):
            base_url = [base_url]
        base_urls = (OPENAI_BASE_URL,) if base_url is None else tuple(base_url)
        if problem := base_url_problem(base_urls):  # credentials, none, one named twice
            raise ConfigError(problem)
        treat_as_secret(api_key_env)
        super().__init__(model, sampling, model_revision)
        self.name = name
        self.base_urls = base_urls
        self.base_url = base_urls[0]
        self.endpoints = EndpointPool(base_urls, failover)
        self.api_key_env = api_key_env
        self.concurrency = (1, concurrency) if isinstance(concurrency, int) else concurrency
        self.limits = [ConcurrencyLimit(*self.concurrency) for _ in base_urls]
        self.max_retries = max_retries
        self.request_timeout_s = request_timeout_s
        self.rate_limit_budget_s = rate_limit_budget_s
        self._limited_since: float | None = None  # first 429 since the last other answer
        self._said: set[str] = set()  # warnings said once
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self.breaker = breaker
        self._served = served

    def check(self) -> None:
        """Fail (:class:`BackendError`, one line) when the API key is missing (backend
        ``openai``) or no endpoint answers for the model."""
        self._api_key()
        self.served()

    def served(self) -> dict[str, Any]:
        """What the endpoints report about the model, probed once unless given."""
        if self._served is None:
            self._served = probe_endpoints(
                self.base_urls,
                self._api_key(),
                self.model,
                timeout_s=min(self.request_timeout_s, 30.0),
                key_variable=self.api_key_env,
            )
        return self._served

    def model_identity(self) -> dict[str, Any]:
        served = served_identity(self.served())
        return {"served": served} if served else {}

    def _api_key(self) -> str:
        if key := os.environ.get(self.api_key_env):
            return key
        if self.name != "openai-compatible":  # api.openai.com, online or Batch API
            raise BackendError(
                f"backend '{self.name}' needs an API key in the environment variable {self.api_key_env}, "
                f"which is unset: export {self.api_key_env}=sk-... (or set llm.api_key_env to the variable that holds it)"
            )
        return PLACEHOLDER_API_KEY

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(request.messages)}
        body |= request_sampling(self.sampling, request.sample_index)
        if self.name != "openai-compatible" and "max_tokens" in body:
            # api.openai.com deprecated max_tokens (reasoning models reject it); most
            # compatible servers know only max_tokens.
            body["max_completion_tokens"] = body.pop("max_tokens")
        if request.stop:
            body["stop"] = list(request.stop)
        return body

    def in_flight_limit(self) -> int | None:
        return sum(limit.limit for limit in self.limits)

    def _delay(self, exc: BaseException, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt``: after a timeout as long as the request
        ran (at most ``retry_max_s``: the server may still compute it), after a 429 what the
        server asks, within the rate-limit budget (else :class:`RateLimitSpent`)."""
        if timed_out(exc):
            wait = min(self.request_timeout_s, self.retry_max_s)
            self._warn_once(
                "timeouts",
                f"LLM requests time out: no answer within llm.request_timeout_s "
                f"({self.request_timeout_s:g} s) with up to {self.in_flight_limit()} in flight; "
                "the server may need longer per request: raise llm.request_timeout_s or lower "
                f"llm.concurrency (now {self.concurrency[0]}..{self.concurrency[1]}); each is "
                f"sent again after {wait:g} s, with fewer in flight",
            )
            return wait + random.uniform(0, 0.1 * wait)
        headers = exc.response.headers if isinstance(exc, openai.APIStatusError) else None
        delay = retry_delay(headers, attempt, self.retry_initial_s, self.retry_max_s)
        if status_of(exc) != 429:
            return delay
        if self._limited_since is None:
            self._limited_since = time.monotonic()
            asked = retry_after_seconds(headers or {})
            logger.warning(
                "LLM server %s is rate limiting (HTTP 429), asking to wait %s; waiting at most "
                "%g s a time (the longest wait honoured) and %g s in all "
                "(llm.rate_limit_budget_s) while it answers only 429",
                exc.request.url,
                "no time" if asked is None else f"{asked:g} s (Retry-After)",
                MAX_RETRY_AFTER_S,
                self.rate_limit_budget_s,
            )
        return min(delay, self._budget_left())

    def _budget_left(self) -> float:
        """Seconds left of the rate-limit budget while the endpoints answer only 429
        (:class:`RateLimitSpent` once it is spent, said once as a warning)."""
        if self._limited_since is None:
            return math.inf
        left = self.rate_limit_budget_s - (time.monotonic() - self._limited_since)
        if left <= 0:
            message = (
                f"rate limited: the LLM endpoints answered only HTTP 429 for "
                f"{self.rate_limit_budget_s:g} s (llm.rate_limit_budget_s); the requests not "
                "answered fail (a rerun sends them): rerun when the rate limit allows, or raise "
                "llm.rate_limit_budget_s"
            )
            self._warn_once("budget", message)
            raise RateLimitSpent(message)
        return left

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._said:
            self._said.add(what)
            logger.warning("%s", message)

    async def _answer(
        self, client: PooledClient, request: ChatRequest, scrub: Scrubber
    ) -> ChatResponse:
        try:
            body = await self._attempts(client, self._body(request))
        except RateLimitSpent as exc:
            response = ChatResponse(key=request.key, error=str(exc), failure=TRANSIENT)
        except MalformedResponse as exc:
            response = ChatResponse(key=request.key, error=str(exc), failure=MALFORMED)
        except _CLIENT_ERRORS as exc:
            error, failure = describe_error(exc), PERMANENT
            if is_retryable(exc):
                tries = self.max_retries and f"gave up after {self.max_retries + 1} attempts"
                error, failure = f"{error} ({tries or 'retries disabled'})", TRANSIENT
            response = ChatResponse(key=request.key, error=error, failure=failure)
        else:
            response = parse_completion(request.key, body, self.sampling.get("max_tokens"))
            if response.model not in (None, self.model):
                self._warn_once(
                    "model",
                    f"the answers name the model '{response.model}', not llm.model "
                    f"'{self.model}' (a router, proxy or alias serves it); the manifest and the "
                    "card record the model that answered",
                )
        return scrubbed(response, scrub)

    async def _attempts(self, client: PooledClient, body: dict[str, Any]) -> bytes:
        """The body of the first answer to ``body``, retried on retryable failures (nothing is
        sent once the rate-limit budget is spent: :class:`RateLimitSpent`)."""
        for attempt in range(1, self.max_retries + 2):
            self._budget_left()
            try:
                answer = await client.post(
                    "/chat/completions",
                    body,
                    deadline_s=self.request_timeout_s,
                    max_bytes=body_limit(self.sampling.get("max_tokens")),
                )
            except _CLIENT_ERRORS as exc:
                if status_of(exc) not in (None, 429):
                    self._limited_since = None  # an answer other than 429
                if not is_retryable(exc) or attempt > self.max_retries:
                    raise
                await asyncio.sleep(self._delay(exc, attempt))
            else:
                self._limited_since = None
                return answer
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _answer_all(
        self,
        requests: list[ChatRequest],
        api_key: str,
        progress: ProgressCallback | None,
        deliver: ResponseSink,
    ) -> None:
        limits = httpx2.Limits(
            max_connections=self.concurrency[1],
            max_keepalive_connections=self.concurrency[1],
            keepalive_expiry=30.0,
        )
        guard = ResponseGuard(body_limit(self.sampling.get("max_tokens")))
        clients = [
            openai.AsyncOpenAI(
                api_key=api_key,
                base_url=url,
                max_retries=0,
                timeout=self.request_timeout_s,
                default_headers=IDENTITY_HEADERS,
                http_client=openai.DefaultAioHttpClient(
                    limits=limits,
                    timeout=self.request_timeout_s,
                    event_hooks={"response": [guard.acheck]},
                ),
            )
            for url in self.base_urls
        ]
        client = PooledClient(self.endpoints, clients, self.limits)
        scrub = Scrubber([api_key])
        # one shared iterator, many workers: `capacity` coroutines instead of one per request
        todo = iter(range(len(requests)))
        breaker = self.breaker

        async def worker() -> None:
            for index in todo:
                if breaker is not None and breaker.is_open:
                    response = ChatResponse(
                        key=requests[index].key, error=breaker.reason, failure=CIRCUIT_OPEN
                    )
                else:
                    response = await self._answer(client, requests[index], scrub)
                    if breaker is not None:
                        breaker.record(not response.ok, response.error)
                deliver(index, response)
                if progress is not None:
                    progress(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(client.capacity, len(requests)))))
        finally:
            await client.close()

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        api_key = self._api_key()
        if requests:
            run_sync(self._answer_all(requests, api_key, progress, deliver))
