"""The ``llm`` section (also ``quality.judge.llm``): the backend, the model, how requests
are sent, and the timing settings that are no part of any key (docs/llm-backends.md)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from cseaug.config.base import AUTO, BatchSize, StrictModel
from cseaug.secrets import url_credentials_problem

_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class VLLMEngineConfig(StrictModel):
    """How vLLM's offline engine schedules a build's requests (backend ``vllm``; docs/gpu.md):
    speed only, no part of any key; arguments that may change answers (``quantization``) go in
    ``llm.engine_kwargs``."""

    enable_prefix_caching: bool = Field(
        True,
        description="Reuse the KV cache of prompt prefixes: every request of a view starts with the "
        "same system message (instructions and k-shot examples), computed once.",
    )
    enable_chunked_prefill: bool = Field(
        True, description="Mix prompt prefills into decode steps instead of stalling them."
    )
    max_num_seqs: int = Field(
        512,
        ge=1,
        description="Sequences decoded at once. Short prompts (~220 tokens) and answers leave the KV "
        "cache room for many; past ~512 a 7B model's decode step is compute-bound (docs/gpu.md).",
    )
    max_model_len: Annotated[int, Field(ge=16)] | Literal["auto"] = Field(
        AUTO,
        description="Longest prompt + answer in tokens; 'auto': max_tokens + 2,048 tokens for the "
        "prompt, capped at the model's context. A longer prompt fails alone (a reject).",
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1, description="Share of the GPU's memory vLLM may take (weights + KV cache)."
    )
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs that split the model.")
    requests_per_call: int = Field(
        16384,
        ge=1,
        description="Requests per LLM.chat call (a default shard, 5,000 sentences x 3 views, is one "
        "call). LLM.chat returns only when all its requests are done, so the response cache "
        "stores a call's answers when it returns: a crash loses at most one call.",
    )


class CircuitBreakerConfig(StrictModel):
    """When to stop sending requests to an endpoint that fails most of them (docs/llm-backends.md)."""

    window: int = Field(
        32,
        ge=1,
        description="Finished requests (after their retries) the failure rate is taken over.",
    )
    failure_rate: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Share of failed requests in the window that stops generation; the prompts "
        "not yet sent are recorded as 'circuit_open' rejects and a rerun sends them.",
    )


OPENAI_MAX_TEMPERATURE = 2.0
"""The highest temperature the OpenAI chat API (and servers that follow it) accepts."""


class BatchAPIConfig(StrictModel):
    """How backend ``openai-batch`` waits for the OpenAI Batch API (docs/llm-backends.md):
    timing only, no part of any key."""

    poll_interval_s: float = Field(
        30.0, gt=0, description="Seconds before the first status check of a batch."
    )
    max_poll_interval_s: float = Field(
        600.0,
        gt=0,
        description="Longest wait between status checks (each wait is 1.5x the last, up to this).",
    )
    max_wait_s: float = Field(
        90_000.0,
        gt=0,
        description="Give up waiting after this long (default 25 h, past the 24 h window): the "
        "build stops, the batch keeps running, and a rerun re-attaches to it.",
    )
    completion_window: Literal["24h"] = Field(
        "24h", description="The batch's completion window (the API accepts only 24h)."
    )


class PriceConfig(StrictModel):
    """USD per 1M tokens, for the dry run's cost estimate (``openai`` and ``openai-batch``);
    defaults: gpt-3.5-turbo-0125 (the NGCSE configs' model) as published in 2024, to be
    checked before budgeting."""

    input_per_1m: float = Field(0.50, ge=0, description="USD per 1M prompt tokens.")
    output_per_1m: float = Field(1.50, ge=0, description="USD per 1M completion tokens.")
    batch_discount: float = Field(
        0.5,
        gt=0,
        le=1,
        description="Batch API price as a share of the online price (OpenAI: half price).",
    )


def base_url_problem(urls: Sequence[str]) -> str | None:
    """Why a list of endpoint URLs cannot be used (empty, credentials, an endpoint twice), or None.

    Example:
        >>> base_url_problem(["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]) is None
        True
        >>> print(base_url_problem(["http://10.0.0.1:8000/v1", "http://10.0.0.1:8000/v1/"]))
        llm.base_url names http://10.0.0.1:8000/v1/ twice: list each endpoint once
    """
    if not urls:
        return "llm.base_url is an empty list: give one URL or a list of several"
    seen: set[str] = set()
    for url in urls:
        if problem := url_credentials_problem(url, "llm.base_url"):
            return problem
        if url.rstrip("/") in seen:
            return f"llm.base_url names {url} twice: list each endpoint once"
        seen.add(url.rstrip("/"))
    return None


class FailoverConfig(StrictModel):
    """When a listed endpoint is taken out of service and tried again (docs/llm-backends.md)."""

    failures: int = Field(
        3,
        ge=1,
        description="Connection errors, timeouts or 5xx in a row that take an endpoint out.",
    )
    cooldown_s: float = Field(
        5.0,
        gt=0,
        description="First time out of service; it doubles each time the endpoint fails "
        "again when tried, and is reset by an answer.",
    )
    max_cooldown_s: float = Field(300.0, gt=0, description="Longest time out of service.")


class ConcurrencyRange(StrictModel):
    """Requests in flight on each endpoint: adapted between ``min`` and ``max`` (HTTP
    backends; docs/llm-backends.md, "Requests in flight")."""

    min: int = Field(1, ge=1, le=4096, description="Fewest requests in flight, however loaded.")
    max: int = Field(ge=1, le=4096, description="Most requests in flight, however healthy.")

    @model_validator(mode="after")
    def _ordered(self) -> ConcurrencyRange:
        if self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class LLMConfig(StrictModel):
    """Which LLM writes the views, and how requests are sent."""

    backend: Literal[
        "auto", "openai", "openai-compatible", "vllm", "transformers", "openai-batch"
    ] = Field(
        description="'openai': api.openai.com; 'openai-compatible': any base_url (vllm serve, TGI, ...); "
        "'openai-batch': the OpenAI Batch API (half price, answers within 24 h; same cache as 'openai'); "
        "'vllm': offline engine in this process; 'transformers': local Hugging Face chat model; "
        "'auto': 'vllm' when the vllm package is installed and a CUDA GPU is visible, else "
        "'transformers' (an explicit name is always used as given)."
    )
    model: str = Field(description="Model name (API) or Hugging Face id / local path.")
    model_revision: str | None = Field(
        None,
        description="Your name for the weights behind 'model' (e.g. a commit or checkpoint tag); "
        "part of the response cache key, so answers of other weights served under the same "
        "name are never reused.",
    )
    base_url: str | list[str] | None = Field(
        None,
        description="Endpoint for 'openai-compatible', e.g. http://127.0.0.1:8000/v1, or a list "
        "of endpoints serving the same model (one `vllm serve` per GPU or machine): requests are "
        "balanced over them, `concurrency` in flight on each.",
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="Name of the environment variable holding the API key (the key itself is "
        "never part of a config).",
    )
    concurrency: Annotated[
        Annotated[int, Field(ge=1, le=4096), Tag("number")]
        | Annotated[ConcurrencyRange, Tag("range")],
        Discriminator(lambda v: "range" if isinstance(v, dict | ConcurrencyRange) else "number"),
    ] = Field(
        64,
        description="Requests in flight at once (HTTP backends), on each endpoint of base_url: "
        "adapted to the server between {min, max}; a number N is {min: 1, max: N}, "
        "{min: N, max: N} a fixed number.",
    )
    failover: FailoverConfig = Field(
        default_factory=FailoverConfig,
        description="Several endpoints: when one is taken out of service and tried again "
        "(timing only, not part of any key).",
    )
    max_retries: int = Field(
        6, ge=0, description="Retries of a failed request (429, 5xx, timeouts, connection errors)."
    )
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Deadline of one HTTP request, from sending it to the last byte of the "
        "answer (each retry gets its own).",
    )
    rate_limit_budget_s: float = Field(
        600.0,
        gt=0,
        description="Longest time the endpoints may answer nothing but HTTP 429 (rate limited); "
        "then the requests not answered fail (retryable: a rerun sends them).",
    )
    temperature: float | None = Field(
        None, ge=0, description="Sampling temperature; None keeps the backend default."
    )
    top_p: float | None = Field(
        None, gt=0, le=1, description="Nucleus sampling; None keeps the backend default."
    )
    max_tokens: int = Field(256, ge=1, description="Maximum tokens of one answer.")
    seed: int | None = Field(None, description="Sampling seed passed to backends that accept one.")
    device: str = Field(
        "auto",
        description="'transformers': auto (cuda when available), cpu, cuda, cuda:1, ... "
        "('vllm' places itself: choose GPUs with CUDA_VISIBLE_DEVICES).",
    )
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="Model weights dtype."
    )
    batch_size: BatchSize = Field(
        AUTO,
        description="'transformers': prompts per generate() call; 'auto': 8 on the CPU, on a GPU as "
        "many as the free memory holds the KV cache of (halved and remembered on out of memory).",
    )
    threads: int | None = Field(
        None,
        ge=1,
        description="'transformers' on the CPU: torch's threads (speed only, not part of any "
        "key); null: the CPU cores this process may use.",
    )
    engine_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="'vllm': extra keyword arguments of vllm.LLM(...)."
    )
    vllm: VLLMEngineConfig = Field(
        default_factory=VLLMEngineConfig,
        description="'vllm': engine scheduling and memory (speed only, not part of any key).",
    )
    circuit_breaker: CircuitBreakerConfig | None = Field(
        default_factory=CircuitBreakerConfig,
        description="HTTP backends: stop generation when the endpoints fail most requests; "
        "null: never stop.",
    )
    batch: BatchAPIConfig = Field(
        default_factory=BatchAPIConfig,
        description="'openai-batch': polling and waiting (timing only, not part of any key).",
    )
    price: PriceConfig = Field(
        default_factory=PriceConfig,
        description="'openai', 'openai-batch': prices for the dry run's cost estimate.",
    )

    @field_validator("base_url")
    @classmethod
    def _endpoints(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None or value == "":
            return value
        urls = [value] if isinstance(value, str) else value
        if problem := base_url_problem(urls):
            raise ValueError(problem)
        return urls[0] if len(urls) == 1 else urls  # a list of one is that URL, in every way

    @field_validator("api_key_env")
    @classmethod
    def _a_variable_name(cls, name: str) -> str:
        if not _VARIABLE_NAME.fullmatch(name):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, _), e.g. "
                "OPENAI_API_KEY, not the key itself: export the key in that variable"
            )
        return name

    @model_validator(mode="after")
    def _endpoint(self) -> LLMConfig:
        if self.backend == "openai-batch" and isinstance(self.base_url, list):
            raise ValueError(
                f"backend 'openai-batch' submits to one endpoint: llm.base_url lists "
                f"{len(self.base_url)}; give one URL (or use 'openai-compatible' for several)"
            )
        if self.backend == "openai-compatible" and not self.base_url:
            raise ValueError("llm.base_url is required for backend 'openai-compatible'")
        http = self.backend in ("openai", "openai-compatible", "openai-batch")
        if http and self.temperature is not None and self.temperature > OPENAI_MAX_TEMPERATURE:
            raise ValueError(
                f"llm.temperature {self.temperature} is above {OPENAI_MAX_TEMPERATURE:g}, which the "
                "OpenAI chat API rejects (0 to 2)"
            )
        return self
