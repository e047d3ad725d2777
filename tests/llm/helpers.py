"""Request builders shared by the LLM-layer tests."""

from __future__ import annotations

from cseaug.llm.base import ChatRequest


def ask(
    content: str, key: str | None = None, sample_index: int = 0, stop: tuple[str, ...] = ()
) -> ChatRequest:
    """A request whose last message is ``content`` (what the fake server counts by)."""
    return ChatRequest(
        key=key or content,
        messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": content}),
        sample_index=sample_index,
        stop=stop,
    )
