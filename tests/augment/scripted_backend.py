"""A deterministic in-process LLMBackend for stage tests (the HTTP backends have their own tests)."""

from __future__ import annotations

from collections.abc import Callable

from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback

Answer = Callable[[ChatRequest], "str | Exception"]


class ScriptedBackend(LLMBackend):
    """Answers each request with ``answer(request)``; an Exception becomes an error response."""

    name = "scripted"

    def __init__(self, answer: Answer) -> None:
        super().__init__("scripted-model", {})
        self.answer = answer
        self.calls: list[list[ChatRequest]] = []
        self.closed = False

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        self.calls.append(requests)
        responses = []
        for request in requests:
            result = self.answer(request)
            if isinstance(result, Exception):
                responses.append(
                    ChatResponse(key=request.key, error=f"{type(result).__name__}: {result}")
                )
            else:
                responses.append(
                    ChatResponse(
                        key=request.key, text=result, prompt_tokens=10, completion_tokens=5
                    )
                )
            if progress is not None:
                progress(1)
        return responses

    def close(self) -> None:
        self.closed = True
