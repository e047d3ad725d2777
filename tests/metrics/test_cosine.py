"""cosine_pairs: NaN for a missing side, the same values whatever the chunk size."""

from __future__ import annotations

import numpy as np
import pytest

from cseaug.metrics.cosine import cosine_pairs
from tests.encoders.counting_encoder import CountingEncoder


def test_cosine_pairs_gives_nan_for_missing_sides_and_does_not_depend_on_chunking() -> None:
    encoder = CountingEncoder()
    a = ["A cat sat.", None, "Dogs bark.", "A cat sat.", "It rains."]
    b = ["A cat was sitting.", "x", None, "Dogs bark.", "Rain is falling."]
    whole = cosine_pairs(a, b, encoder, chunk_size=100)
    assert np.isnan(whole[1]) and np.isnan(whole[2])
    assert sorted(encoder.seen) == sorted(set(a[:1] + b[:1] + b[3:] + a[4:])), "each text once"
    np.testing.assert_allclose(cosine_pairs(a, b, encoder, chunk_size=1), whole, atol=1e-6)
    with pytest.raises(ValueError, match="2 first texts but 1"):
        cosine_pairs(["a", "b"], ["c"], encoder)
