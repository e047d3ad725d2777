"""What a sentence encoder is, for everything that embeds sentences (diagnostics, filters, scores)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Encoder(Protocol):
    """A sentence encoder: unit-length embeddings of texts, and a way to free its model."""

    name: str
    dimension: int
    precision: str
    """The number format it computes in (``float32``, ``bfloat16``, ``float16``)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a (len(texts), dimension) float32 array of unit rows."""
        ...

    def close(self) -> None:
        """Free the model and anything else held (files, GPU memory); no encoding after this."""
        ...


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (float32 rows) scaled to unit length; an all-zero row stays zero.

    Example:
        >>> unit_rows(np.array([[3.0, 4.0]], dtype=np.float32)).tolist()
        [[0.6000000238418579, 0.800000011920929]]
    """
    return vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
