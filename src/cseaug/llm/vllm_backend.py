"""vLLM's offline engine in this process: backend ``vllm`` (and ``auto`` on a GPU).

``llm.vllm.requests_per_call`` requests per ``LLM.chat`` call, whose answers are handed out when
it returns; a batch vLLM rejects is halved until the bad prompts fail alone.
docs/llm-backends.md, "The offline engines"; docs/gpu.md.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from typing import Any

from cseaug.config import AUTO, VLLMEngineConfig, redacted
from cseaug.errors import BackendError, require
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback, ResponseSink
from cseaug.llm.identity import answer_changing_engine_args, local_model_identity
from cseaug.llm.sampling import request_sampling

logger = logging.getLogger(__name__)

PROMPT_ALLOWANCE = 2048
"""Prompt tokens ``max_model_len: auto`` makes room for (an NGCSE prompt is ~221 tokens, a SKICSE
one ~60); a longer prompt fails alone, as a reject."""

CONTEXT_LENGTH_NAMES = (
    "max_position_embeddings",
    "n_positions",
    "max_sequence_length",
    "seq_length",
)


def hf_config(model: str, **options: Any) -> Any | None:
    """The model's Hugging Face config (``options``: of ``AutoConfig.from_pretrained``), or None
    when it cannot be read."""
    try:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(model, **options)
    except (ImportError, OSError, ValueError):
        return None


def model_context_length(model: str) -> int | None:
    """The model's context length from its Hugging Face config (downloaded when not local), or
    None when it cannot be read."""
    config = hf_config(model)
    config = getattr(config, "text_config", None) or config
    return next((int(v) for n in CONTEXT_LENGTH_NAMES if (v := getattr(config, n, None))), None)


def engine_arguments(
    settings: VLLMEngineConfig,
    dtype: str,
    max_tokens: int,
    engine_kwargs: dict[str, Any],
    context_length: int | None,
) -> dict[str, Any]:
    """The arguments of ``vllm.LLM`` besides ``model``: ``llm.vllm`` (every key but
    ``requests_per_call`` is one), then ``engine_kwargs``;
    ``max_model_len: auto`` makes room for ``max_tokens`` and a prompt, within ``context_length``.

    Example:
        >>> engine_arguments(VLLMEngineConfig(), "auto", 256, {"enforce_eager": True}, 32768)["max_model_len"]
        2304
    """
    arguments = {"dtype": dtype, **settings.model_dump(exclude={"requests_per_call"})}
    if arguments["max_model_len"] == AUTO:
        wanted = max_tokens + PROMPT_ALLOWANCE
        arguments["max_model_len"] = min(wanted, context_length) if context_length else wanted
    return arguments | engine_kwargs


class VLLMBackend(LLMBackend):
    """Chat completions from a vLLM engine made by ``engine_factory`` (default ``vllm.LLM``)."""

    name = "vllm"

    def __init__(
        self,
        model: str,
        sampling: dict[str, Any],
        *,
        dtype: str = "auto",
        engine: VLLMEngineConfig | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        engine_factory: Callable[..., Any] | None = None,
        model_revision: str | None = None,
    ) -> None:
        super().__init__(model, sampling, model_revision)
        self.dtype = dtype
        self.engine_settings = engine or VLLMEngineConfig()
        self.engine_kwargs = dict(engine_kwargs or {})
        self._engine_factory = engine_factory
        self._engine: Any | None = None

    def model_identity(self) -> dict[str, Any]:
        engine_args = answer_changing_engine_args(self.engine_kwargs)
        return {
            **local_model_identity(self.model, self.dtype),
            **({"engine_args": engine_args} if engine_args else {}),
        }

    def check(self) -> None:
        """Create the engine now (loads the model onto the GPU)."""
        if self._engine is not None:
            return
        factory = self._engine_factory or require("vllm", "vllm", "The vllm backend").LLM
        settings = self.engine_settings
        kwargs = engine_arguments(
            settings,
            self.dtype,
            int(self.sampling.get("max_tokens") or 256),
            self.engine_kwargs,
            model_context_length(self.model) if settings.max_model_len == AUTO else None,
        )
        shown = redacted(kwargs)  # engine_kwargs may carry e.g. hf_token
        logger.info("starting vLLM for %s with %s", self.model, shown)
        try:
            self._engine = factory(model=self.model, **kwargs)
        except Exception as exc:  # vLLM raises many types here; all mean "no engine"
            raise BackendError(
                f"vLLM could not start model {self.model!r} with {shown}: {exc}. Check llm.model, "
                "llm.vllm (e.g. gpu_memory_utilization, max_model_len) and llm.engine_kwargs"
            ) from exc

    def _sampling_params(self, engine: Any, sample_index: int, stop: tuple[str, ...]) -> Any:
        params = engine.get_default_sampling_params()
        if stop:
            params.stop = list(stop)
        for field, value in request_sampling(self.sampling, sample_index).items():
            setattr(params, field, value)
        return params

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        if not requests:
            return
        self.check()
        size = self.engine_settings.requests_per_call
        for start in range(0, len(requests), size):
            call = requests[start : start + size]
            for index, response in enumerate(self._chat(self._engine, call), start):
                deliver(index, response)
            if progress is not None:
                progress(len(call))

    def _chat(self, engine: Any, requests: list[ChatRequest]) -> list[ChatResponse]:
        by_sample = {
            i: self._sampling_params(engine, *i)
            for i in {(r.sample_index, r.stop) for r in requests}
        }
        params = (
            next(iter(by_sample.values()))
            if len(by_sample) == 1
            else [by_sample[(r.sample_index, r.stop)] for r in requests]
        )
        try:
            outputs = engine.chat(
                [list(r.messages) for r in requests], sampling_params=params, use_tqdm=False
            )
        except ValueError as exc:
            if len(requests) == 1:
                return [
                    ChatResponse(key=requests[0].key, error=f"vllm rejected the request: {exc}")
                ]
            half = len(requests) // 2
            return self._chat(engine, requests[:half]) + self._chat(engine, requests[half:])
        except Exception as exc:  # an engine failure fails the batch, never the run
            error = f"vllm engine error: {type(exc).__name__}: {exc}"
            return [ChatResponse(key=r.key, error=error) for r in requests]
        if len(outputs) != len(requests):
            error = f"vllm returned {len(outputs)} outputs for {len(requests)} requests"
            return [ChatResponse(key=r.key, error=error) for r in requests]
        return [to_response(r.key, output) for r, output in zip(requests, outputs, strict=True)]

    def close(self) -> None:
        self._engine = None
        gc.collect()


def to_response(key: str, output: Any) -> ChatResponse:
    """A :class:`ChatResponse` from one vLLM ``RequestOutput``."""
    completions = getattr(output, "outputs", None) or []
    if not completions:
        return ChatResponse(key=key, error="vllm returned no completion")
    completion = completions[0]
    if getattr(completion, "finish_reason", None) == "abort":
        return ChatResponse(key=key, error="vllm aborted the request")
    return ChatResponse(
        key=key,
        text=completion.text,
        prompt_tokens=len(getattr(output, "prompt_token_ids", None) or []),
        completion_tokens=len(getattr(completion, "token_ids", None) or []),
    )
