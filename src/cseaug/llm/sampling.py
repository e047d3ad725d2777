"""Sampling parameters shared by every backend: one dict, part of every cache key.

With a seed, sample *k* of the same messages uses ``seed + k``: asking several times on
purpose gives different answers, each reproducible.

Example:
    >>> request_sampling({"temperature": 0.7, "top_p": None, "seed": 7}, sample_index=2)
    {'temperature': 0.7, 'seed': 9}
"""

from __future__ import annotations

from typing import Any

FIELDS = ("temperature", "top_p", "max_tokens", "seed")
"""The ``llm`` keys that, besides backend and model, change an answer."""


def request_sampling(sampling: dict[str, Any], sample_index: int) -> dict[str, Any]:
    """The sampling values one request sets (unset ones are the backend's default), its seed
    ``seed + sample_index``."""
    values = {name: sampling[name] for name in FIELDS if sampling.get(name) is not None}
    if "seed" in values:
        values["seed"] = int(values["seed"]) + sample_index
    return values
