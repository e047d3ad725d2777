"""Translation batches that fit the device, out-of-memory halving, model placement and the
tokenizer process, with tiny random FSMT models built here (tests/tiny_fsmt.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sacremoses")

from cseaug.augment import backtranslate
from cseaug.augment.backtranslate import BackTranslator
from cseaug.augment.tokenizer_worker import TokenizerProcess, Tokenizers
from cseaug.augment.translation import (
    CPU_BATCH,
    Translator,
    new_tokens_cap,
    seq2seq_kv_bytes_per_token,
)
from cseaug.batching import TokenBudget

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = [
    "Rain.",
    "The committee met twice before the vote was taken in the spring of that year.",
    "Two dogs run across the field after a red ball.",
    "Stop!",
    "Her brother, who lives abroad, writes a long letter to the family every single month.",
    "We ate.",
    "The old bridge was closed for repairs.",
]
SMALL = {"num_beams": 2, "max_new_tokens": 10}


@pytest.fixture(scope="module")
def reference(fsmt_pivots):
    """Round trips of :data:`TEXTS` in batches of 2, one model after the other, in line."""
    backtranslator = BackTranslator(fsmt_pivots, mer_range=(0.0, 1.0), batch_size=2, **SMALL)
    yield [
        (r.candidates[0].text, r.candidates[1].text) for r in backtranslator.backtranslate(TEXTS)
    ]
    backtranslator.close()


def test_auto_batch_size_on_the_cpu_and_a_budget_on_a_gpu(fsmt_pivots) -> None:
    translator = Translator(fsmt_pivots["de"][0], **SMALL)
    assert translator.budget() == TokenBudget(slots=None, max_items=CPU_BATCH)
    # facebook/wmt19-en-de: 6 decoder layers of width 1024, float16
    wmt19 = SimpleNamespace(decoder_layers=6, d_model=1024)
    assert seq2seq_kv_bytes_per_token(wmt19, 2) == 24_576
    with pytest.raises(ValueError, match="'odd' cannot be sized"):
        seq2seq_kv_bytes_per_token(SimpleNamespace(model_type="odd"), 2)


def test_a_sentence_costs_every_beam_its_source_translation_and_logits(fsmt_pivots) -> None:
    translator = Translator(fsmt_pivots["de"][0], num_beams=3, max_new_tokens=40)
    config = translator.model.config
    logits = 3 * config.tgt_vocab_size * 4 // seq2seq_kv_bytes_per_token(config, 4)
    assert translator.slots_per_sentence(10) == 3 * (2 * 10 + new_tokens_cap(10, 40, 2.0) + logits)


def test_out_of_memory_halves_the_batch_and_keeps_every_translation(fsmt_pivots) -> None:
    import torch

    expected = Translator(fsmt_pivots["de"][0], batch_size=1, **SMALL)(TEXTS)
    translator = Translator(fsmt_pivots["de"][0], batch_size=8, **SMALL)
    generate = translator.model.generate
    capacity = 2 * max(len(ids) for ids in translator.encode(TEXTS))  # padded source tokens
    calls: list[tuple[int, bool]] = []

    def out_of_memory_above_capacity(**kwargs):
        fits = kwargs["input_ids"].numel() <= capacity
        calls.append((kwargs["input_ids"].shape[0], fits))
        if not fits:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB")
        return generate(**kwargs)

    translator.model.generate = out_of_memory_above_capacity
    assert translator(TEXTS) == expected
    # the whole batch fails, then its first half; the lowered budget then holds for the rest
    assert calls == [(7, False), (3, False), (1, True), (1, True), (2, True), (3, True)]


def test_models_that_do_not_fit_at_once_take_turns_with_the_same_results(
    fsmt_pivots, reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert backtranslate.weights_fit([10, 10], None)
    monkeypatch.setattr(backtranslate, "free_memory_bytes", lambda device: 1)
    backtranslator = BackTranslator(fsmt_pivots, mer_range=(0.0, 1.0), batch_size=2, **SMALL)
    assert backtranslator.resident is False
    moves: list[str] = []
    for name, translator in backtranslator.translators.items():
        monkeypatch.setattr(translator, "place", lambda n=name: moves.append(f"place {n}"))
        monkeypatch.setattr(translator, "evict", lambda n=name: moves.append(f"evict {n}"))
    results = backtranslator.backtranslate(TEXTS)
    assert [(r.candidates[0].text, r.candidates[1].text) for r in results] == reference
    en_de, de_en = fsmt_pivots["de"]
    assert moves[:4] == [f"place {en_de}", f"evict {en_de}", f"place {de_en}", f"evict {de_en}"]
    assert len(moves) == 8
    backtranslator.close()


def test_the_tokenizer_process_gives_the_same_round_trips(fsmt_pivots, reference) -> None:
    backtranslator = BackTranslator(
        fsmt_pivots, mer_range=(0.0, 1.0), batch_size=2, tokenizer_process=True, **SMALL
    )
    assert isinstance(backtranslator.tokenizers, TokenizerProcess)
    try:
        results = backtranslator.backtranslate(TEXTS)
    finally:
        backtranslator.close()
    assert [(r.candidates[0].text, r.candidates[1].text) for r in results] == reference


def test_decoding_can_encode_for_the_next_model_at_once(fsmt_pivots) -> None:
    forward, backward = (Translator(name, **SMALL) for name in fsmt_pivots["de"])
    tokenizers = Tokenizers(
        {forward.name: forward.tokenizer, backward.name: backward.tokenizer},
        {forward.name: 1024, backward.name: 1024},
    )
    middle, middle_ids = forward.translate(forward.encode(TEXTS), tokenizers, then=backward.name)
    assert middle == forward(TEXTS)
    assert middle_ids == backward.encode(middle)
    assert forward.translate([], tokenizers, then=backward.name) == ([], [])
