"""A local Hugging Face chat model (a folder, a hub id or a ``.gguf`` file): backend
``transformers``, generating in left-padded batches longest first (:mod:`cseaug.batching`).
docs/llm-backends.md, "The offline engines".
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Sequence
from itertools import groupby
from pathlib import Path
from typing import Any

from cseaug.batching import (
    TokenBudget,
    dtype_bytes,
    is_out_of_memory,
    kv_bytes_per_token,
    run_batches,
)
from cseaug.devices import resolve_device, resolve_dtype
from cseaug.errors import BackendError, require
from cseaug.hub import hub_offline
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback, ResponseSink
from cseaug.llm.identity import local_model_identity
from cseaug.progress import Bar, progress_bar

ENDPOINT_HINT = (
    "To use a served model instead, point the build at an endpoint, e.g. "
    "`--set llm.backend=openai-compatible --set llm.base_url=http://127.0.0.1:8000/v1 "
    "--set llm.model=<served model name>` (start one with `vllm serve <model>`), "
    "or set llm.model to a local directory that holds the model."
)

CPU_BATCH = 8
"""Prompts per batch of ``batch_size: auto`` on the CPU."""

GPU_MAX_BATCH = 256
"""Most prompts per batch of ``batch_size: auto`` on a GPU (measured on an H100: docs/gpu.md)."""


def generate_kwargs(sampling: dict[str, Any]) -> dict[str, Any]:
    """``model.generate`` arguments of a sampling dict (greedy when temperature is None or 0).

    Example:
        >>> generate_kwargs({"temperature": None, "max_tokens": 32})
        {'max_new_tokens': 32, 'do_sample': False, 'temperature': None, 'top_p': None, 'top_k': None}
    """
    temperature = sampling.get("temperature")
    kwargs: dict[str, Any] = {"max_new_tokens": sampling.get("max_tokens") or 256}
    if temperature is None or temperature == 0:
        # None overrides sampling values a model's generation_config may carry
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    else:
        kwargs.update(do_sample=True, temperature=temperature, top_p=sampling.get("top_p") or 1.0)
    return kwargs


def chat_prompt_ids(tokenizer: Any, requests: Sequence[ChatRequest]) -> list[list[int]]:
    """The token ids of each request's messages rendered with the tokenizer's chat template."""
    prompts = [
        tokenizer.apply_chat_template(list(r.messages), tokenize=False, add_generation_prompt=True)
        for r in requests
    ]
    return tokenizer(prompts, add_special_tokens=False)["input_ids"]


class TransformersBackend(LLMBackend):
    """Chat completions from a local Hugging Face causal LM; the arguments are the ``llm`` keys
    of the same names."""

    name = "transformers"

    def __init__(
        self,
        model: str,
        sampling: dict[str, Any],
        *,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int | str = "auto",
        threads: int | None = None,
        model_revision: str | None = None,
    ) -> None:
        super().__init__(model, sampling, model_revision)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.threads = threads
        self._tokenizer: Any | None = None
        self._model: Any | None = None
        self._device: str | None = None
        self._budget: TokenBudget | None = None

    def model_identity(self) -> dict[str, Any]:
        return local_model_identity(self.model, self.dtype)

    def check(self) -> None:
        """Load the tokenizer and model now (a :class:`BackendError` that says how to use an
        endpoint instead when it cannot, or has no chat template)."""
        if self._model is not None:
            return
        transformers = require("transformers", "hf", "The transformers LLM backend")
        device = resolve_device(self.device, "llm.device")
        if device == "cpu":
            import torch

            torch.set_num_threads(self.threads or len(os.sched_getaffinity(0)))
        dtype = resolve_dtype(self.dtype, device, "llm.dtype", auto_on_gpu="checkpoint")
        tokenizer = self._load(transformers.AutoTokenizer, {})
        if not getattr(tokenizer, "chat_template", None):
            raise BackendError(
                f"the tokenizer of {self.model!r} has no chat template, so it is not a chat model; "
                f"use an instruction-tuned model. {ENDPOINT_HINT}"
            )
        model = self._load(transformers.AutoModelForCausalLM, {"dtype": dtype})
        tokenizer.padding_side = "left"  # decoder-only models continue from the right edge
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._tokenizer, self._model, self._device = tokenizer, model.to(device).eval(), device
        self._budget = TokenBudget.for_device(
            device,
            self.batch_size,
            lambda: kv_bytes_per_token(model.config, dtype_bytes(model.dtype)),
            cpu_items=CPU_BATCH,
            gpu_items=GPU_MAX_BATCH,
            setting="llm.batch_size",
        )

    def _load(self, auto_class: Any, kwargs: dict[str, Any]) -> Any:
        gguf = Path(self.model).expanduser()
        if gguf.suffix == ".gguf":  # dequantised on loading (the gguf package)
            if importlib.util.find_spec("gguf") is None:
                raise BackendError(
                    f"loading {self.model!r} needs the gguf package: pip install gguf"
                )
            try:
                return auto_class.from_pretrained(gguf.parent, gguf_file=gguf.name, **kwargs)
            except (OSError, ValueError) as exc:
                raise BackendError(
                    f"cannot load the GGUF file {self.model!r}: {exc}. {ENDPOINT_HINT}"
                ) from exc
        try:
            # local first: an absent model fails at once instead of after network timeouts
            return auto_class.from_pretrained(self.model, local_files_only=True, **kwargs)
        except (OSError, ValueError) as local_error:
            if hub_offline():
                raise BackendError(
                    f"cannot load {self.model!r} for the transformers backend: it is not in the local "
                    f"Hugging Face cache and HF_HUB_OFFLINE is set ({local_error}). {ENDPOINT_HINT}"
                ) from local_error
        try:
            return auto_class.from_pretrained(self.model, **kwargs)
        except (OSError, ValueError) as exc:
            raise BackendError(
                f"cannot load {self.model!r} for the transformers backend: not cached locally and "
                f"the download failed ({exc}). {ENDPOINT_HINT}"
            ) from exc

    def _generate_ids(self, ids: list[list[int]], options: dict[str, Any], counter: Any) -> Any:
        """The new tokens of ``model.generate`` on the left-padded ``ids``, on the CPU (the
        batch's tensors and KV cache go before the next batch)."""
        import torch
        from transformers import LogitsProcessorList

        encoded = self._tokenizer.pad({"input_ids": ids}, return_tensors="pt").to(self._device)
        with torch.inference_mode():
            output = self._model.generate(
                **encoded,
                **options,
                logits_processor=LogitsProcessorList([counter]),
                pad_token_id=self._tokenizer.pad_token_id,
            )
        return output[:, encoded["input_ids"].shape[1] :].tolist()

    def _answer_batch(
        self, ids: list[list[int]], keys: list[str], stop: tuple[str, ...], bar: Bar
    ) -> list[ChatResponse]:
        options = generate_kwargs(self.sampling)
        if stop:  # a row that wrote a stop string ends; the batch ends when every row has
            options.update(stop_strings=list(stop), tokenizer=self._tokenizer)
        steps = TokenCounter(bar, len(ids))
        new_tokens = self._generate_ids(ids, options, steps)
        bar.advance(len(ids) * (options["max_new_tokens"] - steps.steps))  # ended early
        eos = self._model.generation_config.eos_token_id
        eos = self._tokenizer.eos_token_id if eos is None else eos
        ends = {int(i) for i in (eos if isinstance(eos, list) else [eos]) if i is not None}
        ends.add(self._tokenizer.pad_token_id)
        responses = []
        for key, tokens, prompt in zip(keys, new_tokens, ids, strict=True):
            # everything after the first end token is padding
            end = next((i + 1 for i, token in enumerate(tokens) if token in ends), len(tokens))
            text = self._tokenizer.decode(tokens[:end], skip_special_tokens=True)
            cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=len(text))
            responses.append(
                ChatResponse(
                    key=key, text=text[:cut], prompt_tokens=len(prompt), completion_tokens=end
                )
            )
        return responses

    def _stream(
        self, requests: list[ChatRequest], progress: ProgressCallback | None, deliver: ResponseSink
    ) -> None:
        self.check()
        if not requests:
            return
        import torch

        if self.sampling.get("seed") is not None:
            torch.manual_seed(int(self.sampling["seed"]))
        ids = chat_prompt_ids(self._tokenizer, requests)
        lengths = [len(i) for i in ids]
        new_tokens = generate_kwargs(self.sampling)["max_new_tokens"]
        # requests with the same stop sequences share batches, longest first
        order = sorted(range(len(requests)), key=lambda i: (requests[i].stop, -lengths[i]))
        ceiling = len(requests) * new_tokens
        with progress_bar(f"{Path(self.model).name}: tokens", ceiling, "tokens") as bar:
            for stop, group in groupby(order, key=lambda i: requests[i].stop):

                def answer(batch: list[int], stop: tuple[str, ...] = stop) -> list[ChatResponse]:
                    keys = [requests[i].key for i in batch]
                    try:
                        return self._answer_batch([ids[i] for i in batch], keys, stop, bar)
                    except (RuntimeError, ValueError) as exc:
                        if len(batch) > 1 and is_out_of_memory(exc):
                            raise  # run_batches splits the batch and retries the halves
                        return [
                            ChatResponse(key=k, error=f"transformers generate failed: {exc}")
                            for k in keys
                        ]

                for batch, answers in run_batches(
                    list(group),
                    lengths,
                    lambda longest: longest + new_tokens,
                    self._budget,  # type: ignore[arg-type]  # set by check()
                    answer,
                    str(self._device),
                ):
                    for index, response in zip(batch, answers, strict=True):
                        deliver(index, response)
                    if progress is not None:
                        progress(len(batch))

    def calibrate(
        self, requests: Sequence[ChatRequest], steps: int = 4
    ) -> tuple[int, float, float]:
        """``(rows, seconds of the prefill, seconds per decoding step)`` of the first batch a
        build would cut from ``requests``, timed for ``steps`` new tokens (the dry run's
        wall-time estimate, :func:`cseaug.llm.estimate.in_process_seconds`)."""
        self.check()
        ids = chat_prompt_ids(self._tokenizer, requests)
        lengths = [len(i) for i in ids]
        order = sorted(range(len(ids)), key=lambda i: -lengths[i])
        options = generate_kwargs(self.sampling)
        slots = options["max_new_tokens"]
        rows = self._budget.take(order, lengths, 0, lambda longest: longest + slots)  # type: ignore[union-attr]
        counter = TokenCounter(Bar(), rows)
        options.update(max_new_tokens=steps, min_new_tokens=steps)
        started = time.perf_counter()
        self._generate_ids([ids[i] for i in order[:rows]], options, counter)
        first, last = counter.times[0], counter.times[-1]
        return rows, first - started, (last - first) / max(1, len(counter.times) - 1)

    def close(self) -> None:
        self._model = None
        self._tokenizer = None


class TokenCounter:
    """A logits processor that changes nothing and advances ``bar`` by a batch's rows at each
    decoding step (no device sync, unlike a streamer); ``times``: when each step's logits came
    (the first: after the prefill)."""

    def __init__(self, bar: Bar, rows: int) -> None:
        self.bar, self.rows, self.steps = bar, rows, 0
        self.times: list[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.steps += 1
        self.times.append(time.perf_counter())
        self.bar.advance(self.rows)
        return scores
