"""Cosine similarity of sentence pairs (NGCSE appendix, "Match Error Rate and Cosine Similarity").

CS(s1, s2) = f(s1)^T f(s2) with f an encoder onto the unit hypersphere (NGCSE eq. 9); the
encoder is :mod:`cseaug.encoders`, this module only streams the pairs in chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from cseaug.encoders.base import Encoder


def cosine_pairs(
    a_texts: Sequence[str | None],
    b_texts: Sequence[str | None],
    encoder: Encoder,
    chunk_size: int = 2048,
) -> np.ndarray:
    """Cosine similarity of each pair (a_texts[i], b_texts[i]) as float32 clipped to [-1, 1],
    NaN where a side is None; ``chunk_size`` pairs are embedded at once (``encoder``'s rows
    are unit vectors).

    Example:
        >>> cosine_pairs(["a b"], [None], encoder=None)
        array([nan], dtype=float32)
    """
    if len(a_texts) != len(b_texts):
        raise ValueError(
            f"cosine_pairs: {len(a_texts)} first texts but {len(b_texts)} second texts"
        )
    out = np.full(len(a_texts), np.nan, dtype=np.float32)
    for start in range(0, len(a_texts), chunk_size):
        a_chunk = a_texts[start : start + chunk_size]
        b_chunk = b_texts[start : start + chunk_size]
        valid = [
            i
            for i, (a, b) in enumerate(zip(a_chunk, b_chunk, strict=True))
            if a is not None and b is not None
        ]
        if not valid:
            continue
        unique = list(dict.fromkeys([a_chunk[i] for i in valid] + [b_chunk[i] for i in valid]))
        position = {text: i for i, text in enumerate(unique)}
        vectors = encoder.encode(unique)
        a_vec = vectors[[position[a_chunk[i]] for i in valid]]
        b_vec = vectors[[position[b_chunk[i]] for i in valid]]
        # float64 products and sums: the float32 value is the same on every CPU
        values = np.einsum("ij,ij->i", a_vec, b_vec, dtype=np.float64)
        out[start + np.asarray(valid)] = np.clip(values, -1.0, 1.0)
    return out
