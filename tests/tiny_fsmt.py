"""Tiny randomly initialised FSMT translation models, built offline from vocabulary files.

The vocabulary has the four fairseq specials, every printable ASCII character (alone and
word-final, ``c</w>``) and, optionally, whole words with the BPE merges that build them,
so that a word list gives about one token per word as the real WMT19 BPE does. Weights
are random, so translations are gibberish, but the real ``FSMTTokenizer`` (Moses +
BPE, needs ``sacremoses``), beam search and decoding run. ``build_tiny_fsmt`` also
builds models of the real WMT19 size for benchmarks (``d_model=1024``, 6+6 layers, ffn
8192, vocabulary ~42k), with random weights.

A test writes ``path = build_tiny_fsmt(tmp_path / "en-de", ("en", "de"))`` and loads
``path`` with ``AutoModelForSeq2SeqLM.from_pretrained`` as it would facebook/wmt19-en-de.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Sequence
from pathlib import Path

SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
CHARACTERS = string.ascii_letters + string.digits + string.punctuation


def _vocabulary(words: Iterable[str], size: int | None) -> tuple[list[str], list[str]]:
    tokens = list(SPECIALS) + list(CHARACTERS) + [c + "</w>" for c in CHARACTERS]
    seen = set(tokens)
    merges = []
    for word in words:
        if len(word) < 2 or any(c not in CHARACTERS for c in word):
            continue
        # Left-to-right merges: "c a" -> "ca", "ca t</w>" -> "cat</w>".
        prefix = word[0]
        for position, char in enumerate(word[1:], start=1):
            last = position == len(word) - 1
            right = char + "</w>" if last else char
            merged = prefix + right
            if merged not in seen:
                merges.append(f"{prefix} {right}")
                tokens.append(merged)
                seen.add(merged)
            prefix = merged
    if size is not None:
        tokens += [f"<extra{i}>" for i in range(max(0, size - len(tokens)))]
    return tokens, merges


def build_tiny_fsmt(
    directory: Path,
    langs: Sequence[str] = ("en", "de"),
    *,
    words: Iterable[str] = (),
    vocab_size: int | None = None,
    d_model: int = 16,
    layers: int = 1,
    ffn_dim: int = 32,
    heads: int = 2,
    max_positions: int = 256,
    init_std: float = 0.3,
    seed: int = 0,
) -> Path:
    """Write an FSMT model and its tokenizer files into ``directory`` and return it.

    ``init_std`` is far above FSMT's 0.02 so that a tiny model's output depends on its
    input (with 0.02 every input gives the same string, and a batching bug that mixes up
    sentences would go unseen).
    """
    import torch
    from transformers import FSMTConfig, FSMTForConditionalGeneration, FSMTTokenizer

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokens, merges = _vocabulary(words, vocab_size)
    vocab = {token: i for i, token in enumerate(tokens)}
    files = {}
    for side in ("src", "tgt"):
        files[side] = directory / f"vocab-{side}-build.json"
        files[side].write_text(json.dumps(vocab), encoding="utf-8")
    files["merges"] = directory / "merges-build.txt"
    files["merges"].write_text("".join(m + "\n" for m in merges), encoding="utf-8")
    tokenizer = FSMTTokenizer(
        langs=list(langs),
        src_vocab_file=str(files["src"]),
        tgt_vocab_file=str(files["tgt"]),
        merges_file=str(files["merges"]),
    )
    config = FSMTConfig(
        langs=list(langs),
        src_vocab_size=len(vocab),
        tgt_vocab_size=len(vocab),
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn_dim,
        decoder_ffn_dim=ffn_dim,
        max_position_embeddings=max_positions,
        init_std=init_std,
    )
    torch.manual_seed(seed)
    FSMTForConditionalGeneration(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    for path in files.values():
        path.unlink()
    return directory


def build_tiny_pivots(
    directory: Path, pivots: Sequence[str] = ("de", "ru"), **kwargs
) -> dict[str, tuple[str, str]]:
    """Forward and backward models for each pivot (different seeds), as ``backtranslation.pivots``."""
    out = {}
    for n, pivot in enumerate(pivots):
        forward = build_tiny_fsmt(directory / f"en-{pivot}", ("en", pivot), seed=2 * n, **kwargs)
        backward = build_tiny_fsmt(
            directory / f"{pivot}-en", (pivot, "en"), seed=2 * n + 1, **kwargs
        )
        out[pivot] = (str(forward), str(backward))
    return out
