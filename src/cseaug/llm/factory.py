"""Pick the backend an :class:`~cseaug.config.LLMConfig` asks for (``auto`` resolved).

Constructing a backend is cheap and never fails for want of a key or a model; ``check()`` does
the up-front work. docs/llm-backends.md.

Example:
    >>> from cseaug.config import LLMConfig
    >>> cfg = LLMConfig(backend="openai-compatible", model="m", base_url="http://127.0.0.1:8000/v1")
    >>> make_backend(cfg, cache_path=None).name
    'openai-compatible'
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from cseaug.config import AUTO, LLMConfig
from cseaug.devices import gpu_driver_present
from cseaug.llm.base import LLMBackend
from cseaug.llm.breaker import CircuitBreaker
from cseaug.llm.cache import CachedBackend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.openai_batch_backend import OpenAIBatchBackend
from cseaug.llm.sampling import FIELDS
from cseaug.llm.transformers_backend import TransformersBackend
from cseaug.llm.vllm_backend import VLLMBackend

logger = logging.getLogger(__name__)

LOCAL_BACKENDS = frozenset({"transformers", "vllm"})  # the model in this process, not an API


def cuda_visible() -> bool:
    """Whether torch is installed and sees a CUDA GPU (without a GPU driver, known without
    importing torch)."""
    if importlib.util.find_spec("torch") is None or not gpu_driver_present():
        return False
    import torch

    return torch.cuda.is_available()


def resolve_backend(name: str) -> str:
    """The backend that ``llm.backend`` names: ``auto`` becomes ``vllm`` or ``transformers``.

    Example:
        >>> resolve_backend("openai")
        'openai'
    """
    if name != AUTO:
        return name
    if importlib.util.find_spec("vllm") is not None and cuda_visible():
        return "vllm"
    return "transformers"


def make_backend(
    cfg: LLMConfig,
    cache_path: Path | None,
    spent_by: str | None = None,
    served: dict[str, Any] | None = None,
) -> LLMBackend:
    """The backend of ``cfg``, behind the response cache at ``cache_path`` when one is given;
    ``spent_by`` pays for what it sends; ``served``: what :func:`probe_served` reported."""
    sampling = cfg.model_dump(include=set(FIELDS))  # in the config's field order
    name = resolve_backend(cfg.backend)
    if name != cfg.backend:
        logger.info("llm.backend auto: using %s", name)
    http: dict[str, Any] = {  # what both API backends take
        "base_url": cfg.base_url,
        "api_key_env": cfg.api_key_env,
        "max_retries": cfg.max_retries,
        "request_timeout_s": cfg.request_timeout_s,
        "model_revision": cfg.model_revision,
        "served": served,
    }
    backend: LLMBackend
    if name in ("openai", "openai-compatible"):
        limits = cfg.circuit_breaker  # None: never stop
        bounds = cfg.concurrency  # a number N means (1, N), as the backend takes it
        backend = OpenAIBackend(
            cfg.model,
            sampling,
            name=name,
            concurrency=bounds if isinstance(bounds, int) else (bounds.min, bounds.max),
            rate_limit_budget_s=cfg.rate_limit_budget_s,
            failover=cfg.failover,
            breaker=CircuitBreaker(limits.window, limits.failure_rate) if limits else None,
            **http,
        )
    elif name == "openai-batch":
        # submitted batches are recorded beside the answers
        backend = OpenAIBatchBackend(
            cfg.model, sampling, ledger_path=cache_path, batch=cfg.batch, **http
        )
    elif name == "vllm":
        backend = VLLMBackend(
            cfg.model,
            sampling,
            dtype=cfg.dtype,
            engine=cfg.vllm,
            engine_kwargs=cfg.engine_kwargs,
            model_revision=cfg.model_revision,
        )
    else:  # transformers (LLMConfig validates the name)
        backend = TransformersBackend(
            cfg.model,
            sampling,
            device=cfg.device,
            dtype=cfg.dtype,
            batch_size=cfg.batch_size,
            threads=cfg.threads,
            model_revision=cfg.model_revision,
        )
    if cache_path is None:
        return backend
    return CachedBackend(backend, cache_path, spent_by=spent_by)


def probe_served(cfg: LLMConfig) -> dict[str, Any] | None:
    """What the endpoint of an API backend reports about ``cfg.model``, probed now (``check()``:
    a :class:`BackendError` when the key is missing or no endpoint answers), as its identity
    holds it; None for a backend that loads its model in this process."""
    if resolve_backend(cfg.backend) in LOCAL_BACKENDS:
        return None
    backend = make_backend(cfg, None)  # no cache: nothing is written before the build
    try:
        backend.check()
        return backend.identity().get("served", {})
    finally:
        backend.close()
