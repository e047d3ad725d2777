"""The one LLM interface every backend implements; stages never know which backend runs.

One :class:`ChatResponse` per :class:`ChatRequest`, in order; a failure is a response with
``error`` set, never an exception. docs/llm-backends.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

ANSWERED_BY = "answered_by:"
"""Prefix of :meth:`Usage.as_dict`'s counts of answers by the model they name."""

ProgressCallback = Callable[[int], None]
"""Called with the number of requests just finished (for progress bars)."""

# The kinds of failure (docs/llm-backends.md, "When the endpoint fails"):
TRANSIENT = "transient"  # worth trying again: no connection, timeout, 408, 429, 5xx
PERMANENT = "permanent"  # the same request meets it again: 400, 401, 404, no text
CIRCUIT_OPEN = "circuit_open"  # never sent: the circuit breaker had stopped generation
MALFORMED = "malformed_response"  # not a usable chat completion (cseaug.llm.wire); permanent


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make: ``key`` names it within a run (``"<row id>:positive"``);
    ``sample_index`` (which sample of the same messages) and ``stop`` (where the answer ends,
    docs/prompts-and-patterns.md) are part of the cache key."""

    key: str
    messages: tuple[Message, ...]
    sample_index: int = 0
    stop: tuple[str, ...] = ()


@dataclass
class ChatResponse:
    """The answer to one :class:`ChatRequest`: ``text`` or ``error`` with its ``failure`` kind
    (unset: permanent); ``retried``: it had failed in an earlier run; ``model``: the model the
    answer names (HTTP backends)."""

    key: str
    text: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    failure: str | None = None
    retried: bool = False
    model: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None

    @property
    def retryable(self) -> bool:
        return not self.ok and self.failure in (TRANSIENT, CIRCUIT_OPEN)


ResponseSink = Callable[[int, ChatResponse], None]
"""Called with (index of the request in the batch, its response) as each one finishes."""


@dataclass
class Usage:
    """Running totals of one backend: ``requests`` sent, of which ``failed`` and ``retried``
    (had failed in an earlier run); ``cached`` and ``circuit_open`` (never sent);
    ``cache_mismatched``: stored answers failing their digest (in :meth:`as_dict` only when
    there were any); ``answered_by``: answers by the model they name."""

    requests: int = 0
    failed: int = 0
    retried: int = 0
    cached: int = 0
    circuit_open: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_mismatched: int = 0
    answered_by: dict[str, int] = field(default_factory=dict)

    def add(self, response: ChatResponse) -> None:
        if response.ok and response.model:
            self.answered_by[response.model] = self.answered_by.get(response.model, 0) + 1
        if response.cached:
            self.cached += 1
            return
        if response.failure == CIRCUIT_OPEN:
            self.circuit_open += 1
            return
        self.requests += 1
        self.failed += 0 if response.ok else 1
        self.retried += 1 if response.retried else 0
        self.prompt_tokens += response.prompt_tokens
        self.completion_tokens += response.completion_tokens

    def as_dict(self) -> dict[str, int]:
        counts = asdict(self)
        if not self.cache_mismatched:
            del counts["cache_mismatched"]
        del counts["answered_by"]
        return counts | {ANSWERED_BY + name: n for name, n in self.answered_by.items()}


class LLMBackend:
    """What every backend provides: subclasses implement :meth:`_generate` or :meth:`_stream`."""

    name: str = "abstract"  # as in the config (openai, vllm, ...); part of the cache key

    def __init__(
        self, model: str, sampling: dict[str, Any], model_revision: str | None = None
    ) -> None:
        self.model = model
        self.sampling = dict(sampling)
        self.model_revision = model_revision
        self.usage = Usage()

    def identity(self) -> dict[str, Any]:
        """What determines an answer besides the messages (:mod:`cseaug.llm.identity`)."""
        out: dict[str, Any] = {"backend": self.name, "model": self.model, "sampling": self.sampling}
        if self.model_revision is not None:
            out["revision"] = self.model_revision
        return {**out, **self.model_identity()}

    def model_identity(self) -> dict[str, Any]:
        """What else identifies the model (weights, dtype, engine)."""
        return {}

    def generate(
        self,
        requests: Sequence[ChatRequest],
        progress: ProgressCallback | None = None,
        on_response: ResponseSink | None = None,
    ) -> list[ChatResponse]:
        """Answer every request, in order; ``on_response`` gets ``(index, response)`` as each
        answer is handed out (an exception it raises stops the batch)."""
        answers: dict[int, ChatResponse] = {}

        def deliver(index: int, response: ChatResponse) -> None:
            answers[index] = response
            if on_response is not None:
                on_response(index, response)

        self._stream(list(requests), progress, deliver)
        if len(answers) != len(requests):
            raise RuntimeError(
                f"{self.name} backend returned {len(answers)} answers for {len(requests)} requests"
            )
        responses = [answers[index] for index in range(len(requests))]
        for response in responses:
            self.usage.add(response)
        return responses

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        """Hand each answer with its index to ``deliver`` (here when :meth:`_generate` has
        answered the batch; streaming backends override this)."""
        for index, response in enumerate(self._generate(requests, progress)):
            deliver(index, response)

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        """The answers to ``requests``, in order."""
        raise NotImplementedError

    def in_flight_limit(self) -> int | None:
        """Requests in flight allowed now (HTTP backends), for the progress line."""
        return None

    def check(self) -> None:
        """Fail now, before any work, if the backend cannot answer (model, engine, API key)."""

    def close(self) -> None:
        """Release connections, engines or GPU memory."""
