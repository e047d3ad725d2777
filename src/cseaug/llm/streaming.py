"""Backends that hand out every answer the moment it arrives, for the response cache to
store at once (:mod:`cseaug.llm.cache`); the others answer a batch as a whole."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from cseaug.llm.base import (
    ChatRequest,
    ChatResponse,
    LLMBackend,
    ProgressCallback,
    ResponseSink,
)


class StreamingBackend(LLMBackend):
    """An :class:`LLMBackend` whose answers can be consumed one by one as they arrive.

    Subclasses implement :meth:`_stream`; ``_generate`` is ``_stream`` without a sink.
    """

    def generate(
        self,
        requests: Sequence[ChatRequest],
        progress: ProgressCallback | None = None,
        on_response: ResponseSink | None = None,
    ) -> list[ChatResponse]:
        """Answer every request, in order, and pass each answer to ``on_response`` as it
        arrives (an exception it raises stops the batch)."""
        if on_response is None:
            return super().generate(requests, progress)
        return self._counted(requests, self._stream(list(requests), progress, on_response))

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        return self._stream(requests, progress, None)

    @abc.abstractmethod
    def _stream(
        self,
        requests: list[ChatRequest],
        progress: ProgressCallback | None,
        on_response: ResponseSink | None,
    ) -> list[ChatResponse]: ...
