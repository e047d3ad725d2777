"""A stand-in for ``vllm.LLM`` (vLLM needs CUDA): only the engine object is fake.

``chat`` takes a list of conversations like ``vllm.LLM.chat`` and returns objects shaped
like vLLM's ``RequestOutput`` / ``CompletionOutput`` (same attribute names), in order.
The answer to a conversation is ``"echo: <last message>"``; token ids are one per word.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeSamplingParams:
    """The fields of ``vllm.SamplingParams`` that the backend sets."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    seed: int | None = None
    stop: list[str] | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: Any = None
    finish_reason: str | None = "stop"
    stop_reason: Any = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool = True


@dataclass
class FakeVLLMEngine:
    """Records every ``chat`` call; can reject given prompts (ValueError) or fail outright.

    Args:
        reject: last-message contents that make a whole ``chat`` call raise ValueError,
            as vLLM does for a prompt longer than the context.
        fail_with: raised by every ``chat`` call.
        abort: last-message contents answered with finish_reason ``abort``.
    """

    reject: set[str] = field(default_factory=set)
    fail_with: BaseException | None = None
    abort: set[str] = field(default_factory=set)
    calls: list[tuple[list[list[dict[str, str]]], Any]] = field(default_factory=list)

    def get_default_sampling_params(self) -> FakeSamplingParams:
        return FakeSamplingParams()

    def chat(self, messages, sampling_params=None, use_tqdm=True, **kwargs) -> list[RequestOutput]:
        self.calls.append((messages, sampling_params))
        if self.fail_with is not None:
            raise self.fail_with
        for conversation in messages:
            if conversation[-1]["content"] in self.reject:
                raise ValueError("The decoder prompt is longer than the maximum model length")
        outputs = []
        for number, conversation in enumerate(messages):
            content = conversation[-1]["content"]
            text = f"echo: {content}"
            words = sum(len(m["content"].split()) for m in conversation)
            finish = "abort" if content in self.abort else "stop"
            outputs.append(
                RequestOutput(
                    request_id=str(number),
                    prompt=None,
                    prompt_token_ids=list(range(words)),
                    outputs=[
                        CompletionOutput(
                            0, text, list(range(len(text.split()))), finish_reason=finish
                        )
                    ],
                )
            )
        return outputs
