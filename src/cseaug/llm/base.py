"""The one LLM interface every backend implements; stages never know which backend runs.

A stage sends :class:`ChatRequest` objects and gets one :class:`ChatResponse` per request, in
order; a failed request is a response with ``error`` set (never an exception, never ``None``)
that the stage sends to rejects. :func:`cseaug.llm.factory.make_backend` picks the backend;
docs/llm-backends.md describes them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

ANSWERED_BY = "answered_by:"
"""Prefix of :meth:`Usage.as_dict`'s keys that count the answers each model gave, by the name
the answers carry (the provenance: a router or proxy may serve another model than asked)."""

ProgressCallback = Callable[[int], None]
"""Called with the number of requests just finished (for progress bars)."""

TRANSIENT = "transient"
"""A failure worth trying again later: connection refused or dropped, timeout, 408, 429, 5xx,
a body cut short. A rerun of the build sends the request again."""
PERMANENT = "permanent"
"""A failure the same request will meet again (400, 401, 404, an answer without text)."""
CIRCUIT_OPEN = "circuit_open"
"""Never sent: the circuit breaker had stopped generation (:mod:`cseaug.llm.breaker`)."""
MALFORMED = "malformed_response"
"""The server answered with something that is not a usable chat completion (not JSON, no
text, invalid Unicode, a ``usage`` that is not one, a body too large or compressed:
:mod:`cseaug.llm.wire`). Permanent, like :data:`PERMANENT`, and its own reject reason."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make.

    Args:
        key: stable identity of the request inside a run, e.g. ``"<row id>:positive"``.
        messages: the chat messages.
        sample_index: which sample of the same messages this is (0 for the first); part
            of the cache key so that asking twice on purpose gives two answers.
        stop: where the answer ends (not part of it): sent to every backend that supports
            stop sequences, and part of the cache key when set (docs/prompts-and-patterns.md).
    """

    key: str
    messages: tuple[Message, ...]
    sample_index: int = 0
    stop: tuple[str, ...] = ()


@dataclass
class ChatResponse:
    """The answer to one :class:`ChatRequest` (``text`` or ``error``, never neither).

    ``failure`` says what kind of failure an error is: :data:`TRANSIENT`,
    :data:`PERMANENT` (also when unset), :data:`MALFORMED` or :data:`CIRCUIT_OPEN`. ``retried``: the
    request had failed in an earlier run and was sent again in this one. ``model``: the model
    the answer names (HTTP backends; kept with it in the response cache).
    """

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
        """A failure that a later run should try again (transient, or never sent)."""
        return not self.ok and self.failure in (TRANSIENT, CIRCUIT_OPEN)


ResponseSink = Callable[[int, ChatResponse], None]
"""Called with (index of the request in the batch, its response) as each one finishes."""


@dataclass
class Usage:
    """Running totals of one backend (what a build spent).

    ``requests``: sent to the model (answered or failed); ``failed``: of those, failed;
    ``retried``: of those, requests that had failed in an earlier run; ``cached``:
    answered from the response cache; ``circuit_open``: never sent because the circuit
    breaker had stopped generation; ``cache_mismatched``: stored answers that failed their
    digest check (:mod:`cseaug.llm.cache`) and were asked again (in :meth:`as_dict` only when
    there were any); ``answered_by``: answers, sent or cached, by the model they name (in
    :meth:`as_dict` as :data:`ANSWERED_BY` keys).
    """

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
    """What every backend provides.

    Subclasses implement :meth:`_generate` (or :meth:`_stream`); :meth:`generate` adds usage
    accounting.
    """

    #: backend name as in the config (``openai``, ``vllm``, ...), part of the cache key.
    name: str = "abstract"

    def __init__(
        self, model: str, sampling: dict[str, Any], model_revision: str | None = None
    ) -> None:
        self.model = model
        self.sampling = dict(sampling)
        self.model_revision = model_revision
        self.usage = Usage()

    def identity(self) -> dict[str, Any]:
        """What determines an answer besides the messages: backend, model, sampling parameters,
        ``llm.model_revision`` when set, and what :meth:`model_identity` adds
        (:mod:`cseaug.llm.identity`)."""
        out: dict[str, Any] = {"backend": self.name, "model": self.model, "sampling": self.sampling}
        if self.model_revision is not None:
            out["revision"] = self.model_revision
        return {**out, **self.model_identity()}

    def model_identity(self) -> dict[str, Any]:
        """What else identifies this backend's model (weights, dtype, engine); none here."""
        return {}

    def generate(
        self,
        requests: Sequence[ChatRequest],
        progress: ProgressCallback | None = None,
        on_response: ResponseSink | None = None,
    ) -> list[ChatResponse]:
        """Answer every request, in order; failures come back as responses with ``error`` set.

        ``on_response`` is called with ``(index, response)`` once per request, as :meth:`_stream`
        hands the answer out (an exception it raises stops the batch).
        """
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
        """Pass the answer to each request, with its index, to ``deliver``: here all at once
        when :meth:`_generate` has answered the batch; a backend that hands out each answer as
        it arrives (for the response cache to store at once) overrides this instead."""
        for index, response in enumerate(self._generate(requests, progress)):
            deliver(index, response)

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        """The answers to ``requests``, in order (what a backend that does not stream implements)."""
        raise NotImplementedError

    def in_flight_limit(self) -> int | None:
        """Requests in flight allowed now (HTTP backends: :mod:`cseaug.llm.limiter`), for the
        progress line; None where it does not apply."""
        return None

    def check(self) -> None:
        """Fail now, before any work, if the backend cannot answer (model, engine, API key).

        The build calls it once when it makes the stage; ``generate`` works without it.
        """

    def close(self) -> None:
        """Release connections, engines or GPU memory."""
