"""Backends that hand out every answer the moment it arrives.

The response cache (:mod:`cseaug.llm.cache`) stores each answer as soon as it exists, so
that a crash (even ``kill -9``) loses at most the requests in flight. A backend that
derives from :class:`StreamingBackend` makes that possible: its :meth:`generate` takes
an ``on_response(index, response)`` callback, called once per request as it finishes,
in completion order. Backends that only answer a whole batch at once (the vLLM offline
engine) stay plain :class:`~cseaug.llm.base.LLMBackend` subclasses; the cache then sends
them their misses in chunks.
"""

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
        """Answer every request, in order, and pass each answer to ``on_response`` as it arrives.

        Args:
            requests: the requests.
            progress: called with the number of requests just finished.
            on_response: called with ``(index, response)`` for each request as soon as it
                has its answer (success or failure); an exception it raises stops the batch.
        """
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
