"""Fixtures of the VAEGPT-Sim tests: a tiny random GPT-2 (tests/tiny_models.py) and toy pairs."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of a tiny random GPT-2 (2 blocks, width 32) and its tokenizer."""
    pytest.importorskip("torch")
    from tests.tiny_models import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))
