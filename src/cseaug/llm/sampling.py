"""Sampling parameters shared by every backend: one dict, part of every cache key.

Every backend receives the same ``sampling`` dict (``temperature``, ``top_p``,
``max_tokens``, ``seed``), built from :class:`~cseaug.config.LLMConfig` by
:func:`sampling_from_config`; ``None`` keeps the backend's (or model's) default. When a
seed is set, request ``sample_index`` *k* is sampled with seed ``seed + k``, so that
asking for several samples of the same messages on purpose gives different answers while
each one stays reproducible.

Example:
    >>> request_seed({"seed": 7}, sample_index=2)
    9
"""

from __future__ import annotations

from typing import Any

from cseaug.config import LLMConfig


def sampling_from_config(cfg: LLMConfig) -> dict[str, Any]:
    """The sampling dict of a config (what, besides backend and model, changes an answer)."""
    return {
        "temperature": cfg.temperature,
        "top_p": cfg.top_p,
        "max_tokens": cfg.max_tokens,
        "seed": cfg.seed,
    }


def request_seed(sampling: dict[str, Any], sample_index: int) -> int | None:
    """The seed of one request: ``seed + sample_index``, or None when no seed is set."""
    seed = sampling.get("seed")
    return None if seed is None else int(seed) + sample_index
