"""The embedding cache: each unique text embedded once, an LRU in memory, a sqlite file on disk."""

from __future__ import annotations

import numpy as np
import pytest

from cseaug.encoders.store import CachedEncoder, EmbeddingStore, text_key
from cseaug.errors import ConfigError
from tests.encoders.counting_encoder import CountingEncoder


def test_cache_embeds_each_unique_text_once_and_keeps_input_order():
    backend = CountingEncoder()
    encoder = CachedEncoder(backend)
    first = encoder.encode(["ab", "c", "ab"])
    assert backend.seen == ["ab", "c"]
    np.testing.assert_array_equal(first[0], first[2])
    again = encoder.encode(["c", "ab"])
    assert backend.seen == ["ab", "c"]
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert encoder.stats == {"memory_hits": 2, "disk_hits": 0, "encoded": 2}


def test_lru_forgets_the_least_recently_used_text():
    backend = CountingEncoder()
    encoder = CachedEncoder(backend, memory_items=2)
    encoder.encode(["a", "b"])
    encoder.encode(["a"])  # a is now the most recent
    encoder.encode(["c"])  # evicts b
    encoder.encode(["a", "b"])
    assert backend.seen == ["a", "b", "c", "b"]


def test_disk_store_serves_a_second_encoder_without_the_model(tmp_path):
    store = EmbeddingStore(tmp_path / "e.sqlite", "counting|v1", 4)
    first = CachedEncoder(CountingEncoder(), store=store)
    expected = first.encode(["ab", "b"])
    store.close()
    backend = CountingEncoder()
    second = CachedEncoder(backend, store=EmbeddingStore(tmp_path / "e.sqlite", "counting|v1", 4))
    np.testing.assert_array_equal(second.encode(["b", "ab"]), expected[[1, 0]])
    assert backend.seen == [] and second.stats["disk_hits"] == 2
    assert len(second.store) == 2
    second.close()
    with pytest.raises(ConfigError, match="belongs to another encoder"):
        EmbeddingStore(tmp_path / "e.sqlite", "other|v2", 4)


def test_text_key_is_stable_and_distinguishes_texts():
    assert text_key("A cat sat.") == text_key("A cat sat.")
    assert text_key("A cat sat.") != text_key("A cat sat")
    assert len(text_key("x")) == 16


def test_closing_the_cache_closes_the_store_and_the_model(tmp_path):
    backend = CountingEncoder()
    encoder = CachedEncoder(backend, store=EmbeddingStore(tmp_path / "e.sqlite", "counting|v1", 4))
    encoder.encode(["ab"])
    encoder.close()
    assert backend.closed
    with pytest.raises(Exception, match="closed"):
        len(encoder.store)
