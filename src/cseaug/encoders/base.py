"""What a sentence encoder is, for everything that embeds sentences (diagnostics, filters, scores)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Encoder(Protocol):
    """A sentence encoder: unit-length embeddings of texts, and a way to free its model."""

    name: str
    dimension: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as a (len(texts), dimension) float32 array of unit rows."""
        ...

    def close(self) -> None:
        """Free the model and anything else held (files, GPU memory); no encoding after this."""
        ...
