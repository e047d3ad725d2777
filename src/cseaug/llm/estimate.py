"""What a build would send to the LLM: requests, cache hits, tokens and prices (dry run).

Prompt tokens by the model's tokenizer where it loads without a download, else ~4 characters
per token; completion tokens and prices are ceilings. docs/llm-backends.md, "Dry-run estimate".

Example:
    >>> from cseaug.config import LLMConfig
    >>> from cseaug.llm.base import ChatRequest
    >>> cfg = LLMConfig(backend="openai", model="gpt-4o-mini", max_tokens=64)
    >>> result = estimate([ChatRequest("k", ({"role": "user", "content": "Rewrite: a cat sits."},))], cfg)
    >>> result.requests, result.prompt_tokens, result.max_completion_tokens, result.method
    (1, 12, 64, 'heuristic: ~4 characters per token')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.config import LLMConfig, PriceConfig
from cseaug.hub import cached_file
from cseaug.llm.base import ChatRequest
from cseaug.llm.cache import ResponseCache, request_hash
from cseaug.llm.transformers_backend import chat_prompt_ids

CHARS_PER_TOKEN = 4.0
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REPLY = 3
_ENCODE_CHUNK = 1000


@dataclass(frozen=True)
class Estimate:
    """Requests of a build, those ``cached``, and the tokens of those still to send."""

    requests: int
    cached: int
    prompt_tokens: int
    max_completion_tokens: int
    method: str

    @property
    def to_send(self) -> int:
        return self.requests - self.cached


def heuristic_tokens(request: ChatRequest) -> int:
    """Prompt tokens of one request by the ~4-characters-per-token rule."""
    content = sum(math.ceil(len(m["content"]) / CHARS_PER_TOKEN) for m in request.messages)
    return content + TOKENS_PER_MESSAGE * len(request.messages) + TOKENS_PER_REPLY


def on_disk(model: str) -> bool:
    """Whether ``model`` loads without a download (a path, or a hub id in the local cache),
    asked without importing transformers."""
    path = Path(model).expanduser()
    try:  # ValueError: not a repository id
        return path.is_dir() or path.is_file() or bool(cached_file(model, "tokenizer_config.json"))
    except ValueError:
        return False


def local_chat_tokenizer(model: str) -> Any | None:
    """The model's chat tokenizer if it loads without a download, else None."""
    try:  # ValueError: a tokenizer that does not load
        if not on_disk(model) or Path(model).suffix == ".gguf":
            return None
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
    except (ImportError, OSError, ValueError):
        return None
    return tokenizer if getattr(tokenizer, "chat_template", None) else None


def cached_answers(
    requests: Sequence[ChatRequest], identity: dict[str, Any] | None, cache_path: Path | None
) -> list[str | None]:
    """For each request, the answer the cache holds for the backend of ``identity``, or None."""
    if identity is None or cache_path is None or not Path(cache_path).is_file():
        return [None] * len(requests)
    hashes = [request_hash(identity, r) for r in requests]
    with closing(ResponseCache(cache_path)) as cache:
        stored = cache.lookup(hashes)[0]
    return [stored[digest].text if digest in stored else None for digest in hashes]


def estimate(
    requests: Sequence[ChatRequest], cfg: LLMConfig, cached: Sequence[bool] | None = None
) -> Estimate:
    """Count requests, those ``cached`` (a flag each) and the tokens of those still to send."""
    cached = list(cached) if cached is not None else [False] * len(requests)
    to_send = [r for r, hit in zip(requests, cached, strict=True) if not hit]
    tokenizer = local_chat_tokenizer(cfg.model) if to_send else None
    if tokenizer is not None:
        prompt_tokens = sum(
            len(ids)
            for start in range(0, len(to_send), _ENCODE_CHUNK)
            for ids in chat_prompt_ids(tokenizer, to_send[start : start + _ENCODE_CHUNK])
        )
        method = f"tokenizer of {cfg.model} with its chat template"
    else:
        prompt_tokens = sum(heuristic_tokens(r) for r in to_send)
        method = f"heuristic: ~{CHARS_PER_TOKEN:g} characters per token"
    return Estimate(
        requests=len(requests),
        cached=sum(cached),
        prompt_tokens=prompt_tokens,
        max_completion_tokens=len(to_send) * cfg.max_tokens,
        method=method,
    )


def in_process_seconds(
    rows: int, prefill_s: float, step_s: float, to_send: int, max_tokens: int
) -> float:
    """A ceiling on the seconds to decode ``to_send`` requests in batches of ``rows``, from one
    batch's measured prefill and step, every answer at ``max_tokens``.

    Example:
        >>> in_process_seconds(8, prefill_s=2.0, step_s=0.5, to_send=24, max_tokens=9)
        18.0
    """
    return math.ceil(to_send / rows) * (prefill_s + (max_tokens - 1) * step_s)


PRICED_BACKENDS = ("openai", "openai-batch")  # billed per token: the dry run prints api_costs


def api_costs(found: Estimate, price: PriceConfig) -> dict[str, str]:
    """What the requests still to send cost on the OpenAI API and on its Batch API (USD).

    Example:
        >>> found = Estimate(requests=3_000_000, cached=0, prompt_tokens=690_000_000,
        ...                  max_completion_tokens=192_000_000, method="heuristic")
        >>> api_costs(found, PriceConfig())["cost_batch_api"]
        '≤ $316.50 (0.5 × the online price)'
    """
    prompt_usd = found.prompt_tokens / 1e6 * price.input_per_1m
    answers_usd = found.max_completion_tokens / 1e6 * price.output_per_1m
    online_usd = prompt_usd + answers_usd
    return {
        "cost_openai_api": f"≤ ${online_usd:,.2f} (prompts ${prompt_usd:,.2f} + answers "
        f"≤ ${answers_usd:,.2f} at max_tokens)",
        "cost_batch_api": f"≤ ${online_usd * price.batch_discount:,.2f} "
        f"({price.batch_discount:g} × the online price)",
        "price_per_1m_tokens": f"${price.input_per_1m:g} prompt, ${price.output_per_1m:g} "
        "completion (llm.price)",
    }
