"""vLLM's offline engine in this process: backend ``vllm``.

The engine (``vllm.LLM(model=..., enable_prefix_caching=True, dtype=..., **engine_kwargs)``)
is created on first use (or by :meth:`VLLMBackend.check`), and every batch goes to
``LLM.chat`` in one call, so that vLLM's continuous batching sees all of it; prefix
caching shares the k-shot examples that every prompt of a stage begins with. Sampling
starts from ``LLM.get_default_sampling_params()`` (the model's generation config, as
``vllm serve`` does) and overrides what the config sets; with a seed, sample *k* of a
request uses ``seed + k`` (:func:`cseaug.llm.sampling.request_seed`). Token counts come
from each ``RequestOutput`` (``prompt_token_ids``, ``outputs[0].token_ids``).

vLLM rejects a whole ``chat`` call when one prompt is invalid (e.g. longer than the
model's context) with a ``ValueError``; the batch is then split in halves until the bad
requests stand alone, so only they fail. Any other engine error fails every request of
the batch with its message.

vLLM needs CUDA (extra ``vllm``); the engine object can be injected for tests.

Example:
    >>> backend = VLLMBackend("Qwen/Qwen2.5-7B-Instruct", {"temperature": 0.0, "max_tokens": 64})  # doctest: +SKIP
    >>> backend.check()  # creates the engine now, before any work  # doctest: +SKIP
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from cseaug.errors import BackendError, require
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback
from cseaug.llm.sampling import request_seed


class VLLMBackend(LLMBackend):
    """Chat completions from a vLLM engine in this process.

    Args:
        model: Hugging Face id or local path of the chat model.
        sampling: ``temperature``, ``top_p``, ``max_tokens``, ``seed`` (None: model default).
        dtype: weights dtype passed to ``vllm.LLM``.
        engine_kwargs: more keyword arguments of ``vllm.LLM`` (``gpu_memory_utilization``,
            ``max_model_len``, ``tensor_parallel_size``, ...).
        engine_factory: builds the engine instead of ``vllm.LLM`` (tests inject a fake).
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        sampling: dict[str, Any],
        *,
        dtype: str = "auto",
        engine_kwargs: dict[str, Any] | None = None,
        engine_factory: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(model, sampling)
        self.dtype = dtype
        self.engine_kwargs = dict(engine_kwargs or {})
        self._engine_factory = engine_factory or self._create_engine
        self._engine: Any | None = None

    def check(self) -> None:
        """Create the engine now (loads the model onto the GPU); fails before any work."""
        self._get_engine()

    def _create_engine(self) -> Any:
        vllm = require("vllm", "vllm", "The vllm backend")
        kwargs = {"enable_prefix_caching": True, "dtype": self.dtype, **self.engine_kwargs}
        try:
            return vllm.LLM(model=self.model, **kwargs)
        except Exception as exc:  # vLLM raises many types here; all mean "no engine"
            raise BackendError(
                f"vLLM could not start model {self.model!r} with {kwargs}: {exc}. Check llm.model and "
                "llm.engine_kwargs (e.g. gpu_memory_utilization, max_model_len)"
            ) from exc

    def _get_engine(self) -> Any:
        if self._engine is None:
            self._engine = self._engine_factory()
        return self._engine

    def _sampling_params(self, engine: Any, sample_index: int) -> Any:
        params = engine.get_default_sampling_params()
        for field in ("temperature", "top_p", "max_tokens"):
            if self.sampling.get(field) is not None:
                setattr(params, field, self.sampling[field])
        seed = request_seed(self.sampling, sample_index)
        if seed is not None:
            params.seed = seed
        return params

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        if not requests:
            return []
        engine = self._get_engine()
        responses = self._chat(engine, requests)
        if progress is not None:
            progress(len(requests))
        return responses

    def _chat(self, engine: Any, requests: list[ChatRequest]) -> list[ChatResponse]:
        by_sample = {
            i: self._sampling_params(engine, i) for i in {r.sample_index for r in requests}
        }
        params = (
            next(iter(by_sample.values()))
            if len(by_sample) == 1
            else [by_sample[r.sample_index] for r in requests]
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
            return [
                ChatResponse(key=r.key, error=f"vllm engine error: {type(exc).__name__}: {exc}")
                for r in requests
            ]
        if len(outputs) != len(requests):
            return [
                ChatResponse(
                    key=r.key,
                    error=f"vllm returned {len(outputs)} outputs for {len(requests)} requests",
                )
                for r in requests
            ]
        return [to_response(r.key, output) for r, output in zip(requests, outputs, strict=True)]

    def close(self) -> None:
        """Drop the engine (frees its GPU memory once nothing else holds it)."""
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
