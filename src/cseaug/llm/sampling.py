"""Sampling parameters shared by every backend: one dict, part of every cache key.

With a seed, sample *k* of the same messages uses ``seed + k``: asking several times on
purpose gives different answers, each reproducible.

Example:
    >>> request_seed({"seed": 7}, sample_index=2)
    9
"""

from __future__ import annotations

from typing import Any

from cseaug.config import LLMConfig


def sampling_from_config(cfg: LLMConfig) -> dict[str, Any]:
    """The sampling dict of a config (what, besides backend and model, changes an answer), in
    the config's field order: temperature, top_p, max_tokens, seed."""
    return cfg.model_dump(include={"temperature", "top_p", "max_tokens", "seed"})


def request_seed(sampling: dict[str, Any], sample_index: int) -> int | None:
    """The seed of one request: ``seed + sample_index``, or None when no seed is set."""
    seed = sampling.get("seed")
    return None if seed is None else int(seed) + sample_index
