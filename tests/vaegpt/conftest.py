"""Fixtures of the VAEGPT-Sim tests: a tiny random GPT-2 (tests/tiny_models.py) and toy pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

TOY_PAIRS = [
    ("A man is playing a guitar", "A man plays the guitar"),
    ("A dog runs on the grass", "A dog is running through the grass"),
    ("Two kids are swimming", "Two children swim in a pool"),
    ("A woman is slicing an onion", "A woman cuts an onion"),
    ("The cat sleeps on the sofa", "A cat is sleeping on a couch"),
    ("A boy rides a bike", "A child is riding a bicycle"),
    ("People walk in the park", "Some people are walking in a park"),
    ("A chef cooks pasta", "A cook is making pasta"),
]
"""A toy pair set (SICK-like paraphrases)."""


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of a tiny random GPT-2 (2 blocks, width 32) and its tokenizer."""
    pytest.importorskip("torch")
    from tiny_models import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))
