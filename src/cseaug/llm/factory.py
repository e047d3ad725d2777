"""Pick the backend an :class:`~cseaug.config.LLMConfig` asks for.

Constructing a backend is cheap and never fails for want of a key or a model: the dry
run builds one only to learn its cache identity. Every backend has ``check()``, which
does the up-front work and fails before any request is sent: the API key of ``openai``,
loading the ``transformers`` model, creating the ``vllm`` engine. The build calls
``backend.check()`` once when it makes its stage; ``generate`` calls it too if nobody did.

Example:
    >>> from cseaug.config import LLMConfig
    >>> cfg = LLMConfig(backend="openai-compatible", model="m", base_url="http://127.0.0.1:8000/v1")
    >>> make_backend(cfg, cache_path=None).name
    'openai-compatible'
"""

from __future__ import annotations

from pathlib import Path

from cseaug.config import LLMConfig
from cseaug.llm.base import LLMBackend
from cseaug.llm.cache import CachedBackend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.sampling import sampling_from_config
from cseaug.llm.transformers_backend import TransformersBackend
from cseaug.llm.vllm_backend import VLLMBackend


def make_backend(cfg: LLMConfig, cache_path: Path | None) -> LLMBackend:
    """The backend of ``cfg``, behind the response cache at ``cache_path`` when one is given.

    Args:
        cfg: the ``llm`` section of a run config.
        cache_path: SQLite file of the response cache; None: no cache.
    """
    sampling = sampling_from_config(cfg)
    backend: LLMBackend
    if cfg.backend in ("openai", "openai-compatible"):
        backend = OpenAIBackend(
            cfg.model,
            sampling,
            name=cfg.backend,
            base_url=cfg.base_url,
            api_key_env=cfg.api_key_env,
            concurrency=cfg.concurrency,
            max_retries=cfg.max_retries,
            request_timeout_s=cfg.request_timeout_s,
        )
    elif cfg.backend == "vllm":
        backend = VLLMBackend(cfg.model, sampling, dtype=cfg.dtype, engine_kwargs=cfg.engine_kwargs)
    elif cfg.backend == "transformers":
        backend = TransformersBackend(
            cfg.model, sampling, device=cfg.device, dtype=cfg.dtype, batch_size=cfg.batch_size
        )
    else:  # pragma: no cover - LLMConfig validates the name
        raise ValueError(f"unknown llm.backend {cfg.backend!r}")
    return CachedBackend(backend, cache_path) if cache_path is not None else backend
